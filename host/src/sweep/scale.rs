//! One run config per level: every scenario of the sweep's config scaled in proportion
//! to its configured value, so that their total equals the level.
//!
//! A level is an arrival rate (iterations per second, summed over the arrival-rate
//! scenarios) when the config has any, else a VU count (summed over the closed ones).
//! In a config that mixes both, the closed scenarios' VUs scale by the same factor as
//! the rates. Every scenario becomes its constant form for `--hold` (constant-arrival-rate
//! or constant-vus), or, with `--ramp`, its ramping form rising from zero during the
//! ramp and holding for `--hold`. Other scenario options (`exec`, `env`, `tags`,
//! `start_time`, `graceful_stop`) and every other section are kept as they are.

use crate::config::executor_toml::ramp_then_hold;
use crate::config::executors::DEFAULT_GRACEFUL_RAMP_DOWN;
use crate::config::{ExecutorConfig, RunConfig};
use anyhow::{bail, Result};
use std::time::Duration;

/// One scenario's configured size.
#[derive(Debug, Clone)]
struct Base {
    name: String,
    /// Iterations per second (open) or VUs (closed).
    value: f64,
    open: bool,
    pre_allocated_vus: u64,
    max_vus: u64,
}

/// Makes the run config of each level from the sweep's config.
#[derive(Debug, Clone)]
pub(crate) struct Scaler {
    source: toml::Table,
    scenarios: Vec<Base>,
    open: bool,
    total: f64,
}

impl Scaler {
    /// `source` is the merged config table (plugin defaults ← run.toml), `config` the
    /// same checked.
    pub(crate) fn new(source: toml::Table, config: &RunConfig) -> Result<Scaler> {
        let mut scenarios = Vec::new();
        for s in &config.scenarios {
            let (value, open, pre, max) = match &s.executor {
                e @ (ExecutorConfig::ConstantArrivalRate {
                    pre_allocated_vus,
                    max_vus,
                    ..
                }
                | ExecutorConfig::RampingArrivalRate {
                    pre_allocated_vus,
                    max_vus,
                    ..
                }) => (
                    e.peak_rate().unwrap_or(0.0),
                    true,
                    *pre_allocated_vus,
                    (*max_vus).max(*pre_allocated_vus),
                ),
                closed => (closed.max_vus() as f64, false, 0, 0),
            };
            scenarios.push(Base {
                name: s.name.clone(),
                value,
                open,
                pre_allocated_vus: pre,
                max_vus: max,
            });
        }
        let open = scenarios.iter().any(|s| s.open);
        let total: f64 = scenarios
            .iter()
            .filter(|s| s.open == open)
            .map(|s| s.value)
            .sum();
        if total <= 0.0 {
            bail!(
                "the config's scenarios have no {} to scale; give them a rate or VUs above zero",
                if open { "arrival rate" } else { "VUs" }
            );
        }
        Ok(Scaler {
            source,
            scenarios,
            open,
            total,
        })
    }

    /// Whether levels are arrival rates (else VU counts).
    pub(crate) fn is_open(&self) -> bool {
        self.open
    }

