//! The values given on the command line, applied to a config already read: each flag
//! changes the typed value it names (a scenario's executor, the sampling targets, the
//! environment, ...), checked with the words the config's own reader uses, and is then
//! written back into the config's table ([`Overrides::write_back`]). That table is
//! `RunConfig::source`, which summary.json records, `setup()` receives and a
//! coordinator sends to its workers (who read it again without these flags): written
//! back, the value each of them sees is the one the run uses.
//!
//! Which executors a flag changes is decided on the typed executor, as k6 does:
//! `--vus` the executors with VUs of their own (constant-vus, per-vu-iterations,
//! shared-iterations), `--duration` constant-vus and constant-arrival-rate, `--rate`
//! constant-arrival-rate, `--iterations` the iteration executors, turning constant-vus
//! into shared-iterations. `--stage` replaces the scenarios with one ramping-vus
//! scenario.
//!
//! A flag no longer hides a mistake in the config: the config is read as written, so a
//! value it gets wrong is reported even when a flag replaces it (`vus = 0` with
//! `--vus 2`), and the flag's own value is checked after. The exception is `--stage`,
//! which replaces the scenarios whole: those are not read (only the plugin scenario
//! they run), as before.

use super::executor_config::{ExecutorConfig, Stage, SHARED_ITERATIONS};
use super::executors::{
    check_count, check_length, check_pool, check_rate, DEFAULT_GRACEFUL_RAMP_DOWN,
    DEFAULT_MAX_DURATION,
};
use super::sampling::{self, SamplingFlags};
use super::scenario::{ScenarioConfig, DEFAULT_GRACEFUL_STOP};
use super::segment::ExecutionTuple;
use super::tls::TlsOptions;
use super::trend_stats::TrendStat;
use crate::duration::exact_value;
use crate::table::{check_non_negative, whole, Collector, ConfigError, ConfigErrors};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

/// Name of the scenario `--stage` makes (k6's default scenario).
pub(crate) const STAGE_SCENARIO: &str = "default";

/// Values given on the command line; each overrides the same value in every scenario
/// that has it.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--vus`.
    pub vus: Option<u64>,
    /// `--duration`.
    pub duration: Option<Duration>,
    /// `--iterations`: turns `constant-vus` scenarios into `shared-iterations`, as k6 does.
    pub iterations: Option<u64>,
    /// `--rate` for arrival-rate scenarios.
    pub rate: Option<f64>,
    /// `-e KEY=VALUE`.
    pub env: Vec<(String, String)>,
    /// `--allow URL`.
    pub allow: Vec<String>,
    /// `--sample-container NAME`.
    pub sample_containers: Vec<String>,
    /// `--sample-pid [NAME=]PID`.
    pub sample_pids: Vec<String>,
    /// `--stats-interval`.
    pub stats_interval: Option<Duration>,
    /// `--stage DURATION:TARGET` (repeatable): the scenarios are replaced by one
    /// `ramping-vus` scenario named `default` with these stages, as k6's `--stage`.
    pub stages: Vec<Stage>,
    /// `--summary-trend-stats`: the trend columns of summary.txt (default: all kept).
    pub summary_trend_stats: Option<Vec<TrendStat>>,
    /// `--insecure-skip-tls-verify` (k6's flag): sets `[tls] insecure_skip_verify`.
    pub insecure_skip_tls_verify: bool,
    /// `--config` files after the first, layered over it in order (see `config::layers`).
    pub config_layers: Vec<PathBuf>,
    /// `allow` replaces the config's `[targets] allow` instead of adding to it
    /// (`run --stack`: the plugin reaches the stack's entry URLs and nothing else).
    pub allow_only: bool,
    /// CA files trusted besides the system's roots and `[tls] ca_file`: those of a
    /// stack's https entries (`run --stack`).
    pub ca_files: Vec<PathBuf>,
    /// `--execution-segment`: the share of the test this process runs (`1/3:2/3`,
    /// `0.5`, `50%:75%`), as k6's.
    pub execution_segment: Option<String>,
    /// `--execution-segment-sequence`: every process's segment boundaries
    /// (`0,1/3,2/3,1`), so that all stripe alike.
    pub execution_segment_sequence: Option<String>,
    /// `--vus` sets a ramping-vus scenario's start VUs (k6's rule for the scenario a k6
    /// script's `stages` shortcut made; see `overrides::k6`).
    pub k6_start_vus: bool,
}

/// One change the command line made to a scenario's table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Edit {
    /// The key now holds this value.
    Set(&'static str, toml::Value),
    /// The key is gone (a constant-vus `duration`, once `--iterations` made it
    /// shared-iterations).
    Remove(&'static str),
}

/// The changes the command line made to each scenario, by name.
pub(crate) type ScenarioEdits = Vec<(String, Vec<Edit>)>;

/// What the command line did to `[scenarios]`, to be written back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ScenarioWrites {
    /// `--stage`: the section is this one scenario's table.
    Replaced(toml::Table),
    /// The changes to each scenario.
    Edited(ScenarioEdits),
}

