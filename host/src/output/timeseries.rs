//! `timeseries.jsonl`: one JSON line per second per metric, written as the run goes
//! (each tick's lines are flushed at once, so nothing grows in memory and an
//! interrupted run keeps every second it had).

use crate::metrics::{MetricDef, MetricId, SeriesMap, Value};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Duration;

/// The tick's samples merged over tags, one value per metric, in id order.
pub(crate) fn per_metric(interval: &SeriesMap) -> BTreeMap<MetricId, Value> {
    let mut out: BTreeMap<MetricId, Value> = BTreeMap::new();
    for ((id, _), value) in interval {
        match out.get_mut(id) {
            Some(merged) => merged.merge(value),
            None => {
                let mut merged = Value::empty(value.kind());
                merged.merge(value);
                out.insert(*id, merged);
            }
        }
    }
    out
}

/// One line of `timeseries.jsonl`.
#[derive(Debug, Serialize)]
pub(crate) struct Line<'a> {
    /// Seconds from the start of the run to the end of this interval.
    pub t: f64,
    /// Unix time of the end of this interval, in seconds.
    pub ts: f64,
    /// Length of the interval in seconds (about 1; the last one may be shorter).
    pub interval_s: f64,
    /// The metric's name.
    pub metric: &'a str,
    /// Its values in the interval.
    #[serde(flatten)]
    pub point: Point,
}

/// A metric's values over one interval.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum Point {
    /// What was counted, and that per second.
    Counter {
        /// The interval's sum.
        count: f64,
        /// Per second.
        rate: f64,
    },
    /// The newest value.
    Gauge {
        /// The value.
        value: f64,
    },
    /// Share of true samples.
    Rate {
        /// passes / (passes + fails).
        rate: f64,
        /// True samples.
        passes: u64,
        /// False samples.
        fails: u64,
    },
    /// The interval's distribution (milliseconds for timings).
    Trend {
        /// Samples.
        count: u64,
        /// Mean.
        avg: f64,
        /// Median.
        p50: f64,
        /// 90th percentile.
        p90: f64,
        /// 95th percentile.
        p95: f64,
        /// 99th percentile.
        p99: f64,
        /// Largest.
        max: f64,
    },
}

impl Point {
    /// The point of a merged value over an interval `secs` long. Values are rounded to
    /// what they can mean: trends to their microsecond (or thousandth), rates to 1e-6.
    pub(crate) fn of(value: &Value, secs: f64) -> Point {
        match value {
            Value::Counter(c) => Point::Counter {
                count: *c,
                rate: round(c / secs.max(1e-9), 3),
            },
            Value::Gauge { value, .. } => Point::Gauge { value: *value },
            Value::Rate { hits, total } => Point::Rate {
                rate: if *total == 0 {
                    0.0
                } else {
                    round(*hits as f64 / *total as f64, 6)
                },
                passes: *hits,
                fails: total - hits,
            },
            Value::Trend(h) => {
                // Trends hold microseconds (or thousandths of a custom unit).
                let q = |p: f64| {
                    if h.is_empty() {
                        0.0
                    } else {
                        h.value_at_quantile(p) as f64 / 1000.0
                    }
                };
                Point::Trend {
                    count: h.len(),
                    avg: if h.is_empty() {
                        0.0
                    } else {
                        round(h.mean() / 1000.0, 3)
                    },
                    p50: q(0.5),
                    p90: q(0.9),
                    p95: q(0.95),
                    p99: q(0.99),
                    max: if h.is_empty() {
                        0.0
                    } else {
                        h.max() as f64 / 1000.0
                    },
                }
            }
        }
    }
}

/// Appends each tick's lines to `timeseries.jsonl`.
pub(crate) struct TimeseriesWriter {
    file: BufWriter<File>,
}

impl TimeseriesWriter {
    /// Creates (truncates) the file.
    pub(crate) fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            file: BufWriter::new(crate::files::create_private(path)?),
        })
    }

    /// Writes one line per metric of the interval `[t - secs, t]` and flushes.
    pub(crate) fn write_tick(
        &mut self,
        t: Duration,
        unix_end: f64,
        secs: f64,
        metrics: &BTreeMap<MetricId, Value>,
        defs: &[MetricDef],
    ) -> std::io::Result<()> {
        for (id, value) in metrics {
            let Some(def) = defs.get(*id as usize) else {
                continue;
            };
            let line = Line {
                t: round(t.as_secs_f64(), 3),
                ts: round(unix_end, 3),
                interval_s: round(secs, 3),
                metric: &def.name,
                point: Point::of(value, secs),
            };
            serde_json::to_writer(&mut self.file, &line)?;
            self.file.write_all(b"\n")?;
        }
        self.file.flush()
    }
}

fn round(v: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (v * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{builtin, Recorder, Registry, TagSet};
    use std::sync::Arc;

    #[test]
    fn one_line_per_metric_merged_over_tags() {
        let registry = Arc::new(Registry::new());
        let r = Recorder::new(registry.clone());
        let a = TagSet::from_pairs([("name", "a")]);
        let b = TagSet::from_pairs([("name", "b")]);
        r.count(builtin::HTTP_REQS, &a, 3.0);
        r.count(builtin::HTTP_REQS, &b, 1.0);
        r.trend(builtin::HTTP_REQ_DURATION, &a, 2_000);
        r.trend(builtin::HTTP_REQ_DURATION, &b, 4_000);
        r.gauge(builtin::VUS, &TagSet::empty(), 5.0);
        r.rate(builtin::CHECKS, &a, true);
        let merged = per_metric(&r.drain());
        assert_eq!(merged.len(), 4);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timeseries.jsonl");
        let mut w = TimeseriesWriter::create(&path).unwrap();
        w.write_tick(Duration::from_secs(2), 1.0e9, 0.5, &merged, &registry.all())
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);
        let reqs = lines.iter().find(|l| l["metric"] == "http_reqs").unwrap();
        assert_eq!(reqs["type"], "counter");
        assert_eq!(reqs["count"], 4.0);
        assert_eq!(reqs["rate"], 8.0, "4 in half a second");
        assert_eq!(reqs["t"], 2.0);
        let dur = lines
            .iter()
            .find(|l| l["metric"] == "http_req_duration")
            .unwrap();
        assert_eq!(dur["count"], 2);
        assert!((dur["avg"].as_f64().unwrap() - 3.0).abs() < 0.01);
        assert!((dur["max"].as_f64().unwrap() - 4.0).abs() < 0.01);
        let vus = lines.iter().find(|l| l["metric"] == "vus").unwrap();
        assert_eq!(vus["value"], 5.0);
        let checks = lines.iter().find(|l| l["metric"] == "checks").unwrap();
        assert_eq!(checks["rate"], 1.0);
    }
}
