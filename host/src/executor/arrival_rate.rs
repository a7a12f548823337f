//! The open model shared by `constant-arrival-rate` and `ramping-arrival-rate`.
//!
//! Every iteration of the schedule has a number, and one counter per scenario holds the
//! first that is neither started nor dropped: whoever starts or drops iterations claims
//! them from it (a compare-and-swap), so each is started or dropped exactly once, and
//! nothing waits in a queue. Two kinds of claimants, both on the VU threads
//! ([`vu_threads`], one current-thread runtime per core), so starting an iteration never
//! hands anything from one thread to another:
//!
//! - A VU whose iteration ends takes the next iteration if it is due already, and runs
//!   it at once, without going idle or waking anyone: when the rate is more than the
//!   VUs can do, the VUs run back to back as the closed model's loops do. If more are
//!   due and no VU is idle anywhere, it drops them then (the scheduler below would at
//!   its next wake-up, which on a busy thread comes only at the runtime's I/O polls).
//! - Each VU thread has a scheduler task that sleeps on a timerfd ([`WakeTimer`],
//!   precise to microseconds where tokio's timer ticks in whole milliseconds) until the
//!   next iteration is due, at most every [`MIN_WAKE_GAP`], and starts every iteration
//!   due by then on an idle VU of its own thread. A thread with no idle VU leaves due
//!   iterations to another thread that has one; when no VU is idle anywhere the
//!   iteration is dropped and counted, and a VU is made in the background if `max_vus`
//!   allows.
//!
//! The scheduler used to have a thread of its own that handed each batch to the VU
//! threads: every wake-up was a context switch and a write to the VU thread's eventfd,
//! which made the open model cost 1.6 to 3.3 times the closed model's CPU per request
//! (results/open-model.md, "Cost per request, open vs closed").
//!
//! Each VU has a home among the VU threads, dealt in turn as the VUs are made: its
//! iterations, and so the connections they open, always run there, and it is idle in
//! that thread's list ([`VuPool`]).

use super::arrival_schedule::ArrivalSchedule;
use super::arrival_stages::StageTracker;
use super::context::{sleep_until, ActiveVu, ExecutorReport, Interrupt, ScenarioCtx};
use super::vu_pool::{Take, VuPool};
use super::vu_threads;
use super::wake_timer::WakeTimer;
use crate::control::RunControl;
use crate::metrics::builtin;
use crate::vu::Vu;
use crossbeam_utils::CachePadded;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::task::TaskTracker;

/// Longest a scheduler sleeps before looking whether the run was stopped.
const STOP_CHECK_EVERY: Duration = Duration::from_millis(20);

/// Shortest time between two wake-ups of a thread's scheduler. Above 2,000 iterations/s
/// it starts them in batches this far apart rather than waking for each (a wake-up of
/// an idle thread costs a context switch, tens of µs of CPU on a 2-core VM), and when
/// every VU is busy it drops the iterations due meanwhile this often. It adds at most
/// this much to the start lag.
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
    let threads = vu_threads::count().max(1);
    let homes = vus.len();
    let vus = vus
        .into_iter()
        .enumerate()
        .map(|(home, vu)| Homed::new(home, vu))
        .collect();
    let shared = Arc::new(Shared {
        hard: end + ctx.config.graceful_stop,
        end,
        pool: VuPool::new(threads, vus, |homed| homed.thread(), max_vus),
        next: AtomicU64::new(0),
        next_home: AtomicUsize::new(homes),
        tasks: TaskTracker::new(),
        schedule,
        stages: stages.map(Mutex::new),
        unrecorded: (0..threads)
            .map(|_| CachePadded::new(AtomicU64::new(0)))
            .collect(),
        ctx: ctx.clone(),
    });
    let mut schedulers = tokio::task::JoinSet::new();
    for thread in 0..threads {
        let scheduler = schedule_thread(shared.clone(), thread);
        match vu_threads::runtime_for(thread) {
            Some(runtime) => schedulers.spawn_on(scheduler, runtime),
            None => schedulers.spawn(scheduler),
        };
    }
    while let Some(joined) = schedulers.join_next().await {
        if let Err(e) = joined {
            crate::stderr::line(format_args!(
                "error: the scheduler of scenario {} failed: {e}",
                ctx.config.name
            ));
        }
    }
    // Every iteration of the schedule was started or dropped (or the run stopped).
    let reached = shared.next.load(Ordering::Acquire);
    // The scenario lasts its whole duration, as in k6, even when its last iteration
    // was due (and done) before the end: the run's per-second rates are over its
    // duration, not over the time to its last iteration (a 10 s run at 1/s would say
    // 1.11/s). A stop of the run ends the wait.
    tokio::select! {
        _ = sleep_until(end) => {}
        _ = ctx.control.stop.cancelled() => {}
    }
    shared.tasks.close();
    shared.tasks.wait().await;
    for thread in 0..threads {
        shared.flush_dropped(thread);
    }
    let stages = shared.stages.as_ref().map(|stages| {
        let mut stages = stages.lock().unwrap_or_else(|p| p.into_inner());
        stages.reached(reached, |offset| shared.schedule.due_before(offset));
        stages.report()
    });
    ExecutorReport {
        stages: stages.unwrap_or_default(),
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

    /// The VU thread it runs on.
    fn thread(&self) -> usize {
        vu_threads::thread_of(self.home)
    }
}

