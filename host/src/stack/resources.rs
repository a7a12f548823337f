//! The cores and memory each service gets: `--cpus SERVICE=LIST` and
//! `--memory SERVICE=SIZE` (or the run config's `[stack]` tables), checked against the
//! compose file's services and the machine's cores before anything starts.

pub(crate) use crate::config::stack::parse_size;
use crate::config::CpuSet;
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

#[cfg(test)]
mod tests {
    use super::*;

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
