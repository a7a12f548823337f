//! What every live output reads each second: the run loop's [`Tick`] and the
//! [`Frame`] derived from it once. A leaf under the outputs, so that `mod.rs` (which
//! drives them) and they do not import each other.

use crate::metrics::{Aggregator, MetricDef, Registry, SeriesMap, TagSet, Value};
use crate::thresholds::Evaluator;
use std::time::Duration;

/// A sampled service's newest figures.
pub(crate) type ServiceNow = crate::sampling::book::Latest;

/// What the run loop hands over each second.
pub(crate) struct Tick<'a> {
    /// Time since the run started, at the end of this interval.
    pub elapsed: Duration,
    /// The interval's samples.
    pub interval: &'a SeriesMap,
    /// The run's totals so far (and gauges' ranges).
    pub aggregator: &'a Aggregator,
    /// Metric names and kinds.
    pub registry: &'a Registry,
    /// The run's thresholds, judged on the totals so far.
    pub thresholds: &'a Evaluator,
    /// Each sampled service's newest figures.
    pub services: Vec<ServiceNow>,
}

/// A tick with what every output derives from it once.
pub(crate) struct Frame<'a> {
    /// The tick.
    pub tick: &'a Tick<'a>,
    /// Length of the interval, seconds.
    pub secs: f64,
    /// Unix time of the interval's end, seconds.
    pub unix: f64,
    /// Every metric's definition, by id.
    pub defs: Vec<MetricDef>,
}

impl Frame<'_> {
    /// The interval's series in a stable order (metric name, then tags).
    pub(crate) fn series(&self) -> Vec<(&MetricDef, &TagSet, &Value)> {
        series_of(self.tick.interval, &self.defs)
    }
}

/// `map`'s series with their definitions, by metric name then tags.
pub(crate) fn series_of<'m>(
    map: &'m SeriesMap,
    defs: &'m [MetricDef],
) -> Vec<(&'m MetricDef, &'m TagSet, &'m Value)> {
    let mut rows: Vec<_> = map
        .iter()
        .filter_map(|((id, tags), v)| Some((defs.get(*id as usize)?, tags, v)))
        .collect();
    rows.sort_by(|a, b| a.0.name.cmp(&b.0.name).then_with(|| a.1.cmp(b.1)));
    rows
}
