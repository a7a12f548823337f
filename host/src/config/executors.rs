//! The executor types a scenario can name, in one registry: each name (k6's) paired
//! with the reader of its options, as k6's `lib/executor` registers each config type
//! with `RegisterExecutorConfigType(name, constructor)`. The parser looks an
//! `executor = "..."` up here, the error for an unknown one lists [`names`], and
//! [`ExecutorConfig::name`] gives back the same constants (declared once, in the leaf
//! module `executor_config`), so each name is written once.

use super::executor_config::{ExecutorConfig, Stage};
use crate::table::{Collector, ConfigError, TableReader};
use std::time::Duration;

pub(crate) use super::executor_config::{
    CONSTANT_ARRIVAL_RATE, CONSTANT_VUS, PER_VU_ITERATIONS, RAMPING_ARRIVAL_RATE, RAMPING_VUS,
    SHARED_ITERATIONS,
};

/// One executor type: its name in configs and how its options are read.
pub(crate) struct ExecutorType {
    /// The name `executor = "..."` gives.
    pub name: &'static str,
    /// Reads the type's options from a scenario's table; `None` when one of them is
    /// wrong (its error kept in the collector).
    pub read: fn(&mut TableReader, &mut Collector) -> Option<ExecutorConfig>,
}

/// Every executor type, in the order messages list them.
pub(crate) const REGISTRY: &[ExecutorType] = &[
    ExecutorType {
        name: CONSTANT_VUS,
        read: constant_vus,
    },
    ExecutorType {
        name: RAMPING_VUS,
        read: ramping_vus,
    },
    ExecutorType {
        name: PER_VU_ITERATIONS,
        read: per_vu_iterations,
    },
    ExecutorType {
        name: SHARED_ITERATIONS,
        read: shared_iterations,
    },
    ExecutorType {
        name: CONSTANT_ARRIVAL_RATE,
        read: constant_arrival_rate,
    },
    ExecutorType {
        name: RAMPING_ARRIVAL_RATE,
        read: ramping_arrival_rate,
    },
];

/// The type named `name`, if there is one.
pub(crate) fn find(name: &str) -> Option<&'static ExecutorType> {
    REGISTRY.iter().find(|t| t.name == name)
}

/// The names of every type, in the registry's order.
pub(crate) fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|t| t.name).collect()
}

/// Every option an executor takes, besides those every scenario takes: the keys a
/// scenario without a valid executor may hold without being unknown.
pub(crate) const OPTIONS: &[&str] = &[
    "vus",
    "duration",
    "start_vus",
    "stages",
    "graceful_ramp_down",
    "iterations",
    "max_duration",
    "rate",
    "start_rate",
    "time_unit",
    "pre_allocated_vus",
    "max_vus",
];

fn constant_vus(r: &mut TableReader, c: &mut Collector) -> Option<ExecutorConfig> {
    let vus = c.keep(positive_or(r, "vus", 1));
    let duration = c.keep(required_duration(r, "duration"));
    Some(ExecutorConfig::ConstantVus {
        vus: vus?,
        duration: duration?,
    })
}

fn ramping_vus(r: &mut TableReader, c: &mut Collector) -> Option<ExecutorConfig> {
    let start_vus = c.opt(r.uint("start_vus")).unwrap_or(1);
    let stages = stages(r, c, false);
    let graceful_ramp_down = c
        .opt(r.duration("graceful_ramp_down"))
        .unwrap_or(DEFAULT_GRACEFUL_RAMP_DOWN);
    Some(ExecutorConfig::RampingVus {
        start_vus,
        stages: stages?,
        graceful_ramp_down,
    })
}

/// `vus`, `iterations` and `max_duration`, which both iteration executors take.
fn iteration_options(r: &mut TableReader, c: &mut Collector) -> Option<(u64, u64, Duration)> {
    let vus = c.keep(positive_or(r, "vus", 1));
    let iterations = c.keep(positive_or(r, "iterations", 1));
    let max_duration = c
        .opt(r.duration("max_duration"))
        .unwrap_or(DEFAULT_MAX_DURATION);
    Some((vus?, iterations?, max_duration))
}

