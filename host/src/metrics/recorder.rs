//! The hot path of metrics: samples go into one of several shards chosen by the
//! recording thread, so tokio's worker threads never contend on a lock; only the
//! aggregator visits every shard, once a second, and takes what they gathered.

use super::fused::{HttpRecords, ResponseTimes};
use super::registry::{builtin, MetricId, Registry};
use super::series::SeriesMap;
use super::series_gate::{Cost, SeriesGate};
use super::tags::TagSet;
use super::value::{MetricKind, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A series key by reference: looking a series up clones no tag set.
#[derive(Hash)]
struct SeriesRef<'a>(MetricId, &'a TagSet);

impl hashbrown::Equivalent<(MetricId, TagSet)> for SeriesRef<'_> {
    fn equivalent(&self, key: &(MetricId, TagSet)) -> bool {
        self.0 == key.0 && *self.1 == key.1
    }
}

/// Shards per recorder: more than any machine here has worker threads, so each thread
/// gets its own.
const SHARDS: usize = 64;

/// A shard's samples, written by the threads that map to it.
pub struct Shard {
    series: SeriesMap,
    /// HTTP requests, one record each; series once drained.
    http: HttpRecords,
    gate: Arc<SeriesGate>,
}

impl Shard {
    fn new(gate: Arc<SeriesGate>) -> Self {
        Self {
            series: SeriesMap::default(),
            http: HttpRecords::default(),
            gate,
        }
    }

    fn entry(&mut self, id: MetricId, tags: &TagSet, kind: MetricKind) -> &mut Value {
        // The tag set is cloned only the first time a series is seen in a second; a
        // lookup by reference costs a probe, cheaper than an Arc clone and drop.
        let key = SeriesRef(id, tags);
        if !self.series.contains_key(&key) {
            // New this second: the gate says whether it is a series of its own.
            let cost = if kind == MetricKind::Trend {
                Cost::Trend
            } else {
                Cost::Plain
            };
            let tags = self.gate.admit(id, tags, cost);
            return self
                .series
                .entry((id, tags))
                .or_insert_with(|| Value::empty(kind));
        }
        self.series.get_mut(&key).expect("just checked")
    }

    /// An HTTP response: counted, rated as failed unless `expected`, its phases in the
    /// trends, all under `tags` (see [`HttpRecords::response`]).
    pub fn http_response(&mut self, tags: &TagSet, expected: bool, times: &ResponseTimes) {
        let gate = &self.gate;
        self.http.response(tags, expected, times, |t| {
            gate.admit(builtin::HTTP_REQS, t, Cost::HttpResponses)
        });
    }

    /// A request written to a connection (`http_reqs_sent`).
    pub fn http_sent(&mut self, tags: &TagSet) {
        let gate = &self.gate;
        self.http.sent(tags, |t| {
            gate.admit(builtin::HTTP_REQS_SENT, t, Cost::HttpRequests)
        });
    }

    /// A request's bytes on the wire (`data_sent`, `data_received`).
    pub fn http_bytes(&mut self, tags: &TagSet, sent: u64, received: u64) {
        let gate = &self.gate;
        self.http.bytes(tags, sent, received, |t| {
            gate.admit(builtin::HTTP_REQS_SENT, t, Cost::HttpRequests)
        });
    }

    /// Adds to a counter.
    pub fn count(&mut self, id: MetricId, tags: &TagSet, value: f64) {
        if let Value::Counter(c) = self.entry(id, tags, MetricKind::Counter) {
            *c += value;
        }
    }

    /// Adds a sample to a rate.
    pub fn rate(&mut self, id: MetricId, tags: &TagSet, hit: bool) {
        if let Value::Rate { hits, total } = self.entry(id, tags, MetricKind::Rate) {
            *hits += hit as u64;
            *total += 1;
        }
    }

    /// Adds a sample to a trend (microseconds for timings).
    pub fn trend(&mut self, id: MetricId, tags: &TagSet, value: u64) {
        if let Value::Trend(h) = self.entry(id, tags, MetricKind::Trend) {
            // Auto-resizing histograms grow to fit; only values past u64's
            // trackable range fail, and those are clamped.
            if h.record(value).is_err() {
                h.saturating_record(value);
            }
        }
    }

    /// Sets a gauge.
    pub fn gauge(&mut self, id: MetricId, tags: &TagSet, value: f64, seq: u64) {
        if let Some(v) = self.series.get_mut(&SeriesRef(id, tags)) {
            *v = Value::Gauge { value, seq };
            return;
        }
        let tags = self.gate.admit(id, tags, Cost::Plain);
        self.series.insert((id, tags), Value::Gauge { value, seq });
    }
}

