//! Executors: one per scenario, each scheduling iterations on its VUs with k6's
//! semantics. This file dispatches a scenario to its executor; what they share (the
//! scenario's context, its live counters, the VU loop helpers) is in `context.rs`, and
//! each executor has a file of its own.

pub(crate) mod arrival_rate;
pub(crate) mod arrival_schedule;
pub(crate) mod arrival_stages;
pub(crate) mod claims;
pub(crate) mod constant_arrival_rate;
pub(crate) mod constant_vus;
pub(crate) mod context;
pub(crate) mod per_vu_iterations;
pub(crate) mod ramping_arrival_rate;
pub(crate) mod ramping_vus;
pub(crate) mod shared_iterations;
pub(crate) mod stages;
pub(crate) mod vu_pool;
pub(crate) mod vu_threads;

pub(crate) use context::{ExecutorReport, ScenarioCtx, StageReport};

use crate::config::ExecutorConfig;
use crate::vu::Vu;
use std::sync::Arc;

/// Runs the scenario's executor on `vus` (already initialised, the segment's share of
/// them) until it is over. The options are the whole test's; each executor takes its
/// segment's share.
pub(crate) async fn run(ctx: Arc<ScenarioCtx>, vus: Vec<Vu>) -> ExecutorReport {
    let max_vus = ctx.config.max_vus();
    match ctx.config.executor.clone() {
        ExecutorConfig::ConstantVus { duration, .. } => constant_vus::run(ctx, vus, duration).await,
        ExecutorConfig::RampingVus {
            start_vus,
            stages,
            graceful_ramp_down,
        } => ramping_vus::run(ctx, vus, start_vus, stages, graceful_ramp_down).await,
        ExecutorConfig::PerVuIterations {
            iterations,
            max_duration,
            ..
        } => per_vu_iterations::run(ctx, vus, iterations, max_duration).await,
        ExecutorConfig::SharedIterations {
            iterations,
            max_duration,
            ..
        } => shared_iterations::run(ctx, vus, iterations, max_duration).await,
        ExecutorConfig::ConstantArrivalRate {
            rate,
            time_unit,
            duration,
            ..
        } => constant_arrival_rate::run(ctx, vus, rate, time_unit, duration, max_vus).await,
        ExecutorConfig::RampingArrivalRate {
            start_rate,
            time_unit,
            stages,
            ..
        } => ramping_arrival_rate::run(ctx, vus, start_rate, time_unit, stages, max_vus).await,
    }
}
