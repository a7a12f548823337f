//! One scenario of a run: which executor drives it, with which options (k6's names and
//! meanings), and what every scenario shares (`exec`, `start_time`, `graceful_stop`, ...).

use super::executors;
use super::segment::ExecutionTuple;
use super::table::{unknown_message, Collector, ConfigErrors, TableReader};
use std::collections::BTreeMap;
use std::time::Duration;

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
            Self::ConstantVus { .. } => executors::CONSTANT_VUS,
            Self::RampingVus { .. } => executors::RAMPING_VUS,
            Self::PerVuIterations { .. } => executors::PER_VU_ITERATIONS,
            Self::SharedIterations { .. } => executors::SHARED_ITERATIONS,
            Self::ConstantArrivalRate { .. } => executors::CONSTANT_ARRIVAL_RATE,
            Self::RampingArrivalRate { .. } => executors::RAMPING_ARRIVAL_RATE,
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

/// A scenario: an executor plus the options every executor takes.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioConfig {
    /// The table name under `[scenarios]`.
    pub name: String,
    /// The plugin scenario to run (`iteration(exec)`).
    pub exec: String,
    /// The schedule.
    pub executor: ExecutorConfig,
    /// Offset from the start of the test.
    pub start_time: Duration,
    /// How long running iterations may take to finish once the schedule ends.
    pub graceful_stop: Duration,
    /// Environment variables for this scenario's VUs (over the run's `[env]`).
    pub env: BTreeMap<String, String>,
    /// Tags added to every metric sample of this scenario.
    pub tags: BTreeMap<String, String>,
    /// The share of the scenario this process runs (the run's execution segment): the
    /// options above are the whole test's, the executor takes its share of them.
    pub segment: ExecutionTuple,
}

impl ScenarioConfig {
    /// When this scenario is over for sure: start, schedule and graceful stop.
    pub fn end_offset(&self) -> Duration {
        let ramp_down = match self.executor {
            ExecutorConfig::RampingVus {
                graceful_ramp_down, ..
            } => graceful_ramp_down,
            _ => Duration::ZERO,
        };
        self.start_time + self.executor.duration() + self.graceful_stop.max(ramp_down)
    }

    /// The most VUs this process's share of the scenario can have at once (k6 scales
    /// each VU option by the segment).
    pub fn max_vus(&self) -> u64 {
        self.segment.scale(self.executor.max_vus())
    }

    /// VUs this process makes and initialises before the test starts.
    pub fn initial_vus(&self) -> u64 {
        self.segment.scale(self.executor.initial_vus())
    }

    /// The striping of this scenario's iterations over the processes of the sequence:
    /// the segment's global iteration numbers (and, in the open model, the schedule's
    /// iterations it starts) are this tuple's indexes. As in k6, the iterations of
    /// `shared-iterations` are dealt over its VUs and those of the arrival-rate
    /// executors over their `max_vus`, so a process without VUs gets no iteration and
    /// the others take them all. `None`: this process has no share of them.
    pub fn iteration_stripe(&self) -> Option<ExecutionTuple> {
        match &self.executor {
            ExecutorConfig::SharedIterations { vus, .. } => self.segment.for_value(*vus),
            open @ (ExecutorConfig::ConstantArrivalRate { .. }
            | ExecutorConfig::RampingArrivalRate { .. }) => self.segment.for_value(open.max_vus()),
            _ => Some(self.segment.clone()),
        }
    }
}

