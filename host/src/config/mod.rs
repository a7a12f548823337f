//! The run configuration: the plugin's defaults, overlaid by `run.toml` (several
//! `--config` files layered in order: [`layers`]), overlaid by CLI flags, checked and
//! turned into a [`RunConfig`] the executors can trust. Every mistake found is reported
//! at once ([`ConfigErrors`]).

pub(crate) mod args;
pub(crate) mod browser;
pub(crate) mod cpuset;
pub(crate) mod distributed;
pub(crate) mod duration_flag;
pub(crate) mod env_file;
pub(crate) mod executor_config;
pub(crate) mod executor_toml;
pub(crate) mod executors;
pub(crate) mod http;
pub(crate) mod layers;
pub(crate) mod outputs;
pub(crate) mod overrides;
pub(crate) mod regressions;
pub(crate) mod sampling;
pub(crate) mod scenario;
pub(crate) mod schema;
pub(crate) mod secrets;
pub(crate) mod segment;
pub(crate) mod stack;
pub(crate) mod tls;
pub(crate) mod trend_stats;
pub(crate) mod websocket;

#[cfg(test)]
mod ui_tests;

pub(crate) use crate::duration::{format_duration, parse_duration};
pub use crate::table::parse_toml;
pub(crate) use crate::table::{ConfigError, ConfigErrors};
pub(crate) use cpuset::CpuSet;
pub(crate) use http::{H3Mode, Http1Client, HttpOptions};
pub(crate) use outputs::OutputsConfig;
pub use overrides::Overrides;
pub(crate) use sampling::SamplingOptions;
pub(crate) use scenario::{ExecutorConfig, ScenarioConfig, Stage};
pub(crate) use segment::{ExecutionSegment, ExecutionTuple, SegmentSequence};
pub(crate) use stack::{OnServiceExit, StackConfig};
pub(crate) use trend_stats::TrendStat;
pub(crate) use websocket::WebSocketOptions;

use crate::table::{string_map, unknown_message, Collector, TableReader};
use overrides::{ScenarioEdits, ScenarioWrites};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Sections allowed at the top of a run config.
const SECTIONS: &[&str] = &[
    "scenarios",
    "thresholds",
    "env",
    "targets",
    "limits",
    "data",
    "websocket",
    "browser",
    "http",
    "sampling",
    "stack",
    "tls",
    "outputs",
    "distributed",
    "summary",
    "regressions",
    "k6",
];

/// The most iterations per second the arrival-rate scenarios of one run may ask for, in
/// total at their peaks.
pub(crate) const MAX_ARRIVAL_RATE: f64 = 1_000_000.0;

/// Resource limits applied to every VU and request.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Linear memory a VU's plugin instance may use, in bytes.
    pub memory_bytes: u64,
    /// Wall-clock limit on one iteration; the iteration is stopped and counted past it.
    pub iteration_timeout: Duration,
    /// Default timeout of one HTTP request.
    pub request_timeout: Duration,
    /// Largest response body accepted, in bytes.
    pub max_body_bytes: u64,
    /// Consecutive failed iterations (over all VUs) after which the run aborts; 0 = never.
    pub abort_after_failures: u64,
    /// CPU one call into the plugin may use before it is stopped.
    pub cpu_per_call: Duration,
    /// Wall-clock limit of `setup()` and `teardown()`.
    pub setup_timeout: Duration,
    /// How much each VU may write with `log()`.
    pub log: LogLimits,
    /// What a VU's failed `init` does to the run.
    pub init_failures: InitFailures,
}

/// How much a VU may write with `log()` (`[limits] log_lines_per_s`, `log_line_bytes`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogLimits {
    /// Lines per second per VU (a second's worth may come at once); 0 = none.
    pub lines_per_s: f64,
    /// Longest line written; longer ones are cut and marked.
    pub line_bytes: usize,
}