/// What the schedulers of a scenario's threads and its iterations share.
struct Shared {
    ctx: Arc<ScenarioCtx>,
    pool: VuPool<Homed>,
    /// The first iteration neither started nor dropped.
    next: AtomicU64,
    /// The home of the next VU made while the scenario runs.
    next_home: AtomicUsize,
    tasks: TaskTracker,
    schedule: ArrivalSchedule,
    /// When the schedule ends.
    end: Instant,
    /// When running iterations are interrupted (`end` plus `graceful_stop`).
    hard: Instant,
    /// Per-stage figures (ramping schedules).
    stages: Option<Mutex<StageTracker>>,
    /// Drops of each thread not yet recorded in `dropped_iterations`.
    unrecorded: Vec<CachePadded<AtomicU64>>,
}

impl Shared {
    /// When iteration `k` is due.
    fn due(&self, k: u64) -> Option<Instant> {
        self.schedule.due(k).map(|d| self.ctx.start + d)
    }

    /// Claims the first iteration neither started nor dropped if it is due by `now`
    /// and the run goes on; when it is due.
    fn claim_due(&self, now: Instant) -> Option<Instant> {
        loop {
            if self.ctx.control.stopping() {
                return None;
            }
            let k = self.next.load(Ordering::Acquire);
            let due = self.due(k).filter(|due| *due <= now)?;
            if self
                .next
                .compare_exchange(k, k + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Some(due);
            }
        }
    }

    /// Notes in the stage figures that an iteration due at `due` started.
    fn started(&self, due: Instant) {
        if let Some(stages) = &self.stages {
            let mut stages = stages.lock().unwrap_or_else(|p| p.into_inner());
            stages.started(due - self.ctx.start);
        }
    }

    /// Notes in the stage figures how many VUs are busy now.
    fn sample_busy(&self) {
        if let Some(stages) = &self.stages {
            let busy = self.ctx.stats.active_vus.load(Ordering::Relaxed);
            let offset = Instant::now().saturating_duration_since(self.ctx.start);
            let mut stages = stages.lock().unwrap_or_else(|p| p.into_inner());
            stages.busy(offset, busy);
        }
    }

    /// Adds `dropped` iterations of `thread` to the scenario's count; they are added to
    /// `dropped_iterations` at its scheduler's next wake-up ([`Shared::flush_dropped`]),
    /// so that iterations that end and drop do not record a sample each.
    fn dropped(&self, thread: usize, dropped: u64) {
        if dropped > 0 {
            self.ctx.stats.dropped.fetch_add(dropped, Ordering::Relaxed);
            self.unrecorded[thread % self.unrecorded.len()].fetch_add(dropped, Ordering::Relaxed);
        }
    }

    /// Records the drops of `thread` not yet in `dropped_iterations`.
    fn flush_dropped(&self, thread: usize) {
        let dropped = self.unrecorded[thread % self.unrecorded.len()].swap(0, Ordering::Relaxed);
        if dropped > 0 {
            self.ctx.factory.recorder().count(
                builtin::DROPPED_ITERATIONS,
                self.ctx.factory.tags(),
                dropped as f64,
            );
        }
    }
}

/// The scheduler of VU thread `thread` (a task on it): sleeps until the next iteration
/// is due, then starts the iterations due by then on this thread's idle VUs, leaves
/// them to another thread that has idle VUs, or drops them when no VU is idle anywhere.
async fn schedule_thread(shared: Arc<Shared>, thread: usize) {
    let mut timer = WakeTimer::new();
    let mut woke: Option<Instant> = None;
    while let Some(due) = shared.due(shared.next.load(Ordering::Acquire)) {
        let wake_at = woke.map_or(due, |w| due.max(w + MIN_WAKE_GAP));
        if !wait_until(&shared.ctx.control, &mut timer, wake_at).await {
            break;
        }
        let now = Instant::now();
        woke = Some(now);
        shared.sample_busy();
        let stopped = start_due(&shared, thread, now, true);
        shared.flush_dropped(thread);
        if stopped {
            break;
        }
    }
}

