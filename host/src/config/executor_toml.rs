//! An [`ExecutorConfig`] written back into a scenario's table: the one way code that
//! builds a schedule as a type (a sweep's level, later the command line's shortcuts)
//! turns it into the run config's TOML, so that what it writes is read back by the
//! config's own reader ([`super::executors`]) into the same value. A leaf beside
//! `executor_config`: it imports the type and the option names, nothing that reads.

use super::executor_config::{ExecutorConfig, Stage};
use super::executors::OPTIONS;
use crate::duration::exact_value;
use std::time::Duration;

impl ExecutorConfig {
    /// Replaces the schedule of the scenario `table` with this one: every executor
    /// option it held is removed (a `ramping-vus` turned `constant-vus` must not keep its
    /// `stages`), then this executor's name and options are written. Every other key
    /// of the scenario (`exec`, `env`, `tags`, `start_time`, `graceful_stop`) stays.
    pub(crate) fn write_schedule(&self, table: &mut toml::Table) {
        table.remove("executor");
        for key in OPTIONS {
            table.remove(*key);
        }
        let mut set = |key: &str, value: toml::Value| {
            table.insert(key.to_string(), value);
        };
        set("executor", self.name().into());
        match self {
            Self::ConstantVus { vus, duration } => {
                set("vus", count(*vus));
                set("duration", exact_value(*duration));
            }
            Self::RampingVus {
                start_vus,
                stages,
                graceful_ramp_down,
            } => {
                set("start_vus", count(*start_vus));
                set("stages", stages_value(stages));
                set("graceful_ramp_down", exact_value(*graceful_ramp_down));
            }
            Self::PerVuIterations {
                vus,
                iterations,
                max_duration,
            }
            | Self::SharedIterations {
                vus,
                iterations,
                max_duration,
            } => {
                set("vus", count(*vus));
                set("iterations", count(*iterations));
                set("max_duration", exact_value(*max_duration));
            }
            Self::ConstantArrivalRate {
                rate,
                time_unit,
                duration,
                pre_allocated_vus,
                max_vus,
            } => {
                set("rate", number(*rate));
                set("time_unit", exact_value(*time_unit));
                set("duration", exact_value(*duration));
                set("pre_allocated_vus", count(*pre_allocated_vus));
                set("max_vus", count(*max_vus));
            }
            Self::RampingArrivalRate {
                start_rate,
                time_unit,
                stages,
                pre_allocated_vus,
                max_vus,
            } => {
                set("start_rate", number(*start_rate));
                set("time_unit", exact_value(*time_unit));
                set("stages", stages_value(stages));
                set("pre_allocated_vus", count(*pre_allocated_vus));
                set("max_vus", count(*max_vus));
            }
        }
    }
}

/// A count as TOML's integer. A count past `i64::MAX` cannot come from a config (its
/// reader refuses it) and is written as the largest TOML holds.
fn count(n: u64) -> toml::Value {
    toml::Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A rate: a whole one as an integer (as a person writes it), else a float.
fn number(x: f64) -> toml::Value {
    if x.fract() == 0.0 && x.abs() < i64::MAX as f64 {
        toml::Value::Integer(x as i64)
    } else {
        toml::Value::Float(x)
    }
}

/// Stages as the array of `{ duration, target }` tables the reader takes.
fn stages_value(stages: &[Stage]) -> toml::Value {
    toml::Value::Array(
        stages
            .iter()
            .map(|s| {
                let mut t = toml::Table::new();
                t.insert("duration".into(), exact_value(s.duration));
                t.insert("target".into(), count(s.target));
                toml::Value::Table(t)
            })
            .collect(),
    )
}

/// Two stages: a ramp from the start value to `target` over `ramp`, then `hold` at it
/// (a sweep's level with `--ramp`).
pub(crate) fn ramp_then_hold(ramp: Duration, hold: Duration, target: u64) -> Vec<Stage> {
    vec![
        Stage {
            duration: ramp,
            target,
        },
        Stage {
            duration: hold,
            target,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{build, parse_toml, Overrides};
    use proptest::prelude::*;

    /// `executor` written over a scenario that held another schedule (a ramping-arrival
    /// one with every option), then read by the config's reader.
    fn round_trip(executor: &ExecutorConfig) -> ExecutorConfig {
        let source = parse_toml(
            "[scenarios.s]\nexecutor = \"ramping-arrival-rate\"\nstart_rate = 3\n\
             time_unit = \"1s\"\nstages = [{ duration = \"1s\", target = 5 }]\n\
             pre_allocated_vus = 2\nmax_vus = 4\nexec = \"other\"\ntags = { t = \"x\" }\n",
            "test",
        )
        .unwrap();
        let mut source = source;
        let table = source["scenarios"]["s"].as_table_mut().unwrap();
        executor.write_schedule(table);
        let config = build(source, &Overrides::default())
            .unwrap_or_else(|e| panic!("{executor:?} was written unreadably: {e}"));
        let s = &config.scenarios[0];
        assert_eq!(s.exec, "other", "the scenario's own keys stay");
        assert_eq!(s.tags.get("t").map(String::as_str), Some("x"));
        s.executor.clone()
    }

    fn millis() -> impl Strategy<Value = Duration> {
        (1u64..10_000_000).prop_map(Duration::from_millis)
    }

    fn stages() -> impl Strategy<Value = Vec<Stage>> {
        prop::collection::vec(
            (millis(), 0u64..100_000).prop_map(|(duration, target)| Stage { duration, target }),
            1..4,
        )
    }

    fn executors() -> impl Strategy<Value = ExecutorConfig> {
        let rate = prop_oneof![
            (1u32..100_000).prop_map(f64::from),
            (1u32..100_000).prop_map(|n| f64::from(n) / 8.0)
        ];
        let unit = prop_oneof![
            Just(Duration::from_secs(1)),
            Just(Duration::from_secs(60)),
            millis()
        ];
        prop_oneof![
            (1u64..10_000, millis())
                .prop_map(|(vus, duration)| ExecutorConfig::ConstantVus { vus, duration }),
            (0u64..10_000, stages(), millis()).prop_map(
                |(start_vus, stages, graceful_ramp_down)| {
                    ExecutorConfig::RampingVus {
                        start_vus,
                        stages,
                        graceful_ramp_down,
                    }
                }
            ),
            (1u64..1000, 1u64..1000, millis()).prop_map(|(vus, iterations, max_duration)| {
                ExecutorConfig::PerVuIterations {
                    vus,
                    iterations,
                    max_duration,
                }
            }),
            (1u64..1000, 0u64..1000, millis()).prop_map(|(vus, extra, max_duration)| {
                ExecutorConfig::SharedIterations {
                    vus,
                    iterations: vus + extra,
                    max_duration,
                }
            }),
            (rate.clone(), unit.clone(), millis(), 1u64..100, 0u64..100).prop_map(
                |(rate, time_unit, duration, pre, more)| ExecutorConfig::ConstantArrivalRate {
                    rate,
                    time_unit,
                    duration,
                    pre_allocated_vus: pre,
                    max_vus: pre + more,
                }
            ),
            (rate, unit, stages(), 1u64..100, 0u64..100).prop_map(
                |(start_rate, time_unit, stages, pre, more)| ExecutorConfig::RampingArrivalRate {
                    start_rate,
                    time_unit,
                    stages,
                    pre_allocated_vus: pre,
                    max_vus: pre + more,
                }
            ),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Whatever schedule is written, the reader reads back the same one.
        #[test]
        fn every_schedule_written_reads_back_the_same(executor in executors()) {
            prop_assert_eq!(round_trip(&executor), executor);
        }
    }
}