impl Default for LogLimits {
    fn default() -> Self {
        Self {
            lines_per_s: 10.0,
            line_bytes: 4096,
        }
    }
}

/// What a VU's failed `init` does to the run (`[limits] init_failures`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InitFailures {
    /// The run goes on; the VU tries `init` again later, waiting longer each time.
    #[default]
    Retry,
    /// The run stops (exit code 107), still writing every results file.
    Abort,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 64 << 20,
            iteration_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(60),
            max_body_bytes: 16 << 20,
            abort_after_failures: 0,
            cpu_per_call: Duration::from_secs(10),
            setup_timeout: Duration::from_secs(60),
            log: Default::default(),
            init_failures: InitFailures::Retry,
        }
    }
}

/// A checked run configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// Scenarios, in name order; they run at once (each from its `start_time`).
    pub scenarios: Vec<ScenarioConfig>,
    /// `[thresholds]` as written, checked by the thresholds module (without
    /// `allow_missing`).
    pub thresholds: toml::Table,
    /// `[thresholds] allow_missing`: a threshold whose metric got no sample passes, as
    /// in k6, instead of failing.
    pub allow_missing_thresholds: bool,
    /// Environment for every VU (`[env]`, then `-e`).
    pub env: BTreeMap<String, String>,
    /// Targets the plugin may reach besides loopback (`[targets] allow`).
    pub allow: Vec<String>,
    /// Per-VU and per-request limits.
    pub limits: Limits,
    /// Shared data sets: name → file (`[data]`).
    pub data: BTreeMap<String, PathBuf>,
    /// How the host keeps WebSockets alive (`[websocket]`).
    pub websocket: WebSocketOptions,
    /// Browser scenarios (`[browser]`).
    pub browser: browser::BrowserOptions,
    /// Redirects, cookies, source addresses, setup counting (`[http]`).
    pub http: HttpOptions,
    /// What is sampled besides the generator, and how often (`[sampling]`).
    pub sampling: SamplingOptions,
    /// The Compose stack of `run --stack` (`[stack]`).
    pub stack: StackConfig,
    /// The trend columns summary.txt prints (`--summary-trend-stats`, else
    /// `[summary] trend_stats`), in order.
    pub summary_trend_stats: Vec<TrendStat>,
    /// How `https://` and `wss://` connections are made (`[tls]`).
    pub tls: tls::TlsOptions,
    /// How the streaming outputs write (`[outputs]`).
    pub outputs: OutputsConfig,
    /// How a coordinator treats its workers (`[distributed]`).
    pub distributed: distributed::DistributedOptions,
    /// What `host run --baseline` holds against the baseline (`[regressions]`).
    pub regressions: Vec<regressions::Rule>,
    /// The merged TOML this was read from, kept for the results.
    pub source: toml::Table,
    /// The share of the test this process runs (`--execution-segment`, within
    /// `--execution-segment-sequence`); the whole test by default.
    pub segment: ExecutionTuple,
}

impl RunConfig {
    /// An empty config (no scenarios, default limits, loopback only) for looking at a
    /// plugin without running it.
    pub fn default_for_inspection() -> Self {
        Self {
            scenarios: Vec::new(),
            thresholds: toml::Table::new(),
            allow_missing_thresholds: false,
            env: BTreeMap::new(),
            allow: Vec::new(),
            limits: Limits::default(),
            data: BTreeMap::new(),
            websocket: WebSocketOptions::default(),
            browser: browser::parse(&toml::Table::new()).unwrap_or_default(),
            http: HttpOptions::default(),
            sampling: SamplingOptions::default(),
            stack: StackConfig::default(),
            summary_trend_stats: trend_stats::DEFAULT.to_vec(),
            tls: tls::TlsOptions::default(),
            outputs: OutputsConfig::default(),
            distributed: Default::default(),
            regressions: Vec::new(),
            source: toml::Table::new(),
            segment: ExecutionTuple::full(),
        }
    }