impl Overrides {
    /// `--stage`: the one ramping-vus scenario that replaces every scenario of
    /// `source`, with its table. It starts at `--vus` VUs (k6's `startVUs = vus`, 1
    /// without it) and runs the `exec` the replaced scenarios shared; they are not
    /// read otherwise. `None` without `--stage`.
    pub(crate) fn stage_scenario(
        &self,
        source: &toml::Table,
    ) -> Result<Option<(ScenarioConfig, toml::Table)>, ConfigErrors> {
        if self.stages.is_empty() {
            return Ok(None);
        }
        let execs: BTreeSet<String> = match source.get("scenarios") {
            Some(toml::Value::Table(t)) => t
                .values()
                .map(|s| {
                    s.get("exec")
                        .and_then(|e| e.as_str())
                        .unwrap_or("default")
                        .to_string()
                })
                .collect(),
            _ => Default::default(),
        };
        if execs.len() > 1 {
            return Err(ConfigError {
                path: "--stage".into(),
                message: format!(
                    "it replaces the scenarios with one, but they run different plugin scenarios \
                     ({}); write a ramping-vus [scenarios.NAME] with `exec` and `stages` in a \
                     --config instead",
                    execs.into_iter().collect::<Vec<_>>().join(", ")
                ),
            }
            .into());
        }
        let exec = execs.into_iter().next().unwrap_or_else(|| "default".into());
        let start_vus = self.vus.unwrap_or(1);
        let path = |key: &str| format!("scenarios.{STAGE_SCENARIO}.{key}");
        let mut c = Collector::default();
        c.keep(whole(&path("start_vus"), start_vus));
        check_stage_targets(&self.stages, &path, &mut c);
        c.finish()?;
        let executor = ExecutorConfig::RampingVus {
            start_vus,
            stages: self.stages.clone(),
            graceful_ramp_down: DEFAULT_GRACEFUL_RAMP_DOWN,
        };
        let mut table = toml::Table::new();
        table.insert("exec".into(), exec.clone().into());
        executor.write_schedule(&mut table);
        let scenario = ScenarioConfig {
            name: STAGE_SCENARIO.into(),
            exec,
            executor,
            start_time: Duration::ZERO,
            graceful_stop: DEFAULT_GRACEFUL_STOP,
            env: BTreeMap::new(),
            tags: BTreeMap::new(),
            segment: ExecutionTuple::full(),
        };
        Ok(Some((scenario, table)))
    }

    /// Applies `--iterations`, `--vus`, `--duration` and `--rate` to a scenario read
    /// from the config, and checks the values they set as the config's reader would
    /// have (same keys, same words). Returns the changes to write back.
    pub(crate) fn apply_to_scenario(
        &self,
        s: &mut ScenarioConfig,
    ) -> Result<Vec<Edit>, ConfigErrors> {
        let path = |key: &str| format!("scenarios.{}.{key}", s.name);
        let mut edits = Vec::new();
        let mut c = Collector::default();
        // As k6: a number of iterations turns a constant-vus scenario into a
        // shared-iterations one, with its VUs and the default max_duration.
        if let (Some(iterations), ExecutorConfig::ConstantVus { vus, .. }) =
            (self.iterations, &s.executor)
        {
            s.executor = ExecutorConfig::SharedIterations {
                vus: *vus,
                iterations,
                max_duration: DEFAULT_MAX_DURATION,
            };
            edits.push(Edit::Set("executor", SHARED_ITERATIONS.into()));
            edits.push(Edit::Remove("duration"));
        }
        match &mut s.executor {
            ExecutorConfig::PerVuIterations {
                vus, iterations, ..
            }
            | ExecutorConfig::SharedIterations {
                vus, iterations, ..
            } => {
                // Checked in the reader's order (vus, then iterations), written in the
                // order they always were.
                let vus_value = self.vus.and_then(|n| counted(&mut c, &path("vus"), n));
                let iterations_value = self
                    .iterations
                    .and_then(|n| counted(&mut c, &path("iterations"), n));
                if let Some(n) = self.iterations {
                    *iterations = n;
                    edits.extend(iterations_value.map(|v| Edit::Set("iterations", v)));
                }
                if let Some(n) = self.vus {
                    *vus = n;
                    edits.extend(vus_value.map(|v| Edit::Set("vus", v)));
                }
                let changed = self.vus.is_some() || self.iterations.is_some();
                if changed && c.is_empty() {
                    if let ExecutorConfig::SharedIterations {
                        vus, iterations, ..
                    } = &s.executor
                    {
                        c.keep(check_pool(&path("iterations"), *vus, *iterations));
                    }
                }
            }
            ExecutorConfig::ConstantVus { vus, duration } => {
                if let Some(n) = self.vus {
                    *vus = n;
                    let value = counted(&mut c, &path("vus"), n);
                    edits.extend(value.map(|v| Edit::Set("vus", v)));
                }
                if let Some(d) = self.duration {
                    *duration = d;
                    c.keep(check_length(&path("duration"), d));
                    edits.push(Edit::Set("duration", exact_value(d)));
                }
            }
            ExecutorConfig::ConstantArrivalRate { rate, duration, .. } => {
                // The config's reader checks `rate` before `duration`: so are the flags.
                if let Some(r) = self.rate {
                    *rate = r;
                    c.keep(
                        check_non_negative(&path("rate"), r)
                            .and_then(|r| check_rate(&path("rate"), r)),
                    );
                }
                if let Some(d) = self.duration {
                    *duration = d;
                    c.keep(check_length(&path("duration"), d));
                    edits.push(Edit::Set("duration", exact_value(d)));
                }
                if let Some(r) = self.rate {
                    edits.push(Edit::Set("rate", toml::Value::Float(r)));
                }
            }
            ExecutorConfig::RampingVus { start_vus, .. } => {
                if let (Some(n), true) = (self.vus, self.k6_start_vus) {
                    *start_vus = n;
                    let value = c.keep(whole(&path("start_vus"), n));
                    edits.extend(value.map(|v| Edit::Set("start_vus", v)));
                }
            }
            ExecutorConfig::RampingArrivalRate { .. } => {}
        }
        c.finish()?;
        Ok(edits)
    }

