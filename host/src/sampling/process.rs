//! Processes read from /proc: a target given by `--sample-pid`, the demo target's
//! child process, and the host itself (the `generator`), with the machine's per-core
//! busy time for the cores the generator may use.

use super::sample::{cpu_percent, CoreBusy, CpuReading, Sample};
use anyhow::{bail, Context, Result};
use procfs::process::Process;
use std::time::Instant;

/// A process to sample, and what it read last.
pub(crate) struct ProcessSource {
    process: Process,
    /// The service name its samples carry.
    pub service: String,
    source: String,
    /// Whether to add the per-core busy shares (the generator).
    with_cores: bool,
    epoch: Instant,
    last: Option<Reading>,
    /// Block I/O at the first reading: samples count the run's own.
    io_base: Option<(u64, u64)>,
}

/// One reading of a process.
struct Reading {
    cpu: CpuReading,
    cores: Option<Vec<(u32, u64, u64)>>,
}

impl ProcessSource {
    /// The process `pid`, sampled as `service` (default: its command name and pid).
    /// Fails with a clear message when there is no such process.
    pub(crate) fn pid(pid: i32, service: Option<String>) -> Result<Self> {
        let process = Process::new(pid)
            .ok()
            .filter(|p| p.stat().is_ok())
            .with_context(|| {
                format!("--sample-pid {pid}: no such process (see `ps -e` for running ones)")
            })?;
        let name = process.stat().map(|s| s.comm).unwrap_or_default();
        Ok(Self::new(
            process,
            service.unwrap_or_else(|| format!("{name}:{pid}")),
            format!("pid {pid}"),
            false,
        ))
    }

    /// The host's own process, as the service `generator`.
    pub(crate) fn generator() -> Result<Self> {
        let process = Process::myself().context("cannot read /proc/self")?;
        Ok(Self::new(process, "generator".into(), "self".into(), true))
    }

    /// Where it is read: `pid N` or `self`.
    pub(crate) fn source(&self) -> &str {
        &self.source
    }

    fn new(process: Process, service: String, source: String, with_cores: bool) -> Self {
        Self {
            process,
            service,
            source,
            with_cores,
            epoch: Instant::now(),
            last: None,
            io_base: None,
        }
    }

    /// Reads the process now. The first call only sets the baseline (`None`), as a
    /// container's first frame; `Err` once the process is gone.
    pub(crate) fn sample(&mut self, t: f64) -> Result<Option<Sample>> {
        let stat = self.process.stat();
        let stat = match stat {
            Ok(s) if s.state != 'Z' && s.state != 'X' => s,
            _ => bail!("the process exited"),
        };
        let ticks = clock_ticks();
        let cpu = CpuReading {
            used_ns: (stat.utime + stat.stime) * (1_000_000_000 / ticks),
            clock_ns: self.epoch.elapsed().as_nanos() as u64,
            clock_cpus: 1,
        };
        let allowed = self
            .process
            .status()
            .ok()
            .and_then(|s| s.cpus_allowed_list)
            .map(|ranges| {
                ranges
                    .iter()
                    .flat_map(|&(a, b)| a..=b)
                    .collect::<Vec<u32>>()
            })
            .unwrap_or_default();
        let cores = self.with_cores.then(|| core_times(&allowed)).flatten();
        let reading = Reading { cpu, cores };
        let io = self
            .process
            .io()
            .ok()
            .map(|io| (io.read_bytes, io.write_bytes));
        let Some(last) = self.last.replace(reading) else {
            self.io_base = io;
            return Ok(None);
        };
        let now = self.last.as_ref().expect("just set");
        let io = io.map(|(r, w)| {
            let (r0, w0) = self.io_base.unwrap_or_default();
            (r.saturating_sub(r0), w.saturating_sub(w0))
        });
        Ok(Some(Sample {
            t,
            service: self.service.clone(),
            source: self.source.clone(),
            cpu_percent: cpu_percent(&last.cpu, &now.cpu),
            cpus: if allowed.is_empty() {
                online_cpus() as f64
            } else {
                allowed.len() as f64
            },
            cores: match (&last.cores, &now.cores) {
                (Some(a), Some(b)) => Some(core_busy(a, b)),
                _ => None,
            },
            memory_bytes: stat.rss * page_size(),
            memory_limit_bytes: None,
            net_rx_bytes: None,
            net_tx_bytes: None,
            blk_read_bytes: io.map(|io| io.0),
            blk_write_bytes: io.map(|io| io.1),
            pids: u64::try_from(stat.num_threads).ok(),
        }))
    }
}

