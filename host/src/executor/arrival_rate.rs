//! The open model shared by `constant-arrival-rate` and `ramping-arrival-rate`.
//!
//! One scheduler per scenario, on a thread of its own (tokio's blocking pool): it sleeps
//! until the next iteration is due with the OS's timer, which is precise to tens of
//! microseconds where tokio's ticks in whole milliseconds, and is never stuck behind
//! iteration tasks on a busy worker. When it wakes it starts every iteration whose time
//! has come, each at once on an idle VU, which goes back to the pool when it is done.
//! If no VU is idle the iteration is dropped and counted, and a VU is made in the
//! background if `max_vus` allows. Nothing waits in a queue: the schedule's one counter
//! ([`Claims`]) holds the number of the next iteration.
//!
//! A VU whose iteration ends first looks whether the next iteration is due already (it
//! fell due since the scheduler's last wake-up) and, if so, claims and runs it at once
//! where it is, as a closed-model VU loop goes on to its next iteration: saturated, or
//! at a high rate, most iterations start this way, with no hand-off between threads.
//! Only the scheduler drops, so what is dropped is what it alone would drop.
//!
//! Each VU has a home among the VU threads ([`vu_threads`], one current-thread runtime
//! per core), dealt in turn as the VUs are made: its iterations, and so the connections
//! they open, always run there, as the closed-model executors' VU loops do.
//!
//! What one iteration shares with other threads is kept to what the model needs (the
//! pool, and `active_vus` for the stage figures): the iterations a wake-up starts on
//! one thread run in one task there, which holds the scenario's context once for all
//! of them, and each VU keeps what interrupts its iterations from one to the next.

use super::arrival_schedule::ArrivalSchedule;
use super::arrival_stages::StageTracker;
use super::claims::Claims;
use super::context::{sleep_until, ActiveVu, ExecutorReport, Interrupt, ScenarioCtx};
use super::vu_pool::{Take, VuPool};
use super::vu_threads;
use crate::metrics::builtin;
use crate::vu::Vu;
use futures::stream::{FuturesUnordered, StreamExt};
use std::cell::Cell;
use std::future::Future;
use std::ops::Range;
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
pub(crate) async fn run(
    ctx: Arc<ScenarioCtx>,
    vus: Vec<Vu>,
    schedule: ArrivalSchedule,
    max_vus: u64,
    stages: Option<StageTracker>,
) -> ExecutorReport {
    ctx.wait_for_start().await;
    let end = ctx.start + schedule.length();
    let homes = vus.len();
    let vus = vus
        .into_iter()
        .enumerate()
        .map(|(home, vu)| Homed::new(home, vu));
    let scheduler = Scheduler {
        hard: end + ctx.config.graceful_stop,
        end,
        claims: Arc::new(Claims::new(schedule, ctx.start)),
        ctx: ctx.clone(),
        pool: Arc::new(VuPool::new(vus.collect(), max_vus)),
        next_home: Cell::new(homes),
        tasks: TaskTracker::new(),
        stages,
    };
    let tasks = scheduler.tasks.clone();
    let stages = match tokio::task::spawn_blocking(move || scheduler.run()).await {
        Ok(stages) => stages,
        Err(e) => {
            crate::stderr::line(format_args!(
                "error: the scheduler of scenario {} failed: {e}",
                ctx.config.name
            ));
            None
        }
    };
    tasks.close();
    tasks.wait().await;
    ExecutorReport {
        stages: stages.map(|s| s.report()).unwrap_or_default(),
    }
}

/// A VU and the VU thread it runs on.
struct Homed {
    /// Its turn among the scenario's VUs; [`vu_threads::thread_of`] maps it to a
    /// thread.
    home: usize,
    vu: Vu,
    /// What interrupts its iterations at the scenario's hard stop: made on its first
    /// iteration, on its home thread, and kept from one iteration to the next, as a
    /// closed-model VU loop keeps its own. Made per iteration it cost a timer entry and
    /// a waiter on the run's stop token, whose list is behind a lock that every VU
    /// thread takes.
    interrupt: Option<Interrupt>,
}

impl Homed {
    fn new(home: usize, vu: Vu) -> Self {
        Self {
            home,
            vu,
            interrupt: None,
        }
    }
}