/// Starts every iteration due by `now` on the idle VUs of `thread` (only if
/// `take_idle`), makes VUs or drops iterations when no VU is idle anywhere, and leaves
/// the rest to the threads' schedulers while some VU is idle (see [`catch_up`]);
/// whether it saw a stop of the run.
fn start_due(shared: &Arc<Shared>, thread: usize, now: Instant, take_idle: bool) -> bool {
    let take = || {
        if take_idle {
            shared.pool.take(thread)
        } else {
            shared.pool.take_none_idle()
        }
    };
    let caught_up = catch_up(
        &shared.schedule,
        shared.ctx.start,
        now,
        &shared.next,
        || shared.ctx.control.stopping(),
        || match take() {
            Take::Idle(homed) => Turn::Start(homed),
            Take::Elsewhere => Turn::Elsewhere,
            Take::Make => Turn::Make,
            Take::None => Turn::NoVu,
        },
        |turn| match turn {
            Turn::Start(homed) => shared.pool.put(thread, homed),
            Turn::Make => shared.pool.not_made(),
            Turn::Elsewhere | Turn::NoVu => {}
        },
    );
    for (homed, due) in caught_up.starts {
        // Counted busy now, so the sample below sees it.
        let busy = ActiveVu::new(&shared.ctx.stats);
        // Spawned from this thread's runtime onto itself: a push on its own run queue,
        // no wake-up.
        shared.tasks.spawn(run_vu(shared.clone(), homed, due, busy));
    }
    for _ in 0..caught_up.make {
        make_vu(shared);
    }
    // Sampled again once the due iterations have started: with a fast target every
    // earlier iteration may have ended before this wake-up, and the VUs just started
    // are busy now.
    shared.sample_busy();
    shared.dropped(thread, caught_up.dropped);
    caught_up.stopped
}

/// Runs `homed`'s iteration due at `due`, then each next one that is due by the time
/// the last ends, and puts the VU back in its thread's idle list when none is (after the
/// pause of a VU whose `init` failed).
async fn run_vu(shared: Arc<Shared>, mut homed: Homed, mut due: Instant, busy: ActiveVu) {
    let ctx = &shared.ctx;
    loop {
        shared.started(due);
        let interrupt = homed
            .interrupt
            .get_or_insert_with(|| ctx.interrupt_at(shared.hard));
        ctx.run_iteration(&mut homed.vu, Some(due), Pin::new(interrupt))
            .await;
        if homed.vu.retry_at().is_some() {
            break;
        }
        let now = Instant::now();
        match shared.claim_due(now) {
            Some(next) => due = next,
            None => break,
        }
        // More may be due than this VU can take. When no VU is idle anywhere they are
        // dropped (or a VU is made) now, as the scheduler would at its next wake-up:
        // on a busy thread it sees its timer only at the runtime's I/O polls (every 61
        // task polls). While some VU is idle they are left to the schedulers: the
        // idle VUs of the least busy thread, whose scheduler wakes first, take them,
        // rather than this busy thread's. (A stop it sees ends the loop at the next
        // claim.)
        start_due(&shared, homed.thread(), now, false);
    }
    drop(busy);
    rest_after_init_failure(ctx, homed.vu.retry_at(), shared.end).await;
    shared.pool.put(homed.thread(), homed);
}

/// Makes one VU in the background, on the thread that will be its home, and adds it
/// to the pool; gives up at the schedule's end or a stop, since no iteration could
/// use it then.
fn make_vu(shared: &Arc<Shared>) {
    let home = shared.next_home.fetch_add(1, Ordering::Relaxed);
    let task_shared = shared.clone();
    spawn_at(&shared.tasks, home, async move {
        let shared = task_shared;
        let ctx = &shared.ctx;
        let made = tokio::select! {
            made = ctx.factory.make() => Some(made),
            _ = sleep_until(shared.end) => None,
            _ = ctx.control.stop.cancelled() => None,
        };
        match made {
            Some(Ok(vu)) => {
                ctx.stats.allocated_vus.fetch_add(1, Ordering::Relaxed);
                rest_after_init_failure(ctx, vu.retry_at(), shared.end).await;
                let homed = Homed::new(home, vu);
                shared.pool.made(homed.thread(), homed);
            }
            Some(Err(e)) => {
                ctx.factory.report_failure(&e);
                shared.pool.not_made();
            }
            None => shared.pool.not_made(),
        }
    });
}

