//! `constant-arrival-rate`: `rate` iterations per `time_unit` start for `duration`,
//! whether or not earlier ones have finished (open model); see [`super::arrival_rate`].

use super::arrival_rate;
use super::arrival_schedule::ArrivalSchedule;
use super::context::{ExecutorReport, ScenarioCtx};
use crate::vu::Vu;
use std::sync::Arc;
use std::time::Duration;

/// Runs the executor on the pre-allocated `vus`, growing to `max_vus` (both the
/// segment's share); of the whole schedule, it starts the iterations of its stripe.
pub(crate) async fn run(
    ctx: Arc<ScenarioCtx>,
    vus: Vec<Vu>,
    rate: f64,
    time_unit: Duration,
    duration: Duration,
    max_vus: u64,
) -> ExecutorReport {
    let schedule =
        ArrivalSchedule::constant(rate, time_unit, duration).striped(ctx.stripe().cloned());
    arrival_rate::run(ctx, vus, schedule, max_vus, None).await
}
