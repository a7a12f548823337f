//! The flags every run-like command shares (`host run`, `host demo`, `host coordinate`):
//! the configs, the single-value overrides, the environment, the outputs, the samplers
//! and the execution segment; and their value parsers.

use super::value_errors::{plugin_taken_as_value, DashboardError, PluginTakenAsValue, StageError};
use crate::config::args::{duration_arg, key_value};
use crate::config::{parse_duration, Overrides};
use crate::run::RunRequest;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// The flags of a run, flattened into `host run`, `host demo` and `host coordinate`.
#[derive(Args, Debug)]
pub(super) struct CommonArgs {
    /// Run config (TOML) overlaid on the plugin's defaults. Repeatable: files are
    /// layered in order, the later on top. Tables merge key by key at every depth;
    /// arrays and values are replaced whole; [scenarios.NAME] merges into the earlier
    /// scenario of that name, unless it sets another executor (then it replaces it).
    #[arg(short, long)]
    pub(super) config: Vec<PathBuf>,
    /// VUs of every scenario that has a `vus` option (with --stage: the VUs at the
    /// start, 1 without it).
    #[arg(long, env = "K6_VUS")]
    vus: Option<u64>,
    /// Duration of every constant-vus / constant-arrival-rate scenario (`30s`, `1m30s`).
    #[arg(long, value_parser = duration_arg, env = "K6_DURATION")]
    duration: Option<Duration>,
    /// Total iterations (constant-vus scenarios become shared-iterations, as in k6).
    #[arg(long, env = "K6_ITERATIONS")]
    iterations: Option<u64>,
    /// A stage DURATION:TARGET (`30s:100`), repeatable or comma-separated, in order: as
    /// k6's --stage, the scenarios are replaced by one ramping-vus scenario `default`
    /// with these stages.
    #[arg(
        short = 's',
        long = "stage",
        value_name = "DURATION:TARGET",
        value_parser = stage_arg,
        value_delimiter = ',',
        env = "K6_STAGES",
        conflicts_with_all = ["duration", "iterations"]
    )]
    stage: Vec<crate::config::Stage>,
    /// Rate of every constant-arrival-rate scenario (per its time_unit).
    #[arg(long)]
    rate: Option<f64>,
    /// An environment variable for the plugin: -e KEY=VALUE (repeatable; wins over
    /// --env-file and [env]).
    #[arg(short = 'e', long = "env", value_parser = key_value)]
    pub(super) env: Vec<(String, String)>,
    /// A source of the secrets a k6 script reads with `k6/secrets`, as k6's:
    /// `file=PATH` (KEY=VALUE lines), `file=name=NAME,filename=PATH[,default]`,
    /// `env[=prefix=PREFIX][,name=NAME][,default]` (the host's environment variables
    /// PREFIX+NAME). Repeatable; a lone source, or the one marked `default`, answers
    /// `secrets.get()`. A secret's value is redacted from everything the run writes.
    #[arg(long = "secret-source", value_name = "KIND=OPTIONS", value_parser = secret_source_arg)]
    secret_source: Vec<crate::plugin::secrets::SecretSource>,
    /// Environment variables for the plugin from a file: KEY=VALUE lines, `#` comments,
    /// 'single' or "double" quoted values (wins over [env]; -e wins over it).
    #[arg(long, value_name = "FILE")]
    env_file: Option<PathBuf>,
    /// The trend columns summary.txt prints, in order (summary.json keeps them all):
    /// a comma-separated list of avg, min, med, max, p(50), p(90), p(95), p(99),
    /// p(99.9), count.
    #[arg(long, value_name = "LIST", value_parser = trend_stats_arg, env = "K6_SUMMARY_TREND_STATS")]
    summary_trend_stats: Option<TrendColumns>,
    /// Also write the summary to FILE in the JSON shape of k6's --summary-export
    /// (metrics keyed as k6 keys them, `p(95)`, thresholds inline), for the scripts
    /// and CI steps that read k6 summaries.
    #[arg(long, value_name = "FILE", env = "K6_SUMMARY_EXPORT")]
    pub(super) summary_export: Option<PathBuf>,
    /// Accept any server certificate (as `[tls] insecure_skip_verify = true`; the
    /// summary warns that certificates were not verified).
    #[arg(long, env = "K6_INSECURE_SKIP_TLS_VERIFY", value_parser = clap::builder::BoolishValueParser::new())]
    insecure_skip_tls_verify: bool,
    /// Allow a target (scheme://host:port) besides those in the config (repeatable).
    #[arg(long)]
    allow: Vec<String>,
    /// Folder under which the results folder is made (default `results`); or, as in
    /// k6, a streaming output KIND=TARGET: `csv=FILE` and `json=FILE` (k6's formats,
    /// gzipped when FILE ends in .gz), `prometheus-rw=URL` (Prometheus remote write).
    /// Repeatable.
    #[arg(long, value_name = "DIR|KIND=TARGET", value_parser = out_arg, env = "K6_OUT")]
    out: Vec<crate::live::spec::Either>,
    /// Serve a live dashboard of the run at ADDR (default 127.0.0.1:5665), with the
    /// run's metrics in OpenMetrics text at /metrics.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::live::DEFAULT_DASHBOARD, value_parser = dashboard_arg)]
    dashboard: Option<std::net::SocketAddr>,
    /// No progress lines (as k6's -q: the script's console lines are still written).
    #[arg(short, long, env = "K6_QUIET", value_parser = clap::builder::BoolishValueParser::new())]
    pub(super) quiet: bool,
    /// Also write the plugin's `debug` and `trace` log lines (a k6 script's
    /// `console.debug`), as k6's -v.
    #[arg(short, long, env = "K6_VERBOSE", value_parser = clap::builder::BoolishValueParser::new())]
    verbose: bool,
    /// Print each HTTP request and response of the run to stderr, as k6's
    /// --http-debug: headers only, or with their bodies with `--http-debug=full`.
    #[arg(long, value_name = "full", num_args = 0..=1, require_equals = true, default_missing_value = "headers", value_parser = ["headers", "full"], env = "K6_HTTP_DEBUG")]
    http_debug: Option<String>,
    /// Sample this container's CPU, memory, network and block I/O during the run
    /// (name or id; repeatable).
    #[arg(long = "sample-container", value_name = "NAME")]
    sample_container: Vec<String>,
    /// Sample this process's CPU, memory and block I/O during the run: PID or NAME=PID
    /// (repeatable).
    #[arg(long = "sample-pid", value_name = "[NAME=]PID", value_parser = pid_arg)]
    sample_pid: Vec<String>,
    /// Time between two samples of each service (default 1s; at least 1s).
    #[arg(long, value_parser = duration_arg)]
    stats_interval: Option<Duration>,
    /// Run only this share of the test, as k6: `FROM:TO` or `TO` (`1/3:2/3`, `0.5`,
    /// `50%:75%`); processes with the segments of one sequence together run it whole.
    #[arg(long, value_name = "SEGMENT")]
    execution_segment: Option<String>,
    /// Every process's segment boundaries (`0,1/3,2/3,1`), so that all stripe alike.
    #[arg(long, value_name = "POINTS", requires = "execution_segment")]
    execution_segment_sequence: Option<String>,
    /// The store of runs the run is recorded in when it ends (default: runs.db in the
    /// results folder, `results/runs.db`). A store that cannot be written is a warning.
    #[arg(long, value_name = "PATH", env = crate::runs::ENV)]
    store: Option<PathBuf>,
    /// After the run, compare it with its scenario's baseline (`host runs baseline set`;
    /// without one, the previous run of the same plugin and scenarios), or with RUN (an
    /// id in the store, `last`, or a results folder). The `[regressions]` rules of the
    /// config are judged (else every metric, as `host compare`); a regression ends the
    /// run with exit code 98.
    #[arg(long, value_name = "RUN", num_args = 0..=1, value_parser = baseline_arg)]
    baseline: Option<Option<String>>,
}

