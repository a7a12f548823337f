//! End-of-run (or live) statistics of each metric, merged over its series or over the
//! series a tag selector picks (`http_req_duration{name:static}`).

use super::registry::{MetricDef, MetricId};
use super::series::SeriesMap;
use super::tags::TagSet;
use super::value::{MetricKind, Value};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Statistics of one metric.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Stats {
    /// A sum and its rate per second.
    Counter {
        /// The sum.
        count: f64,
        /// Per second of the run.
        rate: f64,
    },
    /// The last value and the range seen.
    Gauge {
        /// Last value.
        value: f64,
        /// Smallest value seen.
        min: f64,
        /// Largest value seen.
        max: f64,
    },
    /// A share of true samples.
    Rate {
        /// hits / total (0 when empty).
        rate: f64,
        /// True samples.
        passes: u64,
        /// False samples.
        fails: u64,
    },
    /// A distribution, in milliseconds for timings.
    Trend(TrendStats),
}

/// Percentiles and moments of a trend.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct TrendStats {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub avg: f64,
    /// Smallest.
    pub min: f64,
    /// Median.
    pub med: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p999: f64,
    /// Largest.
    pub max: f64,
}

impl Stats {
    /// The kind of metric these are the statistics of.
    pub(crate) fn kind(&self) -> MetricKind {
        match self {
            Stats::Counter { .. } => MetricKind::Counter,
            Stats::Gauge { .. } => MetricKind::Gauge,
            Stats::Rate { .. } => MetricKind::Rate,
            Stats::Trend(_) => MetricKind::Trend,
        }
    }

    /// The value a threshold aggregation names (`avg`, `p(95)`, `rate`, `count`, ...).
    pub fn aggregate(&self, trend: &Value, what: &Aggregation) -> Option<f64> {
        match (self, what) {
            (Stats::Counter { count, .. }, Aggregation::Count) => Some(*count),
            (Stats::Counter { rate, .. }, Aggregation::Rate) => Some(*rate),
            (Stats::Gauge { value, .. }, Aggregation::Value) => Some(*value),
            (Stats::Gauge { min, .. }, Aggregation::Min) => Some(*min),
            (Stats::Gauge { max, .. }, Aggregation::Max) => Some(*max),
            (Stats::Rate { rate, .. }, Aggregation::Rate) => Some(*rate),
            (Stats::Trend(t), Aggregation::Avg) => Some(t.avg),
            (Stats::Trend(t), Aggregation::Min) => Some(t.min),
            (Stats::Trend(t), Aggregation::Max) => Some(t.max),
            (Stats::Trend(t), Aggregation::Med) => Some(t.med),
            (Stats::Trend(t), Aggregation::Count) => Some(t.count as f64),
            (Stats::Trend(_), Aggregation::Percentile(p)) => match trend {
                Value::Trend(h) if !h.is_empty() => Some(h.value_at_percentile(*p) as f64 / 1000.0),
                _ => None,
            },
            _ => None,
        }
    }
}

/// An aggregation a threshold can test.
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregation {
    /// Mean of a trend.
    Avg,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Median of a trend.
    Med,
    /// A percentile of a trend, 0 to 100.
    Percentile(f64),
    /// Count of a counter or trend.
    Count,
    /// Rate of a rate metric, or per-second rate of a counter.
    Rate,
    /// Value of a gauge.
    Value,
}

/// One metric's summary.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct MetricSummary {
    /// Name, with the selector for a sub-metric (`http_req_duration{name:x}`).
    pub name: String,
    /// Whether trend values are times (ms) and counters are bytes.
    #[serde(skip)]
    pub def: Option<MetricDef>,
    /// The statistics.
    #[serde(flatten)]
    pub stats: Stats,
}

/// Merges the series of metric `id` whose tags contain `selector`.
pub(crate) fn merged_value(
    totals: &SeriesMap,
    id: MetricId,
    kind: MetricKind,
    selector: &TagSet,
) -> Option<Value> {
    let mut merged: Option<Value> = None;
    for ((metric, tags), value) in totals {
        if *metric != id || !tags.contains_all(selector) {
            continue;
        }
        match &mut merged {
            Some(m) => m.merge(value),
            None => {
                let mut m = Value::empty(kind);
                m.merge(value);
                merged = Some(m);
            }
        }
    }
    merged
}

/// Statistics of a merged value; `elapsed` turns counts into rates and `gauge_range`
/// gives a gauge's extremes.
pub(crate) fn stats_of(value: &Value, elapsed: Duration, gauge_range: Option<(f64, f64)>) -> Stats {
    let secs = elapsed.as_secs_f64().max(1e-9);
    match value {
        Value::Counter(c) => Stats::Counter {
            count: *c,
            rate: c / secs,
        },
        Value::Gauge { value, .. } => {
            let (min, max) = gauge_range.unwrap_or((*value, *value));
            Stats::Gauge {
                value: *value,
                min: min.min(*value),
                max: max.max(*value),
            }
        }
        Value::Rate { hits, total } => Stats::Rate {
            rate: if *total == 0 {
                0.0
            } else {
                *hits as f64 / *total as f64
            },
            passes: *hits,
            fails: total - hits,
        },
        Value::Trend(h) => {
            let ms = |v: u64| v as f64 / 1000.0;
            let q = |p: f64| {
                if h.is_empty() {
                    0.0
                } else {
                    ms(h.value_at_quantile(p))
                }
            };
            Stats::Trend(TrendStats {
                count: h.len(),
                avg: if h.is_empty() { 0.0 } else { h.mean() / 1000.0 },
                min: if h.is_empty() { 0.0 } else { ms(h.min()) },
                med: q(0.5),
                p90: q(0.9),
                p95: q(0.95),
                p99: q(0.99),
                p999: q(0.999),
                max: if h.is_empty() { 0.0 } else { ms(h.max()) },
            })
        }
    }
}

/// Statistics of every metric that has samples, by name.
pub(crate) fn summarize(
    totals: &SeriesMap,
    defs: &[MetricDef],
    elapsed: Duration,
    gauge_range: impl Fn(MetricId) -> Option<(f64, f64)>,
) -> BTreeMap<String, MetricSummary> {
    let mut out = BTreeMap::new();
    for (id, def) in defs.iter().enumerate() {
        let id = id as MetricId;
        if let Some(value) = merged_value(totals, id, def.kind, &TagSet::empty()) {
            out.insert(
                def.name.clone(),
                MetricSummary {
                    name: def.name.clone(),
                    def: Some(def.clone()),
                    stats: stats_of(&value, elapsed, gauge_range(id)),
                },
            );
        }
    }
    out
}

/// Passes and fails of each check, by check name.
pub(crate) fn checks(totals: &SeriesMap, checks_id: MetricId) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for ((id, tags), value) in totals {
        if *id != checks_id {
            continue;
        }
        if let (Some(name), Value::Rate { hits, total }) = (tags.get("check"), value) {
            let entry = out.entry(name.to_string()).or_default();
            entry.0 += hits;
            entry.1 += total - hits;
        }
    }
    out
}