/// Reads one `[scenarios.NAME]` table, to its end whatever it holds: every mistake
/// of the table is reported at once, and a required key written with a typo is named
/// as written (`duraton`), not reported as missing.
pub(crate) fn parse_scenario(
    name: &str,
    table: &toml::Table,
) -> Result<ScenarioConfig, ConfigErrors> {
    let path = format!("scenarios.{name}");
    let mut r = TableReader::new(path, table);
    let mut c = Collector::default();
    let executor_name = c.keep(r.required(
        "executor",
        &format!("set executor to one of: {}", executors::names().join(", ")),
        TableReader::string,
    ));
    let exec = c
        .opt(r.string("exec"))
        .unwrap_or_else(|| "default".to_string());
    let start_time = c.opt(r.duration("start_time")).unwrap_or_default();
    let graceful_stop = c
        .opt(r.duration("graceful_stop"))
        .unwrap_or(Duration::from_secs(30));
    let env = c.keep(r.string_map("env")).unwrap_or_default();
    let tags = c.keep(r.string_map("tags")).unwrap_or_default();
    let executor = match executor_name.as_deref().map(|n| (n, executors::find(n))) {
        Some((_, Some(known))) => (known.read)(&mut r, &mut c),
        unknown => {
            if let Some((other, None)) = unknown {
                c.push(r.error(
                    "executor",
                    unknown_message("executor", other, &executors::names()),
                ));
            }
            // Which options apply is not known: only keys no executor takes are
            // reported.
            r.known(executors::OPTIONS);
            None
        }
    };
    r.finish_into(&mut c);
    c.finish()?;
    Ok(ScenarioConfig {
        name: name.to_string(),
        exec,
        executor: executor.expect("an executor is read when no error was kept"),
        start_time,
        graceful_stop,
        env,
        tags,
        segment: ExecutionTuple::full(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::table::ConfigError;
    use super::*;

    /// The scenario, or its first mistake.
    fn parse(text: &str) -> Result<ScenarioConfig, ConfigError> {
        parse_all(text).map_err(|e| e.0[0].clone())
    }

    fn parse_all(text: &str) -> Result<ScenarioConfig, ConfigErrors> {
        let table: toml::Table = toml::from_str(text).unwrap();
        parse_scenario("s", &table)
    }

    /// `path: message` of every mistake, in order.
    fn mistakes(text: &str) -> Vec<String> {
        parse_all(text)
            .unwrap_err()
            .0
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn a_misspelled_required_key_is_named_as_written() {
        let found = mistakes("executor = \"constant-vus\"\nvus = 2\nduraton = \"5s\"");
        assert_eq!(
            found,
            [
                "scenarios.s.duraton: unknown option `duraton`; did you mean `duration`? \
              (`duration` is required and is not set)"
            ],
        );
        let found = mistakes(
            "executor = \"constant-arrival-rate\"\nrate = 10\nduration = \"5s\"\npre_alocated_vus = 2",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("scenarios.s.pre_alocated_vus: unknown option")
                && found[0].contains("did you mean `pre_allocated_vus`?"),
            "{found:?}"
        );
        let found = mistakes("executr = \"constant-vus\"\nvus = 2\nduration = \"5s\"");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("did you mean `executor`?"), "{found:?}");
    }

    #[test]
    fn every_mistake_of_a_table_is_reported_at_once() {
        let found = mistakes(
            "executor = \"ramping-arrival-rate\"\ntime_unit = \"0s\"\nstart_rate = -1\n\
             stages = [{ duraton = \"5s\", target = 3 }, { duration = 5, target = \"x\" }]\n\
             max_vus = 3\nmax_vu = 4\ngraceful_stp = \"1s\"",
        );
        let paths: Vec<&str> = found
            .iter()
            .map(|m| m.split(": ").next().unwrap())
            .collect();
        assert_eq!(
            paths,
            [
                "scenarios.s.start_rate",
                "scenarios.s.time_unit",
                "scenarios.s.stages[0].duraton",
                "scenarios.s.stages[1].duration",
                "scenarios.s.stages[1].target",
                "scenarios.s.pre_allocated_vus",
                "scenarios.s.graceful_stp",
                "scenarios.s.max_vu",
            ],
            "{found:#?}"
        );
    }

    #[test]
    fn reads_every_executor() {
        let s = parse("executor = \"constant-vus\"\nvus = 3\nduration = \"5s\"").unwrap();
        assert_eq!(s.executor.max_vus(), 3);
        assert_eq!(s.exec, "default");
        let s = parse(
            "executor = \"ramping-vus\"\nstart_vus = 0\nstages = [{duration = \"2s\", target = 5}, {duration = \"1s\", target = 0}]",
        )
        .unwrap();
        assert_eq!(s.executor.max_vus(), 5);
        assert_eq!(s.executor.duration(), Duration::from_secs(3));
        let s = parse("executor = \"constant-arrival-rate\"\nrate = 100\nduration = \"1m\"\npre_allocated_vus = 5\nmax_vus = 20").unwrap();
        assert_eq!(s.executor.max_vus(), 20);
        assert_eq!(s.executor.initial_vus(), 5);
    }

    #[test]
    fn unknown_executor_suggests_the_nearest() {
        let err = parse("executor = \"constant-vu\"\nvus = 1\nduration = \"1s\"").unwrap_err();
        assert!(err.message.contains("did you mean `constant-vus`"), "{err}");
    }

    #[test]
    fn option_of_another_executor_is_unknown() {
        let err = parse("executor = \"constant-vus\"\nvus = 1\nduration = \"1s\"\niterations = 3")
            .unwrap_err();
        assert_eq!(err.path, "scenarios.s.iterations");
    }

    #[test]
    fn missing_and_bad_values_are_explained() {
        let err = parse("executor = \"constant-vus\"\nvus = 1").unwrap_err();
        assert!(err.message.contains("missing"), "{err}");
        let err = parse("executor = \"constant-vus\"\nvus = 0\nduration = \"1s\"").unwrap_err();
        assert!(err.message.contains("at least 1"), "{err}");
        let err = parse("executor = \"constant-arrival-rate\"\nrate = 10\nduration = \"1s\"\npre_allocated_vus = 5\nmax_vus = 2").unwrap_err();
        assert!(err.message.contains("less than pre_allocated_vus"), "{err}");
    }
}
