//! A virtual user: one plugin instance in its own store, running iterations. A trap,
//! panic or timeout is recorded with its message, and the VU gets a fresh instance.
//! An `init` that fails is recorded too; the VU stays without an instance and tries
//! again on a later turn, waiting longer after each failure in a row (or the run stops,
//! with `[limits] init_failures = "abort"`).
//!
//! `factory` makes VUs; `errors` gathers their failures over the run; `numbers` hands
//! out iteration numbers.

pub(crate) mod errors;
pub(crate) mod factory;
pub(crate) mod graveyard;

use crate::bounded::{cut_owned, MESSAGE_BYTES};
use crate::config::InitFailures;
use crate::control::{RunControl, StopReason};
use crate::deadline::Deadline;
use crate::metrics::{builtin, TagSet};
use crate::plugin::bindings::Scenario;
use crate::plugin::state::{HostServices, VuIdentity, VuState};
use crate::plugin::{outcome, GuestCallError, Plugin, TrapCause};
use anyhow::Result;
use errors::{ErrorKind, ErrorLog};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wasmtime::Store;

/// How an iteration ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Returned `Ok`.
    Completed,
    /// Returned `Err(message)`.
    Failed(String),
    /// Trapped (panic, out of memory, stack overflow, CPU budget, ...), with the cause
    /// and the best message found.
    Trapped(TrapCause, String),
    /// Ran longer than the iteration timeout and was stopped.
    TimedOut,
    /// The VU had no instance and its `init` failed again (the message says how).
    InitFailed(String),
    /// Stopped by the executor (end of graceful stop or ramp-down).
    Interrupted,
}

impl Outcome {
    /// Whether the iteration ended on its own (counted in `iterations`).
    pub fn ended(&self) -> bool {
        !matches!(self, Outcome::Interrupted)
    }

    /// Whether it went wrong.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            Outcome::Failed(_) | Outcome::Trapped(..) | Outcome::TimedOut | Outcome::InitFailed(_)
        )
    }
}

/// What a VU needs from its run.
#[derive(Clone)]
pub struct VuContext {
    /// The compiled plugin.
    pub plugin: Plugin,
    /// Run-wide services.
    pub services: Arc<HostServices>,
    /// `setup()`'s result, handed to `init`.
    pub setup_data: Arc<str>,
    /// Where failures are gathered.
    pub errors: Arc<ErrorLog>,
    /// Longest an iteration may run.
    pub iteration_timeout: Duration,
    /// What a failed `init` does to the run.
    pub init_failures: InitFailures,
    /// The run's stop signals (a failed `init` stops the run under `abort`).
    pub control: Arc<RunControl>,
}

/// The wait before a VU's first retry of a failed `init`; it doubles with each failure
/// in a row, up to [`INIT_BACKOFF_MAX`], so a target that refuses sign-ins is not
/// hammered by every VU at once.
const INIT_BACKOFF_FIRST: Duration = Duration::from_millis(100);

/// The longest wait between two tries of a VU's `init`.
const INIT_BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Why a VU has no instance.
enum NotLive {
    /// The instance could not be made (host resources): an error of the run.
    Instantiate(anyhow::Error),
    /// `init` failed; already recorded.
    Init(String),
    /// `init` ran out of its CPU budget or deadline (the init code loops, most often);
    /// already recorded.
    InitRanOut(String),
}

/// A virtual user.
pub struct Vu {
    /// Shared by the VUs of a scenario (one `Arc` each, not a copy of the plugin's
    /// handles and file facts per VU: measured 0.4 KiB less per idle VU).
    ctx: Arc<VuContext>,
    identity: VuIdentity,
    live: Option<(Store<VuState>, Scenario)>,
    iterations: u64,
    /// The iteration timeout's timer (taken out while an iteration runs).
    deadline: Deadline,
    /// `init` failures in a row, and when the next try may start.
    init_streak: u32,
    retry_at: Option<Instant>,
}

