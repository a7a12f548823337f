//! What the report's charts need of each second, kept in memory as a few numbers per
//! second (never raw samples), so a long run costs about 60 bytes per second.

use crate::metrics::{builtin, MetricId, Value};
use std::collections::BTreeMap;

/// Intervals shorter than this (in seconds) are not charted once there are others.
const MIN_INTERVAL_S: f64 = 0.5;

/// One second of the run as the charts draw it; `NAN` where there was nothing to measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Second {
    /// Seconds from the start to the end of this interval.
    pub t: f32,
    /// HTTP requests per second.
    pub requests: f32,
    /// Iterations per second.
    pub iterations: f32,
    /// `http_req_duration` median, p95 and p99 (ms).
    pub http: [f32; 3],
    /// `iteration_latency` median, p95 and p99 (ms; open-model scenarios only).
    pub latency: [f32; 3],
    /// Active VUs.
    pub vus: f32,
    /// VUs made.
    pub vus_max: f32,
    /// Failed requests per second (`http_req_failed`).
    pub failed_requests: f32,
    /// Failed iterations per second (`plugin_errors`).
    pub plugin_errors: f32,
    /// Dropped iterations per second.
    pub dropped: f32,
}

/// The per-second points of a run.
#[derive(Debug, Default, Clone)]
pub(crate) struct ChartData {
    /// In time order.
    pub seconds: Vec<Second>,
    /// Each sampled service's CPU and memory, on the same time axis.
    pub services: Vec<(String, crate::sampling::book::Series)>,
}

impl ChartData {
    /// Adds the interval that ended `t` seconds into the run and lasted `secs`. A
    /// sliver (the moment between the last tick and the end) is left out: its
    /// per-second rates would draw a cliff that never happened.
    pub(crate) fn push(&mut self, t: f64, secs: f64, metrics: &BTreeMap<MetricId, Value>) {
        if secs < MIN_INTERVAL_S && !self.seconds.is_empty() {
            return;
        }
        let per_second = |id: MetricId| -> f32 {
            match metrics.get(&id) {
                Some(Value::Counter(c)) => (c / secs.max(1e-9)) as f32,
                Some(Value::Rate { hits, .. }) => (*hits as f64 / secs.max(1e-9)) as f32,
                _ => 0.0,
            }
        };
        let gauge = |id: MetricId| -> f32 {
            match metrics.get(&id) {
                Some(Value::Gauge { value, .. }) => *value as f32,
                _ => f32::NAN,
            }
        };
        let percentiles = |id: MetricId| -> [f32; 3] {
            match metrics.get(&id) {
                Some(Value::Trend(h)) if !h.is_empty() => {
                    [0.5, 0.95, 0.99].map(|q| (h.value_at_quantile(q) as f64 / 1000.0) as f32)
                }
                _ => [f32::NAN; 3],
            }
        };
        self.seconds.push(Second {
            t: t as f32,
            requests: per_second(builtin::HTTP_REQS),
            iterations: per_second(builtin::ITERATIONS),
            http: percentiles(builtin::HTTP_REQ_DURATION),
            latency: percentiles(builtin::ITERATION_LATENCY),
            vus: gauge(builtin::VUS),
            vus_max: gauge(builtin::VUS_MAX),
            failed_requests: per_second(builtin::HTTP_REQ_FAILED),
            plugin_errors: per_second(builtin::PLUGIN_ERRORS),
            dropped: per_second(builtin::DROPPED_ITERATIONS),
        });
    }

    /// Whether any second measured iteration latency (open-model scenarios ran).
    pub(crate) fn has_iteration_latency(&self) -> bool {
        self.seconds.iter().any(|s| !s.latency[0].is_nan())
    }

    /// `(t, value)` pairs of one field, skipping seconds without a value.
    pub(crate) fn points(&self, field: impl Fn(&Second) -> f32) -> Vec<(f32, f32)> {
        self.seconds
            .iter()
            .map(|s| (s.t, field(s)))
            .filter(|(_, v)| v.is_finite())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Recorder, Registry, TagSet};
    use crate::output::timeseries::per_metric;
    use std::sync::Arc;

    #[test]
    fn a_second_holds_rates_percentiles_and_gauges() {
        let r = Recorder::new(Arc::new(Registry::new()));
        let none = TagSet::empty();
        r.count(builtin::HTTP_REQS, &none, 50.0);
        for ms in 1..=100 {
            r.trend(builtin::HTTP_REQ_DURATION, &none, ms * 1000);
        }
        r.rate(builtin::HTTP_REQ_FAILED, &none, true);
        r.rate(builtin::HTTP_REQ_FAILED, &none, false);
        r.gauge(builtin::VUS, &none, 4.0);
        let mut data = ChartData::default();
        data.push(1.0, 0.5, &per_metric(&r.drain()));
        let s = data.seconds[0];
        assert_eq!(s.requests, 100.0);
        assert_eq!(s.failed_requests, 2.0);
        assert_eq!(s.vus, 4.0);
        assert!((s.http[1] - 95.0).abs() < 0.2, "{:?}", s.http);
        assert!(s.vus_max.is_nan());
        assert!(!data.has_iteration_latency());
        assert_eq!(data.points(|s| s.vus_max), vec![]);
        assert_eq!(data.points(|s| s.vus), vec![(1.0, 4.0)]);
        data.push(1.01, 0.01, &BTreeMap::new());
        assert_eq!(data.seconds.len(), 1, "a sliver at the end is not charted");
    }
}
