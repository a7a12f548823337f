//! The samples of an HTTP request, gathered as one record per request instead of a
//! dozen series samples. A response is a count, a rate and seven timing trends under
//! one tag set, plus bytes each way and the `sent` count under the request's tag set:
//! looked up one series at a time, that was eleven hash probes per request (two each)
//! under the shard lock. Here it is one probe per tag set, and the shard turns the
//! records into the same series, with the same values, when the aggregator drains it.

use super::registry::{builtin, MetricId};
use super::series::SeriesMap;
use super::tags::TagSet;
use super::value::{new_histogram, Value};
use hdrhistogram::Histogram;
use rustc_hash::FxBuildHasher;

/// The timing phases of one response, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponseTimes {
    /// `http_req_duration`: sending + waiting + receiving.
    pub duration: u64,
    /// `http_req_blocked`.
    pub blocked: u64,
    /// `http_req_connecting`.
    pub connecting: u64,
    /// `http_req_tls_handshaking`.
    pub tls_handshaking: u64,
    /// `http_req_sending`.
    pub sending: u64,
    /// `http_req_waiting`.
    pub waiting: u64,
    /// `http_req_receiving`.
    pub receiving: u64,
}

/// The trends of a response, in the order of [`ResponseTimes`]' fields.
const TRENDS: [MetricId; 7] = [
    builtin::HTTP_REQ_DURATION,
    builtin::HTTP_REQ_BLOCKED,
    builtin::HTTP_REQ_CONNECTING,
    builtin::HTTP_REQ_TLS_HANDSHAKING,
    builtin::HTTP_REQ_SENDING,
    builtin::HTTP_REQ_WAITING,
    builtin::HTTP_REQ_RECEIVING,
];

/// What the responses under one tag set (the request's plus status, expected and
/// proto) added up to: `http_reqs`, `http_req_failed` and the seven trends.
struct Responses {
    count: u64,
    failed: u64,
    trends: [Histogram<u64>; 7],
}

impl Default for Responses {
    fn default() -> Self {
        Self {
            count: 0,
            failed: 0,
            trends: std::array::from_fn(|_| new_histogram()),
        }
    }
}

/// What the requests under one tag set (the request's own) added up to:
/// `http_reqs_sent`, `data_sent` and `data_received`. A series exists only once
/// something was recorded in it, as with samples recorded one by one.
#[derive(Default)]
struct Requests {
    sent: Option<f64>,
    data: Option<(f64, f64)>,
}

/// A shard's HTTP records since the aggregator last took them.
#[derive(Default)]
pub(crate) struct HttpRecords {
    responses: hashbrown::HashMap<TagSet, Responses, FxBuildHasher>,
    requests: hashbrown::HashMap<TagSet, Requests, FxBuildHasher>,
}

impl HttpRecords {
    /// A response: counted, rated as failed unless `expected`, its phases in the
    /// trends, all under `tags`.
    /// `admit` gives the tag set of a series not yet recorded since the last drain.
    pub(crate) fn response(
        &mut self,
        tags: &TagSet,
        expected: bool,
        times: &ResponseTimes,
        admit: impl FnOnce(&TagSet) -> TagSet,
    ) {
        let r = if self.responses.contains_key(tags) {
            self.responses.get_mut(tags).expect("just checked")
        } else {
            self.responses.entry(admit(tags)).or_default()
        };
        r.count += 1;
        r.failed += u64::from(!expected);
        let values = [
            times.duration,
            times.blocked,
            times.connecting,
            times.tls_handshaking,
            times.sending,
            times.waiting,
            times.receiving,
        ];
        for (h, v) in r.trends.iter_mut().zip(values) {
            // Auto-resizing histograms grow to fit; only values past u64's trackable
            // range fail, and those are clamped (as `Shard::trend` does).
            if h.record(v).is_err() {
                h.saturating_record(v);
            }
        }
    }

    /// A request written to a connection (`http_reqs_sent`).
    pub(crate) fn sent(&mut self, tags: &TagSet, admit: impl FnOnce(&TagSet) -> TagSet) {
        let r = self.request(tags, admit);
        *r.sent.get_or_insert(0.0) += 1.0;
    }

    /// A request's bytes on the wire (`data_sent`, `data_received`).
    pub(crate) fn bytes(
        &mut self,
        tags: &TagSet,
        sent: u64,
        received: u64,
        admit: impl FnOnce(&TagSet) -> TagSet,
    ) {
        let r = self.request(tags, admit);
        let data = r.data.get_or_insert((0.0, 0.0));
        data.0 += sent as f64;
        data.1 += received as f64;
    }

    fn request(&mut self, tags: &TagSet, admit: impl FnOnce(&TagSet) -> TagSet) -> &mut Requests {
        if self.requests.contains_key(tags) {
            return self.requests.get_mut(tags).expect("just checked");
        }
        self.requests.entry(admit(tags)).or_default()
    }