/// Spawns `task` on the VU thread of `home` (or on the caller's runtime when no VU
/// thread could be started), tracked so the scenario waits for it.
fn spawn_at(tasks: &TaskTracker, home: usize, task: impl Future<Output = ()> + Send + 'static) {
    match vu_threads::runtime_for(home) {
        Some(runtime) => tasks.spawn_on(task, runtime),
        None => tasks.spawn(task),
    };
}

/// Waits until `due`; false if the run was stopped meanwhile (looked at least every
/// [`STOP_CHECK_EVERY`], without a waiter on the stop token, whose list every VU
/// thread locks).
async fn wait_until(control: &RunControl, timer: &mut WakeTimer, due: Instant) -> bool {
    loop {
        if control.stopping() {
            return false;
        }
        let now = Instant::now();
        if due <= now {
            return true;
        }
        timer.sleep_until(due.min(now + STOP_CHECK_EVERY)).await;
    }
}

/// What a thread's scheduler does with a due iteration.
#[derive(Debug, PartialEq, Eq)]
enum Turn<V> {
    /// Start it on this idle VU.
    Start(V),
    /// Leave it to another thread, which has an idle VU.
    Elsewhere,
    /// Drop it, and make a VU for later ones.
    Make,
    /// Drop it: no VU can be had before the next wake-up.
    NoVu,
}

/// What one wake-up of a thread's scheduler did.
#[derive(Debug, PartialEq, Eq)]
struct CaughtUp<V> {
    /// The iterations to start, on which VU, and when each was due.
    starts: Vec<(V, Instant)>,
    /// VUs to make.
    make: u64,
    /// Iterations dropped.
    dropped: u64,
    /// Whether it saw a stop of the run.
    stopped: bool,
}

