//! `ramping-vus`: the number of active VUs follows the stages. VU `i` is active while
//! the schedule's value is above `i`; a VU ramped down mid-iteration gets
//! `graceful_ramp_down` to finish it before it is interrupted.
//!
//! An execution segment follows its share of the whole test's value at every moment
//! (k6's striped scaling), so the segments' VUs add up to the whole's at all times.

use super::context::{
    run_vu_loops, sleep_until, ActiveVu, ExecutorReport, ScenarioCtx, StageReport,
};
use super::stages::stage_ends;
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
    let target = move |t: Duration| segment.scale(target_at(start_vus, &ramp, t));
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

/// The VUs at `t`, stepped as k6 steps them: within a stage, the i-th of its `|diff|`
/// steps comes at i/|diff| of its duration, up or down. A ramp down thus keeps a VU
/// until its step (2 → 1 over 1 s keeps both VUs the whole second, as k6 1.1.0 does
/// for `-s 1s:1` on a script of `vus: 2`), where the linear value floored would drop
/// it at once.
fn target_at(start_vus: u64, stages: &[Stage], t: Duration) -> u64 {
    let mut from = start_vus;
    let mut stage_start = Duration::ZERO;
    for stage in stages {
        let stage_end = stage_start + stage.duration;
        if t < stage_end {
            let done = (t - stage_start).as_secs_f64() / stage.duration.as_secs_f64();
            let diff = stage.target.abs_diff(from);
            // A tiny epsilon keeps float error from losing a step exactly at its time.
            let steps = ((diff as f64 * done) + 1e-9).floor() as u64;
            return if stage.target >= from {
                from + steps.min(diff)
            } else {
                from - steps.min(diff)
            };
        }
        from = stage.target;
        stage_start = stage_end;
    }
    from
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

#[cfg(test)]
mod step_tests {
    use super::*;

    fn stage(secs: u64, target: u64) -> Stage {
        Stage {
            duration: Duration::from_secs(secs),
            target,
        }
    }

    /// k6's steps: up at i/|diff| of the stage, down likewise (a VU leaves at its
    /// step, not as soon as the linear value falls under it).
    #[test]
    fn steps_come_at_k6_s_times_up_and_down() {
        let ms = Duration::from_millis;
        let down = [stage(1, 1)];
        assert_eq!(target_at(2, &down, ms(0)), 2);
        assert_eq!(target_at(2, &down, ms(999)), 2, "both VUs the whole second");
        assert_eq!(target_at(2, &down, ms(1000)), 1);
        let up = [stage(2, 3), stage(0, 5), stage(4, 1)];
        assert_eq!(target_at(1, &up, ms(999)), 1);
        assert_eq!(target_at(1, &up, ms(1000)), 2);
        assert_eq!(target_at(1, &up, ms(2000)), 5, "a stage of no time jumps");
        assert_eq!(target_at(1, &up, ms(2999)), 5);
        assert_eq!(target_at(1, &up, ms(3000)), 4);
        assert_eq!(target_at(1, &up, ms(6000)), 1);
        assert_eq!(target_at(1, &up, ms(9000)), 1);
    }
}
