//! One series' aggregate over one second, as the CSV and JSON outputs write it: the
//! value k6 would give a sample of that metric (a counter's sum, a gauge's value, a
//! rate's share, a trend's mean in ms) and the rest of the aggregate as metadata
//! (a trend's count and percentiles, a rate's passes and fails).

use crate::metrics::summary::{stats_of, Stats};
use crate::metrics::Value;
use std::time::Duration;

/// A series' figures over one interval.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Aggregate {
    /// The metric value column: sum, value, share or mean.
    pub value: f64,
    /// The other figures, in a fixed order (empty for counters and gauges).
    pub metadata: Vec<(&'static str, f64)>,
}

impl Aggregate {
    /// The aggregate of `value`; trend values are in microseconds (or thousandths) and
    /// come out in milliseconds (or units).
    pub(crate) fn of(value: &Value) -> Aggregate {
        // The figures are the summary's own (one place computes a trend's percentiles);
        // only a counter's second keeps its sum rather than a rate.
        match stats_of(value, Duration::from_secs(1), None) {
            Stats::Counter { count, .. } => Aggregate {
                value: count,
                metadata: Vec::new(),
            },
            Stats::Gauge { value, .. } => Aggregate {
                value,
                metadata: Vec::new(),
            },
            Stats::Rate {
                rate,
                passes,
                fails,
            } => Aggregate {
                value: rate,
                metadata: vec![("passes", passes as f64), ("fails", fails as f64)],
            },
            Stats::Trend(t) => Aggregate {
                value: t.avg,
                metadata: vec![
                    ("count", t.count as f64),
                    ("min", t.min),
                    ("med", t.med),
                    ("p90", t.p90),
                    ("p95", t.p95),
                    ("p99", t.p99),
                    ("max", t.max),
                ],
            },
        }
    }

    /// The metadata as k6's CSV writes it: `key=value&key=value`.
    pub(crate) fn metadata_text(&self) -> String {
        self.metadata
            .iter()
            .map(|(k, v)| format!("{k}={}", number(*v)))
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// A number as the outputs write it: whole numbers without a fraction, others rounded
/// to the microsecond (1e-6) so that float noise does not show.
pub(crate) fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let r = (v * 1e6).round() / 1e6;
        format!("{r}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::value::new_histogram;

    #[test]
    fn each_kind_gives_its_k6_value() {
        assert_eq!(Aggregate::of(&Value::Counter(7.0)).value, 7.0);
        let r = Aggregate::of(&Value::Rate { hits: 3, total: 4 });
        assert_eq!(r.value, 0.75);
        assert_eq!(r.metadata_text(), "passes=3&fails=1");
        let mut h = new_histogram();
        h.record(2_000).unwrap();
        h.record(4_000).unwrap();
        let t = Aggregate::of(&Value::Trend(Box::new(h)));
        assert!((t.value - 3.0).abs() < 0.01);
        assert!(
            t.metadata_text().starts_with("count=2&min=2&"),
            "{}",
            t.metadata_text()
        );
        assert_eq!(number(0.1 + 0.2), "0.3");
    }
}
