//! The observer interface: what a run shows each consumer of its seconds (the
//! [`Scope`] every second shares, each [`Second`], the [`Ending`] at the end) and the
//! [`Observer`] trait they implement. A leaf of `observe`: the observers and the set
//! that assembles them both import it, and it imports neither.

use crate::config::RunConfig;
use crate::control::RunControl;
use crate::executor::{ExecutorReport, ScenarioCtx};
use crate::metrics::{Registry, Second};
use crate::output::WriteFailure;
use crate::plugin::state::HostServices;
use crate::summary::Summary;
use crate::thresholds::Evaluator;
use crate::vu::errors::ErrorLog;
use futures::future::BoxFuture;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

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
    fn tick(&mut self, _scope: &Scope<'_>, _second: &Second<'_>) {}

    /// Every executor is done; `teardown()` comes next.
    fn stopped(&mut self) {}

    /// The last interval, folded after `teardown()`, with the executors' reports.
    fn last_tick(
        &mut self,
        _scope: &Scope<'_>,
        _second: &Second<'_>,
        _reports: &BTreeMap<String, ExecutorReport>,
    ) {
    }

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