    /// Most VUs that can be alive at once over all scenarios (sizes the instance pool).
    pub fn max_vus(&self) -> u64 {
        self.scenarios.iter().map(|s| s.max_vus()).sum()
    }

    /// When the last scenario's schedule ends (without graceful stops).
    pub fn scheduled_end(&self) -> Duration {
        self.scenarios
            .iter()
            .map(|s| s.start_time + s.executor.duration())
            .max()
            .unwrap_or_default()
    }

    /// When the last scenario is over for sure (schedule plus graceful stop).
    pub fn max_end(&self) -> Duration {
        self.scenarios
            .iter()
            .map(|s| s.end_offset())
            .max()
            .unwrap_or_default()
    }
}

/// Overlays `over` on `base`: tables merge key by key, except `scenarios`, which a
/// run config replaces as a whole (a plugin's default scenarios are a suggestion).
pub fn merge(mut base: toml::Table, over: toml::Table) -> toml::Table {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) if key != "scenarios" => {
                for (k, v) in o {
                    b.insert(k, v);
                }
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
    base
}

/// k6's warning when the command line replaced a k6 script's own scenarios
/// (`--iterations`, `--duration`, `--stage`); `None` otherwise.
pub(crate) fn k6_replaced_warning(source: &toml::Table, overrides: &Overrides) -> Option<String> {
    let script = overrides::k6::read(source).ok()??;
    (script.own_scenarios && overrides.replaces_k6_scenarios())
        .then(|| overrides::k6::replaced_warning(source))
        .flatten()
}