impl CommonArgs {
    /// Reads --env-file, so that its variables come before the -e ones (which win),
    /// checks that --out names at most one results folder, and sets the secret sources
    /// (checked: each name once, at most one default).
    pub(super) fn read_env_file(&mut self) -> anyhow::Result<()> {
        crate::plugin::secrets::check_sources(&self.secret_source).map_err(anyhow::Error::msg)?;
        crate::plugin::secrets::set_sources(std::mem::take(&mut self.secret_source));
        let folders = self
            .out
            .iter()
            .filter(|o| matches!(o, crate::live::spec::Either::Folder(_)))
            .count();
        if folders > 1 {
            anyhow::bail!(
                "--out names {folders} results folders; give one, and outputs as --out KIND=TARGET (KIND one of {})",
                crate::live::spec::KINDS.join(", ")
            );
        }
        if let Some(path) = self.env_file.take() {
            let mut env = crate::config::env_file::read(&path)?;
            env.append(&mut self.env);
            self.env = env;
        }
        Ok(())
    }

    /// `--store` and `--baseline`, for what follows the run.
    pub(super) fn remember(&self) -> super::remember::Remember {
        super::remember::Remember {
            store: self.store.clone(),
            baseline: self.baseline.clone(),
        }
    }

    /// The run these flags ask for, of `plugin`.
    pub(super) fn request(self, plugin: PathBuf) -> RunRequest {
        // Process-wide, as k6's: the log sink and the HTTP client read them.
        crate::plugin::log::set_verbose(self.verbose);
        crate::net::http::debug::set(match self.http_debug.as_deref() {
            None => crate::net::http::debug::Mode::Off,
            Some("full") => crate::net::http::debug::Mode::Full,
            Some(_) => crate::net::http::debug::Mode::Headers,
        });
        let mut configs = self.config.into_iter();
        let mut results = PathBuf::from("results");
        let mut outputs = Vec::new();
        for out in self.out {
            match out {
                crate::live::spec::Either::Folder(dir) => results = dir,
                crate::live::spec::Either::Output(o) => outputs.push(o),
            }
        }
        RunRequest {
            plugin,
            config: configs.next(),
            overrides: Overrides {
                vus: self.vus,
                duration: self.duration,
                iterations: self.iterations,
                stages: self.stage,
                summary_trend_stats: self.summary_trend_stats.map(|c| c.0),
                insecure_skip_tls_verify: self.insecure_skip_tls_verify,
                config_layers: configs.collect(),
                rate: self.rate,
                env: self.env,
                allow: self.allow,
                sample_containers: self.sample_container,
                sample_pids: self.sample_pid,
                stats_interval: self.stats_interval,
                execution_segment: self.execution_segment,
                execution_segment_sequence: self.execution_segment_sequence,
                ..Overrides::default()
            },
            out: results,
            quiet: self.quiet,
            handle_signals: true,
            watch: None,
            live: crate::live::LiveOptions {
                dashboard: self.dashboard,
                outputs,
                // From a terminal the finished page stays up until Ctrl-C; a run
                // with no terminal (a CI job) has nobody to press it, and ends.
                linger: self.dashboard.is_some() && crate::live::at_a_terminal(),
            },
            remote: None,
        }
    }
}

