//! What the executors share: the scenario's context and live counters, what
//! interrupts an iteration, the reports, and the VU loop helpers. A leaf under the
//! executors, so that `mod.rs` (which dispatches to them) and they do not import each
//! other.

use super::vu_threads;
use crate::config::{ExecutionTuple, ScenarioConfig};
use crate::control::RunControl;
use crate::striped::StripedCounter;
use crate::vu::factory::VuFactory;
use crate::vu::{Outcome, Vu};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::time::Instant as TokioInstant;

/// Live counters of one scenario, read by progress and the summary. The iteration
/// counts are written by every VU thread per iteration, so they are striped over the
/// threads ([`StripedCounter`]); the VU counts change per VU, or are read by the
/// arrival-rate scheduler as it decides, so they stay single atomics.
#[derive(Debug, Default)]
pub struct ScenarioStats {
    /// VUs currently active (looping or running an iteration).
    pub active_vus: AtomicU64,
    /// VUs made for this scenario.
    pub allocated_vus: AtomicU64,
    /// Iterations started.
    pub started: StripedCounter,
    /// Iterations that ended on their own (including failed ones).
    pub completed: StripedCounter,
    /// Iterations that failed (error, trap, timeout).
    pub failed: StripedCounter,
    /// Iterations stopped by the executor.
    pub interrupted: StripedCounter,
    /// Iterations of an open model that were due but had no VU.
    pub dropped: AtomicU64,
}

/// Counts a VU in its scenario's `active_vus` while the guard lives. The count goes
/// down on every way out of a VU's loop, including the task being cancelled at a
/// hard stop, where a matching `fetch_sub` written by hand would be skipped.
pub(crate) struct ActiveVu(Arc<ScenarioStats>);

impl ActiveVu {
    /// Counts one more active VU in `stats`.
    pub(crate) fn new(stats: &Arc<ScenarioStats>) -> Self {
        stats.active_vus.fetch_add(1, Ordering::Relaxed);
        Self(stats.clone())
    }
}

impl Drop for ActiveVu {
    fn drop(&mut self) {
        self.0.active_vus.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A stage's target and what was observed at its end.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StageReport {
    /// The stage's target.
    pub target: u64,
    /// Active VUs (or achieved rate) at the stage's end.
    pub at_end: u64,
    /// Most active VUs during the stage.
    pub peak: u64,
}

/// Everything an executor needs.
pub struct ScenarioCtx {
    /// The scenario's config.
    pub config: ScenarioConfig,
    /// When the scenario starts (the run's start plus `start_time`).
    pub start: Instant,
    /// Run-wide stop signals.
    pub control: Arc<RunControl>,
    /// Live counters.
    pub stats: Arc<ScenarioStats>,
    /// Makes more VUs while the scenario runs (arrival-rate executors).
    pub factory: Arc<VuFactory>,
    /// How this process's iterations map to the whole test's (its execution segment's
    /// stripe); `None` when it has no share of them.
    stripe: Option<ExecutionTuple>,
}

impl ScenarioCtx {
    /// A context for a scenario starting at `start`.
    pub fn new(
        config: ScenarioConfig,
        start: Instant,
        control: Arc<RunControl>,
        factory: Arc<VuFactory>,
    ) -> Self {
        Self {
            stripe: config.iteration_stripe(),
            config,
            start,
            control,
            stats: Arc::new(ScenarioStats::default()),
            factory,
        }
    }

    /// Runs one iteration on `vu`, counting it; `interrupt` is the hard deadline. In
    /// the closed model (no `due`) a VU whose `init` failed first waits until it may
    /// try again; `None` when the scenario ended or the run stopped meanwhile, and no
    /// iteration started.
    pub async fn run_iteration(
        &self,
        vu: &mut Vu,
        due: Option<Instant>,
        mut interrupt: Pin<&mut impl Future<Output = ()>>,
    ) -> Option<Outcome> {
        let end = self.start + self.config.executor.duration();
        if let (Some(retry_at), None) = (vu.retry_at(), due) {
            tokio::select! {
                _ = sleep_until(retry_at.min(end)) => {}
                _ = self.control.stop.cancelled() => return None,
                _ = interrupt.as_mut() => return None,
            }
            if !self.may_start(end) {
                return None;
            }
        }
        self.stats.started.add(1);
        let outcome = vu.iterate(&self.config.exec, due, end, interrupt).await;
        let counter = match &outcome {
            Outcome::Interrupted => &self.stats.interrupted,
            o if o.is_failure() => {
                self.stats.failed.add(1);
                &self.stats.completed
            }
            _ => &self.stats.completed,
        };
        counter.add(1);
        Some(outcome)
    }

    /// The striping of this scenario's iterations (see
    /// [`ScenarioConfig::iteration_stripe`]).
    pub fn stripe(&self) -> Option<&ExecutionTuple> {
        self.stripe.as_ref()
    }

    /// Whether new iterations may start at `now` given the schedule's end.
    pub fn may_start(&self, end: Instant) -> bool {
        Instant::now() < end && !self.control.stopping()
    }

    /// Resolves at `hard` or on a hard stop of the run: what interrupts an iteration.
    /// A VU loop makes it once and lends it to each iteration, so an iteration does not
    /// register a timer and a cancellation waiter of its own.
    pub fn interrupt_at(&self, hard: Instant) -> Interrupt {
        Interrupt {
            at: Box::pin(tokio::time::sleep_until(TokioInstant::from_std(hard))),
            hard_stop: Box::pin(self.control.hard_stop.clone().cancelled_owned()),
            fired: false,
        }
    }

    /// Waits until the scenario's start time.
    pub async fn wait_for_start(&self) {
        tokio::time::sleep_until(TokioInstant::from_std(self.start)).await;
    }
}

/// What interrupts the iterations of a VU loop (see [`ScenarioCtx::interrupt_at`]).
/// Once fired it stays fired, so it can be lent to iteration after iteration.
pub struct Interrupt {
    at: Pin<Box<tokio::time::Sleep>>,
    hard_stop: Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
    fired: bool,
}

impl Future for Interrupt {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if !self.fired
            && (self.at.as_mut().poll(cx).is_ready() || self.hard_stop.as_mut().poll(cx).is_ready())
        {
            self.fired = true;
        }
        if self.fired {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// What an executor reports when it is done.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ExecutorReport {
    /// For ramping executors: each stage's target and what was reached.
    pub stages: Vec<StageReport>,
}

/// Resolves at `deadline` (a std instant).
pub(crate) async fn sleep_until(deadline: Instant) {
    tokio::time::sleep_until(TokioInstant::from_std(deadline)).await;
}

/// Spawns one task per VU running `body`, waits for all, and keeps `active_vus` true.
/// Each VU's task runs on one of the VU threads ([`vu_threads`], one per core), with
/// the connections it opens.
pub(crate) async fn run_vu_loops<F, Fut>(ctx: &Arc<ScenarioCtx>, vus: Vec<Vu>, body: F)
where
    F: Fn(Arc<ScenarioCtx>, Vu, usize) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut tasks = tokio::task::JoinSet::new();
    for (index, vu) in vus.into_iter().enumerate() {
        let task = body(ctx.clone(), vu, index);
        match vu_threads::runtime_for(index) {
            Some(runtime) => tasks.spawn_on(task, runtime),
            None => tasks.spawn(task),
        };
    }
    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined {
            if e.is_panic() {
                crate::stderr::line(format_args!(
                    "error: a VU task of scenario {} panicked: {e}",
                    ctx.config.name
                ));
            }
        }
    }
}
