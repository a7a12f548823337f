//! A virtual user: one plugin instance in its own store, running iterations. A trap,
//! panic or timeout is recorded with its message, and the VU gets a fresh instance.
//! `factory` makes VUs; `errors` gathers their failures over the run.

pub mod errors;
pub mod factory;

use crate::deadline::Deadline;
use crate::metrics::{builtin, TagSet};
use crate::plugin::bindings::Scenario;
use crate::plugin::state::{HostServices, VuIdentity, VuState};
use crate::plugin::{classify_trap, Plugin, TrapCause};
use anyhow::{anyhow, Result};
use errors::{ErrorKind, ErrorLog};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
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
            Outcome::Failed(_) | Outcome::Trapped(..) | Outcome::TimedOut
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
}

/// A virtual user.
pub struct Vu {
    ctx: VuContext,
    identity: VuIdentity,
    live: Option<(Store<VuState>, Scenario)>,
    iterations: u64,
    /// The iteration timeout's timer (taken out while an iteration runs).
    deadline: Deadline,
}

impl Vu {
    /// Makes the VU's instance and runs the plugin's `init`.
    pub async fn new(ctx: VuContext, identity: VuIdentity) -> Result<Vu> {
        let mut vu = Vu {
            ctx,
            identity,
            live: None,
            iterations: 0,
            deadline: Deadline::default(),
        };
        vu.ensure_live().await?;
        Ok(vu)
    }

    /// The VU's identity.
    pub fn identity(&self) -> &VuIdentity {
        &self.identity
    }

    async fn ensure_live(&mut self) -> Result<&mut (Store<VuState>, Scenario)> {
        if self.live.is_none() {
            let state = VuState::new(self.ctx.services.clone(), self.identity.clone());
            let (mut store, instance) = self.ctx.plugin.instantiate(state).await?;
            store
                .data_mut()
                .budget
                .start_call(self.ctx.iteration_timeout);
            let init = instance
                .loadtest_scenario_plugin()
                .call_init(&mut store, &self.ctx.setup_data)
                .await;
            match init {
                Ok(Ok(())) => {}
                Ok(Err(message)) => {
                    return Err(anyhow!(
                        "init() of VU {} failed: {message}",
                        self.identity.vu_id
                    ))
                }
                Err(trap) => {
                    return Err(anyhow!(
                        "init() of VU {} trapped: {}",
                        self.identity.vu_id,
                        classify_trap(&trap, store.data()).1
                    ))
                }
            }
            self.live = Some((store, instance));
        }
        Ok(self.live.as_mut().expect("just made live"))
    }

    /// Runs one iteration of `exec`. `due` is when the schedule wanted it to start
    /// (open model); `interrupt` resolves when the executor wants it stopped.
    pub async fn iterate(
        &mut self,
        exec: &str,
        iteration_in_scenario: u64,
        due: Option<Instant>,
        interrupt: impl Future<Output = ()>,
    ) -> Outcome {
        let started = Instant::now();
        let tags = self.identity.tags.clone();
        let recorder = self.ctx.services.recorder.clone();
        if let Some(due) = due {
            let lag = started.saturating_duration_since(due);
            recorder.trend(builtin::ITERATION_START_LAG, &tags, lag.as_micros() as u64);
        }
        let iteration = self.iterations;
        self.iterations += 1;
        let timeout = self.ctx.iteration_timeout;
        let mut deadline = std::mem::take(&mut self.deadline);
        let mut timer = deadline.at(started + timeout);

        let outcome = match self.ensure_live().await {
            Err(e) => Outcome::Failed(format!("{e:#}")),
            Ok((store, instance)) => {
                let state = store.data_mut();
                state.iteration = iteration;
                state.iteration_in_scenario = iteration_in_scenario;
                state.panic_message = None;
                state.budget.start_call(timeout);
                let call = instance
                    .loadtest_scenario_plugin()
                    .call_iteration(&mut *store, exec);
                let result = tokio::select! {
                    r = call => Some(Ok(r)),
                    _ = timer.as_mut() => Some(Err(())),
                    _ = interrupt => None,
                };
                match result {
                    None => Outcome::Interrupted,
                    Some(Err(())) => Outcome::TimedOut,
                    Some(Ok(Ok(Ok(())))) => Outcome::Completed,
                    Some(Ok(Ok(Err(message)))) => Outcome::Failed(message),
                    Some(Ok(Err(trap))) => {
                        let (cause, message) = classify_trap(&trap, store.data());
                        match cause {
                            TrapCause::Deadline => Outcome::TimedOut,
                            cause => Outcome::Trapped(cause, message),
                        }
                    }
                }
            }
        };
        self.deadline = deadline;
        // An instance left mid-call (trap, timeout, interruption) cannot be entered again.
        if !matches!(outcome, Outcome::Completed | Outcome::Failed(_)) {
            self.live = None;
        }
        let ended = Instant::now();
        self.record(&outcome, &tags, started, ended, due);
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
}
