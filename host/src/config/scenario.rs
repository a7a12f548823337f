//! One scenario of a run: which executor drives it, with which options (k6's names and
//! meanings), and what every scenario shares (`exec`, `start_time`, `graceful_stop`, ...).

use super::executors;
use super::segment::ExecutionTuple;
use crate::table::{unknown_message, Collector, ConfigErrors, TableReader};
use std::collections::BTreeMap;
use std::time::Duration;

pub use super::executor_config::ExecutorConfig;
pub(crate) use super::executor_config::Stage;

/// How long running iterations may take to finish when `graceful_stop` is not given.
pub(crate) const DEFAULT_GRACEFUL_STOP: Duration = Duration::from_secs(30);

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
        .unwrap_or(DEFAULT_GRACEFUL_STOP);
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
    use super::*;
    use crate::table::ConfigError;

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
