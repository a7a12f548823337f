//! One second of a run as every consumer of the run's seconds reads it: the results
//! files, the progress display, the live outputs, the thresholds, the automatic stops
//! and a distributed run's roles all take a [`Second`] (or the [`SoFar`] inside it),
//! as each of k6's outputs takes the same samples from its output manager. A leaf
//! under everything that reads it, so none of them rebuilds it in a shape of its own.

use super::{Aggregator, Registry, SeriesMap};
use std::time::Duration;

/// The run so far: what a threshold, a summary or an automatic stop judges.
#[derive(Clone, Copy)]
pub(crate) struct SoFar<'a> {
    /// Cumulative series and gauge ranges.
    pub totals: &'a Aggregator,
    /// Metric names and kinds, custom ones included.
    pub registry: &'a Registry,
    /// Time since the run started (turns counts into rates).
    pub elapsed: Duration,
}

/// One second of the run, just folded: the run so far and the interval's own samples.
/// Derefs to its [`SoFar`], so `second.totals` reads as it says.
#[derive(Clone, Copy)]
pub(crate) struct Second<'a> {
    /// The run so far, at the end of this interval.
    pub so_far: SoFar<'a>,
    /// The interval's samples.
    pub interval: &'a SeriesMap,
}

impl<'a> std::ops::Deref for Second<'a> {
    type Target = SoFar<'a>;

    fn deref(&self) -> &SoFar<'a> {
        &self.so_far
    }
}
