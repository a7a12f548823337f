//! The `[stack]` section: the Compose stack `host up` and `host run --stack` start,
//! the cores and memory of its services, and what a run does when one of them dies.
//!
//! ```toml
//! [stack]
//! file = "compose/docker-compose.yml"
//! project = "loadtest"
//! cpus = { api = "1" }              # cpuset per service
//! memory = { api = "256m" }         # mem_limit per service
//! timeout = "120s"                  # until every service is ready
//! on_service_exit = "abort"         # or "continue"
//! keep = false                      # leave it running after `run --stack`
//! stats_interval = "1s"             # run --stack: as [sampling] stats_interval
//! ```

use super::cpuset::CpuSet;
use crate::table::{parse_toml, ConfigError, TableReader};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// What a run does when a service of its stack exits or is OOM-killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnServiceExit {
    /// Stop the run (exit code 1): its figures no longer describe the stack.
    #[default]
    Abort,
    /// Note it in the summary and go on (to see how the rest copes).
    Continue,
}

/// The `[stack]` section; every field is optional.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StackConfig {
    /// The compose file.
    pub file: Option<PathBuf>,
    /// The Compose project name.
    pub project: Option<String>,
    /// Service → core list, checked.
    pub cpus: BTreeMap<String, String>,
    /// Service → memory size, checked.
    pub memory: BTreeMap<String, String>,
    /// How long `up` waits for every service to be ready.
    pub timeout: Option<Duration>,
    /// What a run does when a service dies.
    pub on_service_exit: OnServiceExit,
    /// Leave the stack running after `run --stack`.
    pub keep: bool,
    /// How often each sampled service gets a line during `run --stack` (as
    /// `[sampling] stats_interval`, which it replaces for such a run); `None`: that one.
    pub stats_interval: Option<Duration>,
}

/// Reads only the `[stack]` section of the run config file at `path` (`host up
/// --config`, `run --stack`), before the rest of the run is planned.
pub(crate) fn from_file(path: &std::path::Path) -> Result<StackConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        path: path.display().to_string(),
        message: format!("cannot read it: {e}"),
    })?;
    parse(&parse_toml(&text, &path.display().to_string())?)
}

/// Reads `[stack]` from a run config, or the defaults when it is absent.
pub(crate) fn parse(source: &toml::Table) -> Result<StackConfig, ConfigError> {
    let mut config = StackConfig::default();
    let Some(value) = source.get("stack") else {
        return Ok(config);
    };
    let table = value.as_table().ok_or_else(|| ConfigError {
        path: "stack".into(),
        message: "must be a table: write it as [stack]".into(),
    })?;
    let mut r = TableReader::new("stack", table);
    config.file = r.string("file")?.map(PathBuf::from);
    config.project = r.string("project")?;
    config.cpus = r.string_map("cpus")?;
    for (service, list) in &config.cpus {
        CpuSet::parse(list).map_err(|e| r.error(&format!("cpus.{service}"), e))?;
    }
    config.memory = r.string_map("memory")?;
    for (service, size) in &config.memory {
        parse_size(size).map_err(|e| r.error(&format!("memory.{service}"), e.to_string()))?;
    }
    config.timeout = r.duration("timeout")?;
    if let Some(mode) = r.string("on_service_exit")? {
        config.on_service_exit = match mode.as_str() {
            "abort" => OnServiceExit::Abort,
            "continue" => OnServiceExit::Continue,
            _ => {
                return Err(r.error(
                    "on_service_exit",
                    format!("{mode:?} is not \"abort\" or \"continue\""),
                ))
            }
        };
    }
    config.keep = r.boolean("keep")?.unwrap_or(false);
    if let Some(interval) = r.duration("stats_interval")? {
        if interval < Duration::from_secs(1) {
            return Err(r.error(
                "stats_interval",
                "must be 1s or more: the Docker engine reports a container's stats once a second",
            ));
        }
        config.stats_interval = Some(interval);
    }
    r.finish()?;
    Ok(config)
}

/// Why a memory size was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SizeError {
    /// No number where one was expected.
    #[error("{0:?} is not a size like 256m or 1g")]
    NotASize(String),
    /// A unit Docker does not take: the unit, then the whole text.
    #[error("unknown unit {0:?} in {1:?}; use b, k, m or g")]
    UnknownUnit(String, String),
    /// Below what Docker accepts.
    #[error("{0:?} is below Docker's minimum memory limit of 6m")]
    BelowMinimum(String),
}

/// Parses a memory size as Docker does: a number with an optional binary unit
/// `b`, `k`, `m`, `g` (also `kb`, `mib`, ...): `256m` is 256 MiB.
pub(crate) fn parse_size(text: &str) -> Result<u64, SizeError> {
    let text = text.trim().to_ascii_lowercase();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| SizeError::NotASize(text.clone()))?;
    let scale: u64 = match unit.trim() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => return Err(SizeError::UnknownUnit(other.to_string(), text.clone())),
    };
    let bytes = (number * scale as f64) as u64;
    // Docker refuses limits under 6 MiB; say so before it does.
    if bytes < 6 << 20 {
        return Err(SizeError::BelowMinimum(text));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_binary_units() {
        assert_eq!(parse_size("256m"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1.5g"), Ok(3 << 29));
        assert_eq!(parse_size("8388608"), Ok(8 << 20));
        assert!(parse_size("1m")
            .unwrap_err()
            .to_string()
            .contains("minimum"));
        assert!(parse_size("12 parsecs")
            .unwrap_err()
            .to_string()
            .contains("unit"));
        assert!(parse_size("lots").is_err());
    }

    fn parse_text(text: &str) -> Result<StackConfig, ConfigError> {
        parse(&toml::from_str(text).unwrap())
    }

    #[test]
    fn reads_every_key() {
        let c = parse_text(
            "[stack]\nfile = \"s.yml\"\nproject = \"p\"\ncpus = { api = \"0-1\" }\n\
             memory = { api = \"256m\" }\ntimeout = \"30s\"\non_service_exit = \"continue\"\n\
             keep = true\nstats_interval = \"2s\"",
        )
        .unwrap();
        assert_eq!(c.file, Some(PathBuf::from("s.yml")));
        assert_eq!(c.cpus["api"], "0-1");
        assert_eq!(c.memory["api"], "256m");
        assert_eq!(c.timeout, Some(Duration::from_secs(30)));
        assert_eq!(c.on_service_exit, OnServiceExit::Continue);
        assert!(c.keep);
        assert_eq!(c.stats_interval, Some(Duration::from_secs(2)));
        assert_eq!(parse_text("").unwrap(), StackConfig::default());
    }

    #[test]
    fn mistakes_name_the_key() {
        let err = parse_text("[stack]\nstats_interval = \"500ms\"").unwrap_err();
        assert_eq!(err.path, "stack.stats_interval");
        assert!(err.message.contains("1s or more"), "{}", err.message);
        let err = parse_text("[stack]\ncpus = { api = \"x\" }").unwrap_err();
        assert_eq!(err.path, "stack.cpus.api");
        let err = parse_text("[stack]\nmemory = { api = \"1\" }").unwrap_err();
        assert!(err.message.contains("minimum"), "{err}");
        let err = parse_text("[stack]\non_service_exit = \"retry\"").unwrap_err();
        assert!(err.message.contains("abort"), "{err}");
        let err = parse_text("[stack]\nprojekt = \"p\"").unwrap_err();
        assert!(err.message.contains("did you mean `project`"), "{err}");
    }
}