/// Reads a merged table, applies the command line's overrides to what it read, and
/// checks the result. Every section is checked even after a mistake, so the error
/// lists all of them (one per section or scenario at most: within one table the first
/// mistake hides the next). The values the overrides set are written back into the
/// table kept as [`RunConfig::source`] (see `overrides`).
pub fn build(mut source: toml::Table, overrides: &Overrides) -> Result<RunConfig, ConfigErrors> {
    let segment = segment::ExecutionTuple::from_flags(
        overrides.execution_segment.as_deref(),
        overrides.execution_segment_sequence.as_deref(),
    )
    .map_err(|e| ConfigError {
        path: "--execution-segment".into(),
        message: e.to_string(),
    });
    // `--stage` replaces the scenarios whole; its own mistake is the only one shown.
    // A k6 script's scenarios follow k6's precedence (`overrides::k6`).
    let staged = match overrides::k6::read(&source)? {
        Some(script) => overrides.k6_scenario(&script)?,
        None => overrides.stage_scenario(&source)?,
    };
    let mut errors = Collector::default();
    for key in source.keys() {
        if !SECTIONS.contains(&key.as_str()) {
            errors.push(ConfigError {
                path: key.clone(),
                message: unknown_message("section", key, SECTIONS),
            });
        }
    }
    let segment = errors.keep(segment).unwrap_or_default();
    let (mut scenarios, written) = match staged {
        Some((scenario, table)) => (vec![scenario], ScenarioWrites::Replaced(table)),
        None => {
            // A k6 script's scenarios take only what k6 lets the flags change.
            let k6_overrides = match overrides::k6::read(&source) {
                Ok(Some(script)) => Some(overrides.for_k6_scenarios(&script)),
                _ => None,
            };
            let (scenarios, edits) = errors
                .keep_all(scenarios(
                    &source,
                    k6_overrides.as_ref().unwrap_or(overrides),
                ))
                .unwrap_or_default();
            (scenarios, ScenarioWrites::Edited(edits))
        }
    };
    for scenario in &mut scenarios {
        scenario.segment = segment.clone();
    }
    if errors.is_empty() {
        errors.keep(check_arrival_rates(&scenarios, &segment));
    }
    let mut env = errors.keep(section_map(&source, "env")).unwrap_or_default();
    overrides.apply_to_env(&mut env);
    let (thresholds, allow_missing_thresholds) =
        errors.keep(thresholds(&source)).unwrap_or_default();
    let mut allow = errors.keep(targets(&source)).unwrap_or_default();
    overrides.apply_to_allow(&mut allow);
    let limits = errors.keep(parse_limits(&source)).unwrap_or_default();
    let data = errors
        .keep(section_map(&source, "data"))
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, PathBuf::from(v)))
        .collect();
    let websocket = errors.keep(websocket::parse(&source)).unwrap_or_default();
    let browser = errors.keep(browser::parse(&source)).unwrap_or_default();
    let http = errors.keep(http::parse(&source)).unwrap_or_default();
    let sampling = match errors.keep(sampling::parse(&source)) {
        Some(mut sampling) => errors
            .keep(sampling.apply_flags(overrides.sampling_flags()))
            .map(|()| sampling)
            .unwrap_or_default(),
        None => SamplingOptions::default(),
    };
    let stack = errors.keep(stack::parse(&source)).unwrap_or_default();
    // The flag is applied before the files are checked, as `[tls]` would have set it.
    let mut tls = match errors.keep(tls::read(&source)) {
        Some(mut tls) => {
            overrides.apply_to_tls(&mut tls);
            errors.keep(tls::check(&tls));
            tls
        }
        None => tls::TlsOptions::default(),
    };
    tls.extra_ca_files.clone_from(&overrides.ca_files);
    let outputs = errors.keep(outputs::parse(&source)).unwrap_or_default();
    let distributed = errors.keep(distributed::parse(&source)).unwrap_or_default();
    let configured_trend_stats = errors.keep(trend_stats::parse_section(&source)).flatten();
    let regressions = errors
        .keep_all(regressions::parse(&source))
        .unwrap_or_default();
    errors.finish()?;
    overrides.write_back(&mut source, written);

    Ok(RunConfig {
        scenarios,
        thresholds,
        allow_missing_thresholds,
        env,
        allow,
        limits,
        data,
        websocket,
        browser,
        http,
        sampling,
        stack,
        // The flag wins over `[summary] trend_stats`, which wins over the default.
        summary_trend_stats: overrides
            .summary_trend_stats
            .clone()
            .or(configured_trend_stats)
            .unwrap_or_else(|| trend_stats::DEFAULT.to_vec()),
        tls,
        outputs,
        distributed,
        regressions,
        source,
        segment,
    })
}

/// The `[scenarios.NAME]` tables, each with the command line's overrides applied, and
/// what those changed in each table; every scenario is read, so a mistake in each is
/// shown.
fn scenarios(
    source: &toml::Table,
    overrides: &Overrides,
) -> Result<(Vec<ScenarioConfig>, ScenarioEdits), ConfigErrors> {
    let table = match source.get("scenarios") {
        Some(toml::Value::Table(t)) if !t.is_empty() => t,
        Some(toml::Value::Table(_)) | None => {
            return Err(ConfigError {
                path: "scenarios".into(),
                message: "no scenario to run; add a [scenarios.NAME] table with an executor".into(),
            }
            .into())
        }
        Some(_) => {
            return Err(ConfigError {
                path: "scenarios".into(),
                message: "must be a table of [scenarios.NAME] tables".into(),
            }
            .into())
        }
    };
    let mut errors = Collector::default();
    let mut scenarios = Vec::new();
    let mut edits = Vec::new();
    for (name, value) in table {
        let Some(table) = value.as_table() else {
            errors.push(ConfigError {
                path: format!("scenarios.{name}"),
                message: "must be a table".into(),
            });
            continue;
        };
        let Some(mut s) = errors.keep(scenario::parse_scenario(name, table)) else {
            continue;
        };
        if let Some(changed) = errors.keep(overrides.apply_to_scenario(&mut s)) {
            edits.push((name.clone(), changed));
            scenarios.push(s);
        }
    }
    errors.finish()?;
    Ok((scenarios, edits))
}

