//! `ramping-arrival-rate`: the arrival rate starts at `start_rate` and follows
//! `stages`, each a linear ramp to its target (iterations per `time_unit`) over its
//! duration (open model); see [`super::arrival_rate`].

use super::arrival_rate;
use super::arrival_schedule::ArrivalSchedule;
use super::arrival_stages::StageTracker;
use super::context::{ExecutorReport, ScenarioCtx};
use crate::config::Stage;
use crate::vu::Vu;
use std::sync::Arc;
use std::time::Duration;

/// Runs the executor on the pre-allocated `vus`, growing to `max_vus` (both the
/// segment's share); of the whole schedule, it starts the iterations of its stripe.
pub(crate) async fn run(
    ctx: Arc<ScenarioCtx>,
    vus: Vec<Vu>,
    start_rate: f64,
    time_unit: Duration,
    stages: Vec<Stage>,
    max_vus: u64,
) -> ExecutorReport {
    let schedule =
        ArrivalSchedule::ramping(start_rate, time_unit, &stages).striped(ctx.stripe().cloned());
    let tracker = StageTracker::new(&stages);
    arrival_rate::run(ctx, vus, schedule, max_vus, Some(tracker)).await
}