fn per_vu_iterations(r: &mut TableReader, c: &mut Collector) -> Option<ExecutorConfig> {
    let (vus, iterations, max_duration) = iteration_options(r, c)?;
    Some(ExecutorConfig::PerVuIterations {
        vus,
        iterations,
        max_duration,
    })
}

fn shared_iterations(r: &mut TableReader, c: &mut Collector) -> Option<ExecutorConfig> {
    let (vus, iterations, max_duration) = iteration_options(r, c)?;
    c.keep(check_pool(&r.path_of("iterations"), vus, iterations))?;
    Some(ExecutorConfig::SharedIterations {
        vus,
        iterations,
        max_duration,
    })
}

fn constant_arrival_rate(r: &mut TableReader, c: &mut Collector) -> Option<ExecutorConfig> {
    let rate = c.keep(rate(r));
    let time_unit = c.keep(time_unit(r));
    let duration = c.keep(required_duration(r, "duration"));
    let bounds = vu_bounds(r, c);
    let (pre_allocated_vus, max_vus) = bounds?;
    Some(ExecutorConfig::ConstantArrivalRate {
        rate: rate?,
        time_unit: time_unit?,
        duration: duration?,
        pre_allocated_vus,
        max_vus,
    })
}

fn ramping_arrival_rate(r: &mut TableReader, c: &mut Collector) -> Option<ExecutorConfig> {
    let start_rate = c.keep(start_rate(r));
    let time_unit = c.keep(time_unit(r));
    let stages = stages(r, c, true);
    let bounds = vu_bounds(r, c);
    let (pre_allocated_vus, max_vus) = bounds?;
    Some(ExecutorConfig::RampingArrivalRate {
        start_rate: start_rate?,
        time_unit: time_unit?,
        stages: stages?,
        pre_allocated_vus,
        max_vus,
    })
}

/// How long `per-vu-iterations` and `shared-iterations` may run without `max_duration`.
pub(crate) const DEFAULT_MAX_DURATION: Duration = Duration::from_secs(600);

/// `graceful_ramp_down` of `ramping-vus` when it is not given.
pub(crate) const DEFAULT_GRACEFUL_RAMP_DOWN: Duration = Duration::from_secs(30);

// The checks below are the ones a value may fail whether the config or the command
// line gave it (`--vus`, `--iterations`, `--duration`, `--rate`): both word their
// mistakes alike. `path` is the key's dotted path.

/// A count (`vus`, `iterations`) must be at least 1.
pub(crate) fn check_count(path: &str, n: u64) -> Result<u64, ConfigError> {
    if n == 0 {
        return Err(mistake(path, "must be at least 1"));
    }
    Ok(n)
}

/// A scheduled length (`duration`) must be longer than zero.
pub(crate) fn check_length(path: &str, d: Duration) -> Result<Duration, ConfigError> {
    if d.is_zero() {
        return Err(mistake(path, "must be longer than 0s"));
    }
    Ok(d)
}

/// An arrival rate must be a number greater than 0.
pub(crate) fn check_rate(path: &str, rate: f64) -> Result<f64, ConfigError> {
    // Written so that NaN is refused too.
    if !(rate > 0.0 && rate.is_finite()) {
        return Err(mistake(path, "must be a number greater than 0"));
    }
    Ok(rate)
}

/// `shared-iterations` needs an iteration for each VU; `path` names `iterations`.
pub(crate) fn check_pool(path: &str, vus: u64, iterations: u64) -> Result<(), ConfigError> {
    if iterations < vus {
        return Err(mistake(
            path,
            format!("{iterations} iterations cannot keep {vus} VUs busy; set iterations >= vus"),
        ));
    }
    Ok(())
}

fn mistake(path: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        path: path.to_string(),
        message: message.into(),
    }
}

fn rate(r: &mut TableReader) -> Result<f64, ConfigError> {
    let rate = r.required(
        "rate",
        "how many iterations per time_unit?",
        TableReader::number,
    )?;
    check_rate(&r.path_of("rate"), rate)
}

