//! What the dashboard page shows, as one JSON object per second: the figures of the
//! last second ("now"), those of the run so far ("totals"), the endpoint table, checks,
//! thresholds, and the sampled services. The last one is built from the summary, so
//! the page ends on the very figures summary.json holds.

use crate::live::frame::{Frame, ServiceNow};
use crate::metrics::endpoints::{endpoints, Endpoint};
use crate::metrics::summary::{checks, merged_value, stats_of, summarize, MetricSummary, Stats};
use crate::metrics::{builtin, MetricKind, TagSet};
use crate::summary::Summary;
use crate::thresholds::ThresholdOutcome;
use serde::Serialize;
use std::collections::BTreeMap;

/// Endpoint rows the page lists.
const ENDPOINT_ROWS: usize = 50;

/// One update of the page.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Snapshot {
    /// The plugin and version.
    pub title: String,
    /// Seconds since the start.
    pub elapsed_s: f64,
    /// Whether the run is over (the last update).
    pub done: bool,
    /// At the end: how it ended (`completed`, `aborted`, ...) and its exit meaning.
    pub status: Option<String>,
    /// The last second.
    pub now: Now,
    /// The run so far.
    pub totals: Totals,
    /// Per endpoint, busiest first.
    pub endpoints: Vec<Endpoint>,
    /// Checks: name, passes, fails.
    pub checks: Vec<Check>,
    /// Each threshold as judged on the totals so far.
    pub thresholds: Vec<Threshold>,
    /// Sampled services' newest CPU and memory.
    pub services: Vec<ServiceNow>,
    /// At the end: the report's path on disk.
    pub report: Option<String>,
}

/// Figures of the last second.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Now {
    /// Requests per second.
    pub rps: f64,
    /// Iterations per second.
    pub iterations_per_s: f64,
    /// Share of failed requests.
    pub failed_share: f64,
    /// `http_req_duration` percentiles, ms.
    pub p50: f64,
    /// 95th percentile, ms.
    pub p95: f64,
    /// 99th percentile, ms.
    pub p99: f64,
}

/// Figures of the run so far (at the end: the summary's).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Totals {
    /// `http_reqs`.
    pub reqs: u64,
    /// Requests per second of the run.
    pub rps: f64,
    /// `iterations`.
    pub iterations: u64,
    /// Failed requests (`http_req_failed` true).
    pub failed: u64,
    /// Their share.
    pub failed_share: f64,
    /// `dropped_iterations`.
    pub dropped: u64,
    /// `plugin_errors`.
    pub plugin_errors: u64,
    /// `vus` (last value).
    pub vus: f64,
    /// `vus_max` (last value).
    pub vus_max: f64,
    /// `http_req_duration` ms: mean and percentiles.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 90th.
    pub p90: f64,
    /// 95th.
    pub p95: f64,
    /// 99th.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// A check's tally.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    /// Its name.
    pub name: String,
    /// Times it held.
    pub passes: u64,
    /// Times it failed.
    pub fails: u64,
}

/// A threshold's standing.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Threshold {
    /// `http_req_duration{name:x}`.
    pub metric: String,
    /// `p(95)<500`.
    pub threshold: String,
    /// Whether it holds.
    pub ok: bool,
    /// `p(95)=12.3ms`.
    pub observed: String,
}

impl Totals {
    /// From every metric's statistics (summary.json's `metrics`).
    pub(crate) fn of(metrics: &BTreeMap<String, MetricSummary>) -> Totals {
        let stats = |name: &str| metrics.get(name).map(|m| &m.stats);
        let count = |name: &str| match stats(name) {
            Some(Stats::Counter { count, .. }) => count.round() as u64,
            _ => 0,
        };
        let gauge = |name: &str| match stats(name) {
            Some(Stats::Gauge { value, .. }) => *value,
            _ => 0.0,
        };
        let mut t = Totals {
            reqs: count("http_reqs"),
            rps: match stats("http_reqs") {
                Some(Stats::Counter { rate, .. }) => *rate,
                _ => 0.0,
            },
            iterations: count("iterations"),
            dropped: count("dropped_iterations"),
            plugin_errors: count("plugin_errors"),
            vus: gauge("vus"),
            vus_max: gauge("vus_max"),
            ..Totals::default()
        };
        if let Some(Stats::Rate { rate, passes, .. }) = stats("http_req_failed") {
            t.failed = *passes;
            t.failed_share = *rate;
        }
        if let Some(Stats::Trend(d)) = stats("http_req_duration") {
            t.avg = d.avg;
            t.p50 = d.med;
            t.p90 = d.p90;
            t.p95 = d.p95;
            t.p99 = d.p99;
            t.max = d.max;
        }
        t
    }
}

