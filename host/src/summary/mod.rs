//! The run's summary: what `summary.json` holds and `summary.txt` prints. Built once at
//! the end from the aggregator's totals; the schema is documented in results/README.md.

pub(crate) mod service_events;
pub(crate) mod setup;
mod warnings;
pub(crate) mod workers;

use crate::config::RunConfig;
use crate::control::StopReason;
use crate::executor::{ExecutorReport, ScenarioCtx};
use crate::metrics::summary::{checks, summarize, MetricSummary, Stats};
use crate::metrics::{builtin, Aggregator, Registry, Value};
use crate::plugin::{PluginFile, PluginInfo};
use crate::vu::errors::{ErrorEntry, ErrorLog};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The version of summary.json's shape this host writes (`schema`), raised when a
/// field changes meaning or goes away, so a reader can tell the file is not its own.
pub const SCHEMA: u32 = 1;

/// How a run ended, as `status` in summary.json.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// It went to its planned end.
    Completed,
    /// It went to its end but measured nothing (no iteration succeeded, or every
    /// request was denied).
    Failed,
    /// Ctrl-C or a signal stopped it.
    Interrupted,
    /// A threshold, the plugin or a service of the stack stopped it early.
    Aborted,
}

impl RunStatus {
    /// Its name, as written in summary.json.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Interrupted => "interrupted",
            Self::Aborted => "aborted",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything `summary.json` holds.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Summary {
    /// Schema version of this file.
    pub schema: u32,
    /// The host that ran the test.
    pub host: HostInfo,
    /// The plugin that was run.
    pub plugin: PluginSummary,
    /// The machine it ran on.
    pub machine: Machine,
    /// UTC start, RFC 3339.
    pub started_at: String,
    /// Seconds from the first scenario's start to the end.
    pub duration_s: f64,
    /// Seconds the VUs made before the start took to initialise (their `init`), before
    /// `duration_s` began.
    #[serde(default)]
    pub vus_init_s: f64,
    /// How the run ended.
    pub status: RunStatus,
    /// Why it stopped early.
    pub stop_reason: Option<StopReason>,
    /// Why the run measured nothing (no iteration succeeded, every request denied).
    pub failure: Option<String>,
    /// What makes the figures mean less than they seem (such as dropped iterations).
    pub warnings: Vec<String>,
    /// The merged run config.
    pub config: serde_json::Value,
    /// Per scenario: iterations by outcome, VUs, stages.
    pub scenarios: BTreeMap<String, ScenarioSummary>,
    /// HTTP requests by fate.
    pub http: HttpCounts,
    /// TLS handshakes by version and cipher suite (absent without TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<crate::net::tls::TlsSummary>,
    /// Connections opened by HTTP version, their TLS handshakes, and the origins that
    /// moved to HTTP/3 on `Alt-Svc` (absent without HTTP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<crate::net::conn_counts::ConnectionSummary>,
    /// Failed gRPC calls by status, with the first message of each (absent without
    /// failed calls).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grpc_failures: Vec<crate::net::grpc::failures::GrpcFailure>,
    /// Every metric with samples.
    pub metrics: BTreeMap<String, MetricSummary>,
    /// The sub-metrics thresholds name (`http_req_duration{name:static}`) and
    /// `http_req_duration{expected_response:true}`, as k6 summarises them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub submetrics: BTreeMap<String, MetricSummary>,
    /// Checks by name.
    pub checks: Vec<CheckSummary>,
    /// Each threshold's verdict, in config order.
    pub thresholds: Vec<crate::thresholds::ThresholdOutcome>,
    /// Distinct plugin failures, most frequent first.
    pub plugin_errors: Vec<ErrorEntry>,
    /// Failures beyond the distinct ones listed.
    pub plugin_errors_unlisted: u64,
    /// What became of the plugin's `log()` lines.
    pub log: crate::plugin::log::LogCounts,
    /// Services of the run's stack that died during the run (`run --stack`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_events: Vec<service_events::ServiceEvent>,
    /// Requests of `setup()` and `teardown()`, and whether the totals count them.
    pub setup: setup::SetupSummary,
    /// What `setup()` returned (JSON), for k6's shapes, which carry it as `setup_data`;
    /// not in summary.json (it may be large, and it is the plugin's, not a figure).
    #[serde(skip)]
    pub setup_data: Option<String>,
    /// Figures per method + `name`, busiest first (at most 200, then `other`).
    pub endpoints: Vec<crate::metrics::endpoints::Endpoint>,
    /// Whether the generator was the bottleneck, on its own evidence (its CPU, late
    /// starts): when it was, the figures are a lower bound of the target's capacity,
    /// not its ceiling.
    pub generator_saturated: crate::sampling::SaturationVerdict,
    /// Whether every VU was busy waiting on the target (`vus_exhausted`): the target
    /// saturated, or the VU pool was too small for its latency; never the generator's
    /// fault.
    #[serde(default)]
    pub target_saturated: crate::sampling::SaturationVerdict,
    /// Who was the bottleneck (`none`, `target`, `vu_pool`, `generator`), the figures
    /// of both sides, and the verdict in words.
    #[serde(default)]
    pub bottleneck: crate::sampling::Bottleneck,
    /// Resource figures of every sampled service, the generator included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<crate::sampling::StackSummary>,
    /// Each worker of a distributed run (`host coordinate`); absent in a plain run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<workers::WorkerSummary>,
    /// The trend columns summary.txt prints (`--summary-trend-stats`); summary.json
    /// keeps every figure whatever they are.
    #[serde(skip)]
    pub trend_stats: Vec<crate::config::TrendStat>,
}

/// The host.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct HostInfo {
    /// `host`.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The contract it implements.
    pub wit: String,
}