/// Claims from `next` every iteration due by `now` and asks `take` what to do with each:
/// start it on a VU, drop it (making a VU), or leave it and the rest to another thread.
/// A claim that another thread made first is given back to `undo`. Once no VU can be
/// had, the rest due by now are dropped in one step, so even a backlog of millions (a
/// very high rate, or a long pause of the thread) costs no more than a few iterations;
/// a stop of the run is seen between any two of them.
fn catch_up<V>(
    schedule: &ArrivalSchedule,
    start: Instant,
    now: Instant,
    next: &AtomicU64,
    stop: impl Fn() -> bool,
    mut take: impl FnMut() -> Turn<V>,
    mut undo: impl FnMut(Turn<V>),
) -> CaughtUp<V> {
    let mut out = CaughtUp {
        starts: Vec::new(),
        make: 0,
        dropped: 0,
        stopped: false,
    };
    let claim = |k: u64| {
        next.compare_exchange(k, k + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    };
    loop {
        let k = next.load(Ordering::Acquire);
        let Some(due) = schedule.due(k).map(|d| start + d).filter(|d| *d <= now) else {
            break;
        };
        if stop() {
            out.stopped = true;
            break;
        }
        match take() {
            Turn::Elsewhere => break,
            Turn::NoVu => {
                let missed = schedule
                    .due_before(now.saturating_duration_since(start))
                    .max(k + 1);
                let before = next.fetch_max(missed, Ordering::AcqRel);
                out.dropped += missed.saturating_sub(before);
            }
            Turn::Start(vu) if claim(k) => out.starts.push((vu, due)),
            Turn::Make if claim(k) => {
                out.dropped += 1;
                out.make += 1;
            }
            lost => undo(lost),
        }
    }
    out
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
    use std::cell::Cell;

    /// `catch_up` with no stop and nothing lost to another thread.
    fn catch_up_alone(
        schedule: &ArrivalSchedule,
        start: Instant,
        now: Instant,
        next: &AtomicU64,
        take: impl FnMut() -> Turn<u32>,
    ) -> CaughtUp<u32> {
        catch_up(
            schedule,
            start,
            now,
            next,
            || false,
            take,
            |_| panic!("no other thread claims"),
        )
    }

    #[test]
    fn a_backlog_of_a_billion_is_counted_in_a_few_steps() {
        // 1e9/s for 2 s, 2 VUs: a wake-up 0.5 s in starts 2 and drops the rest.
        let schedule =
            ArrivalSchedule::constant(1e9, Duration::from_secs(1), Duration::from_secs(2));
        let start = Instant::now();
        let calls = Cell::new(0u32);
        let next = AtomicU64::new(0);
        let out = catch_up_alone(
            &schedule,
            start,
            start + Duration::from_millis(500),
            &next,
            || {
                calls.set(calls.get() + 1);
                if calls.get() <= 2 {
                    Turn::Start(calls.get())
                } else {
                    Turn::NoVu
                }
            },
        );
        // Two started, then one step for the rest (and one more for the iteration due
        // at the very instant, which float rounding may leave to itself).
        assert!((3..=4).contains(&calls.get()), "{} calls", calls.get());
        let claimed = next.load(Ordering::Acquire);
        assert_eq!(
            claimed, 500_000_001,
            "due before 0.5 s, and the one due at it"
        );
        assert_eq!(out.starts.len(), 2);
        assert_eq!(claimed, 2 + out.dropped);
        assert!(!out.stopped);
        // The next wake-up, at the end: every due iteration was started or dropped.
        let rest = catch_up_alone(
            &schedule,
            start,
            start + Duration::from_secs(2),
            &next,
            || Turn::NoVu,
        );
        assert_eq!(next.load(Ordering::Acquire), 2_000_000_000);
        assert_eq!(2 + out.dropped + rest.dropped, 2_000_000_000);
    }

    #[test]
    fn a_stop_is_seen_inside_the_catch_up() {
        let schedule =
            ArrivalSchedule::constant(1e6, Duration::from_secs(1), Duration::from_secs(10));
        let start = Instant::now();
        let calls = Cell::new(0u32);
        let next = AtomicU64::new(0);
        // Every due iteration finds a VU (as many as there are): stopped after 1,000.
        let out = catch_up(
            &schedule,
            start,
            start + Duration::from_secs(5),
            &next,
            || calls.get() >= 1000,
            || {
                calls.set(calls.get() + 1);
                Turn::Start(calls.get())
            },
            |_| panic!("no other thread claims"),
        );
        assert!(out.stopped);
        assert_eq!(next.load(Ordering::Acquire), 1000);
        assert_eq!(out.starts.len(), 1000);
        assert_eq!(out.dropped, 0);
    }

    #[test]
    fn drops_while_a_vu_is_made_are_counted_one_by_one() {
        let schedule =
            ArrivalSchedule::constant(10.0, Duration::from_secs(1), Duration::from_secs(1));
        let start = Instant::now();
        let turns = [Turn::Start(1), Turn::Make, Turn::Start(2), Turn::Make];
        let mut turns = turns.into_iter();
        let next = AtomicU64::new(0);
        let out = catch_up_alone(
            &schedule,
            start,
            start + Duration::from_millis(350),
            &next,
            || turns.next().expect("four due"),
        );
        assert_eq!(next.load(Ordering::Acquire), 4);
        assert_eq!((out.make, out.dropped, out.stopped), (2, 2, false));
        let started: Vec<_> = out.starts.iter().map(|(vu, _)| *vu).collect();
        assert_eq!(started, [1, 2]);
    }

    #[test]
    fn a_thread_without_idle_vus_leaves_the_rest_and_a_lost_claim_is_given_back() {
        let schedule =
            ArrivalSchedule::constant(10.0, Duration::from_secs(1), Duration::from_secs(1));
        let start = Instant::now();
        let now = start + Duration::from_millis(350);
        let next = AtomicU64::new(0);
        // One idle VU here, then none: iterations 1..4 are left, neither started nor
        // dropped.
        let mut idle = vec![7];
        let out = catch_up_alone(&schedule, start, now, &next, || {
            idle.pop().map_or(Turn::Elsewhere, Turn::Start)
        });
        assert_eq!(next.load(Ordering::Acquire), 1);
        assert_eq!((out.starts.len(), out.dropped), (1, 0));
        // Another thread claims iteration 1 while this one decides: the VU it took is
        // given back, and it goes on from iteration 2.
        let mut given_back = Vec::new();
        let mut takes = 0;
        let out = catch_up(
            &schedule,
            start,
            now,
            &next,
            || false,
            || {
                takes += 1;
                if takes == 1 {
                    next.fetch_add(1, Ordering::AcqRel);
                }
                Turn::Start(takes)
            },
            |lost| given_back.push(lost),
        );
        assert_eq!(given_back, [Turn::Start(1)]);
        let started: Vec<_> = out.starts.iter().map(|(vu, _)| *vu).collect();
        assert_eq!(started, [2, 3], "iterations 2 and 3");
        let due = out.starts[0].1 - start;
        assert!(due.abs_diff(Duration::from_millis(200)) < Duration::from_micros(1));
        assert_eq!(next.load(Ordering::Acquire), 4);
    }
}