impl Drop for Vu {
    /// The VU's state ends here, as it always did; its instance goes to the
    /// graveyard, which keeps it until the process exits when `host run` opened it.
    fn drop(&mut self) {
        if let Some((store, _)) = self.live.take() {
            graveyard::bury(store);
        }
    }
}

impl Vu {
    /// Makes the VU's instance and runs the plugin's `init`. Only a failure to make
    /// the instance is an error: a failed `init` is recorded, and the VU, made without
    /// an instance, tries again on a later turn.
    pub async fn new(ctx: Arc<VuContext>, identity: VuIdentity) -> Result<Vu> {
        let mut vu = Vu::without_instance(ctx, identity);
        match vu.ensure_live().await {
            Ok(_) | Err(NotLive::Init(_) | NotLive::InitRanOut(_)) => Ok(vu),
            Err(NotLive::Instantiate(e)) => Err(e),
        }
    }

    /// A VU that has not made its instance yet: it does on its first turn.
    fn without_instance(ctx: Arc<VuContext>, identity: VuIdentity) -> Vu {
        Vu {
            ctx,
            identity,
            live: None,
            iterations: 0,
            deadline: Deadline::default(),
            init_streak: 0,
            retry_at: None,
        }
    }

    /// A VU made before the start, as [`Vu::new`], unless `give_up` is cancelled first:
    /// then it is handed over without an instance and runs `init` on its first turn
    /// (cut off at its scenario's end). An `init` that ran out of its budget cancels
    /// `give_up` itself: the same init code would most likely loop in every VU, and each
    /// held the start for a whole budget (issue 49 item 16).
    pub async fn before_start(
        ctx: Arc<VuContext>,
        identity: VuIdentity,
        give_up: &CancellationToken,
    ) -> Result<Vu> {
        let mut vu = Vu::without_instance(ctx, identity);
        if give_up.is_cancelled() {
            return Ok(vu);
        }
        let made = tokio::select! {
            made = Box::pin(vu.make_live()) => Some(made),
            _ = give_up.cancelled() => None,
        };
        match made {
            None | Some(Ok(()) | Err(NotLive::Init(_))) => Ok(vu),
            Some(Err(NotLive::InitRanOut(_))) => {
                give_up.cancel();
                Ok(vu)
            }
            Some(Err(NotLive::Instantiate(e))) => Err(e),
        }
    }

    /// When this VU, whose `init` failed, may try it again (`None` if it has an
    /// instance or may try at once).
    pub fn retry_at(&self) -> Option<Instant> {
        self.retry_at.filter(|_| self.live.is_none())
    }

    /// The VU's identity.
    pub fn identity(&self) -> &VuIdentity {
        &self.identity
    }

    async fn ensure_live(&mut self) -> Result<&mut (Store<VuState>, Scenario), NotLive> {
        self.make_live().await?;
        Ok(self.live.as_mut().expect("just made live"))
    }

    /// Makes the instance and runs `init`, unless the VU has an instance already.
    async fn make_live(&mut self) -> Result<(), NotLive> {
        if self.live.is_none() {
            let state = VuState::new(self.ctx.services.clone(), self.identity.clone());
            let (mut store, instance) = self
                .ctx
                .plugin
                .instantiate(state)
                .await
                .map_err(NotLive::Instantiate)?;
            store
                .data_mut()
                .budget
                .start_call(self.ctx.iteration_timeout);
            let init = instance
                .loadtest_scenario_plugin()
                .call_init(&mut store, &self.ctx.setup_data)
                .await;
            if let Err(e) = outcome(init, store.data()) {
                let ran_out = matches!(
                    e,
                    GuestCallError::Trapped {
                        cause: TrapCause::Cpu | TrapCause::Deadline,
                        ..
                    }
                );
                let message = cut_owned(
                    format!("init() of VU {} {e}", self.identity.vu_id),
                    MESSAGE_BYTES,
                );
                self.init_failed(&message);
                return Err(if ran_out {
                    NotLive::InitRanOut(message)
                } else {
                    NotLive::Init(message)
                });
            }
            // Each iteration starts from the cookies `init` left (k6's jar reset).
            store.data_mut().http.client.jar_mut().init_done();
            self.init_streak = 0;
            self.retry_at = None;
            self.live = Some((store, instance));
        }
        Ok(())
    }