/// The plugin.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct PluginSummary {
    /// From `describe()`.
    pub name: String,
    /// From `describe()`.
    pub version: String,
    /// From `describe()`.
    pub description: String,
    /// The file.
    #[serde(flatten)]
    pub file: PluginFile,
}

/// The machine.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Machine {
    /// Host name.
    pub hostname: String,
    /// Operating system.
    pub os: String,
    /// CPU architecture.
    pub arch: String,
    /// Logical CPUs.
    pub cpus: usize,
}

/// One scenario's outcome.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ScenarioSummary {
    /// Executor name.
    pub executor: String,
    /// Plugin scenario run.
    pub exec: String,
    /// Iterations started.
    pub started: u64,
    /// Iterations that ended on their own.
    pub completed: u64,
    /// Of those, how many failed.
    pub failed: u64,
    /// Iterations interrupted by the executor.
    pub interrupted: u64,
    /// Iterations dropped for want of a VU (open model).
    pub dropped: u64,
    /// VUs made.
    pub vus_allocated: u64,
    /// Stages of ramping executors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<crate::executor::StageReport>,
}

/// Requests by fate. Every request written to a connection was answered, failed, or
/// is still in flight: `sent = received + failed + in_flight`.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct HttpCounts {
    /// Requests written to a connection.
    pub sent: u64,
    /// Of those, the ones answered (any status).
    pub received: u64,
    /// Of those answered, the ones with an expected status.
    pub succeeded: u64,
    /// Sent requests that ended without a response the plugin got: timed out, broken
    /// off, interrupted with their iteration, or redirected where it may not go.
    pub failed: u64,
    /// `failed` by error kind (`timeout`, `protocol`, `interrupted`, ...).
    pub errors: BTreeMap<String, u64>,
    /// Requests that failed before they were sent (no connection), by error kind
    /// (`connect`, `timeout`, `interrupted`, ...).
    pub not_sent: BTreeMap<String, u64>,
    /// Requests refused by the allowlist (never sent).
    pub denied: u64,
    /// Requests still in flight when the run ended.
    pub in_flight: u64,
}

/// A check's passes and fails.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct CheckSummary {
    /// Its name.
    pub name: String,
    /// Times it held.
    pub passes: u64,
    /// Times it failed.
    pub fails: u64,
}

/// What [`Summary::build`] reads.
pub struct SummaryInput<'a> {
    /// `describe()`.
    pub info: &'a PluginInfo,
    /// The file.
    pub plugin: &'a PluginFile,
    /// The config.
    pub config: &'a RunConfig,
    /// Wall-clock start.
    pub started_at: SystemTime,
    /// Run length.
    pub elapsed: Duration,
    /// Totals.
    pub aggregator: &'a Aggregator,
    /// Metric names.
    pub registry: &'a Registry,
    /// Scenario counters.
    pub contexts: &'a [Arc<ScenarioCtx>],
    /// Executor reports by scenario.
    pub reports: &'a BTreeMap<String, ExecutorReport>,
    /// Failures.
    pub errors: &'a ErrorLog,
    /// Early stop.
    pub stop_reason: Option<StopReason>,
    /// Requests in flight at the end.
    pub in_flight: i64,
    /// Warnings from the network layer (redirect loops).
    pub net_warnings: Vec<String>,
}

