//! One series' aggregate over one second, as the CSV and JSON outputs write it: the
//! value k6 would give a sample of that metric (a counter's sum, a gauge's value, a
//! rate's share, a trend's mean in ms) and the rest of the aggregate as metadata
//! (a trend's count and percentiles, a rate's passes and fails).

use crate::metrics::Value;

/// A series' figures over one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// The metric value column: sum, value, share or mean.
    pub value: f64,
    /// The other figures, in a fixed order (empty for counters and gauges).
    pub metadata: Vec<(&'static str, f64)>,
}

impl Aggregate {
    /// The aggregate of `value`; trend values are in microseconds (or thousandths) and
    /// come out in milliseconds (or units).
    pub fn of(value: &Value) -> Aggregate {
        match value {
            Value::Counter(c) => Aggregate {
                value: *c,
                metadata: Vec::new(),
            },
            Value::Gauge { value, .. } => Aggregate {
                value: *value,
                metadata: Vec::new(),
            },
            Value::Rate { hits, total } => Aggregate {
                value: if *total == 0 {
                    0.0
                } else {
                    *hits as f64 / *total as f64
                },
                metadata: vec![("passes", *hits as f64), ("fails", (total - hits) as f64)],
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
                Aggregate {
                    value: if h.is_empty() { 0.0 } else { h.mean() / 1000.0 },
                    metadata: vec![
                        ("count", h.len() as f64),
                        ("min", if h.is_empty() { 0.0 } else { ms(h.min()) }),
                        ("med", q(0.5)),
                        ("p90", q(0.9)),
                        ("p95", q(0.95)),
                        ("p99", q(0.99)),
                        ("max", if h.is_empty() { 0.0 } else { ms(h.max()) }),
                    ],
                }
            }
        }
    }

    /// The metadata as k6's CSV writes it: `key=value&key=value`.
    pub fn metadata_text(&self) -> String {
        self.metadata
            .iter()
            .map(|(k, v)| format!("{k}={}", number(*v)))
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// A number as the outputs write it: whole numbers without a fraction, others rounded
/// to the microsecond (1e-6) so that float noise does not show.
pub fn number(v: f64) -> String {
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
