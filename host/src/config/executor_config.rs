//! What a scenario's executor is, as a type: the executors k6 names, their options and
//! the figures derived from them (peak VUs, peak rate, length). A leaf of `config`: the
//! registry that reads these from a table (`executors`) and the scenario parser
//! (`scenario`) both build on it, and it imports neither.

use std::time::Duration;

/// `constant-vus`: a fixed number of VUs loop for a duration.
pub(crate) const CONSTANT_VUS: &str = "constant-vus";
/// `ramping-vus`: the VU count follows stages.
pub(crate) const RAMPING_VUS: &str = "ramping-vus";
/// `per-vu-iterations`: each VU runs a number of iterations.
pub(crate) const PER_VU_ITERATIONS: &str = "per-vu-iterations";
/// `shared-iterations`: VUs share a pool of iterations.
pub(crate) const SHARED_ITERATIONS: &str = "shared-iterations";
/// `constant-arrival-rate`: iterations start at a fixed rate.
pub(crate) const CONSTANT_ARRIVAL_RATE: &str = "constant-arrival-rate";
/// `ramping-arrival-rate`: the arrival rate follows stages.
pub(crate) const RAMPING_ARRIVAL_RATE: &str = "ramping-arrival-rate";

/// A stage of a ramping executor: reach `target` linearly over `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stage {
    /// How long the ramp to `target` takes.
    pub duration: Duration,
    /// VUs (ramping-vus) or iterations per `time_unit` (ramping-arrival-rate) at its end.
    pub target: u64,
}

/// How a scenario schedules iterations.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecutorConfig {
    /// A fixed number of VUs loop for a duration (closed model).
    ConstantVus {
        /// VUs running at once.
        vus: u64,
        /// How long they loop.
        duration: Duration,
    },
    /// The VU count follows stages (closed model).
    RampingVus {
        /// VUs at the start.
        start_vus: u64,
        /// The ramps.
        stages: Vec<Stage>,
        /// How long an iteration of a VU being ramped down may take to finish.
        graceful_ramp_down: Duration,
    },
    /// Each VU runs exactly `iterations` iterations (closed model).
    PerVuIterations {
        /// VUs.
        vus: u64,
        /// Iterations per VU.
        iterations: u64,
        /// The scenario stops after this long even if iterations are left.
        max_duration: Duration,
    },
    /// VUs share a pool of `iterations` iterations (closed model).
    SharedIterations {
        /// VUs.
        vus: u64,
        /// Iterations in total.
        iterations: u64,
        /// The scenario stops after this long even if iterations are left.
        max_duration: Duration,
    },
    /// Iterations start at a fixed rate whether or not earlier ones finished (open model).
    ConstantArrivalRate {
        /// Iterations per `time_unit`.
        rate: f64,
        /// The unit of `rate`.
        time_unit: Duration,
        /// How long iterations keep arriving.
        duration: Duration,
        /// VUs made before the start.
        pre_allocated_vus: u64,
        /// The most VUs the scenario may make while running.
        max_vus: u64,
    },
    /// The arrival rate follows stages (open model).
    RampingArrivalRate {
        /// Iterations per `time_unit` at the start.
        start_rate: f64,
        /// The unit of the rates.
        time_unit: Duration,
        /// The ramps (targets in iterations per `time_unit`).
        stages: Vec<Stage>,
        /// VUs made before the start.
        pre_allocated_vus: u64,
        /// The most VUs the scenario may make while running.
        max_vus: u64,
    },
}

impl ExecutorConfig {
    /// The executor's name in configs.
    pub fn name(&self) -> &'static str {
        match self {
            Self::ConstantVus { .. } => CONSTANT_VUS,
            Self::RampingVus { .. } => RAMPING_VUS,
            Self::PerVuIterations { .. } => PER_VU_ITERATIONS,
            Self::SharedIterations { .. } => SHARED_ITERATIONS,
            Self::ConstantArrivalRate { .. } => CONSTANT_ARRIVAL_RATE,
            Self::RampingArrivalRate { .. } => RAMPING_ARRIVAL_RATE,
        }
    }

    /// The most VUs this executor can have at once.
    pub fn max_vus(&self) -> u64 {
        match self {
            Self::ConstantVus { vus, .. }
            | Self::PerVuIterations { vus, .. }
            | Self::SharedIterations { vus, .. } => *vus,
            Self::RampingVus {
                start_vus, stages, ..
            } => stages
                .iter()
                .map(|s| s.target)
                .max()
                .unwrap_or(0)
                .max(*start_vus),
            Self::ConstantArrivalRate {
                pre_allocated_vus,
                max_vus,
                ..
            }
            | Self::RampingArrivalRate {
                pre_allocated_vus,
                max_vus,
                ..
            } => (*max_vus).max(*pre_allocated_vus),
        }
    }

    /// VUs made and initialised before the test starts.
    pub fn initial_vus(&self) -> u64 {
        match self {
            Self::ConstantArrivalRate {
                pre_allocated_vus, ..
            }
            | Self::RampingArrivalRate {
                pre_allocated_vus, ..
            } => *pre_allocated_vus,
            other => other.max_vus(),
        }
    }

    /// The highest arrival rate of an open-model executor, in iterations per second.
    pub fn peak_rate(&self) -> Option<f64> {
        match self {
            Self::ConstantArrivalRate {
                rate, time_unit, ..
            } => Some(rate / time_unit.as_secs_f64()),
            Self::RampingArrivalRate {
                start_rate,
                time_unit,
                stages,
                ..
            } => {
                let peak = stages
                    .iter()
                    .map(|s| s.target as f64)
                    .fold(*start_rate, f64::max);
                Some(peak / time_unit.as_secs_f64())
            }
            _ => None,
        }
    }

    /// How long the executor schedules work, without `graceful_stop`.
    pub fn duration(&self) -> Duration {
        match self {
            Self::ConstantVus { duration, .. } | Self::ConstantArrivalRate { duration, .. } => {
                *duration
            }
            Self::RampingVus { stages, .. } | Self::RampingArrivalRate { stages, .. } => {
                stages.iter().map(|s| s.duration).sum()
            }
            Self::PerVuIterations { max_duration, .. }
            | Self::SharedIterations { max_duration, .. } => *max_duration,
        }
    }
}
