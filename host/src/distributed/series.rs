//! A second of samples on the wire and back: a worker names each series (metric ids
//! are its own registry's), a coordinator registers the names in its own registry and
//! folds the values into its recorder, exactly (histograms are added, not averaged).

use super::protocol::{WireSeries, WireValue};
use crate::metrics::value::new_histogram;
use crate::metrics::{builtin, MetricId, MetricKind, Recorder, Registry, SeriesMap, TagSet, Value};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// Gauges a coordinator does not take from a worker as they are: it sums them over its
/// workers itself (one worker's VUs are not the run's).
pub(crate) const SUMMED_GAUGES: [MetricId; 5] = [
    builtin::VUS,
    builtin::VUS_MAX,
    builtin::HTTP_REQS_IN_FLIGHT,
    builtin::WS_SOCKETS_OPEN,
    builtin::SOCKETS_OPEN,
];

/// Turns an interval into wire series. Histograms that cannot be encoded (none can
/// fail into a Vec) would be left out rather than stop the run.
pub(crate) fn encode(interval: &SeriesMap, registry: &Registry) -> Vec<WireSeries> {
    let mut serializer = V2DeflateSerializer::new();
    let mut out = Vec::with_capacity(interval.len());
    for ((id, tags), value) in interval {
        let def = registry.def(*id);
        let value = match value {
            Value::Counter(n) => WireValue::Counter(*n),
            Value::Gauge { value, .. } => WireValue::Gauge(*value),
            Value::Rate { hits, total } => WireValue::Rate(*hits, *total),
            Value::Trend(h) => {
                let mut bytes = Vec::new();
                if serializer.serialize(&**h, &mut bytes).is_err() {
                    continue;
                }
                WireValue::Trend(bytes)
            }
        };
        out.push(WireSeries {
            metric: def.name,
            kind: def.kind,
            // A `k6/secrets` value this worker handed out leaves it redacted: the
            // coordinator, which writes the results, does not know the value.
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), crate::stderr::redact::redact(v).into_owned()))
                .collect(),
            value,
        });
    }
    out
}

/// Why a worker's series could not be taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    /// A histogram's bytes are not HdrHistogram's V2 encoding.
    #[error("series {0}: the histogram cannot be decoded: {1}")]
    Histogram(String, String),
    /// The value does not match the kind, or the name is not a metric name.
    #[error("series {0}: {1}")]
    Invalid(String, String),
}

/// A decoded series, ready to be folded in.
pub(crate) struct Decoded {
    /// Its id in the coordinator's registry.
    pub id: MetricId,
    /// Its tags.
    pub tags: TagSet,
    /// Its value.
    pub value: Value,
}

/// Decodes a worker's series against the coordinator's registry (registering custom
/// metrics it has not seen yet).
pub(crate) fn decode(
    series: Vec<WireSeries>,
    registry: &Registry,
) -> Result<Vec<Decoded>, DecodeError> {
    let mut deserializer = Deserializer::new();
    let mut out = Vec::with_capacity(series.len());
    for s in series {
        let id = registry
            .get_or_register(&s.metric, s.kind)
            .map_err(|e| DecodeError::Invalid(s.metric.clone(), e.to_string()))?;
        let value = match (s.kind, s.value) {
            (MetricKind::Counter, WireValue::Counter(n)) => Value::Counter(n),
            (MetricKind::Gauge, WireValue::Gauge(v)) => Value::Gauge { value: v, seq: 0 },
            (MetricKind::Rate, WireValue::Rate(hits, total)) if hits <= total => {
                Value::Rate { hits, total }
            }
            (MetricKind::Trend, WireValue::Trend(bytes)) => {
                let h: hdrhistogram::Histogram<u64> = deserializer
                    .deserialize(&mut bytes.as_slice())
                    .map_err(|e| DecodeError::Histogram(s.metric.clone(), format!("{e:?}")))?;
                // Into an auto-resizing histogram: merged later with larger values, a
                // decoded one (sized to its own range) would refuse them.
                let mut auto = new_histogram();
                auto.add(&h)
                    .map_err(|e| DecodeError::Histogram(s.metric.clone(), format!("{e:?}")))?;
                Value::Trend(Box::new(auto))
            }
            (kind, value) => {
                return Err(DecodeError::Invalid(
                    s.metric,
                    format!("a {kind:?} metric with a value {value:?}"),
                ))
            }
        };
        out.push(Decoded {
            id,
            tags: TagSet::from_pairs(s.tags),
            value,
        });
    }
    Ok(out)
}

