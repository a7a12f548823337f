//! One resource sample (a line of `stats.jsonl`) and the arithmetic that turns two
//! cumulative readings into it, the way `docker stats` does; and the message a sampler
//! hands over (a sample, or the end of its source).

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What a sampled service used during one interval: a line of `stats.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sample {
    /// Seconds from the run's start to this sample (the axis of timeseries.jsonl).
    pub t: f64,
    /// The service: the Compose service, the container's name, the process's name, or
    /// `generator` for the host itself.
    pub service: String,
    /// Where it was read: the container's name, `pid N`, or `self`.
    pub source: String,
    /// CPU used during the interval, in percent of one core (200 = two cores busy).
    pub cpu_percent: f64,
    /// Cores it may use (its cpuset, else every online core).
    pub cpus: f64,
    /// Busy share of each core it may use (percent, every process on that core): the
    /// generator only, to show one pegged core that an average would hide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<Vec<CoreBusy>>,
    /// Memory in use without the page cache (containers) or resident memory (processes).
    pub memory_bytes: u64,
    /// The memory limit it runs under, if one was set.
    pub memory_limit_bytes: Option<u64>,
    /// Bytes received over the network since the container started (containers only).
    pub net_rx_bytes: Option<u64>,
    /// Bytes sent over the network since the container started (containers only).
    pub net_tx_bytes: Option<u64>,
    /// Bytes read from block devices since it started.
    pub blk_read_bytes: Option<u64>,
    /// Bytes written to block devices since it started.
    pub blk_write_bytes: Option<u64>,
    /// Processes (containers) or threads (processes) running in it.
    pub pids: Option<u64>,
}

/// How busy one core was during the interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct CoreBusy {
    /// Its number, as in /proc/stat and cpusets.
    pub core: u32,
    /// Busy share in percent (100 = never idle).
    pub percent: f64,
}

/// Cumulative CPU counters at one instant: time the source ran, and the time it could
/// have run on `cpus` cores over the same span, both in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct CpuReading {
    /// CPU time the source used so far.
    pub used_ns: u64,
    /// The clock it is measured against: the whole machine's CPU time for containers
    /// (`system_cpu_usage`), wall-clock time for processes.
    pub clock_ns: u64,
    /// Cores the clock counts (online CPUs for containers, 1 for the wall clock).
    pub clock_cpus: u32,
}

/// CPU % of one core between two readings, as `docker stats` computes it:
/// `Δused / Δclock × clock_cpus × 100`. Zero when the clock did not move.
pub(crate) fn cpu_percent(before: &CpuReading, after: &CpuReading) -> f64 {
    let used = after.used_ns.saturating_sub(before.used_ns);
    let clock = after.clock_ns.saturating_sub(before.clock_ns);
    if clock == 0 {
        return 0.0;
    }
    used as f64 / clock as f64 * f64::from(after.clock_cpus.max(1)) * 100.0
}

/// A container's memory without its page cache. Cgroup v1 (this engine) reports the
/// cache as `cache`, which `docker stats` of Engine 20.10 subtracts; cgroup v2 has no
/// `cache` and `docker stats` subtracts `inactive_file` there.
pub(crate) fn memory_without_cache(usage: u64, stats: &HashMap<String, u64>) -> u64 {
    if let Some(cache) = stats.get("cache") {
        usage.saturating_sub(*cache)
    } else if let Some(inactive) = stats.get("inactive_file") {
        usage.saturating_sub(*inactive)
    } else {
        usage
    }
}

/// What the sampler hands over: a sample, or the end of a source.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Message {
    /// A service's figures over one interval.
    Sample(Sample),
    /// A source that will send no more samples, and why.
    Ended {
        /// Its service.
        service: String,
        /// Its container name or pid.
        source: String,
        /// Seconds from the start when it ended.
        t: f64,
        /// Why (the container stopped, the process exited, the stream failed).
        why: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_percent_is_dockers_formula() {
        // 0.5 s of CPU over 1 s of a 2-core machine's clock (2 s of CPU time): the
        // container kept half a core busy.
        let before = CpuReading {
            used_ns: 1_000_000_000,
            clock_ns: 10_000_000_000,
            clock_cpus: 2,
        };
        let after = CpuReading {
            used_ns: 1_500_000_000,
            clock_ns: 12_000_000_000,
            clock_cpus: 2,
        };
        assert!((cpu_percent(&before, &after) - 50.0).abs() < 1e-9);
        // A process against the wall clock: 1.5 s of CPU in 1 s is 150 %.
        let wall = |used_ns, clock_ns| CpuReading {
            used_ns,
            clock_ns,
            clock_cpus: 1,
        };
        assert!(
            (cpu_percent(&wall(0, 0), &wall(1_500_000_000, 1_000_000_000)) - 150.0).abs() < 1e-9
        );
        assert_eq!(
            cpu_percent(&after, &after),
            0.0,
            "a clock that did not move"
        );
        assert_eq!(cpu_percent(&after, &before), 0.0, "counters never go back");
    }

    #[test]
    fn memory_leaves_out_the_page_cache_on_v1_and_v2() {
        let v1 = HashMap::from([
            ("cache".to_string(), 300),
            ("inactive_file".to_string(), 100),
            ("rss".to_string(), 700),
        ]);
        assert_eq!(memory_without_cache(1000, &v1), 700);
        let v2 = HashMap::from([
            ("inactive_file".to_string(), 250),
            ("file".to_string(), 400),
        ]);
        assert_eq!(memory_without_cache(1000, &v2), 750);
        assert_eq!(memory_without_cache(1000, &HashMap::new()), 1000);
        let odd = HashMap::from([("cache".to_string(), 5000)]);
        assert_eq!(memory_without_cache(1000, &odd), 0, "never below zero");
    }
}