    /// `-e KEY=VALUE` over `[env]`.
    pub(crate) fn apply_to_env(&self, env: &mut BTreeMap<String, String>) {
        env.extend(self.env.iter().cloned());
    }

    /// `--allow` added to `[targets] allow`, or replacing it (`allow_only`).
    pub(crate) fn apply_to_allow(&self, allow: &mut Vec<String>) {
        if self.allow.is_empty() {
            return;
        }
        if self.allow_only {
            allow.clear();
        }
        allow.extend(self.allow.iter().cloned());
    }

    /// `--insecure-skip-tls-verify` over `[tls]` (before the options are checked).
    pub(crate) fn apply_to_tls(&self, tls: &mut TlsOptions) {
        if self.insecure_skip_tls_verify {
            tls.insecure_skip_verify = true;
        }
    }

    /// The sampling flags, for `SamplingOptions::apply_flags`.
    pub(crate) fn sampling_flags(&self) -> SamplingFlags<'_> {
        SamplingFlags {
            containers: &self.sample_containers,
            pids: &self.sample_pids,
            stats_interval: self.stats_interval,
        }
    }

    /// Writes what the command line set into the config's table, in the order the
    /// sections were always written (so a section a flag adds lands where it did).
    pub(crate) fn write_back(&self, source: &mut toml::Table, scenarios: ScenarioWrites) {
        match scenarios {
            ScenarioWrites::Replaced(table) => {
                let mut section = toml::Table::new();
                section.insert(STAGE_SCENARIO.into(), toml::Value::Table(table));
                source.insert("scenarios".into(), toml::Value::Table(section));
                sampling::write_flags(source, self.sampling_flags());
            }
            ScenarioWrites::Edited(edits) => {
                sampling::write_flags(source, self.sampling_flags());
                if let Some(toml::Value::Table(tables)) = source.get_mut("scenarios") {
                    for (name, edits) in edits {
                        if let Some(toml::Value::Table(table)) = tables.get_mut(&name) {
                            for edit in edits {
                                match edit {
                                    Edit::Set(key, value) => {
                                        table.insert(key.into(), value);
                                    }
                                    Edit::Remove(key) => {
                                        table.remove(key);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        if self.insecure_skip_tls_verify {
            if let Some(tls) = section(source, "tls") {
                tls.insert("insecure_skip_verify".into(), true.into());
            }
        }
        if !self.env.is_empty() {
            if let Some(env) = section(source, "env") {
                for (k, v) in &self.env {
                    env.insert(k.clone(), v.clone().into());
                }
            }
        }
        if !self.allow.is_empty() {
            if let Some(targets) = section(source, "targets") {
                let allow = targets
                    .entry("allow")
                    .or_insert_with(|| toml::Value::Array(Vec::new()));
                if let Some(list) = allow.as_array_mut() {
                    if self.allow_only {
                        list.clear();
                    }
                    list.extend(self.allow.iter().map(|u| toml::Value::from(u.clone())));
                }
            }
        }
    }
}

/// The table `[name]` of `source`, made when absent; `None` when it is no table (the
/// config's error says so).
fn section<'a>(source: &'a mut toml::Table, name: &str) -> Option<&'a mut toml::Table> {
    source
        .entry(name)
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
}

/// A count from the command line, checked as the config's are, as TOML writes it;
/// `None` with its mistake kept.
fn counted(c: &mut Collector, path: &str, n: u64) -> Option<toml::Value> {
    let n = c.keep(check_count(path, n))?;
    c.keep(whole(path, n))
}

pub(crate) mod k6;

/// Checks `--stage` flags' targets as the config's reader would (each a whole number
/// TOML can hold, under `path("stages[i].target")`), collecting a bad one in `c`; the
/// stages are then written by [`ExecutorConfig::write_schedule`].
fn check_stage_targets(stages: &[Stage], path: &dyn Fn(&str) -> String, c: &mut Collector) {
    for (i, s) in stages.iter().enumerate() {
        c.keep(whole(&path(&format!("stages[{i}].target")), s.target));
    }
}

#[cfg(test)]
mod tests;