    /// What a level counts: `iterations/s` or `VUs`.
    pub(crate) fn unit(&self) -> &'static str {
        if self.open {
            "iterations/s"
        } else {
            "VUs"
        }
    }

    /// The run config of `level`, held for `hold` after a ramp of `ramp`: each
    /// scenario's schedule built as an [`ExecutorConfig`] and written over its table by
    /// the config's own writer, so the reader reads back exactly the level's schedule.
    pub(crate) fn level_config(&self, level: f64, hold: Duration, ramp: Duration) -> toml::Table {
        let factor = level / self.total;
        let mut source = self.source.clone();
        let Some(toml::Value::Table(tables)) = source.get_mut("scenarios") else {
            return source;
        };
        for base in &self.scenarios {
            let Some(toml::Value::Table(table)) = tables.get_mut(&base.name) else {
                continue;
            };
            self.level_schedule(base, factor, hold, ramp)
                .write_schedule(table);
        }
        source
    }

    /// `base`'s schedule at `factor` times its configured size.
    fn level_schedule(
        &self,
        base: &Base,
        factor: f64,
        hold: Duration,
        ramp: Duration,
    ) -> ExecutorConfig {
        let scaled = base.value * factor;
        if base.open {
            // VUs grow with the rate (Little's law: in flight = rate × latency), and
            // never fall below what the config gives, so a low level is not starved.
            let grow = |n: u64| (n as f64 * factor).ceil().max(n as f64).max(1.0) as u64;
            let (pre_allocated_vus, max_vus) = (grow(base.pre_allocated_vus), grow(base.max_vus));
            if ramp.is_zero() {
                ExecutorConfig::ConstantArrivalRate {
                    rate: scaled,
                    time_unit: Duration::from_secs(1),
                    duration: hold,
                    pre_allocated_vus,
                    max_vus,
                }
            } else {
                // Stage targets are whole numbers: per minute keeps 1/60 s precision.
                let per_minute = (scaled * 60.0).round().max(1.0) as u64;
                ExecutorConfig::RampingArrivalRate {
                    start_rate: 0.0,
                    time_unit: Duration::from_secs(60),
                    stages: ramp_then_hold(ramp, hold, per_minute),
                    pre_allocated_vus,
                    max_vus,
                }
            }
        } else {
            let vus = scaled.round().max(1.0) as u64;
            if ramp.is_zero() {
                ExecutorConfig::ConstantVus {
                    vus,
                    duration: hold,
                }
            } else {
                ExecutorConfig::RampingVus {
                    start_vus: 0,
                    stages: ramp_then_hold(ramp, hold, vus),
                    graceful_ramp_down: DEFAULT_GRACEFUL_RAMP_DOWN,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{build, parse_toml, Overrides};

    fn scaler(text: &str) -> Scaler {
        let source = parse_toml(text, "test").unwrap();
        let config = build(source.clone(), &Overrides::default()).unwrap();
        Scaler::new(source, &config).unwrap()
    }

    fn rebuilt(table: toml::Table) -> RunConfig {
        build(table, &Overrides::default()).unwrap()
    }

    #[test]
    fn rates_scale_in_proportion_and_vus_grow_with_them() {
        let s = scaler(
            "[scenarios.a]\nexecutor = \"constant-arrival-rate\"\nrate = 30\ntime_unit = \"1s\"\n\
             duration = \"1m\"\npre_allocated_vus = 10\nmax_vus = 20\ntags = { t = \"x\" }\n\
             [scenarios.b]\nexecutor = \"ramping-arrival-rate\"\nstart_rate = 0\ntime_unit = \"1m\"\n\
             stages = [{ duration = \"10s\", target = 600 }]\npre_allocated_vus = 1\nmax_vus = 5\n\
             [thresholds]\nhttp_req_duration = [\"p(99)<100\"]\n",
        );
        assert!(s.is_open());
        // a: 30/s, b: 10/s; level 400 is 10× each.
        let c = rebuilt(s.level_config(400.0, Duration::from_secs(3), Duration::ZERO));
        let a = c.scenarios.iter().find(|x| x.name == "a").unwrap();
        let b = c.scenarios.iter().find(|x| x.name == "b").unwrap();
        assert_eq!(a.executor.peak_rate(), Some(300.0));
        assert_eq!(b.executor.peak_rate(), Some(100.0));
        assert_eq!(a.executor.max_vus(), 200);
        assert_eq!(a.executor.duration(), Duration::from_secs(3));
        assert_eq!(a.tags.get("t").map(String::as_str), Some("x"));
        assert!(c.thresholds.contains_key("http_req_duration"));
        // A level below the config keeps its VUs.
        let low = rebuilt(s.level_config(4.0, Duration::from_secs(3), Duration::ZERO));
        assert_eq!(low.scenarios[0].executor.max_vus(), 20);
    }

    #[test]
    fn closed_scenarios_scale_vus_and_ramp_when_asked() {
        let s = scaler(
            "[scenarios.a]\nexecutor = \"constant-vus\"\nvus = 3\nduration = \"1m\"\n\
             [scenarios.b]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 10\n",
        );
        assert!(!s.is_open());
        assert_eq!(s.unit(), "VUs");
        let c = rebuilt(s.level_config(8.0, Duration::from_secs(5), Duration::from_secs(2)));
        let total: u64 = c.scenarios.iter().map(|x| x.executor.max_vus()).sum();
        assert_eq!(total, 8);
        assert_eq!(c.scenarios[0].executor.name(), "ramping-vus");
        assert_eq!(c.scenarios[0].executor.duration(), Duration::from_secs(7));
    }
}