/// Starts a scenario's iterations when they are due.
struct Scheduler {
    ctx: Arc<ScenarioCtx>,
    pool: Arc<VuPool<Homed>>,
    /// The home of the next VU made while the scenario runs.
    next_home: Cell<usize>,
    tasks: TaskTracker,
    /// The schedule, and the iterations of it not yet started or dropped.
    claims: Arc<Claims>,
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
        let mut stages = self.stages.take();
        if let Some(stages) = &mut stages {
            stages.number_windows(|offset| self.claims.schedule().due_before(offset));
        }
        let mut woke: Option<Instant> = None;
        let mut starts = Vec::new();
        while let Some(due) = self.claims.next_due() {
            let wake_at = woke.map_or(due, |w| due.max(w + MIN_WAKE_GAP));
            if !self.sleep_until(wake_at) {
                break;
            }
            let now = Instant::now();
            woke = Some(now);
            if let Some(stages) = &mut stages {
                let busy = self.ctx.stats.active_vus.load(Ordering::Relaxed);
                stages.busy(now.saturating_duration_since(start), busy);
            }
            let stop = || self.ctx.control.stopping();
            let caught_up = catch_up(
                &self.claims,
                now,
                stop,
                |due| match self.pool.take() {
                    Take::Idle(homed) => {
                        let busy = ActiveVu::new(&self.ctx.stats);
                        starts.push(Start { homed, due, busy });
                        Turn::Started
                    }
                    Take::Make => {
                        self.make_vu();
                        Turn::Dropped
                    }
                    Take::None => Turn::NoVu,
                },
                |dropped| {
                    if let Some(stages) = &mut stages {
                        stages.dropped(dropped);
                    }
                },
            );
            self.start_iterations(&mut starts);
            // Sampled again once the due iterations have started: with a fast target
            // every earlier iteration may have ended before this wake-up, and the VUs
            // just started are busy now.
            if let Some(stages) = &mut stages {
                let busy = self.ctx.stats.active_vus.load(Ordering::Relaxed);
                stages.busy(Instant::now().saturating_duration_since(start), busy);
            }
            self.count_dropped(caught_up.dropped);
            if caught_up.stopped {
                break;
            }
        }
        if let Some(stages) = &mut stages {
            stages.reached(self.claims.next());
        }
        // The scenario lasts its whole duration, as in k6, even when its last
        // iteration was due (and done) before the end: the run's per-second rates are
        // over its duration, not over the time to its last iteration (a 10 s run at
        // 1/s would say 1.11/s). A stop of the run ends the wait.
        self.sleep_until(self.end);
        stages
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
            if self.ctx.control.stopping() {
                return false;
            }
            let now = Instant::now();
            if due <= now {
                return true;
            }
            std::thread::sleep((due - now).min(STOP_CHECK_EVERY));
        }
    }

    /// Starts each iteration of `starts` (a VU, when it was due, and its count in
    /// `active_vus`) on the VU's thread; the VU goes back to the pool when the
    /// iteration ends (or is interrupted at `hard`). The iterations bound for one
    /// thread are handed over together in one task, which runs them all at once: a
    /// task spawned from another thread wakes the runtime's thread (a write to its
    /// eventfd, and its `epoll_wait` returning), so one per thread per wake-up rather
    /// than one per iteration; and the task holds the scenario and the pool for all of
    /// them, where a task per iteration took a reference to each (counts that every
    /// thread writes).
    fn start_iterations(&self, starts: &mut Vec<Start>) {
        let mut batches: Vec<Vec<Start>> = (0..vu_threads::count().max(1))
            .map(|_| Vec::new())
            .collect();
        for start in starts.drain(..) {
            batches[vu_threads::thread_of(start.homed.home)].push(start);
        }
        for (thread, batch) in batches.into_iter().enumerate() {
            if batch.is_empty() {
                continue;
            }
            let (ctx, pool, claims) = (self.ctx.clone(), self.pool.clone(), self.claims.clone());
            let (hard, end) = (self.hard, self.end);
            self.spawn_at(thread, async move {
                let mut running: FuturesUnordered<_> = batch
                    .into_iter()
                    .map(|start| iteration(&ctx, &pool, &claims, start, hard, end))
                    .collect();
                while running.next().await.is_some() {}
            });
        }
    }

    /// Makes one VU in the background, on the thread that will be its home, and adds it
    /// to the pool; gives up at the schedule's end or a stop, since no iteration could
    /// use it then.
    fn make_vu(&self) {
        let (ctx, pool, end) = (self.ctx.clone(), self.pool.clone(), self.end);
        let home = self.next_home.get();
        self.next_home.set(home + 1);
        self.spawn_at(home, async move {
            let made = tokio::select! {
                made = ctx.factory.make() => Some(made),
                _ = sleep_until(end) => None,
                _ = ctx.control.stop.cancelled() => None,
            };
            match made {
                Some(Ok(vu)) => {
                    ctx.stats.allocated_vus.fetch_add(1, Ordering::Relaxed);
                    rest_after_init_failure(&ctx, vu.retry_at(), end).await;
                    pool.made(Homed::new(home, vu));
                }
                Some(Err(e)) => {
                    ctx.factory.report_failure(&e);
                    pool.not_made();
                }
                None => pool.not_made(),
            }
        });
    }

    /// Spawns `task` on the VU thread of `home` (or on the scheduler's runtime when no
    /// VU thread could be started), tracked so the scenario waits for it.
    fn spawn_at(&self, home: usize, task: impl Future<Output = ()> + Send + 'static) {
        match vu_threads::runtime_for(home) {
            Some(runtime) => self.tasks.spawn_on(task, runtime),
            None => self.tasks.spawn(task),
        };
    }
}