/// `[thresholds]` as written (checked here so its mistakes join the others), and its
/// `allow_missing`.
fn thresholds(source: &toml::Table) -> Result<(toml::Table, bool), ConfigError> {
    let mut thresholds = match source.get("thresholds") {
        None => toml::Table::new(),
        Some(toml::Value::Table(t)) => t.clone(),
        Some(_) => return Err(not_a_table("thresholds")),
    };
    let allow_missing = match thresholds.remove("allow_missing") {
        None => false,
        Some(toml::Value::Boolean(b)) => b,
        Some(other) => {
            return Err(ConfigError {
                path: "thresholds.allow_missing".into(),
                message: format!("must be true or false, got `{other}`"),
            })
        }
    };
    crate::thresholds::parse_thresholds(&thresholds)?;
    Ok((thresholds, allow_missing))
}

/// `[targets] allow`: the URLs the plugin may reach besides loopback.
fn targets(source: &toml::Table) -> Result<Vec<String>, ConfigError> {
    let mut allow = Vec::new();
    let Some(value) = source.get("targets") else {
        return Ok(allow);
    };
    let t = value.as_table().ok_or_else(|| not_a_table("targets"))?;
    let mut r = TableReader::new("targets", t);
    if let Some(list) = t.get("allow") {
        let items = list
            .as_array()
            .ok_or_else(|| r.error("allow", "must be an array of URLs"))?;
        for item in items {
            let url = item
                .as_str()
                .ok_or_else(|| r.error("allow", "must be an array of URL strings"))?;
            allow.push(url.to_string());
        }
    }
    r.string("allow").ok();
    r.finish()?;
    Ok(allow)
}

/// Refuses open-model rates beyond what one host process can start. An iteration with
/// one request costs the host tens of µs of CPU (results/floor.md), so even a large
/// machine starts a few hundred thousand a second; past this limit a run would only
/// count drops.
fn check_arrival_rates(
    scenarios: &[ScenarioConfig],
    segment: &ExecutionTuple,
) -> Result<(), ConfigError> {
    // A segment starts its share of the iterations; the float is only for this bound.
    let length = segment.segment().length();
    let share = length.numer() as f64 / length.denom() as f64;
    let peaks: Vec<(&ScenarioConfig, f64)> = scenarios
        .iter()
        .filter_map(|s| s.executor.peak_rate().map(|r| (s, r * share)))
        .collect();
    let total: f64 = peaks.iter().map(|(_, r)| r).sum();
    // Written so that NaN and infinity are refused too.
    if total <= MAX_ARRIVAL_RATE {
        return Ok(());
    }
    let (worst, rate) = peaks
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("a total above the limit has a scenario");
    let key = match worst.executor {
        ExecutorConfig::ConstantArrivalRate { .. } => "rate",
        _ => "stages",
    };
    let over_all = if peaks.len() > 1 {
        format!(" ({total:.0}/s over all arrival-rate scenarios)")
    } else {
        String::new()
    };
    Err(ConfigError {
        path: format!("scenarios.{}.{key}", worst.name),
        message: format!(
            "a peak of {rate:.0} iterations/s{over_all} is beyond the {MAX_ARRIVAL_RATE:.0}/s \
             one host process can start; lower the rate, or split the load over several host \
             processes (--execution-segment)"
        ),
    })
}