    /// Runs one iteration of `exec`. `due` is when the schedule wanted it to start
    /// (open model); `interrupt` resolves when the executor wants it stopped. A VU
    /// without an instance runs `init` first; that `init` is cut off by `interrupt`
    /// and at `init_until` (the schedule's end, after which no iteration could start:
    /// an `init` that loops must not hold the run past its end).
    pub async fn iterate(
        &mut self,
        exec: &str,
        due: Option<Instant>,
        init_until: Instant,
        interrupt: impl Future<Output = ()>,
    ) -> Outcome {
        let mut interrupt = std::pin::pin!(interrupt);
        let started = Instant::now();
        // The tags and the recorder are borrowed, not cloned: both are shared by every
        // VU, and a reference count written per iteration from two worker threads
        // bounces its cache line between the cores (results/scaling.md).
        if let Some(due) = due {
            let lag = started.saturating_duration_since(due);
            self.ctx.services.recorder.trend(
                builtin::ITERATION_START_LAG,
                &self.identity.tags,
                lag.as_micros() as u64,
            );
        }
        let iteration = self.iterations;
        self.iterations += 1;
        let timeout = self.ctx.iteration_timeout;
        let mut deadline = std::mem::take(&mut self.deadline);
        let mut timer = deadline.at(started + timeout);

        let made = if self.live.is_some() {
            Some(Ok(()))
        } else {
            let init_started = Instant::now();
            // Boxed: instantiating and `init` are a VU's coldest path (once, or after a
            // trap), and their futures are the largest state of an iteration. Inline,
            // every VU's task kept room for them while it sat in an iteration (measured:
            // a VU loop's task was 4.6 KiB, most of an idle VU's host heap besides
            // wasmtime's own).
            let made = tokio::select! {
                made = Box::pin(self.make_live()) => Some(made),
                _ = interrupt.as_mut() => None,
                _ = tokio::time::sleep_until(init_until.into()) => None,
            };
            if made.is_none() {
                self.init_cut_off(init_started.elapsed());
            }
            made
        };
        let outcome = match made.map(|m| m.map(|()| self.live.as_mut().expect("made live"))) {
            None => Outcome::Interrupted,
            Some(Err(NotLive::Instantiate(e))) => Outcome::Failed(format!("{e:#}")),
            Some(Err(NotLive::Init(message) | NotLive::InitRanOut(message))) => {
                Outcome::InitFailed(message)
            }
            Some(Ok((store, instance))) => {
                let state = store.data_mut();
                state.iteration = iteration;
                state.iteration_in_scenario = None;
                state.panic_message = None;
                state.http.client.jar_mut().start_iteration();
                state.budget.start_call(timeout);
                let call = instance
                    .loadtest_scenario_plugin()
                    .call_iteration(&mut *store, exec);
                // `None`: interrupted; `Some(None)`: past the iteration timeout.
                let result = tokio::select! {
                    r = call => Some(Some(r)),
                    _ = timer.as_mut() => Some(None),
                    _ = interrupt.as_mut() => None,
                };
                match result {
                    None => Outcome::Interrupted,
                    Some(None) => Outcome::TimedOut,
                    Some(Some(r)) => match outcome(r, store.data()) {
                        Ok(()) => Outcome::Completed,
                        // A plugin's message is cut to a few KiB: kept per distinct
                        // message, a 4 MiB one each iteration filled the results.
                        Err(GuestCallError::Returned(message)) => {
                            Outcome::Failed(cut_owned(message, MESSAGE_BYTES))
                        }
                        Err(GuestCallError::Trapped { cause, message }) => match cause {
                            TrapCause::Deadline => Outcome::TimedOut,
                            cause => Outcome::Trapped(cause, cut_owned(message, MESSAGE_BYTES)),
                        },
                    },
                }
            }
        };
        self.deadline = deadline;
        // k6 closes a VU's browser context when its iteration ends.
        if let Some((store, _)) = self.live.as_mut() {
            store.data_mut().browser.end_iteration();
        }
        // An instance left mid-call (trap, timeout, interruption) cannot be entered again.
        if !matches!(outcome, Outcome::Completed | Outcome::Failed(_)) {
            self.live = None;
        }
        let ended = Instant::now();
        self.record(&outcome, &self.identity.tags, started, ended, due);
        outcome
    }