fn thresholds_of(outcomes: &[ThresholdOutcome]) -> Vec<Threshold> {
    outcomes
        .iter()
        .map(|o| Threshold {
            metric: o.metric.clone(),
            threshold: o.threshold.clone(),
            ok: o.ok,
            observed: o.observed_text(),
        })
        .collect()
}

/// The snapshot of a running run at `frame`.
pub(crate) fn live(title: &str, frame: &Frame<'_>) -> Snapshot {
    let tick = &frame.second;
    let totals = tick.totals.totals();
    let metrics = summarize(totals, &frame.defs, tick.elapsed, |id| {
        tick.totals.gauge_range(id)
    });
    let all = TagSet::empty();
    let interval = |id, kind| merged_value(tick.interval, id, kind, &all);
    let mut now = Now::default();
    let secs = frame.secs.max(1e-9);
    if let Some(Stats::Counter { count, .. }) = interval(builtin::HTTP_REQS, MetricKind::Counter)
        .map(|v| stats_of(&v, frame.second.elapsed, None))
    {
        now.rps = count / secs;
    }
    if let Some(Stats::Counter { count, .. }) = interval(builtin::ITERATIONS, MetricKind::Counter)
        .map(|v| stats_of(&v, frame.second.elapsed, None))
    {
        now.iterations_per_s = count / secs;
    }
    if let Some(Stats::Rate { rate, .. }) = interval(builtin::HTTP_REQ_FAILED, MetricKind::Rate)
        .map(|v| stats_of(&v, frame.second.elapsed, None))
    {
        now.failed_share = rate;
    }
    if let Some(Stats::Trend(d)) = interval(builtin::HTTP_REQ_DURATION, MetricKind::Trend)
        .map(|v| stats_of(&v, frame.second.elapsed, None))
    {
        now.p50 = d.med;
        now.p95 = d.p95;
        now.p99 = d.p99;
    }
    Snapshot {
        title: title.to_string(),
        elapsed_s: tick.elapsed.as_secs_f64(),
        done: false,
        status: None,
        now,
        totals: Totals::of(&metrics),
        endpoints: endpoints(totals, tick.elapsed, ENDPOINT_ROWS).rows,
        checks: checks(totals, builtin::CHECKS)
            .into_iter()
            .map(|(name, (passes, fails))| Check {
                name,
                passes,
                fails,
            })
            .collect(),
        thresholds: thresholds_of(&frame.thresholds.finish(&tick.so_far)),
        services: frame.services.clone(),
        report: None,
    }
}

/// The last snapshot: the summary's figures, the report's path, and the last second's
/// `now` and services as they were.
pub(crate) fn last(
    previous: Option<&Snapshot>,
    summary: &Summary,
    report: Option<String>,
) -> Snapshot {
    Snapshot {
        title: format!("{} {}", summary.plugin.name, summary.plugin.version),
        elapsed_s: summary.duration_s,
        done: true,
        status: Some(summary.status.as_str().to_string()),
        now: previous.map(|p| p.now.clone()).unwrap_or_default(),
        totals: Totals::of(&summary.metrics),
        endpoints: summary.endpoints.clone(),
        checks: summary
            .checks
            .iter()
            .map(|c| Check {
                name: c.name.clone(),
                passes: c.passes,
                fails: c.fails,
            })
            .collect(),
        thresholds: thresholds_of(&summary.thresholds),
        services: previous.map(|p| p.services.clone()).unwrap_or_default(),
        report,
    }
}

#[cfg(test)]
impl Snapshot {
    /// A snapshot with nothing in it, for tests to fill in.
    pub(crate) fn empty_for_tests() -> Snapshot {
        Snapshot {
            title: String::new(),
            elapsed_s: 0.0,
            done: false,
            status: None,
            now: Now::default(),
            totals: Totals::default(),
            endpoints: Vec::new(),
            checks: Vec::new(),
            thresholds: Vec::new(),
            services: Vec::new(),
            report: None,
        }
    }
}