fn parse_limits(source: &toml::Table) -> Result<Limits, ConfigError> {
    let mut limits = Limits::default();
    let Some(value) = source.get("limits") else {
        return Ok(limits);
    };
    let t = value.as_table().ok_or_else(|| not_a_table("limits"))?;
    let mut r = TableReader::new("limits", t);
    if let Some(mb) = r.uint("memory_mb")? {
        if !(1..=4096).contains(&mb) {
            return Err(r.error("memory_mb", "must be between 1 and 4096"));
        }
        limits.memory_bytes = mb << 20;
    }
    if let Some(d) = positive_duration(&mut r, "iteration_timeout")? {
        limits.iteration_timeout = d;
    }
    if let Some(d) = positive_duration(&mut r, "request_timeout")? {
        limits.request_timeout = d;
    }
    if let Some(mb) = r.uint("max_body_mb")? {
        limits.max_body_bytes = mb << 20;
    }
    if let Some(n) = r.uint("abort_after_failures")? {
        limits.abort_after_failures = n;
    }
    if let Some(d) = positive_duration(&mut r, "cpu_per_call")? {
        limits.cpu_per_call = d;
    }
    if let Some(d) = positive_duration(&mut r, "setup_timeout")? {
        limits.setup_timeout = d;
    }
    if let Some(n) = r.number("log_lines_per_s")? {
        limits.log.lines_per_s = n;
    }
    if let Some(n) = r.size("log_line_bytes")? {
        if n == 0 {
            return Err(r.error(
                "log_line_bytes",
                "must be at least 1; to write no lines set log_lines_per_s = 0",
            ));
        }
        limits.log.line_bytes = usize::try_from(n).unwrap_or(usize::MAX);
    }
    limits.init_failures = match r.string("init_failures")?.as_deref() {
        None | Some("retry") => InitFailures::Retry,
        Some("abort") => InitFailures::Abort,
        Some(other) => {
            return Err(r.error(
                "init_failures",
                format!("`{other}` is not a policy; use \"retry\" (the default) or \"abort\""),
            ))
        }
    };
    r.finish()?;
    Ok(limits)
}

/// A limit that must be longer than zero: a zero timeout would fail every request or
/// call at random (whichever the timer beats), never "no limit".
fn positive_duration(
    r: &mut TableReader<'_>,
    key: &'static str,
) -> Result<Option<Duration>, ConfigError> {
    match r.duration(key)? {
        Some(d) if d.is_zero() => Err(r.error(
            key,
            format!(
                "must be longer than 0s (a zero limit would stop everything at once); \
                 leave it out for the default of {}",
                format_duration(default_limit(key))
            ),
        )),
        other => Ok(other),
    }
}

fn default_limit(key: &str) -> Duration {
    let d = Limits::default();
    match key {
        "iteration_timeout" => d.iteration_timeout,
        "request_timeout" => d.request_timeout,
        "cpu_per_call" => d.cpu_per_call,
        _ => d.setup_timeout,
    }
}

fn section_map(source: &toml::Table, name: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    match source.get(name) {
        None => Ok(BTreeMap::new()),
        Some(toml::Value::Table(t)) => string_map(name, t),
        Some(_) => Err(not_a_table(name)),
    }
}