/// Clock ticks per second of /proc's CPU times, from libc: procfs asks rustix, which
/// reads the vDSO's ELF header through the auxiliary vector and crashes where that
/// header is not mapped (under valgrind, which the bench scripts use to count
/// instructions).
fn clock_ticks() -> u64 {
    // SAFETY: sysconf only reads a system setting.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(ticks).unwrap_or(100).max(1)
}

/// The page size (RSS is counted in pages), from libc for the reason given at
/// [`clock_ticks`].
fn page_size() -> u64 {
    // SAFETY: sysconf only reads a system setting.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096).max(1)
}

/// Busy and total ticks of each of `allowed` cores (every core when empty), from
/// /proc/stat (read here, not by procfs, for the reason given at [`clock_ticks`]).
fn core_times(allowed: &[u32]) -> Option<Vec<(u32, u64, u64)>> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    Some(parse_core_times(&text, allowed))
}

/// The `cpuN` lines of /proc/stat: user nice system idle iowait irq softirq steal ...
fn parse_core_times(text: &str, allowed: &[u32]) -> Vec<(u32, u64, u64)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("cpu")?;
            let (index, fields) = rest.split_once(' ')?;
            let i: u32 = index.parse().ok()?;
            let f: Vec<u64> = fields
                .split_whitespace()
                .map(|v| v.parse().unwrap_or(0))
                .collect();
            let at = |n: usize| f.get(n).copied().unwrap_or(0);
            let idle = at(3) + at(4);
            let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
            Some((i, busy, busy + idle))
        })
        .filter(|(i, _, _)| allowed.is_empty() || allowed.contains(i))
        .collect()
}

fn core_busy(before: &[(u32, u64, u64)], after: &[(u32, u64, u64)]) -> Vec<CoreBusy> {
    after
        .iter()
        .filter_map(|&(core, busy, total)| {
            let &(_, busy0, total0) = before.iter().find(|b| b.0 == core)?;
            let span = total.saturating_sub(total0);
            Some(CoreBusy {
                core,
                percent: if span == 0 {
                    0.0
                } else {
                    busy.saturating_sub(busy0) as f64 / span as f64 * 100.0
                },
            })
        })
        .collect()
}

/// Logical CPUs online.
pub(crate) fn online_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_times_from_proc_stat() {
        let text = "cpu  10 0 5 100 1 0 0 0 0 0\ncpu0 4 1 2 50 1 1 1 1 0 0\ncpu1 6 0 3 50 0 0 0 0 0 0\nintr 5\n";
        assert_eq!(parse_core_times(text, &[]), vec![(0, 10, 61), (1, 9, 59)]);
        assert_eq!(parse_core_times(text, &[1]), vec![(1, 9, 59)]);
        assert!(clock_ticks() >= 1);
        assert!(page_size() >= 4096);
    }

    #[test]
    fn the_generator_sees_its_own_cpu_and_memory() {
        let mut me = ProcessSource::generator().unwrap();
        assert!(
            me.sample(0.0).unwrap().is_none(),
            "the first reading is a baseline"
        );
        // Burn CPU on this thread for a while so the next sample has something to show.
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed().as_millis() < 300 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let s = me
            .sample(1.0)
            .unwrap()
            .expect("a sample after the baseline");
        assert_eq!(s.service, "generator");
        assert!(s.cpu_percent > 20.0, "a busy thread shows: {s:?}");
        assert!(s.memory_bytes > 1 << 20, "{s:?}");
        assert!(s.pids.unwrap() >= 1);
        let cores = s.cores.expect("the generator reports its cores");
        assert_eq!(cores.len() as f64, s.cpus);
        assert!(cores
            .iter()
            .all(|c| (0.0..=100.0 + 1e-6).contains(&c.percent)));
    }

    #[test]
    fn a_missing_pid_is_a_clear_error() {
        let err = ProcessSource::pid(i32::MAX - 1, None).err().unwrap();
        assert!(err.to_string().contains("no such process"), "{err}");
    }
}
