//! Folds the recorder's shards once a tick into the run's totals and hands out the
//! tick's own samples (for time series and live progress).

use super::recorder::Recorder;
use super::registry::MetricId;
use super::series::SeriesMap;
use super::value::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Owns the run's cumulative metrics; the only reader across shards.
pub struct Aggregator {
    recorder: Arc<Recorder>,
    totals: SeriesMap,
    gauge_range: HashMap<MetricId, (f64, f64)>,
}

impl Aggregator {
    /// An aggregator over `recorder`.
    pub fn new(recorder: Arc<Recorder>) -> Self {
        Self {
            recorder,
            totals: SeriesMap::default(),
            gauge_range: HashMap::new(),
        }
    }

    /// Takes what the shards gathered since the last tick, adds it to the totals and
    /// returns it.
    pub fn tick(&mut self) -> SeriesMap {
        let interval = self.recorder.drain();
        for (key, value) in &interval {
            if let Value::Gauge { value: v, .. } = value {
                let range = self.gauge_range.entry(key.0).or_insert((*v, *v));
                range.0 = range.0.min(*v);
                range.1 = range.1.max(*v);
            }
            match self.totals.get_mut(key) {
                Some(total) => total.merge(value),
                None => {
                    self.totals.insert(key.clone(), value.clone());
                }
            }
        }
        interval
    }

    /// Everything recorded so far.
    pub fn totals(&self) -> &SeriesMap {
        &self.totals
    }

    /// Smallest and largest value a gauge has had at a tick.
    pub fn gauge_range(&self, id: MetricId) -> Option<(f64, f64)> {
        self.gauge_range.get(&id).copied()
    }

    /// The recorder this aggregator drains.
    pub fn recorder(&self) -> &Arc<Recorder> {
        &self.recorder
    }
}
