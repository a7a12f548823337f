//! `per-vu-iterations`: each VU runs exactly `iterations` iterations, unless
//! `max_duration` runs out first.

use super::context::{run_vu_loops, ActiveVu, ExecutorReport, ScenarioCtx};
use crate::vu::Vu;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// Runs the executor.
pub(crate) async fn run(
    ctx: Arc<ScenarioCtx>,
    vus: Vec<Vu>,
    iterations: u64,
    max_duration: Duration,
) -> ExecutorReport {
    ctx.wait_for_start().await;
    let end = ctx.start + max_duration;
    let hard = end + ctx.config.graceful_stop;
    run_vu_loops(&ctx, vus, move |ctx, mut vu, _| async move {
        let _active = ActiveVu::new(&ctx.stats);
        let mut interrupt = ctx.interrupt_at(hard);
        for _ in 0..iterations {
            if !ctx.may_start(end) {
                break;
            }
            ctx.run_iteration(&mut vu, None, Pin::new(&mut interrupt))
                .await;
        }
    })
    .await;
    ExecutorReport::default()
}