/// An iteration the scheduler started: its VU, when it was due, and the VU's count in
/// `active_vus`, taken when it started so the stage figures see it at once.
struct Start {
    homed: Homed,
    due: Instant,
    busy: ActiveVu,
}

/// Runs `start`'s iteration, then each next one that is due by the time the last ended
/// (claimed from `claims`: one the scheduler has not got to yet), then hands its VU
/// back to `pool` (after the pause of a VU whose `init` failed).
async fn iteration(
    ctx: &ScenarioCtx,
    pool: &VuPool<Homed>,
    claims: &Claims,
    start: Start,
    hard: Instant,
    end: Instant,
) {
    let Start {
        mut homed,
        mut due,
        mut busy,
    } = start;
    let interrupt = homed
        .interrupt
        .get_or_insert_with(|| ctx.interrupt_at(hard));
    loop {
        ctx.run_iteration(&mut homed.vu, Some(due), Pin::new(&mut *interrupt))
            .await;
        drop(busy);
        // A VU resting after a failed `init`, or a stopping run, takes no more.
        if homed.vu.retry_at().is_some() || ctx.control.stopping() {
            break;
        }
        let Some((_, next)) = claims.claim_due(Instant::now()) else {
            break;
        };
        busy = ActiveVu::new(&ctx.stats);
        due = next;
        // Iterations that make no I/O never yield: let the thread's other tasks (the
        // VUs started with this one, connections) run now and then.
        tokio::task::consume_budget().await;
    }
    rest_after_init_failure(ctx, homed.vu.retry_at(), end).await;
    pool.put(homed);
}

/// What became of a due iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// It started on an idle VU.
    Started,
    /// It was dropped (a VU is being made for later ones).
    Dropped,
    /// It was dropped, and no VU can be had before the next wake-up.
    NoVu,
}

/// What one wake-up of the scheduler did.
#[derive(Debug, PartialEq, Eq)]
struct CaughtUp {
    /// Iterations dropped.
    dropped: u64,
    /// Whether it saw a stop of the run.
    stopped: bool,
}

