//! The value held for one series of a metric, by kind, and how two of them merge.
//! Trends are HDR histograms: merged exactly, never by averaging percentiles.

use hdrhistogram::Histogram;

/// How a metric's samples combine, as in k6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricKind {
    /// A sum.
    Counter,
    /// The last value.
    Gauge,
    /// The share of samples that were true / non-zero.
    Rate,
    /// A distribution.
    Trend,
}

/// The unit a reported figure is in, as summary.json and `host compare` write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Unit {
    /// Milliseconds (timings).
    #[serde(rename = "ms")]
    Millis,
    /// Per second (counter rates).
    #[serde(rename = "/s")]
    PerSecond,
    /// A share, held as 0–1 and shown as a percentage.
    #[serde(rename = "%")]
    Percent,
}

impl Unit {
    /// Its symbol.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Millis => "ms",
            Self::PerSecond => "/s",
            Self::Percent => "%",
        }
    }
}

impl std::fmt::Display for Unit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Significant digits kept by every trend histogram.
pub(crate) const SIGNIFICANT_DIGITS: u8 = 3;

/// A new empty trend histogram (auto-resizing, so it costs only what its range needs).
pub(crate) fn new_histogram() -> Histogram<u64> {
    let mut h = Histogram::new(SIGNIFICANT_DIGITS).expect("3 significant digits are valid");
    h.auto(true);
    h
}

/// The accumulated value of one series.
#[derive(Debug, Clone)]
pub enum Value {
    /// Sum of samples.
    Counter(f64),
    /// Last value and a sequence number saying which is newer.
    Gauge {
        /// The value.
        value: f64,
        /// Larger is newer.
        seq: u64,
    },
    /// Non-zero samples and all samples.
    Rate {
        /// Samples that were true.
        hits: u64,
        /// All samples.
        total: u64,
    },
    /// Distribution of samples in integer units (microseconds for timings,
    /// thousandths for other trends).
    Trend(Box<Histogram<u64>>),
}

impl Value {
    /// An empty value of `kind`.
    pub fn empty(kind: MetricKind) -> Self {
        match kind {
            MetricKind::Counter => Self::Counter(0.0),
            MetricKind::Gauge => Self::Gauge { value: 0.0, seq: 0 },
            MetricKind::Rate => Self::Rate { hits: 0, total: 0 },
            MetricKind::Trend => Self::Trend(Box::new(new_histogram())),
        }
    }

    /// The kind of this value.
    pub fn kind(&self) -> MetricKind {
        match self {
            Self::Counter(_) => MetricKind::Counter,
            Self::Gauge { .. } => MetricKind::Gauge,
            Self::Rate { .. } => MetricKind::Rate,
            Self::Trend(_) => MetricKind::Trend,
        }
    }

    /// Folds `other` (of the same kind) into this value.
    pub fn merge(&mut self, other: &Value) {
        match (self, other) {
            (Self::Counter(a), Self::Counter(b)) => *a += b,
            (Self::Gauge { value, seq }, Self::Gauge { value: v, seq: s }) if *s >= *seq => {
                *value = *v;
                *seq = *s;
            }
            (Self::Rate { hits, total }, Self::Rate { hits: h, total: t }) => {
                *hits += h;
                *total += t;
            }
            (Self::Trend(a), Self::Trend(b)) => {
                // Both auto-resize, so adding cannot fail on range.
                let _ = a.add(&**b);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trends_merge_exactly() {
        let mut a = Value::empty(MetricKind::Trend);
        let mut b = Value::empty(MetricKind::Trend);
        if let (Value::Trend(ha), Value::Trend(hb)) = (&mut a, &mut b) {
            for v in 1..=500u64 {
                ha.record(v).unwrap();
            }
            for v in 501..=1000u64 {
                hb.record(v).unwrap();
            }
        }
        a.merge(&b);
        let Value::Trend(h) = a else { unreachable!() };
        assert_eq!(h.len(), 1000);
        assert_eq!(h.value_at_quantile(0.5), 500);
        assert_eq!(h.max(), 1000);
    }

    #[test]
    fn gauges_keep_the_newest() {
        let mut a = Value::Gauge { value: 1.0, seq: 5 };
        a.merge(&Value::Gauge { value: 2.0, seq: 3 });
        assert!(matches!(a, Value::Gauge { value, .. } if value == 1.0));
        a.merge(&Value::Gauge { value: 3.0, seq: 9 });
        assert!(matches!(a, Value::Gauge { value, .. } if value == 3.0));
    }
}