    /// Turns the records into series, merged into `out`.
    pub(crate) fn drain_into(&mut self, out: &mut SeriesMap) {
        for (tags, r) in self.responses.drain() {
            merge(
                out,
                builtin::HTTP_REQS,
                &tags,
                Value::Counter(r.count as f64),
            );
            let rate = Value::Rate {
                hits: r.failed,
                total: r.count,
            };
            merge(out, builtin::HTTP_REQ_FAILED, &tags, rate);
            for (id, h) in TRENDS.into_iter().zip(r.trends) {
                merge(out, id, &tags, Value::Trend(Box::new(h)));
            }
        }
        for (tags, r) in self.requests.drain() {
            if let Some(sent) = r.sent {
                merge(out, builtin::HTTP_REQS_SENT, &tags, Value::Counter(sent));
            }
            if let Some((sent, received)) = r.data {
                merge(out, builtin::DATA_SENT, &tags, Value::Counter(sent));
                merge(out, builtin::DATA_RECEIVED, &tags, Value::Counter(received));
            }
        }
    }
}

/// Folds `value` into the series `(id, tags)` of `out`.
fn merge(out: &mut SeriesMap, id: MetricId, tags: &TagSet, value: Value) {
    match out.get_mut(&(id, tags.clone())) {
        Some(existing) => existing.merge(&value),
        None => {
            out.insert((id, tags.clone()), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Recorder, Registry};
    use std::sync::Arc;

    /// The series the same requests make when recorded sample by sample.
    fn one_by_one(
        recorder: &Recorder,
        tags: &TagSet,
        request: &TagSet,
        expected: bool,
        t: &ResponseTimes,
        io: (u64, u64),
    ) {
        recorder.with_shard(|s| {
            s.count(builtin::HTTP_REQS_SENT, request, 1.0);
            s.count(builtin::HTTP_REQS, tags, 1.0);
            s.rate(builtin::HTTP_REQ_FAILED, tags, !expected);
            s.count(builtin::DATA_SENT, request, io.0 as f64);
            s.count(builtin::DATA_RECEIVED, request, io.1 as f64);
            let values = [
                t.duration,
                t.blocked,
                t.connecting,
                t.tls_handshaking,
                t.sending,
                t.waiting,
                t.receiving,
            ];
            for (id, v) in TRENDS.into_iter().zip(values) {
                s.trend(id, tags, v);
            }
        });
    }

    fn fused(
        recorder: &Recorder,
        tags: &TagSet,
        request: &TagSet,
        expected: bool,
        t: &ResponseTimes,
        io: (u64, u64),
    ) {
        recorder.with_shard(|s| {
            s.http_sent(request);
            s.http_response(tags, expected, t);
            s.http_bytes(request, io.0, io.1);
        });
    }

    /// Every value of every series, as text, in a stable order.
    fn spelled(series: &SeriesMap) -> Vec<String> {
        let mut out: Vec<String> = series
            .iter()
            .map(|((id, tags), v)| {
                let v = match v {
                    Value::Trend(h) => format!(
                        "trend n={} min={} max={} p50={} p99={} mean={}",
                        h.len(),
                        h.min(),
                        h.max(),
                        h.value_at_quantile(0.5),
                        h.value_at_quantile(0.99),
                        h.mean()
                    ),
                    other => format!("{other:?}"),
                };
                format!("{id} {tags} {v}")
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_same_series_and_values_as_samples_one_by_one() {
        let request = TagSet::from_pairs([("name", "/"), ("method", "GET")]);
        let ok = request.with([("status", "200"), ("expected_response", "true")]);
        let bad = request.with([("status", "503"), ("expected_response", "false")]);
        let a = Recorder::new(Arc::new(Registry::new()));
        let b = Recorder::new(Arc::new(Registry::new()));
        for i in 0..500u64 {
            let (tags, expected) = if i % 7 == 0 {
                (&bad, false)
            } else {
                (&ok, true)
            };
            let t = ResponseTimes {
                duration: 900 + i * 13,
                blocked: i % 3,
                connecting: if i == 0 { 120 } else { 0 },
                tls_handshaking: 0,
                sending: 5 + i % 11,
                waiting: 800 + i * 12,
                receiving: 1 + i % 5,
            };
            one_by_one(&a, tags, &request, expected, &t, (40 + i, 200 + 2 * i));
            fused(&b, tags, &request, expected, &t, (40 + i, 200 + 2 * i));
        }
        // A sent request with no response yet: its sent count only.
        let pending = TagSet::from_pairs([("name", "/slow")]);
        a.count(builtin::HTTP_REQS_SENT, &pending, 1.0);
        b.with_shard(|s| s.http_sent(&pending));
        let (a, b) = (a.drain(), b.drain());
        assert_eq!(a.len(), 2 * 9 + 3 + 1);
        assert_eq!(spelled(&a), spelled(&b));
    }

    #[test]
    fn merged_with_samples_of_the_same_series() {
        let tags = TagSet::from_pairs([("status", "0")]);
        let r = Recorder::new(Arc::new(Registry::new()));
        r.with_shard(|s| {
            s.count(builtin::HTTP_REQS, &tags, 1.0);
            s.http_response(&tags, false, &ResponseTimes::default());
        });
        let drained = r.drain();
        assert!(matches!(
            drained[&(builtin::HTTP_REQS, tags.clone())],
            Value::Counter(n) if n == 2.0
        ));
        assert!(matches!(
            drained[&(builtin::HTTP_REQ_FAILED, tags)],
            Value::Rate { hits: 1, total: 1 }
        ));
        assert!(r.drain().is_empty(), "drain takes the records too");
    }
}
