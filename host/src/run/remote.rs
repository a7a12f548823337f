//! The seam through which a run takes part in a distributed one (`host coordinate`,
//! `host worker`): the run keeps its own pipeline (plan, setup, start, drive, finish)
//! and asks a [`Remote`] at a few points what to do instead. A plain `host run` has
//! none, and nothing changes for it.

use crate::control::RunControl;
use crate::executor::{ExecutorReport, ScenarioCtx};
use crate::metrics::Second;
use crate::plugin::state::HostServices;
use crate::run::observe::Scope;
use crate::summary::Summary;
use futures::future::BoxFuture;
use std::sync::Arc;

/// What a run hands a [`Remote`] at the barrier: its control, services and setup data.
pub(crate) struct BarrierCtx {
    /// Stops the run (a worker stops when told; a coordinator tells its workers).
    pub control: Arc<RunControl>,
    /// The run's recorder, registry and network counters.
    pub services: Arc<HostServices>,
    /// What `setup()` returned (or, on a worker, what the coordinator handed over).
    pub setup_data: Arc<str>,
    /// The resolved run config (what a coordinator hands its workers).
    pub config: crate::config::RunConfig,
}

/// A run's part in a distributed run. Every method has the behaviour of a plain run
/// as its default.
pub(crate) trait Remote: Send + Sync {
    /// A worker's setup data from the coordinator: `setup()` and `teardown()` are not
    /// called here (they run once, at the coordinator).
    fn given_setup_data(&self) -> Option<Arc<str>> {
        None
    }

    /// Whether the plugin's `debug` lines are written, if not as this process's `-v`
    /// says (a worker shows its lines as its coordinator was asked to).
    fn log_verbose(&self) -> Option<bool> {
        None
    }

    /// Whether this process runs VUs (a coordinator does not: its workers do).
    fn runs_vus_here(&self) -> bool {
        true
    }

    /// Waits at the start line until every party is ready and the common start
    /// instant has come; an error ends the run before it starts.
    fn barrier(&self, ctx: BarrierCtx) -> BoxFuture<'_, anyhow::Result<()>>;

    /// A coordinator's stand-in for a scenario's executor: resolves when every worker
    /// still in the run has finished the scenario, with their reports merged.
    fn scenario_done(&self, _scenario: String) -> BoxFuture<'static, ExecutorReport> {
        Box::pin(futures::future::pending())
    }

    /// Called at each tick of the drive loop, before the interval is folded in.
    fn before_tick(&self, _contexts: &[Arc<ScenarioCtx>], _services: &HostServices) {}

    /// Called at each tick with the interval just folded.
    /// `second` is the run's, as every observer gets it (a worker sends its samples
    /// on); `scope` holds the live counters and the plugin's failures so far.
    fn tick(&self, _scope: &Scope<'_>, _second: &Second<'_>) {}

    /// Called once the run is over, with the last interval and the executors' reports,
    /// before the summary is built.
    fn finished(
        &self,
        _scope: &Scope<'_>,
        _second: &Second<'_>,
        _reports: &std::collections::BTreeMap<String, ExecutorReport>,
    ) {
    }

    /// Adds what the distributed run knows to the summary (a coordinator's `workers`).
    fn annotate(&self, _summary: &mut Summary) {}
}

/// A shared [`Remote`], so a run request can carry one and still be cloned.
#[derive(Clone)]
pub struct RemoteRole(pub(crate) Arc<dyn Remote>);

impl std::fmt::Debug for RemoteRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RemoteRole")
    }
}
