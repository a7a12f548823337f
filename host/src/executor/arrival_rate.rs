//! The open model shared by `constant-arrival-rate` and `ramping-arrival-rate`.
//!
//! One scheduler per scenario, on a thread of its own (tokio's blocking pool): it sleeps
//! until the next iteration is due with the OS's timer, which is precise to tens of
//! microseconds where tokio's ticks in whole milliseconds, and is never stuck behind
//! iteration tasks on a busy worker. When it wakes it starts every iteration whose time
//! has come, each at once on an idle VU in a task of its own that hands the VU back when
//! done. If no VU is idle the iteration is dropped and counted, and a VU is made in the
//! background if `max_vus` allows. Nothing waits in a queue: the scheduler holds only the
//! number of the next iteration.

use super::arrival_schedule::ArrivalSchedule;
use super::arrival_stages::StageTracker;
use super::vu_pool::{Take, VuPool};
use super::{sleep_until, ExecutorReport, ScenarioCtx, ScenarioStats};
use crate::metrics::builtin;
use crate::vu::Vu;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::task::TaskTracker;

/// Longest the scheduler sleeps before looking whether the run was stopped.
const STOP_CHECK_EVERY: Duration = Duration::from_millis(20);

/// Shortest time between two wake-ups of the scheduler. Above 2,000 iterations/s it
/// starts them in batches this far apart rather than waking for each: a wake-up costs
/// two context switches and often a worker's unpark, which on a 2-core VM came to about
/// 90 µs of CPU, so at 5,000/s a 100 µs gap took 1.7 times the CPU of this one. It adds
/// at most this much to the start lag.
const MIN_WAKE_GAP: Duration = Duration::from_micros(500);

/// Runs an arrival-rate scenario: `vus` are the pre-allocated VUs; `stages` gathers
/// per-stage figures for ramping schedules.
pub async fn run(
    ctx: Arc<ScenarioCtx>,
    vus: Vec<Vu>,
    schedule: ArrivalSchedule,
    max_vus: u64,
    stages: Option<StageTracker>,
) -> ExecutorReport {
    ctx.wait_for_start().await;
    let end = ctx.start + schedule.length();
    let scheduler = Scheduler {
        hard: end + ctx.config.graceful_stop,
        end,
        ctx: ctx.clone(),
        pool: Arc::new(VuPool::new(vus, max_vus)),
        tasks: TaskTracker::new(),
        schedule,
        stages,
    };
    let tasks = scheduler.tasks.clone();
    let stages = match tokio::task::spawn_blocking(move || scheduler.run()).await {
        Ok(stages) => stages,
        Err(e) => {
            eprintln!(
                "error: the scheduler of scenario {} failed: {e}",
                ctx.config.name
            );
            None
        }
    };
    tasks.close();
    tasks.wait().await;
    ExecutorReport {
        stages: stages.map(|s| s.report()).unwrap_or_default(),
    }
}

/// Starts a scenario's iterations when they are due.
struct Scheduler {
    ctx: Arc<ScenarioCtx>,
    pool: Arc<VuPool<Vu>>,
    tasks: TaskTracker,
    schedule: ArrivalSchedule,
    /// When the schedule ends.
    end: Instant,
    /// When running iterations are interrupted (`end` plus `graceful_stop`).
    hard: Instant,
    /// Per-stage figures (ramping schedules).
    stages: Option<StageTracker>,
}

