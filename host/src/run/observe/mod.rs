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
mod outputs;
mod roles;

use crate::config::RunConfig;
use crate::control::RunControl;
use crate::executor::{ExecutorReport, ScenarioCtx};
use crate::metrics::{Aggregator, Registry, SeriesMap};
use crate::output::WriteFailure;
use crate::plugin::state::HostServices;
use crate::summary::Summary;
use crate::thresholds::Evaluator;
use crate::vu::errors::ErrorLog;
use futures::future::BoxFuture;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) use outputs::Outputs;

/// The run as its observers see it: the same for every tick.
pub(crate) struct Scope<'a> {
    /// When the executors started.
    pub t0: Instant,
    /// The resolved run config.
    pub config: &'a RunConfig,
    /// The run's metric names.
    pub registry: &'a Registry,
    /// The scenarios' live counters.
    pub contexts: &'a [Arc<ScenarioCtx>],
    /// The run-wide services (recorder, network counters).
    pub services: &'a HostServices,
    /// The plugin's failures so far.
    pub errors: &'a ErrorLog,
    /// Stops the run.
    pub control: &'a Arc<RunControl>,
    /// The run's thresholds.
    pub thresholds: &'a Evaluator,
}

/// One second of the run, just folded.
pub(crate) struct Tick<'a> {
    /// The run.
    pub scope: &'a Scope<'a>,
    /// Time since the start, at the end of this interval.
    pub elapsed: Duration,
    /// The interval's samples.
    pub interval: &'a SeriesMap,
    /// The run's totals so far.
    pub aggregator: &'a Aggregator,
}

/// What the end of a run hands its observers besides the summary.
pub(crate) struct Ending<'a> {
    /// The run.
    pub scope: &'a Scope<'a>,
    /// The results folder.
    pub results_dir: PathBuf,
    /// The sampled services' chart series, from the resource sampling to the report.
    pub service_series: Vec<(String, crate::sampling::book::Series)>,
    /// Results files that could not be written.
    pub failures: Vec<WriteFailure>,
}

/// Something that runs each second of a run and at its end. Every method does nothing
/// by default.
pub(crate) trait Observer: Send {
    /// The executors started (at `scope.t0`).
    fn start(&mut self, _scope: &Scope<'_>) {}

    /// Just before each second is folded (a coordinator writes its workers' live
    /// counts there).
    fn before_tick(&mut self, _scope: &Scope<'_>) {}

    /// Each second, with the interval just folded.
    fn tick(&mut self, _tick: &Tick<'_>) {}

    /// Every executor is done; `teardown()` comes next.
    fn stopped(&mut self) {}

    /// The last interval, folded after `teardown()`, with the executors' reports.
    fn last_tick(&mut self, _tick: &Tick<'_>, _reports: &BTreeMap<String, ExecutorReport>) {}

    /// Adds what it knows to the summary, before the run is judged.
    fn annotate(&mut self, _summary: &mut Summary, _end: &mut Ending<'_>) {}

    /// The run is judged and its summary printed: writes what it keeps.
    fn finish(&mut self, _summary: &Summary, _end: &mut Ending<'_>) {}

    /// After the plugin's own summary: lets go of what outlives the run (a dashboard
    /// that stays up, remote writes still in flight).
    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

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
    pub(crate) fn tick(&mut self, tick: &Tick<'_>) {
        self.0.iter_mut().for_each(|o| o.tick(tick));
    }

    /// See [`Observer::stopped`].
    pub(crate) fn stopped(&mut self) {
        self.0.iter_mut().for_each(|o| o.stopped());
    }

    /// See [`Observer::last_tick`].
    pub(crate) fn last_tick(
        &mut self,
        tick: &Tick<'_>,
        reports: &BTreeMap<String, ExecutorReport>,
    ) {
        self.0.iter_mut().for_each(|o| o.last_tick(tick, reports));
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
