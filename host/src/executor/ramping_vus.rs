//! `ramping-vus`: the number of active VUs follows the stages. VU `i` is active while
//! the schedule's value is above `i`; a VU ramped down mid-iteration gets
//! `graceful_ramp_down` to finish it before it is interrupted.
//!
//! An execution segment follows its share of the whole test's value at every moment
//! (k6's striped scaling), so the segments' VUs add up to the whole's at all times.

use super::context::{
    run_vu_loops, sleep_until, ActiveVu, ExecutorReport, ScenarioCtx, StageReport,
};
use super::stages::{stage_ends, steps_at};
use crate::config::Stage;
use crate::vu::Vu;
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How often the controller recomputes the target.
const CONTROL_TICK: Duration = Duration::from_millis(5);

/// Runs the executor.
pub(crate) async fn run(
    ctx: Arc<ScenarioCtx>,
    vus: Vec<Vu>,
    start_vus: u64,
    stages: Vec<Stage>,
    graceful_ramp_down: Duration,
) -> ExecutorReport {
    ctx.wait_for_start().await;
    let total: Duration = stages.iter().map(|s| s.duration).sum();
    let end = ctx.start + total;
    let hard = end + ctx.config.graceful_stop;
    let (segment, ramp) = (ctx.config.segment.clone(), stages.clone());
    let target = move |t: Duration| segment.scale(steps_at(start_vus, &ramp, t));
    let (tx, rx) = watch::channel(target(Duration::ZERO));

    let controller = control(ctx.clone(), tx, stages, target);
    let loops = run_vu_loops(&ctx, vus, move |ctx, vu, index| {
        vu_loop(
            ctx,
            vu,
            index as u64,
            rx.clone(),
            end,
            hard,
            graceful_ramp_down,
        )
    });
    let (report, ()) = tokio::join!(controller, loops);
    report
}

/// Publishes the target (`target` of the time since the start) as time passes and notes
/// what each stage reached.
async fn control(
    ctx: Arc<ScenarioCtx>,
    tx: watch::Sender<u64>,
    stages: Vec<Stage>,
    target: impl Fn(Duration) -> u64,
) -> ExecutorReport {
    let ends = stage_ends(&stages);
    let mut reports: Vec<StageReport> = stages
        .iter()
        .map(|s| StageReport {
            target: ctx.config.segment.scale(s.target),
            ..Default::default()
        })
        .collect();
    let mut stage = 0;
    let mut tick = tokio::time::interval(CONTROL_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    while stage < stages.len() && !ctx.control.stopping() {
        tick.tick().await;
        let elapsed = Instant::now().saturating_duration_since(ctx.start);
        let active = ctx.stats.active_vus.load(Ordering::Relaxed);
        // The last sample taken inside a stage is its end: at the schedule's end the
        // VUs are already leaving.
        while stage < stages.len() && elapsed >= ends[stage] {
            stage += 1;
        }
        if stage == stages.len() {
            break;
        }
        reports[stage].peak = reports[stage].peak.max(active);
        reports[stage].at_end = active;
        tx.send_if_modified(|current| {
            let target = target(elapsed);
            let changed = *current != target;
            *current = target;
            changed
        });
    }
    ExecutorReport { stages: reports }
}

async fn vu_loop(
    ctx: Arc<ScenarioCtx>,
    mut vu: Vu,
    index: u64,
    mut rx: watch::Receiver<u64>,
    end: Instant,
    hard: Instant,
    grace: Duration,
) {
    loop {
        // Parked until the schedule reaches this VU.
        loop {
            if !ctx.may_start(end) {
                return;
            }
            if *rx.borrow_and_update() > index {
                break;
            }
            tokio::select! {
                changed = rx.changed() => if changed.is_err() { return },
                _ = sleep_until(end) => return,
                _ = ctx.control.stop.cancelled() => return,
            }
        }
        let _active = ActiveVu::new(&ctx.stats);
        while ctx.may_start(end) && *rx.borrow() > index {
            let interrupt = {
                let (rx, stop) = (rx.clone(), ctx.interrupt_at(hard));
                async move {
                    tokio::select! {
                        _ = stop => {}
                        _ = ramped_down(rx, index, grace) => {}
                    }
                }
            };
            ctx.run_iteration(&mut vu, None, pin!(interrupt)).await;
        }
    }
}

/// Resolves when VU `index` has been ramped down for longer than `grace`.
async fn ramped_down(mut rx: watch::Receiver<u64>, index: u64, grace: Duration) {
    loop {
        while *rx.borrow_and_update() > index {
            if rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
        tokio::time::sleep(grace).await;
        if *rx.borrow() <= index {
            return;
        }
    }
}