/// Where every sample of a run is recorded.
pub struct Recorder {
    registry: Arc<Registry>,
    shards: Vec<Mutex<Shard>>,
    gauge_seq: AtomicU64,
    gate: Arc<SeriesGate>,
}

impl Recorder {
    /// A recorder for the metrics of `registry`.
    pub fn new(registry: Arc<Registry>) -> Self {
        let gate = Arc::new(SeriesGate::default());
        Self {
            registry,
            shards: (0..SHARDS)
                .map(|_| Mutex::new(Shard::new(gate.clone())))
                .collect(),
            gauge_seq: AtomicU64::new(1),
            gate,
        }
    }

    /// The cap on the run's series, and what it folded.
    pub fn gate(&self) -> &SeriesGate {
        &self.gate
    }

    /// The run's metric registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Runs `f` on this thread's shard; several samples can be recorded under one lock.
    pub fn with_shard<R>(&self, f: impl FnOnce(&mut Shard) -> R) -> R {
        let slot = crate::striped::thread_slot() % SHARDS;
        let mut shard = self.shards[slot].lock().unwrap_or_else(|p| p.into_inner());
        f(&mut shard)
    }

    /// Adds to a counter.
    pub fn count(&self, id: MetricId, tags: &TagSet, value: f64) {
        self.with_shard(|s| s.count(id, tags, value));
    }

    /// Adds a sample to a rate.
    pub fn rate(&self, id: MetricId, tags: &TagSet, hit: bool) {
        self.with_shard(|s| s.rate(id, tags, hit));
    }

    /// Adds a sample to a trend.
    pub fn trend(&self, id: MetricId, tags: &TagSet, value: u64) {
        self.with_shard(|s| s.trend(id, tags, value));
    }

    /// Sets a gauge; the newest setting wins across shards.
    pub fn gauge(&self, id: MetricId, tags: &TagSet, value: f64) {
        let seq = self.gauge_seq.fetch_add(1, Ordering::Relaxed);
        self.with_shard(|s| s.gauge(id, tags, value, seq));
    }

    /// Folds a value gathered elsewhere (a worker's interval) into this recorder, as if
    /// its samples had been recorded here; a gauge becomes the newest setting.
    pub fn absorb(&self, id: MetricId, tags: &TagSet, value: Value) {
        let value = match value {
            Value::Gauge { value, .. } => Value::Gauge {
                value,
                seq: self.gauge_seq.fetch_add(1, Ordering::Relaxed),
            },
            other => other,
        };
        self.with_shard(|s| match s.series.get_mut(&SeriesRef(id, tags)) {
            Some(existing) => existing.merge(&value),
            None => {
                let cost = match value {
                    Value::Trend(_) => Cost::Trend,
                    _ => Cost::Plain,
                };
                let tags = s.gate.admit(id, tags, cost);
                match s.series.get_mut(&(id, tags.clone())) {
                    Some(existing) => existing.merge(&value),
                    None => {
                        s.series.insert((id, tags), value);
                    }
                }
            }
        });
    }

    /// Takes every sample gathered since the last call, merged over shards.
    pub fn drain(&self) -> SeriesMap {
        let mut out = SeriesMap::default();
        for shard in &self.shards {
            let (taken, mut http) = {
                let mut shard = shard.lock().unwrap_or_else(|p| p.into_inner());
                (
                    std::mem::take(&mut shard.series),
                    std::mem::take(&mut shard.http),
                )
            };
            http.drain_into(&mut out);
            for (key, value) in taken {
                match out.get_mut(&key) {
                    Some(existing) => existing.merge(&value),
                    None => {
                        out.insert(key, value);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::registry::builtin;

    #[test]
    fn samples_from_many_threads_all_arrive() {
        let recorder = Arc::new(Recorder::new(Arc::new(Registry::new())));
        let tags = TagSet::from_pairs([("scenario", "a")]);
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (r, t) = (recorder.clone(), tags.clone());
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        r.count(builtin::HTTP_REQS, &t, 1.0);
                        r.trend(builtin::HTTP_REQ_DURATION, &t, i);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let drained = recorder.drain();
        let Value::Counter(n) = drained[&(builtin::HTTP_REQS, tags.clone())] else {
            panic!()
        };
        assert_eq!(n, 8000.0);
        let Value::Trend(h) = &drained[&(builtin::HTTP_REQ_DURATION, tags)] else {
            panic!()
        };
        assert_eq!(h.len(), 8000);
        assert!(recorder.drain().is_empty(), "drain takes everything");
    }
}
