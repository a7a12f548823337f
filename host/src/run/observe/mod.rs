//! What runs beside the executors each second and once at the end, as k6's outputs
//! beside its output manager: each consumer of the aggregator's ticks (the results
//! files, the progress display, the resource sampling, the live outputs, a distributed
//! role, the stack's watch, the automatic stops) is an [`Observer`], and the run's
//! drive and finish each go once over the [`Observers`] assembled from the request.
//!
//! The order of the set is the order of effects: the distributed role folds its
//! workers' seconds before anything reads them, the results are written before the
//! dashboard links to them, and the automatic stops judge a second only after every
//! output has it.

mod guards;
mod observer;
mod outputs;
mod roles;

use crate::executor::ExecutorReport;
use crate::metrics::Second;
use crate::summary::Summary;
pub(crate) use observer::{Ending, Observer, Scope};
pub(crate) use outputs::Outputs;
use std::collections::BTreeMap;

/// A run's observers, in the order their effects must happen.
pub(crate) struct Observers(Vec<Box<dyn Observer>>);

impl Observers {
    /// The set for a run, assembled once: the distributed role and the stack's watch
    /// from the request, then the outputs (resources, results, progress, live
    /// outputs), then the automatic stops.
    pub(crate) fn assemble(
        remote: Option<&crate::run::remote::RemoteRole>,
        watch: Option<&crate::control::Watch>,
        outputs: Outputs,
    ) -> Self {
        let mut set: Vec<Box<dyn Observer>> = Vec::new();
        if let Some(r) = remote {
            set.push(Box::new(roles::RemoteObserver::new(r.0.clone())));
        }
        if let Some(w) = watch {
            set.push(Box::new(roles::WatchObserver::new(w.clone())));
        }
        outputs.into_observers(&mut set);
        guards::push(&mut set);
        Observers(set)
    }

    /// See [`Observer::start`].
    pub(crate) fn start(&mut self, scope: &Scope<'_>) {
        self.0.iter_mut().for_each(|o| o.start(scope));
    }

    /// See [`Observer::before_tick`].
    pub(crate) fn before_tick(&mut self, scope: &Scope<'_>) {
        self.0.iter_mut().for_each(|o| o.before_tick(scope));
    }

    /// See [`Observer::tick`].
    pub(crate) fn tick(&mut self, scope: &Scope<'_>, second: &Second<'_>) {
        self.0.iter_mut().for_each(|o| o.tick(scope, second));
    }

    /// See [`Observer::stopped`].
    pub(crate) fn stopped(&mut self) {
        self.0.iter_mut().for_each(|o| o.stopped());
    }

    /// See [`Observer::last_tick`].
    pub(crate) fn last_tick(
        &mut self,
        scope: &Scope<'_>,
        second: &Second<'_>,
        reports: &BTreeMap<String, ExecutorReport>,
    ) {
        self.0
            .iter_mut()
            .for_each(|o| o.last_tick(scope, second, reports));
    }

    /// See [`Observer::annotate`].
    pub(crate) fn annotate(&mut self, summary: &mut Summary, end: &mut Ending<'_>) {
        self.0.iter_mut().for_each(|o| o.annotate(summary, end));
    }

    /// See [`Observer::finish`].
    pub(crate) fn finish(&mut self, summary: &Summary, end: &mut Ending<'_>) {
        self.0.iter_mut().for_each(|o| o.finish(summary, end));
    }

    /// See [`Observer::close`]; in order.
    pub(crate) async fn close(self) {
        for o in self.0 {
            o.close().await;
        }
    }
}