    fn record(
        &self,
        outcome: &Outcome,
        tags: &TagSet,
        started: Instant,
        ended: Instant,
        due: Option<Instant>,
    ) {
        let recorder = &self.ctx.services.recorder;
        let us = |d: Duration| d.as_micros() as u64;
        if !outcome.ended() {
            recorder.count(builtin::INTERRUPTED_ITERATIONS, tags, 1.0);
            return;
        }
        recorder.with_shard(|s| {
            s.count(builtin::ITERATIONS, tags, 1.0);
            s.trend(builtin::ITERATION_DURATION, tags, us(ended - started));
            if let Some(due) = due {
                s.trend(
                    builtin::ITERATION_LATENCY,
                    tags,
                    us(ended.saturating_duration_since(due)),
                );
            }
        });
        let (kind, message) = match outcome {
            Outcome::Failed(m) => (ErrorKind::Error, m.clone()),
            Outcome::Trapped(cause, m) => (ErrorKind::from(*cause), m.clone()),
            // Recorded when it happened (a VU's first `init` is no iteration).
            Outcome::InitFailed(_) => return,
            Outcome::TimedOut => (
                ErrorKind::Timeout,
                format!(
                    "iteration ran longer than the iteration timeout ({})",
                    crate::config::format_duration(self.ctx.iteration_timeout)
                ),
            ),
            _ => {
                self.ctx.errors.success();
                return;
            }
        };
        let err_tags = tags.with([("kind", kind.as_str())]);
        recorder.count(builtin::PLUGIN_ERRORS, &err_tags, 1.0);
        self.ctx
            .errors
            .failure(kind, &self.identity.scenario, &message);
    }

    /// Records an `init` cut off at the end of the scenario (or by a hard stop) after
    /// `ran`: the VU is reported as interrupted in `init`, among the plugin's errors.
    fn init_cut_off(&self, ran: Duration) {
        let message = format!(
            "init() of VU {} was interrupted at the end of the scenario, still running \
             after {} (an iteration could no longer start)",
            self.identity.vu_id,
            crate::config::format_duration(Duration::from_millis(ran.as_millis() as u64))
        );
        self.ctx
            .errors
            .failure(ErrorKind::Init, &self.identity.scenario, &message);
    }

    /// Records a failed `init`: in `plugin_errors` (kind `init`) with its message, and
    /// either sets when the VU may try again or, under `init_failures = "abort"`,
    /// stops the run.
    fn init_failed(&mut self, message: &str) {
        let tags = self
            .identity
            .tags
            .with([("kind", ErrorKind::Init.as_str())]);
        self.ctx
            .services
            .recorder
            .count(builtin::PLUGIN_ERRORS, &tags, 1.0);
        self.ctx
            .errors
            .failure(ErrorKind::Init, &self.identity.scenario, message);
        self.init_streak = self.init_streak.saturating_add(1);
        let backoff = INIT_BACKOFF_FIRST
            .saturating_mul(1 << (self.init_streak - 1).min(16))
            .min(INIT_BACKOFF_MAX);
        self.retry_at = Some(Instant::now() + backoff);
        if self.ctx.init_failures == InitFailures::Abort {
            let control = &self.ctx.control;
            control.stop_with(StopReason::PluginAbort(format!(
                "{message} ([limits] init_failures = \"abort\")"
            )));
            control.hard_stop.cancel();
        }
    }
}