/// `--secret-source KIND=OPTIONS`, loaded (its file read) as it is parsed.
pub(super) fn secret_source_arg(
    text: &str,
) -> Result<crate::plugin::secrets::SecretSource, String> {
    crate::plugin::secrets::parse_source(text)
}

/// `30s:100`: a stage of the --stage shortcut.
fn stage_arg(text: &str) -> Result<crate::config::Stage, StageError> {
    let (duration, target) = text
        .split_once(':')
        .ok_or_else(|| StageError::Shape(text.to_owned()))?;
    let duration = parse_duration(duration.trim()).map_err(|reason| StageError::Duration {
        text: text.to_owned(),
        reason,
    })?;
    let target = target
        .trim()
        .parse::<u64>()
        .map_err(|_| StageError::Target {
            text: text.to_owned(),
            target: target.to_owned(),
        })?;
    Ok(crate::config::Stage { duration, target })
}

/// The parsed --summary-trend-stats list (a type of its own, so that clap takes the
/// whole list as one value).
#[derive(Debug, Clone)]
struct TrendColumns(Vec<crate::config::TrendStat>);

/// `--summary-trend-stats LIST`.
fn trend_stats_arg(
    text: &str,
) -> Result<TrendColumns, crate::config::trend_stats::TrendStatsError> {
    crate::config::trend_stats::parse_list(text).map(TrendColumns)
}
/// `--baseline [RUN]`: a plugin file after the flag is the plugin, not the run.
fn baseline_arg(text: &str) -> Result<String, PluginTakenAsValue> {
    match plugin_taken_as_value("baseline", text) {
        Some(why) => Err(why),
        None => Ok(text.to_string()),
    }
}

/// `--dashboard ADDR`.
fn dashboard_arg(text: &str) -> Result<std::net::SocketAddr, DashboardError> {
    if let Some(why) = plugin_taken_as_value("dashboard", text) {
        return Err(DashboardError::PluginTaken(why));
    }
    text.parse()
        .map_err(|_| DashboardError::Address(text.to_owned()))
}

/// `--out DIR|KIND=TARGET`.
fn out_arg(text: &str) -> Result<crate::live::spec::Either, crate::live::spec::OutError> {
    crate::live::spec::parse_one(text)
}

/// `--sample-pid [NAME=]PID`, checked here and kept as written. The parser's error is
/// boxed as clap takes it, whatever type `config::sampling` gives it.
fn pid_arg(text: &str) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    crate::config::sampling::parse_pid_target(text)
        .map(|_| text.to_string())
        .map_err(Into::into)
}
