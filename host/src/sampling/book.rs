//! The run's resource figures per sampled service, folded sample by sample: averages,
//! peaks, totals, and the few numbers per second the report's charts draw. Read at the
//! end into summary.json's `stack` section and stats.md.

use super::sample::Sample;
use serde::{Deserialize, Serialize};

/// One sampled service's figures over the run (a row of stats.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceStats {
    /// The service.
    pub service: String,
    /// Where it was read: container name, `pid N`, or `self`.
    pub source: String,
    /// Samples taken.
    pub samples: u64,
    /// Average CPU, percent of one core.
    pub cpu_avg_percent: f64,
    /// Highest CPU of one interval, percent of one core.
    pub cpu_peak_percent: f64,
    /// Cores it may use (its cpuset, else every core).
    pub cpus: f64,
    /// The peak as a share of those cores (1.0 = every core it may use was busy).
    pub cpu_peak_share: f64,
    /// Highest memory in use (without page cache for containers; RSS for processes).
    pub memory_peak_bytes: u64,
    /// Its memory limit, if it has one.
    pub memory_limit_bytes: Option<u64>,
    /// The peak as a share of the limit.
    pub memory_peak_share: Option<f64>,
    /// Bytes received during the run (containers).
    pub net_rx_bytes: Option<u64>,
    /// Bytes sent during the run (containers).
    pub net_tx_bytes: Option<u64>,
    /// Bytes read from block devices during the run.
    pub blk_read_bytes: Option<u64>,
    /// Bytes written to block devices during the run.
    pub blk_write_bytes: Option<u64>,
    /// Most processes (containers) or threads (processes) seen at once.
    pub pids_peak: Option<u64>,
    /// When and why its samples stopped before the end, if they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
}

/// A source that stopped sending samples during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ended {
    /// Seconds from the start.
    pub t: f64,
    /// Why.
    pub why: String,
}

/// What summary.json's `stack` section holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackSummary {
    /// Seconds between two samples of a service.
    pub stats_interval_s: f64,
    /// One entry per sampled service and source, the generator included.
    pub services: Vec<ServiceStats>,
}

/// A service's chart points: seconds, CPU percent, memory MiB.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Series {
    /// `(t, cpu %, memory MiB)` in time order.
    pub points: Vec<(f32, f32, f32)>,
}

/// A sampled service's newest figures, as the live dashboard shows them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Latest {
    /// The service (`service source` when a service has several sources).
    pub service: String,
    /// CPU of its last interval, percent of one core.
    pub cpu_percent: f64,
    /// Memory in use at its last sample, MiB.
    pub memory_mib: f64,
}

/// Per (service, source) running figures.
#[derive(Debug, Default)]
pub(crate) struct StatsBook {
    entries: Vec<(ServiceStats, f64, Series)>,
}

impl StatsBook {
    /// Folds one sample in.
    pub(crate) fn add(&mut self, s: &Sample) {
        let i = match self
            .entries
            .iter()
            .position(|(e, _, _)| e.service == s.service && e.source == s.source)
        {
            Some(i) => i,
            None => {
                self.entries.push((
                    ServiceStats {
                        service: s.service.clone(),
                        source: s.source.clone(),
                        samples: 0,
                        cpu_avg_percent: 0.0,
                        cpu_peak_percent: 0.0,
                        cpus: s.cpus,
                        cpu_peak_share: 0.0,
                        memory_peak_bytes: 0,
                        memory_limit_bytes: s.memory_limit_bytes,
                        memory_peak_share: None,
                        net_rx_bytes: None,
                        net_tx_bytes: None,
                        blk_read_bytes: None,
                        blk_write_bytes: None,
                        pids_peak: None,
                        ended: None,
                    },
                    0.0,
                    Series::default(),
                ));
                self.entries.len() - 1
            }
        };
        let (e, cpu_sum, series) = &mut self.entries[i];
        e.samples += 1;
        *cpu_sum += s.cpu_percent;
        e.cpu_avg_percent = *cpu_sum / e.samples as f64;
        e.cpu_peak_percent = e.cpu_peak_percent.max(s.cpu_percent);
        e.cpus = s.cpus;
        e.cpu_peak_share = e.cpu_peak_percent / (e.cpus.max(1e-9) * 100.0);
        e.memory_peak_bytes = e.memory_peak_bytes.max(s.memory_bytes);
        e.memory_limit_bytes = s.memory_limit_bytes;
        e.memory_peak_share = e
            .memory_limit_bytes
            .filter(|l| *l > 0)
            .map(|l| e.memory_peak_bytes as f64 / l as f64);
        // Counters count from the first reading, so the latest is the run's total.
        e.net_rx_bytes = s.net_rx_bytes.or(e.net_rx_bytes);
        e.net_tx_bytes = s.net_tx_bytes.or(e.net_tx_bytes);
        e.blk_read_bytes = s.blk_read_bytes.or(e.blk_read_bytes);
        e.blk_write_bytes = s.blk_write_bytes.or(e.blk_write_bytes);
        e.pids_peak = match (e.pids_peak, s.pids) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        series.points.push((
            s.t as f32,
            s.cpu_percent as f32,
            (s.memory_bytes as f64 / (1u64 << 20) as f64) as f32,
        ));
    }

