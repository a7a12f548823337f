//! The `[sampling]` section: which targets outside Compose to sample during a run, and
//! how often every sampled service (the generator included) gets a line in stats.jsonl.
//!
//! ```toml
//! [sampling]
//! stats_interval = "1s"          # a line per service this often (1s or more)
//! containers = ["db"]            # containers by name or id (--sample-container)
//! pids = [4242, "cache=4243"]    # processes, optionally named (--sample-pid)
//! ```

use super::table::{ConfigError, TableReader};
use super::Overrides;
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

/// Parses `PID` or `NAME=PID`.
pub(crate) fn parse_pid_target(text: &str) -> Result<PidTarget, String> {
    let (service, pid) = match text.split_once('=') {
        Some((name, pid)) if !name.trim().is_empty() => (Some(name.trim().to_string()), pid),
        Some(_) => return Err(format!("{text:?}: the name before `=` is empty")),
        None => (None, text),
    };
    match pid.trim().parse::<i32>() {
        Ok(pid) if pid > 0 => Ok(PidTarget { pid, service }),
        _ => Err(format!(
            "{text:?} is not a process id; write PID or NAME=PID (for example 4242 or db=4242)"
        )),
    }
}

/// Writes the command line's sampling flags into `[sampling]`, so the results keep them.
pub(crate) fn apply_overrides(source: &mut toml::Table, o: &Overrides) {
    if o.sample_containers.is_empty() && o.sample_pids.is_empty() && o.stats_interval.is_none() {
        return;
    }
    let Some(section) = source
        .entry("sampling")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
    else {
        return;
    };
    for (key, items) in [
        ("containers", &o.sample_containers),
        ("pids", &o.sample_pids),
    ] {
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
    if let Some(d) = o.stats_interval {
        section.insert("stats_interval".into(), super::format_duration(d).into());
    }
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
        if interval < MIN_INTERVAL {
            return Err(r.error(
                "stats_interval",
                "must be 1s or more: the Docker engine reports a container's stats once a second",
            ));
        }
        options.stats_interval = interval;
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
            _ => return Err(r.error("containers", "must be an array of container names or ids")),
        }
    }
    for item in list(&mut r, "pids")? {
        let target = match item {
            toml::Value::Integer(pid) => parse_pid_target(&pid.to_string()),
            toml::Value::String(text) => parse_pid_target(&text),
            other => Err(format!("{other} is not a process id")),
        };
        options.pids.push(target.map_err(|e| r.error("pids", e))?);
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
    fn flags_land_in_the_section() {
        let mut source = toml::Table::new();
        let o = Overrides {
            sample_containers: vec!["db".into()],
            sample_pids: vec!["web=7".into()],
            stats_interval: Some(Duration::from_secs(3)),
            ..Default::default()
        };
        apply_overrides(&mut source, &o);
        let parsed = parse(&source).unwrap();
        assert_eq!(parsed.containers, vec!["db"]);
        assert_eq!(parsed.pids[0].service.as_deref(), Some("web"));
        assert_eq!(parsed.stats_interval, Duration::from_secs(3));
    }
}