impl Scheduler {
    /// The loop; runs on a blocking-pool thread, inside the runtime's context. Hands
    /// back the per-stage figures.
    fn run(mut self) -> Option<StageTracker> {
        let start = self.ctx.start;
        let mut next = 0;
        let mut next_due = self.schedule.due(next).map(|d| start + d);
        let mut woke: Option<Instant> = None;
        'wake: while let Some(due) = next_due {
            let wake_at = woke.map_or(due, |w| due.max(w + MIN_WAKE_GAP));
            if !self.sleep_until(wake_at) {
                break;
            }
            let now = Instant::now();
            woke = Some(now);
            if let Some(stages) = &mut self.stages {
                let busy = self.ctx.stats.active_vus.load(Ordering::Relaxed);
                stages.busy(now.saturating_duration_since(start), busy);
            }
            let mut dropped = 0u64;
            while let Some(due) = next_due.filter(|d| *d <= now) {
                // A stop must be seen even while catching up on a long backlog.
                if self.ctx.control.stop.is_cancelled() {
                    self.count_dropped(dropped);
                    break 'wake;
                }
                match self.pool.take() {
                    Take::Idle(vu) => {
                        self.start_iteration(vu, due);
                        if let Some(stages) = &mut self.stages {
                            stages.started(due - start);
                        }
                        next += 1;
                    }
                    Take::Make => {
                        dropped += 1;
                        self.make_vu();
                        next += 1;
                    }
                    Take::None => {
                        // No VU now and none can be made before the next wake-up: every
                        // iteration due by now is dropped, counted in one step (at a
                        // very high rate there are millions).
                        let missed = self
                            .schedule
                            .due_before(now.saturating_duration_since(start))
                            .max(next + 1);
                        dropped += missed - next;
                        next = missed;
                    }
                }
                next_due = self.schedule.due(next).map(|d| start + d);
            }
            self.count_dropped(dropped);
        }
        if let Some(stages) = &mut self.stages {
            stages.reached(next, |offset| self.schedule.due_before(offset));
        }
        self.stages
    }

    /// Adds `dropped` iterations to the scenario's count and `dropped_iterations`.
    fn count_dropped(&self, dropped: u64) {
        if dropped > 0 {
            self.ctx.stats.dropped.fetch_add(dropped, Ordering::Relaxed);
            self.ctx.factory.recorder().count(
                builtin::DROPPED_ITERATIONS,
                self.ctx.factory.tags(),
                dropped as f64,
            );
        }
    }

    /// Sleeps until `due`; false if the run was stopped meanwhile.
    fn sleep_until(&self, due: Instant) -> bool {
        loop {
            if self.ctx.control.stop.is_cancelled() {
                return false;
            }
            let now = Instant::now();
            if due <= now {
                return true;
            }
            std::thread::sleep((due - now).min(STOP_CHECK_EVERY));
        }
    }

    /// Starts iteration `due` on `vu` in a task of its own; the VU goes back to the pool
    /// when the iteration ends (or is interrupted at `hard`).
    fn start_iteration(&self, mut vu: Vu, due: Instant) {
        let busy = Busy::new(self.ctx.stats.clone());
        let (ctx, pool, hard, end) = (self.ctx.clone(), self.pool.clone(), self.hard, self.end);
        self.tasks.spawn(async move {
            let mut interrupt = ctx.interrupt_at(hard);
            ctx.run_iteration(&mut vu, Some(due), Pin::new(&mut interrupt))
                .await;
            drop(busy);
            rest_after_init_failure(&ctx, vu.retry_at(), end).await;
            pool.put(vu);
        });
    }

    /// Makes one VU in the background and adds it to the pool; gives up at the
    /// schedule's end or a stop, since no iteration could use it then.
    fn make_vu(&self) {
        let (ctx, pool, end) = (self.ctx.clone(), self.pool.clone(), self.end);
        self.tasks.spawn(async move {
            let made = tokio::select! {
                made = ctx.factory.make() => Some(made),
                _ = sleep_until(end) => None,
                _ = ctx.control.stop.cancelled() => None,
            };
            match made {
                Some(Ok(vu)) => {
                    ctx.stats.allocated_vus.fetch_add(1, Ordering::Relaxed);
                    rest_after_init_failure(&ctx, vu.retry_at(), end).await;
                    pool.made(vu);
                }
                Some(Err(e)) => {
                    ctx.factory.report_failure(&e);
                    pool.not_made();
                }
                None => pool.not_made(),
            }
        });
    }
}

/// Keeps a VU whose `init` failed out of the pool until it may try again, so due
/// iterations go to VUs that can run them instead of waiting on this one; gives up at
/// the schedule's end or a stop.
async fn rest_after_init_failure(ctx: &ScenarioCtx, retry_at: Option<Instant>, end: Instant) {
    if let Some(retry_at) = retry_at {
        tokio::select! {
            _ = sleep_until(retry_at.min(end)) => {}
            _ = ctx.control.stop.cancelled() => {}
        }
    }
}

/// Counts a VU as busy (the `vus` gauge of an arrival-rate scenario) while it lives.
struct Busy(Arc<ScenarioStats>);

impl Busy {
    fn new(stats: Arc<ScenarioStats>) -> Self {
        stats.active_vus.fetch_add(1, Ordering::Relaxed);
        Self(stats)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.active_vus.fetch_sub(1, Ordering::Relaxed);
    }
}
