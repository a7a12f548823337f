//! What every live output reads each second: the [`Frame`] derived once from the run's
//! [`Second`] for all of them. A leaf under the outputs, so that `mod.rs` (which drives
//! them) and they do not import each other.

use crate::metrics::{MetricDef, Second, SeriesMap, TagSet, Value};
use crate::thresholds::Evaluator;

/// A sampled service's newest figures.
pub(crate) type ServiceNow = crate::sampling::book::Latest;

/// One second of the run with what every output derives from it once.
pub(crate) struct Frame<'a> {
    /// The second, as every consumer of the run's seconds gets it.
    pub second: Second<'a>,
    /// The run's thresholds, judged on the totals so far.
    pub thresholds: &'a Evaluator,
    /// Each sampled service's newest figures.
    pub services: Vec<ServiceNow>,
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
        series_of(self.second.interval, &self.defs)
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
