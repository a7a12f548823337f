//! k6's precedence of the command line over a k6 script's options, for the runs of k6
//! scripts. The JavaScript layer writes a `[k6]` section into the script's default
//! config (whether the script declared `scenarios`, its top-level `vus` and `tags`);
//! its presence switches the flags from the host's own rules (each flag edits the
//! scenarios that have its option) to k6's, measured against k6 1.1.0:
//!
//! - `--iterations`, `--duration` or `--stage` on the command line replace the script's
//!   scenarios whole with one scenario `default` (k6: "\"cli\" level configuration
//!   overrode scenarios configuration entirely"): `--iterations N` a shared-iterations
//!   scenario of N iterations (`--duration` its max_duration), `--duration` alone a
//!   constant-vus scenario, `--stage` a ramping-vus scenario; their VUs are `--vus`,
//!   else the script's top-level `vus`, else 1.
//! - `--vus` alone changes a script's own `scenarios` not at all; it sets the VUs of the
//!   scenario the script's top-level `vus`/`duration`/`iterations`/`stages` made (the
//!   start VUs of a `stages` one).

use super::{Overrides, STAGE_SCENARIO};
use crate::config::executor_config::ExecutorConfig;
use crate::config::executors::{
    check_count, check_length, check_pool, DEFAULT_GRACEFUL_RAMP_DOWN, DEFAULT_MAX_DURATION,
};
use crate::config::scenario::{ScenarioConfig, DEFAULT_GRACEFUL_STOP};
use crate::config::segment::ExecutionTuple;
use crate::table::{whole, Collector, ConfigError, ConfigErrors, TableReader};
use std::collections::BTreeMap;
use std::time::Duration;

/// The `[k6]` section: what of a k6 script's options k6's precedence needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct K6Script {
    /// The script declared `options.scenarios` (else its scenario came from the
    /// top-level shortcuts, or is k6's default of one iteration).
    pub(crate) own_scenarios: bool,
    /// The script's top-level `vus`.
    pub(crate) vus: Option<u64>,
    /// The script's top-level `tags`, which k6 puts on every scenario, the one the
    /// command line makes too.
    pub(crate) tags: BTreeMap<String, String>,
}

/// Reads `[k6]`; `None` when the config has none (a plugin that is not a k6 script).
pub(crate) fn read(source: &toml::Table) -> Result<Option<K6Script>, ConfigError> {
    let Some(value) = source.get("k6") else {
        return Ok(None);
    };
    let table = value.as_table().ok_or_else(|| ConfigError {
        path: "k6".into(),
        message: "must be a table (the JavaScript layer writes it from the script's options)"
            .into(),
    })?;
    let mut r = TableReader::new("k6", table);
    let own_scenarios = r.boolean("own_scenarios")?.unwrap_or(false);
    let vus = r.uint("vus")?;
    let tags = r.string_map("tags")?;
    r.finish()?;
    Ok(Some(K6Script {
        own_scenarios,
        vus,
        tags,
    }))
}

impl Overrides {
    /// Whether a flag of the command line replaces a k6 script's scenarios.
    pub(crate) fn replaces_k6_scenarios(&self) -> bool {
        self.iterations.is_some() || self.duration.is_some() || !self.stages.is_empty()
    }

    /// The one scenario that replaces a k6 script's scenarios, with its table, when
    /// `--iterations`, `--duration` or `--stage` is given; `None` otherwise.
    pub(crate) fn k6_scenario(
        &self,
        script: &K6Script,
    ) -> Result<Option<(ScenarioConfig, toml::Table)>, ConfigErrors> {
        if !self.replaces_k6_scenarios() {
            return Ok(None);
        }
        let path = |key: &str| format!("scenarios.{STAGE_SCENARIO}.{key}");
        let vus = self.vus.or(script.vus).unwrap_or(1);
        let mut c = Collector::default();
        let executor = if let Some(iterations) = self.iterations {
            // `--stage` with `--iterations` or `--duration` is refused by the flags'
            // parser, as k6 refuses "multiple execution config shortcuts".
            let max_duration = self.duration.unwrap_or(DEFAULT_MAX_DURATION);
            c.keep(check_count(&path("vus"), vus).and_then(|n| whole(&path("vus"), n)));
            c.keep(
                check_count(&path("iterations"), iterations)
                    .and_then(|n| whole(&path("iterations"), n)),
            );
            if c.is_empty() {
                c.keep(check_pool(&path("iterations"), vus, iterations));
            }
            if let Some(d) = self.duration {
                c.keep(check_length(&path("max_duration"), d));
            }
            ExecutorConfig::SharedIterations {
                vus,
                iterations,
                max_duration,
            }
        } else if let Some(duration) = self.duration {
            c.keep(check_count(&path("vus"), vus).and_then(|n| whole(&path("vus"), n)));
            c.keep(check_length(&path("duration"), duration));
            ExecutorConfig::ConstantVus { vus, duration }
        } else {
            c.keep(whole(&path("start_vus"), vus));
            super::check_stage_targets(&self.stages, &path, &mut c);
            ExecutorConfig::RampingVus {
                start_vus: vus,
                stages: self.stages.clone(),
                graceful_ramp_down: DEFAULT_GRACEFUL_RAMP_DOWN,
            }
        };
        c.finish()?;
        let mut table = toml::Table::new();
        executor.write_schedule(&mut table);
        if !script.tags.is_empty() {
            let tags: toml::Table = script
                .tags
                .iter()
                .map(|(k, v)| (k.clone(), toml::Value::from(v.clone())))
                .collect();
            table.insert("tags".into(), toml::Value::Table(tags));
        }
        let scenario = ScenarioConfig {
            name: STAGE_SCENARIO.into(),
            // k6's derived scenario runs the default function.
            exec: "default".into(),
            executor,
            start_time: Duration::ZERO,
            graceful_stop: DEFAULT_GRACEFUL_STOP,
            env: BTreeMap::new(),
            tags: script.tags.clone(),
            segment: ExecutionTuple::full(),
        };
        Ok(Some((scenario, table)))
    }

    /// The overrides that still apply to a k6 script's scenarios when no flag replaced
    /// them: `--vus` only to the scenario the script's shortcuts made (on a ramping-vus
    /// one, its start VUs), never to the script's own `scenarios`.
    pub(crate) fn for_k6_scenarios(&self, script: &K6Script) -> Overrides {
        let mut o = self.clone();
        o.iterations = None;
        o.duration = None;
        o.stages = Vec::new();
        if script.own_scenarios {
            o.vus = None;
        } else {
            o.k6_start_vus = true;
        }
        o
    }
}

/// k6's words for the replacement, printed before the run (k6 warns the same).
pub(crate) fn replaced_warning(source: &toml::Table) -> Option<String> {
    let names: Vec<&String> = source.get("scenarios")?.as_table()?.keys().collect();
    let names = names
        .iter()
        .map(|n| n.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    Some(format!(
        "the command line's --iterations/--duration/--stage replaced the script's scenarios ({names}) entirely, as k6 does"
    ))
}