    /// Notes that a source stopped sending samples.
    pub(crate) fn ended(&mut self, service: &str, source: &str, t: f64, why: &str) {
        if let Some((e, _, _)) = self
            .entries
            .iter_mut()
            .find(|(e, _, _)| e.service == service && e.source == source)
        {
            e.ended = Some(Ended {
                t,
                why: why.to_string(),
            });
        }
    }

    /// The `stack` section: the generator last, the others by service.
    pub(crate) fn summary(&self, stats_interval_s: f64) -> StackSummary {
        let mut services: Vec<ServiceStats> =
            self.entries.iter().map(|(e, _, _)| e.clone()).collect();
        services.sort_by(|a, b| {
            (a.service == "generator", &a.service, &a.source).cmp(&(
                b.service == "generator",
                &b.service,
                &b.source,
            ))
        });
        StackSummary {
            stats_interval_s,
            services,
        }
    }

    /// Each service's newest sample, in the summary's order.
    pub(crate) fn latest(&self) -> Vec<Latest> {
        let mut out: Vec<(bool, Latest)> = self
            .entries
            .iter()
            .filter_map(|(e, _, series)| {
                let (_, cpu, mem) = series.points.last()?;
                let shared = self
                    .entries
                    .iter()
                    .filter(|(o, _, _)| o.service == e.service)
                    .count()
                    > 1;
                let service = if shared {
                    format!("{} {}", e.service, e.source)
                } else {
                    e.service.clone()
                };
                Some((
                    e.service == "generator",
                    Latest {
                        service,
                        cpu_percent: f64::from(*cpu),
                        memory_mib: f64::from(*mem),
                    },
                ))
            })
            .collect();
        out.sort_by(|a, b| (a.0, &a.1.service).cmp(&(b.0, &b.1.service)));
        out.into_iter().map(|(_, l)| l).collect()
    }

    /// Chart points per service (labelled by service, or `service source` when a service
    /// has several sources), in the summary's order.
    pub(crate) fn series(&self) -> Vec<(String, Series)> {
        let order = self.summary(0.0).services;
        order
            .iter()
            .filter_map(|row| {
                let (_, _, series) = self
                    .entries
                    .iter()
                    .find(|(e, _, _)| e.service == row.service && e.source == row.source)?;
                let shared = order.iter().filter(|o| o.service == row.service).count() > 1;
                let label = if shared {
                    format!("{} {}", row.service, row.source)
                } else {
                    row.service.clone()
                };
                Some((label, series.clone()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: f64, service: &str, cpu: f64, mem: u64) -> Sample {
        Sample {
            t,
            service: service.into(),
            source: format!("{service}_1"),
            cpu_percent: cpu,
            cpus: 2.0,
            cores: None,
            memory_bytes: mem,
            memory_limit_bytes: Some(1000),
            net_rx_bytes: Some(t as u64 * 100),
            net_tx_bytes: Some(t as u64 * 10),
            blk_read_bytes: Some(0),
            blk_write_bytes: Some(5),
            pids: Some(t as u64),
        }
    }

    #[test]
    fn folds_averages_peaks_and_totals_per_service() {
        let mut book = StatsBook::default();
        book.add(&sample(1.0, "api", 50.0, 100));
        book.add(&sample(1.0, "generator", 10.0, 10));
        book.add(&sample(2.0, "api", 150.0, 400));
        book.add(&sample(3.0, "api", 100.0, 200));
        book.ended("api", "api_1", 3.5, "the container stopped");
        let s = book.summary(1.0);
        assert_eq!(s.services.len(), 2);
        assert_eq!(
            s.services[1].service, "generator",
            "the generator comes last"
        );
        let api = &s.services[0];
        assert_eq!(api.samples, 3);
        assert!((api.cpu_avg_percent - 100.0).abs() < 1e-9);
        assert_eq!(api.cpu_peak_percent, 150.0);
        assert!((api.cpu_peak_share - 0.75).abs() < 1e-9, "150% of 2 cores");
        assert_eq!(api.memory_peak_bytes, 400);
        assert_eq!(api.memory_peak_share, Some(0.4));
        assert_eq!(
            api.net_rx_bytes,
            Some(300),
            "the last count is the run's total"
        );
        assert_eq!(api.pids_peak, Some(3));
        assert_eq!(api.ended.as_ref().unwrap().t, 3.5);
        let series = book.series();
        assert_eq!(series[0].0, "api");
        assert_eq!(series[0].1.points.len(), 3);
        assert_eq!(series[0].1.points[1], (2.0, 150.0, 400.0 / 1048576.0));
    }
}