/// Hands every iteration of `claims` due by `now` to `take`, which starts or drops it,
/// and tells `on_drop` which were dropped. Once no VU can be had, the rest due by now
/// are dropped in one step, so even a backlog of millions (a very high rate, or a long
/// pause of the thread) costs no more than a few iterations; a stop of the run is seen
/// between any two of them. VUs claim from the same counter meanwhile: what they take
/// is neither handed to `take` nor dropped.
fn catch_up(
    claims: &Claims,
    now: Instant,
    stop: impl Fn() -> bool,
    mut take: impl FnMut(Instant) -> Turn,
    mut on_drop: impl FnMut(Range<u64>),
) -> CaughtUp {
    let mut dropped = 0;
    loop {
        if stop() {
            return CaughtUp {
                dropped,
                stopped: true,
            };
        }
        let Some((number, due)) = claims.claim_due(now) else {
            break;
        };
        match take(due) {
            Turn::Started => {}
            Turn::Dropped => {
                dropped += 1;
                on_drop(number..number + 1);
            }
            Turn::NoVu => {
                // VUs may have claimed some after `number` meanwhile: `rest` starts
                // after them.
                let rest = claims.claim_all_due(now);
                dropped += 1 + (rest.end - rest.start);
                on_drop(number..number + 1);
                on_drop(rest);
            }
        }
    }
    CaughtUp {
        dropped,
        stopped: false,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    #[test]
    fn a_backlog_of_a_billion_is_counted_in_a_few_steps() {
        // 1e9/s for 2 s, 2 VUs: a wake-up 0.5 s in starts 2 and drops the rest.
        let schedule =
            ArrivalSchedule::constant(1e9, Duration::from_secs(1), Duration::from_secs(2));
        let start = Instant::now();
        let claims = Claims::new(schedule, start);
        let calls = Cell::new(0u64);
        let drops = RefCell::new(Vec::new());
        let out = catch_up(
            &claims,
            start + Duration::from_millis(500),
            || false,
            |_| {
                calls.set(calls.get() + 1);
                if calls.get() <= 2 {
                    Turn::Started
                } else {
                    Turn::NoVu
                }
            },
            |range| drops.borrow_mut().push(range),
        );
        // Two started, then one step for the rest (and one more for the iteration due
        // at the very instant, which float rounding may leave to itself).
        assert!((3..=4).contains(&calls.get()), "{} calls", calls.get());
        assert_eq!(
            claims.next(),
            500_000_001,
            "due before 0.5 s, and the one due at it"
        );
        assert_eq!(claims.next(), 2 + out.dropped);
        let told: u64 = drops.borrow().iter().map(|r| r.end - r.start).sum();
        assert_eq!(told, out.dropped, "every drop is told, once");
        assert!(!out.stopped);
        // The next wake-up, at the end: every due iteration was started or dropped.
        let rest = catch_up(
            &claims,
            start + Duration::from_secs(2),
            || false,
            |_| Turn::NoVu,
            |_| {},
        );
        assert_eq!(claims.next(), 2_000_000_000);
        assert_eq!(2 + out.dropped + rest.dropped, 2_000_000_000);
    }

    #[test]
    fn iterations_a_vu_claimed_are_neither_handed_over_nor_dropped() {
        // 10/s: iterations 0–3 are due by 350 ms. A VU claimed 0 and 1 before the
        // scheduler's wake-up; it starts 2 and, with no VU left, drops 3.
        let schedule =
            ArrivalSchedule::constant(10.0, Duration::from_secs(1), Duration::from_secs(1));
        let start = Instant::now();
        let claims = Claims::new(schedule, start);
        let at = |ms| start + Duration::from_millis(ms);
        assert_eq!(claims.claim_due(at(350)).map(|c| c.0), Some(0));
        assert_eq!(claims.claim_due(at(350)).map(|c| c.0), Some(1));
        let handed = RefCell::new(Vec::new());
        let drops = RefCell::new(Vec::new());
        let out = catch_up(
            &claims,
            at(350),
            || false,
            |due| {
                handed.borrow_mut().push(due);
                if handed.borrow().len() == 1 {
                    Turn::Started
                } else {
                    Turn::NoVu
                }
            },
            |range| drops.borrow_mut().push(range),
        );
        assert_eq!(*handed.borrow(), vec![at(200), at(300)]);
        assert_eq!(out.dropped, 1);
        assert_eq!(*drops.borrow(), vec![3..4, 4..4]);
        assert_eq!(claims.next(), 4);
    }

    #[test]
    fn a_stop_is_seen_inside_the_catch_up() {
        let schedule =
            ArrivalSchedule::constant(1e6, Duration::from_secs(1), Duration::from_secs(10));
        let start = Instant::now();
        let claims = Claims::new(schedule, start);
        let calls = Cell::new(0u64);
        // Every due iteration finds a VU (as many as there are): stopped after 1,000.
        let out = catch_up(
            &claims,
            start + Duration::from_secs(5),
            || calls.get() >= 1000,
            |_| {
                calls.set(calls.get() + 1);
                Turn::Started
            },
            |_| {},
        );
        assert!(out.stopped);
        assert_eq!(claims.next(), 1000);
        assert_eq!(out.dropped, 0);
    }

    #[test]
    fn drops_while_a_vu_is_made_are_counted_one_by_one() {
        let schedule =
            ArrivalSchedule::constant(10.0, Duration::from_secs(1), Duration::from_secs(1));
        let start = Instant::now();
        let claims = Claims::new(schedule, start);
        let turns = [Turn::Started, Turn::Dropped, Turn::Started, Turn::Dropped];
        let calls = Cell::new(0usize);
        let drops = RefCell::new(Vec::new());
        let out = catch_up(
            &claims,
            start + Duration::from_millis(350),
            || false,
            |_| {
                calls.set(calls.get() + 1);
                turns[calls.get() - 1]
            },
            |range| drops.borrow_mut().push(range),
        );
        assert_eq!(
            out,
            CaughtUp {
                dropped: 2,
                stopped: false
            }
        );
        assert_eq!(claims.next(), 4);
        assert_eq!(*drops.borrow(), vec![1..2, 3..4]);
    }
}
