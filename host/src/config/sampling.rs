//! The `[sampling]` section: which targets outside Compose to sample during a run, and
//! how often every sampled service (the generator included) gets a line in stats.jsonl.
//!
//! ```toml
//! [sampling]
//! stats_interval = "1s"          # a line per service this often (1s or more)
//! containers = ["db"]            # containers by name or id (--sample-container)
//! pids = [4242, "cache=4243"]    # processes, optionally named (--sample-pid)
//! ```

use crate::table::{ConfigError, TableReader};
use std::time::Duration;

/// The Docker engine sends a container's stats once a second: a shorter interval would
/// repeat frames.
const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// A process to sample: its pid and the service name its samples carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidTarget {
    /// Its process id.
    pub pid: i32,
    /// The service name; `None`: its command name and pid.
    pub service: Option<String>,
}

/// What a run samples besides the generator, which is always sampled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplingOptions {
    /// How often each service gets a sample.
    pub stats_interval: Duration,
    /// Containers by name or id.
    pub containers: Vec<String>,
    /// Processes by pid.
    pub pids: Vec<PidTarget>,
}

impl Default for SamplingOptions {
    fn default() -> Self {
        Self {
            stats_interval: MIN_INTERVAL,
            containers: Vec::new(),
            pids: Vec::new(),
        }
    }
}

/// Why a process to sample was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PidTargetError {
    /// `=PID`.
    #[error("{0:?}: the name before `=` is empty")]
    EmptyName(String),
    /// No process id after the name, or one that is not above 0.
    #[error("{0:?} is not a process id; write PID or NAME=PID (for example 4242 or db=4242)")]
    NotAPid(String),
    /// A TOML value that is neither a number nor a string.
    #[error("{0} is not a process id")]
    NotANumberOrString(String),
}

/// Parses `PID` or `NAME=PID`.
pub(crate) fn parse_pid_target(text: &str) -> Result<PidTarget, PidTargetError> {
    let (service, pid) = match text.split_once('=') {
        Some((name, pid)) if !name.trim().is_empty() => (Some(name.trim().to_string()), pid),
        Some(_) => return Err(PidTargetError::EmptyName(text.to_string())),
        None => (None, text),
    };
    match pid.trim().parse::<i32>() {
        Ok(pid) if pid > 0 => Ok(PidTarget { pid, service }),
        _ => Err(PidTargetError::NotAPid(text.to_string())),
    }
}

/// The command line's sampling flags: `--sample-container`, `--sample-pid`,
/// `--stats-interval`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SamplingFlags<'a> {
    /// Containers added to the section's.
    pub containers: &'a [String],
    /// Processes (`PID` or `NAME=PID`) added to the section's.
    pub pids: &'a [String],
    /// Replaces the section's interval.
    pub stats_interval: Option<Duration>,
}

impl SamplingFlags<'_> {
    fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.pids.is_empty() && self.stats_interval.is_none()
    }
}

impl SamplingOptions {
    /// Applies the command line's flags to the section as read, checking their values
    /// as the section's own are checked (in the same order, with the same words).
    pub(crate) fn apply_flags(&mut self, flags: SamplingFlags<'_>) -> Result<(), ConfigError> {
        let error = |key: &str, message: String| ConfigError {
            path: format!("sampling.{key}"),
            message,
        };
        if let Some(interval) = flags.stats_interval {
            self.stats_interval = check_interval(interval)
                .map_err(|message| error("stats_interval", message.into()))?;
        }
        for name in flags.containers {
            if name.trim().is_empty() {
                return Err(error("containers", CONTAINERS_MESSAGE.into()));
            }
            self.containers.push(name.clone());
        }
        for text in flags.pids {
            let target = parse_pid_target(text).map_err(|e| error("pids", e.to_string()))?;
            self.pids.push(target);
        }
        Ok(())
    }
}

/// Writes the command line's sampling flags into `[sampling]` as given, so that the
/// results, `setup()` and the workers read the values the run uses.
pub(crate) fn write_flags(source: &mut toml::Table, flags: SamplingFlags<'_>) {
    if flags.is_empty() {
        return;
    }
    let Some(section) = source
        .entry("sampling")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
    else {
        return;
    };
    for (key, items) in [("containers", flags.containers), ("pids", flags.pids)] {
        if items.is_empty() {
            continue;
        }
        if let Some(list) = section
            .entry(key)
            .or_insert_with(|| toml::Value::Array(Vec::new()))
            .as_array_mut()
        {
            list.extend(items.iter().map(|s| toml::Value::from(s.clone())));
        }
    }
    if let Some(d) = flags.stats_interval {
        section.insert("stats_interval".into(), crate::duration::exact_value(d));
    }
}

/// The mistake of an interval under [`MIN_INTERVAL`].
const INTERVAL_MESSAGE: &str =
    "must be 1s or more: the Docker engine reports a container's stats once a second";

/// The mistake of a container that is no name.
const CONTAINERS_MESSAGE: &str = "must be an array of container names or ids";

