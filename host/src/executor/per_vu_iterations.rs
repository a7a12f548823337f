//! `per-vu-iterations`: each VU runs exactly `iterations` iterations, unless
//! `max_duration` runs out first.

use super::{run_vu_loops, ExecutorReport, ScenarioCtx};
use crate::vu::Vu;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Runs the executor.
pub async fn run(
    ctx: Arc<ScenarioCtx>,
    vus: Vec<Vu>,
    iterations: u64,
    max_duration: Duration,
) -> ExecutorReport {
    ctx.wait_for_start().await;
    let end = ctx.start + max_duration;
    let hard = end + ctx.config.graceful_stop;
    run_vu_loops(&ctx, vus, move |ctx, mut vu, _| async move {
        ctx.stats.active_vus.fetch_add(1, Ordering::Relaxed);
        let mut interrupt = ctx.interrupt_at(hard);
        for _ in 0..iterations {
            if !ctx.may_start(end) {
                break;
            }
            ctx.run_iteration(&mut vu, None, Pin::new(&mut interrupt))
                .await;
        }
        ctx.stats.active_vus.fetch_sub(1, Ordering::Relaxed);
    })
    .await;
    ExecutorReport::default()
}