fn not_a_table(name: &str) -> ConfigError {
    ConfigError {
        path: name.to_string(),
        message: format!("must be a table: write it as [{name}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::overrides::STAGE_SCENARIO;
    use super::*;

    /// The one error of a config with one mistake.
    fn only(errors: ConfigErrors) -> ConfigError {
        assert_eq!(errors.0.len(), 1, "{errors}");
        errors.0.into_iter().next().unwrap()
    }

    const PLUGIN_DEFAULT: &str = r#"
        [scenarios.browse]
        executor = "constant-vus"
        vus = 10
        duration = "10s"
        [env]
        A = "1"
    "#;

    #[test]
    fn run_config_replaces_scenarios_and_merges_env() {
        let base = parse_toml(PLUGIN_DEFAULT, "plugin").unwrap();
        let over = parse_toml(
            "[scenarios.x]\nexecutor = \"per-vu-iterations\"\nvus = 2\niterations = 3\n[env]\nB = \"2\"",
            "run.toml",
        )
        .unwrap();
        let config = build(merge(base, over), &Overrides::default()).unwrap();
        assert_eq!(config.scenarios.len(), 1);
        assert_eq!(config.scenarios[0].name, "x");
        assert_eq!(config.env.get("A").map(String::as_str), Some("1"));
        assert_eq!(config.env.get("B").map(String::as_str), Some("2"));
    }

    #[test]
    fn cli_overrides_single_values() {
        let base = parse_toml(PLUGIN_DEFAULT, "plugin").unwrap();
        let overrides = Overrides {
            vus: Some(3),
            duration: Some(Duration::from_secs(2)),
            env: vec![("A".into(), "x".into())],
            ..Default::default()
        };
        let config = build(base, &overrides).unwrap();
        assert_eq!(
            config.scenarios[0].executor,
            ExecutorConfig::ConstantVus {
                vus: 3,
                duration: Duration::from_secs(2)
            }
        );
        assert_eq!(config.env["A"], "x");
    }

    #[test]
    fn iterations_flag_turns_constant_vus_into_shared_iterations() {
        let base = parse_toml(PLUGIN_DEFAULT, "plugin").unwrap();
        let overrides = Overrides {
            iterations: Some(25),
            ..Default::default()
        };
        let config = build(base, &overrides).unwrap();
        assert!(matches!(
            config.scenarios[0].executor,
            ExecutorConfig::SharedIterations {
                vus: 10,
                iterations: 25,
                ..
            }
        ));
    }

    #[test]
    fn zero_timeouts_are_refused_with_the_default_named() {
        for key in [
            "iteration_timeout",
            "request_timeout",
            "cpu_per_call",
            "setup_timeout",
        ] {
            let base = parse_toml(PLUGIN_DEFAULT, "plugin").unwrap();
            let over = parse_toml(&format!("[limits]\n{key} = \"0s\""), "run.toml").unwrap();
            let err = only(build(merge(base, over), &Overrides::default()).unwrap_err());
            assert_eq!(err.path, format!("limits.{key}"));
            assert!(err.message.contains("must be longer than 0s"), "{err}");
            assert!(err.message.contains("default of"), "{err}");
        }
        let base = parse_toml(PLUGIN_DEFAULT, "plugin").unwrap();
        let over = parse_toml("[limits]\nrequest_timeout = \"1ms\"", "run.toml").unwrap();
        let config = build(merge(base, over), &Overrides::default()).unwrap();
        assert_eq!(config.limits.request_timeout, Duration::from_millis(1));
    }

    #[test]
    fn bad_toml_and_unknown_sections_are_explained() {
        let err = parse_toml("[scenarios\n", "run.toml").unwrap_err();
        assert!(err.message.contains("not valid TOML"), "{err}");
        let base = parse_toml(PLUGIN_DEFAULT, "plugin").unwrap();
        let over = parse_toml("[treshold]\nx = 1", "run.toml").unwrap();
        let err = only(build(merge(base, over), &Overrides::default()).unwrap_err());
        assert!(err.message.contains("did you mean `thresholds`"), "{err}");
        let err = only(build(toml::Table::new(), &Overrides::default()).unwrap_err());
        assert!(err.message.contains("no scenario"), "{err}");
    }

    #[test]
    fn arrival_rates_beyond_one_process_are_refused_with_the_limit() {
        let scenario = |name: &str, rate: &str| {
            format!("[scenarios.{name}]\nexecutor = \"constant-arrival-rate\"\nrate = {rate}\nduration = \"2s\"\npre_allocated_vus = 1\n")
        };
        let build_text =
            |text: &str| build(parse_toml(text, "run.toml").unwrap(), &Overrides::default());
        assert!(
            build_text(&scenario("a", "1000000")).is_ok(),
            "the limit itself is allowed"
        );
        let err = only(build_text(&scenario("a", "1e9")).unwrap_err());
        assert_eq!(err.path, "scenarios.a.rate");
        assert!(err.message.contains("1000000000 iterations/s"), "{err}");
        assert!(err.message.contains("beyond the 1000000/s"), "{err}");
        for bad in ["inf", "nan"] {
            assert!(build_text(&scenario("a", bad)).is_err(), "rate = {bad}");
        }
        // Per minute, the same figure is 60 times smaller.
        let per_minute = scenario("a", "6e7").replace("duration", "time_unit = \"1m\"\nduration");
        assert!(build_text(&per_minute).is_ok());
        // Two scenarios under the limit each but over it together.
        let err = only(build_text(&(scenario("a", "6e5") + &scenario("b", "5e5"))).unwrap_err());
        assert!(err.message.contains("1100000/s over all"), "{err}");
        assert_eq!(err.path, "scenarios.a.rate");
        let ramp = "[scenarios.r]\nexecutor = \"ramping-arrival-rate\"\npre_allocated_vus = 1\nstages = [{ duration = \"1s\", target = 2000000 }]\n";
        assert_eq!(
            only(build_text(ramp).unwrap_err()).path,
            "scenarios.r.stages"
        );
    }

    #[test]
    fn stages_replace_every_scenario_with_one_ramping_vus() {
        let base = parse_toml(
            &format!("{PLUGIN_DEFAULT}\n[scenarios.other]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 1\n"),
            "plugin",
        )
        .unwrap();
        let stage = |secs, target| Stage {
            duration: Duration::from_secs(secs),
            target,
        };
        let overrides = Overrides {
            stages: vec![stage(2, 5), stage(1, 0)],
            ..Default::default()
        };
        let config = build(base.clone(), &overrides).unwrap();
        assert_eq!(config.scenarios.len(), 1);
        assert_eq!(config.scenarios[0].name, STAGE_SCENARIO);
        assert_eq!(config.scenarios[0].exec, "default");
        assert!(matches!(
            &config.scenarios[0].executor,
            ExecutorConfig::RampingVus { start_vus: 1, stages, .. } if stages == &vec![stage(2, 5), stage(1, 0)]
        ));
        let with_vus = Overrides {
            vus: Some(4),
            ..overrides.clone()
        };
        let config = build(base, &with_vus).unwrap();
        assert_eq!(config.scenarios[0].executor.max_vus(), 5);
        assert!(matches!(
            config.scenarios[0].executor,
            ExecutorConfig::RampingVus { start_vus: 4, .. }
        ));
        // Scenarios running different plugin scenarios cannot be folded into one.
        let two = parse_toml(
            "[scenarios.a]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"1s\"\nexec = \"x\"\n[scenarios.b]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"1s\"\nexec = \"y\"\n",
            "run.toml",
        )
        .unwrap();
        let err = only(build(two, &overrides).unwrap_err());
        assert_eq!(err.path, "--stage");
        assert!(err.message.contains("(x, y)"), "{err}");
    }

    #[test]
    fn every_section_with_a_mistake_is_reported() {
        let text = "[scenarios.a]\nexecutor = \"constant-vus\"\nvus = -1\nduration = \"1s\"\n\
                    [scenarios.b]\nexecutor = \"constant-vuss\"\n\
                    [limits]\nmemory_mb = 0\n[env]\nX = [1]\n[tresholds]\n\
                    [thresholds]\nhttp_req_duration = [\"p(95)<<5\"]\n";
        let errors =
            build(parse_toml(text, "run.toml").unwrap(), &Overrides::default()).unwrap_err();
        let paths: Vec<&str> = errors.0.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "tresholds",
                "scenarios.a.vus",
                "scenarios.b.executor",
                "env.X",
                "thresholds.http_req_duration[0]",
                "limits.memory_mb",
            ],
            "{errors}"
        );
        let shown = errors.to_string();
        assert!(
            shown.starts_with("6 mistakes; fix each of them:"),
            "{shown}"
        );
        assert!(
            shown.contains("\n  - limits.memory_mb: must be between 1 and 4096"),
            "{shown}"
        );
    }
}

#[cfg(test)]
mod properties;