fn check_interval(interval: Duration) -> Result<Duration, &'static str> {
    if interval < MIN_INTERVAL {
        return Err(INTERVAL_MESSAGE);
    }
    Ok(interval)
}

/// Reads `[sampling]`, or the defaults when it is absent.
pub(crate) fn parse(source: &toml::Table) -> Result<SamplingOptions, ConfigError> {
    let mut options = SamplingOptions::default();
    let Some(value) = source.get("sampling") else {
        return Ok(options);
    };
    let table = value.as_table().ok_or_else(|| ConfigError {
        path: "sampling".into(),
        message: "must be a table: write it as [sampling]".into(),
    })?;
    let mut r = TableReader::new("sampling", table);
    if let Some(interval) = r.duration("stats_interval")? {
        options.stats_interval =
            check_interval(interval).map_err(|message| r.error("stats_interval", message))?;
    }
    let list = |r: &mut TableReader, key: &'static str| -> Result<Vec<toml::Value>, ConfigError> {
        // Marks the key as read (its type is checked below, not as a string).
        let _ = r.string(key);
        match table.get(key) {
            None => Ok(Vec::new()),
            Some(toml::Value::Array(items)) => Ok(items.clone()),
            Some(_) => Err(r.error(key, "must be an array")),
        }
    };
    for item in list(&mut r, "containers")? {
        match item {
            toml::Value::String(name) if !name.trim().is_empty() => options.containers.push(name),
            _ => return Err(r.error("containers", CONTAINERS_MESSAGE)),
        }
    }
    for item in list(&mut r, "pids")? {
        let target = match item {
            toml::Value::Integer(pid) => parse_pid_target(&pid.to_string()),
            toml::Value::String(text) => parse_pid_target(&text),
            other => Err(PidTargetError::NotANumberOrString(other.to_string())),
        };
        options
            .pids
            .push(target.map_err(|e| r.error("pids", e.to_string()))?);
    }
    r.finish()?;
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<SamplingOptions, ConfigError> {
        parse(&toml::from_str(text).unwrap())
    }

    #[test]
    fn defaults_and_values() {
        assert_eq!(parse_text("").unwrap(), SamplingOptions::default());
        let o = parse_text(
            "[sampling]\nstats_interval = \"2s\"\ncontainers = [\"db\"]\npids = [42, \"cache=43\"]\n",
        )
        .unwrap();
        assert_eq!(o.stats_interval, Duration::from_secs(2));
        assert_eq!(o.containers, vec!["db"]);
        assert_eq!(
            o.pids,
            vec![
                PidTarget {
                    pid: 42,
                    service: None
                },
                PidTarget {
                    pid: 43,
                    service: Some("cache".into())
                }
            ]
        );
    }

    #[test]
    fn bad_values_say_what_to_write() {
        let e = parse_text("[sampling]\nstats_interval = \"500ms\"\n").unwrap_err();
        assert!(e.to_string().contains("1s or more"), "{e}");
        let e = parse_text("[sampling]\npids = [\"x\"]\n").unwrap_err();
        assert!(e.to_string().contains("NAME=PID"), "{e}");
        let e = parse_text("[sampling]\ncontainers = \"db\"\n").unwrap_err();
        assert!(e.to_string().contains("array"), "{e}");
        let e = parse_text("[sampling]\ninterval = \"1s\"\n").unwrap_err();
        assert!(
            e.to_string().contains("stats_interval"),
            "did you mean: {e}"
        );
    }

    #[test]
    fn flags_are_applied_checked_and_written_back_alike() {
        let mut source: toml::Table =
            toml::from_str("[sampling]\ncontainers = [\"api\"]\n").unwrap();
        let mut options = parse(&source).unwrap();
        let (containers, pids) = (vec!["db".to_string()], vec!["web=7".to_string()]);
        let flags = SamplingFlags {
            containers: &containers,
            pids: &pids,
            stats_interval: Some(Duration::from_secs(3)),
        };
        options.apply_flags(flags).unwrap();
        assert_eq!(options.containers, vec!["api", "db"]);
        assert_eq!(options.pids[0].service.as_deref(), Some("web"));
        assert_eq!(options.stats_interval, Duration::from_secs(3));
        // What is written back reads as what was applied.
        write_flags(&mut source, flags);
        assert_eq!(parse(&source).unwrap(), options);

        let short = SamplingFlags {
            stats_interval: Some(Duration::from_millis(500)),
            ..flags
        };
        let e = SamplingOptions::default().apply_flags(short).unwrap_err();
        assert_eq!(e.path, "sampling.stats_interval");
        assert!(e.message.contains("1s or more"), "{e}");
        let bad = vec!["x".to_string()];
        let e = SamplingOptions::default()
            .apply_flags(SamplingFlags {
                pids: &bad,
                ..flags
            })
            .unwrap_err();
        assert_eq!(e.path, "sampling.pids");
        assert!(e.message.contains("NAME=PID"), "{e}");
    }
}