/// Folds decoded series into `recorder`, leaving out the gauges summed elsewhere.
pub(crate) fn absorb(recorder: &Recorder, series: Vec<Decoded>) {
    for d in series {
        if d.value.kind() == MetricKind::Gauge && SUMMED_GAUGES.contains(&d.id) {
            continue;
        }
        recorder.absorb(d.id, &d.tags, d.value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn two_workers_merge_exactly_into_the_coordinator() {
        let worker_registry = Registry::new();
        let custom = worker_registry
            .get_or_register("orders", MetricKind::Counter)
            .unwrap();
        let tags = TagSet::from_pairs([("status", "200")]);
        let mut all = new_histogram();
        let mut intervals = Vec::new();
        for w in 0..2u64 {
            let recorder = Recorder::new(Arc::new(Registry::new()));
            for v in 1..=1000u64 {
                let sample = v * (w + 1) * 37;
                recorder.trend(builtin::HTTP_REQ_DURATION, &tags, sample);
                all.record(sample).unwrap();
            }
            recorder.count(builtin::HTTP_REQS, &tags, 1000.0);
            recorder.rate(builtin::CHECKS, &tags, w == 0);
            recorder.count(custom, &TagSet::empty(), 2.0);
            recorder.gauge(builtin::VUS, &TagSet::empty(), 5.0);
            intervals.push(encode(&recorder.drain(), &worker_registry));
        }
        let registry = Arc::new(Registry::new());
        let coordinator = Recorder::new(registry.clone());
        for wire in intervals {
            absorb(&coordinator, decode(wire, &registry).unwrap());
        }
        let merged = coordinator.drain();
        let Value::Trend(h) = &merged[&(builtin::HTTP_REQ_DURATION, tags.clone())] else {
            panic!("no trend")
        };
        assert_eq!(h.len(), all.len());
        for q in [0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
            assert_eq!(h.value_at_quantile(q), all.value_at_quantile(q), "q={q}");
        }
        assert!(
            matches!(merged[&(builtin::HTTP_REQS, tags.clone())], Value::Counter(n) if n == 2000.0)
        );
        assert!(matches!(
            merged[&(builtin::CHECKS, tags)],
            Value::Rate { hits: 1, total: 2 }
        ));
        let orders = registry.lookup("orders").unwrap();
        assert!(matches!(merged[&(orders, TagSet::empty())], Value::Counter(n) if n == 4.0));
        assert!(
            !merged.contains_key(&(builtin::VUS, TagSet::empty())),
            "VUs are summed over workers, not taken from one"
        );
    }

    #[test]
    fn a_bad_histogram_or_kind_is_refused() {
        let registry = Registry::new();
        let bad = vec![WireSeries {
            metric: "http_req_duration".into(),
            kind: MetricKind::Trend,
            tags: vec![],
            value: WireValue::Trend(vec![1, 2, 3]),
        }];
        assert!(matches!(
            decode(bad, &registry),
            Err(DecodeError::Histogram(..))
        ));
        let mismatch = vec![WireSeries {
            metric: "http_reqs".into(),
            kind: MetricKind::Trend,
            tags: vec![],
            value: WireValue::Counter(1.0),
        }];
        assert!(decode(mismatch, &registry).is_err());
    }
}