impl Summary {
    /// Builds the summary.
    pub fn build(input: SummaryInput<'_>) -> Summary {
        let totals = input.aggregator.totals();
        let defs = input.registry.all();
        let metrics = summarize(totals, &defs, input.elapsed, |id| {
            input.aggregator.gauge_range(id)
        });
        let submetrics = submetrics(input.config, input.registry, totals, input.elapsed);
        let checks = checks(totals, builtin::CHECKS)
            .into_iter()
            .map(|(name, (passes, fails))| CheckSummary {
                name,
                passes,
                fails,
            })
            .collect();
        let scenarios = input
            .contexts
            .iter()
            .map(|ctx| {
                let s = &ctx.stats;
                let name = ctx.config.name.clone();
                let summary = ScenarioSummary {
                    executor: ctx.config.executor.name().to_string(),
                    exec: ctx.config.exec.clone(),
                    started: s.started.get(),
                    completed: s.completed.get(),
                    failed: s.failed.get(),
                    interrupted: s.interrupted.get(),
                    dropped: s.dropped.load(Ordering::Relaxed),
                    vus_allocated: s.allocated_vus.load(Ordering::Relaxed),
                    stages: input
                        .reports
                        .get(&name)
                        .map(|r| r.stages.clone())
                        .unwrap_or_default(),
                };
                (name, summary)
            })
            .collect();
        let endpoints = crate::metrics::endpoints::endpoints(
            totals,
            input.elapsed,
            crate::metrics::endpoints::MAX_ENDPOINTS,
        );
        let folded = (endpoints.folded > 0)
            .then(|| crate::metrics::endpoints::folded_warning(endpoints.folded));
        let (plugin_errors, unlisted) = input.errors.entries();
        let status = match &input.stop_reason {
            None => RunStatus::Completed,
            Some(StopReason::Interrupted) => RunStatus::Interrupted,
            Some(_) => RunStatus::Aborted,
        };
        let started_at = time::OffsetDateTime::from(input.started_at)
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        Summary {
            schema: SCHEMA,
            host: HostInfo {
                name: "host".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                wit: format!(
                    "{}@{}",
                    crate::plugin::bindings::WIT_PACKAGE,
                    crate::plugin::bindings::WIT_VERSION
                ),
            },
            plugin: PluginSummary {
                name: input.info.name.clone(),
                version: input.info.version.clone(),
                description: input.info.description.clone(),
                file: input.plugin.clone(),
            },
            machine: machine(),
            started_at,
            duration_s: input.elapsed.as_secs_f64(),
            vus_init_s: 0.0,
            status,
            stop_reason: input.stop_reason,
            failure: None,
            warnings: warnings::dropped_iterations(input.contexts)
                .into_iter()
                .chain(input.net_warnings)
                .chain(folded)
                .collect(),
            // Keys kept, values `***`: results are no place for a token.
            config: serde_json::to_value(crate::config::secrets::redacted(&input.config.source))
                .unwrap_or_default(),
            scenarios,
            http: http_counts(totals, input.in_flight),
            tls: None,
            connections: None,
            grpc_failures: Vec::new(),
            metrics,
            submetrics,
            checks,
            thresholds: Vec::new(),
            plugin_errors,
            plugin_errors_unlisted: unlisted,
            log: Default::default(),
            service_events: Vec::new(),
            setup: Default::default(),
            setup_data: None,
            endpoints: endpoints.rows,
            generator_saturated: Default::default(),
            target_saturated: Default::default(),
            bottleneck: Default::default(),
            stack: None,
            workers: Vec::new(),
            trend_stats: input.config.summary_trend_stats.clone(),
        }
    }
}

/// The sub-metric k6 always summarises beside `http_req_duration`.
const EXPECTED_DURATION: &str = "http_req_duration{expected_response:true}";