fn start_rate(r: &mut TableReader) -> Result<f64, ConfigError> {
    let start_rate = r.number("start_rate")?.unwrap_or(0.0);
    if !(start_rate >= 0.0 && start_rate.is_finite()) {
        return Err(r.error("start_rate", "must be a number of at least 0"));
    }
    Ok(start_rate)
}

/// A count that defaults to `default` when absent and must be at least 1.
fn positive_or(r: &mut TableReader, key: &'static str, default: u64) -> Result<u64, ConfigError> {
    let value = r.uint(key)?.unwrap_or(default);
    check_count(&r.path_of(key), value)
}

fn required_duration(r: &mut TableReader, key: &'static str) -> Result<Duration, ConfigError> {
    let d = r.required(
        key,
        "give it as a string such as \"30s\"",
        TableReader::duration,
    )?;
    check_length(&r.path_of(key), d)
}

fn time_unit(r: &mut TableReader) -> Result<Duration, ConfigError> {
    let unit = r.duration("time_unit")?.unwrap_or(Duration::from_secs(1));
    if unit.is_zero() {
        return Err(r.error("time_unit", "must be longer than 0s"));
    }
    Ok(unit)
}

fn vu_bounds(r: &mut TableReader, c: &mut Collector) -> Option<(u64, u64)> {
    let pre = c.keep(r.required(
        "pre_allocated_vus",
        "how many VUs to make before the start (for example 10)",
        TableReader::uint,
    ));
    let max = c.keep(r.uint("max_vus"))?;
    let pre = pre?;
    let max = max.unwrap_or(pre);
    if max < pre {
        c.push(r.error(
            "max_vus",
            format!("{max} is less than pre_allocated_vus ({pre})"),
        ));
        return None;
    }
    if max == 0 {
        c.push(r.error("max_vus", "must be at least 1"));
        return None;
    }
    Some((pre, max))
}

/// The `stages` of a ramping executor, each stage read to its end.
fn stages(r: &mut TableReader, c: &mut Collector, rates: bool) -> Option<Vec<Stage>> {
    let tables = c.keep(r.required(
        "stages",
        "add stages = [{ duration = \"30s\", target = 10 }]",
        TableReader::tables,
    ))?;
    if tables.is_empty() {
        c.push(r.error("stages", "needs at least one stage"));
        return None;
    }
    let mut stages = Vec::with_capacity(tables.len());
    let mut ok = true;
    for (i, t) in tables.into_iter().enumerate() {
        let mut s = TableReader::new(r.path_of(&format!("stages[{i}]")), t);
        let duration = c.keep(s.required(
            "duration",
            "how long the stage lasts, such as \"30s\"",
            TableReader::duration,
        ));
        let target = if rates {
            s.required(
                "target",
                "the rate to reach by the stage's end",
                TableReader::number,
            )
            .map(|v| v.round() as u64)
        } else {
            s.required(
                "target",
                "the VUs to reach by the stage's end",
                TableReader::uint,
            )
        };
        let target = c.keep(target);
        s.finish_into(c);
        match (duration, target) {
            (Some(duration), Some(target)) => stages.push(Stage { duration, target }),
            _ => ok = false,
        }
    }
    ok.then_some(stages)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each type reads into the variant whose `name()` is the type's: a name written in
    /// the registry and in `ExecutorConfig::name` cannot drift apart.
    #[test]
    fn every_type_reads_into_the_variant_of_its_name() {
        let minimal = "vus = 1\nduration = \"1s\"\niterations = 1\nrate = 1\n\
                       pre_allocated_vus = 1\nstages = [{ duration = \"1s\", target = 1 }]\n";
        let table: toml::Table = toml::from_str(minimal).unwrap();
        for t in REGISTRY {
            let mut r = TableReader::new("s", &table);
            let mut c = Collector::default();
            let executor = (t.read)(&mut r, &mut c).expect(t.name);
            assert_eq!(executor.name(), t.name);
        }
        assert_eq!(names().len(), 6);
        assert!(find("constant-vuss").is_none());
    }
}
