//! The cores and memory each service gets: `--cpus SERVICE=LIST` and
//! `--memory SERVICE=SIZE` (or the run config's `[stack]` tables), checked against the
//! compose file's services and the machine's cores before anything starts.

use super::CpuSet;
use anyhow::{bail, Result};
use std::collections::BTreeMap;

/// Per-service limits written into the override file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    /// Service → the cores it may run on (`cpuset`).
    pub cpus: BTreeMap<String, CpuSet>,
    /// Service → memory limit in bytes (`mem_limit`).
    pub memory: BTreeMap<String, u64>,
}

impl Resources {
    /// Adds `SERVICE=LIST` (from `--cpus`); a later one for the same service wins.
    pub fn add_cpus(&mut self, spec: &str) -> Result<()> {
        let (service, list) = split(spec, "--cpus", "api=0,1")?;
        let set = CpuSet::parse(list).map_err(|e| anyhow::anyhow!("--cpus {spec}: {e}"))?;
        self.cpus.insert(service.to_string(), set);
        Ok(())
    }

    /// Adds `SERVICE=SIZE` (from `--memory`); a later one for the same service wins.
    pub fn add_memory(&mut self, spec: &str) -> Result<()> {
        let (service, size) = split(spec, "--memory", "api=256m")?;
        let bytes = parse_size(size).map_err(|e| anyhow::anyhow!("--memory {spec}: {e}"))?;
        self.memory.insert(service.to_string(), bytes);
        Ok(())
    }

    /// `other`'s entries over these (flags over the run config).
    pub fn overlaid(mut self, other: Resources) -> Resources {
        self.cpus.extend(other.cpus);
        self.memory.extend(other.memory);
        self
    }

    /// Refuses services the compose file lacks and cores the machine lacks.
    pub fn check(&self, services: &[&str], online: &CpuSet) -> Result<()> {
        for service in self.cpus.keys().chain(self.memory.keys()) {
            if !services.contains(&service.as_str()) {
                bail!(
                    "no service `{service}` in the compose file; its services are {}",
                    services.join(", ")
                );
            }
        }
        for (service, set) in &self.cpus {
            if let Err(e) = set.check_within(online) {
                bail!("--cpus {service}={set}: {e}");
            }
        }
        Ok(())
    }
}

fn split<'a>(spec: &'a str, flag: &str, example: &str) -> Result<(&'a str, &'a str)> {
    match spec.split_once('=') {
        Some((service, value)) if !service.trim().is_empty() && !value.trim().is_empty() => {
            Ok((service.trim(), value.trim()))
        }
        _ => bail!("{flag} {spec:?}: write SERVICE=VALUE, for example {flag} {example}"),
    }
}

/// Parses a memory size as Docker does: a number with an optional binary unit
/// `b`, `k`, `m`, `g` (also `kb`, `mib`, ...): `256m` is 256 MiB.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim().to_ascii_lowercase();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 256m or 1g"))?;
    let scale: u64 = match unit.trim() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?}; use b, k, m or g"
            ))
        }
    };
    let bytes = (number * scale as f64) as u64;
    // Docker refuses limits under 6 MiB; say so before it does.
    if bytes < 6 << 20 {
        return Err(format!(
            "{text:?} is below Docker's minimum memory limit of 6m"
        ));
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
        assert!(parse_size("1m").unwrap_err().contains("minimum"));
        assert!(parse_size("12 parsecs").unwrap_err().contains("unit"));
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn flags_name_a_known_service_and_real_cores() {
        let mut r = Resources::default();
        r.add_cpus("api=0").unwrap();
        r.add_memory("worker=64m").unwrap();
        let online = CpuSet::parse("0-1").unwrap();
        assert!(r.check(&["api", "worker"], &online).is_ok());
        let err = r.check(&["apx", "worker"], &online).unwrap_err();
        assert!(err.to_string().contains("no service `api`"), "{err}");
        r.add_cpus("api=0,5").unwrap();
        let err = r.check(&["api", "worker"], &online).unwrap_err();
        assert!(err.to_string().contains("no core 5"), "{err}");
        assert!(r
            .add_cpus("api")
            .unwrap_err()
            .to_string()
            .contains("SERVICE=VALUE"));
    }
}