/// Statistics of each sub-metric a threshold names, plus [`EXPECTED_DURATION`], keyed
/// as written: what k6 lists beside the metrics in its summary.
fn submetrics(
    config: &RunConfig,
    registry: &Registry,
    totals: &crate::metrics::SeriesMap,
    elapsed: Duration,
) -> BTreeMap<String, MetricSummary> {
    let keys = config
        .thresholds
        .keys()
        .map(String::as_str)
        .chain([EXPECTED_DURATION]);
    let mut out = BTreeMap::new();
    for key in keys {
        let Ok((name, selector)) = crate::thresholds::metric_key::parse_metric_key(key) else {
            continue;
        };
        if selector.is_empty() {
            continue;
        }
        let Some(id) = registry.lookup(&name) else {
            continue;
        };
        let def = registry.def(id);
        if let Some(value) = crate::metrics::summary::merged_value(totals, id, def.kind, &selector)
        {
            out.insert(
                key.trim().to_string(),
                MetricSummary {
                    name: key.trim().to_string(),
                    stats: crate::metrics::summary::stats_of(&value, elapsed, None),
                    def: Some(def),
                },
            );
        }
    }
    out
}

/// Requests by fate from the aggregator's totals.
pub(crate) fn http_counts(totals: &crate::metrics::SeriesMap, in_flight: i64) -> HttpCounts {
    let mut c = HttpCounts {
        in_flight: in_flight.max(0) as u64,
        ..Default::default()
    };
    let kind = |tags: &crate::metrics::TagSet| tags.get("error").unwrap_or("other").to_string();
    // Every failure by kind, then the ones never sent taken out of it.
    let mut failures: BTreeMap<String, u64> = BTreeMap::new();
    for ((id, tags), value) in totals {
        let Value::Counter(n) = value else { continue };
        let n = *n as u64;
        match *id {
            builtin::HTTP_REQS_SENT => c.sent += n,
            builtin::HTTP_REQS_DENIED => c.denied += n,
            builtin::HTTP_REQ_ERRORS => *failures.entry(kind(tags)).or_default() += n,
            builtin::HTTP_REQS_UNSENT => *c.not_sent.entry(kind(tags)).or_default() += n,
            builtin::HTTP_REQS if tags.get("status") != Some("0") => {
                c.received += n;
                if tags.get("expected_response") == Some("true") {
                    c.succeeded += n;
                }
            }
            _ => {}
        }
    }
    for (kind, n) in failures {
        let sent = n.saturating_sub(c.not_sent.get(&kind).copied().unwrap_or(0));
        if sent > 0 {
            c.failed += sent;
            c.errors.insert(kind, sent);
        }
    }
    c
}

impl HttpCounts {
    /// Requests never sent for want of a connection (those cut by the run's end left
    /// out) and all requests tried, when most could not reach the target.
    pub(crate) fn unreachable(&self) -> Option<(u64, u64)> {
        let unsent: u64 = self
            .not_sent
            .iter()
            .filter(|(kind, _)| kind.as_str() != "interrupted")
            .map(|(_, n)| n)
            .sum();
        let tried = self.sent + self.not_sent.values().sum::<u64>();
        crate::sampling::saturation::unreachable(unsent, tried)
    }
}

fn machine() -> Machine {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    Machine {
        hostname,
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    }
}

impl Summary {
    /// Records what the run's watch saw, with the requests that failed after each
    /// event, and names each in the warnings. `failed_by_second` holds the failed
    /// requests so far at each second of the run.
    pub fn note_service_events(
        &mut self,
        events: &[crate::control::WatchEvent],
        t0: std::time::Instant,
        failed_by_second: &[(Duration, u64)],
    ) {
        let noted = service_events::service_events(events, t0, failed_by_second, self.http.failed);
        for (event, warning) in noted {
            self.warnings.push(warning);
            self.service_events.push(event);
        }
    }

    /// The figures the saturation verdicts read from this summary.
    pub(crate) fn figures(&self) -> crate::sampling::RunFigures {
        let trend = |name: &str| match self.metrics.get(name).map(|m| &m.stats) {
            Some(Stats::Trend(t)) if t.count > 0 => Some(t.clone()),
            _ => None,
        };
        let latency = ["http_req_duration", "iteration_duration"]
            .iter()
            .find_map(|m| trend(m).map(|t| (m.to_string(), t.min, t.med, t.p95)));
        crate::sampling::RunFigures {
            duration_s: self.duration_s,
            start_lag_p99_ms: trend("iteration_start_lag").map(|t| t.p99),
            latency,
            iteration_avg_ms: trend("iteration_duration").map(|t| t.avg),
            scenarios: self
                .scenarios
                .iter()
                .map(|(name, s)| {
                    let counts = crate::sampling::ScenarioCounts {
                        started: s.started,
                        completed: s.completed,
                        failed: s.failed,
                        dropped: s.dropped,
                    };
                    (name.clone(), counts)
                })
                .collect(),
            unreachable: self.http.unreachable(),
        }
    }
}
