//! The generator watches itself: a run whose generator was the bottleneck measured the
//! generator, not the target, and must say so. Three signals, any one is enough:
//! its CPU near every core it may use for a while, an arrival-rate scenario dropping
//! iterations with all of its `max_vus` busy, and iterations starting late
//! (`iteration_start_lag` p99).

use super::sample::Sample;
use crate::executor::ScenarioCtx;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// CPU above this share of the cores the generator may use counts as saturated...
pub(crate) const CPU_SHARE: f64 = 0.9;
/// ...when it lasts at least this many seconds.
pub(crate) const CPU_SUSTAINED_S: f64 = 3.0;
/// `iteration_start_lag` p99 above this (milliseconds) means iterations started late.
pub(crate) const START_LAG_P99_MS: f64 = 10.0;

/// Whether the generator was the bottleneck, and why (`generator_saturated` in
/// summary.json).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorVerdict {
    /// True when any signal fired: the figures are then a lower bound of the target's
    /// capacity, not its ceiling.
    pub saturated: bool,
    /// Each signal that fired.
    pub evidence: Vec<Evidence>,
}

/// One signal that fired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// `cpu`, `vus_exhausted` or `start_lag`.
    pub signal: String,
    /// The figure observed: seconds over the CPU line, iterations dropped, or p99 ms.
    pub observed: f64,
    /// The line it crossed.
    pub limit: f64,
    /// The same in words.
    pub detail: String,
}

impl GeneratorVerdict {
    /// The plain-words warning the summary and report show, if saturated.
    pub fn warning(&self) -> Option<String> {
        if !self.saturated {
            return None;
        }
        let why: Vec<&str> = self.evidence.iter().map(|e| e.detail.as_str()).collect();
        Some(format!(
            "the load generator was the bottleneck of this run ({}). These figures are a lower \
             bound of the target's capacity, not its ceiling: give the generator more cores, \
             VUs or machines and run again to find the ceiling",
            why.join("; ")
        ))
    }
}

/// Watches the generator's samples and the scenarios' drops as the run goes.
#[derive(Debug, Default)]
pub(crate) struct SaturationWatch {
    /// Start and last time of the current run of samples over the CPU line.
    streak: Option<(f64, f64)>,
    longest_s: f64,
    peak_percent: f64,
    cpus: f64,
    interval_s: f64,
    /// Drops per scenario already seen, and those made with every VU busy.
    dropped_seen: BTreeMap<String, u64>,
    dropped_at_max: BTreeMap<String, (u64, u64)>,
}

impl SaturationWatch {
    /// A watch for samples `interval_s` apart.
    pub(crate) fn new(interval_s: f64) -> Self {
        Self {
            interval_s,
            ..Self::default()
        }
    }

    /// Takes one of the generator's samples.
    pub(crate) fn generator(&mut self, s: &Sample) {
        self.cpus = s.cpus;
        self.peak_percent = self.peak_percent.max(s.cpu_percent);
        if s.cpu_percent > CPU_SHARE * s.cpus * 100.0 {
            // A sample covers the interval before it.
            let (start, _) = *self.streak.get_or_insert((s.t - self.interval_s, s.t));
            self.streak = Some((start, s.t));
            self.longest_s = self.longest_s.max(s.t - start);
        } else {
            self.streak = None;
        }
    }

    /// Looks at the scenarios once a tick: drops since the last look, made while the
    /// scenario had made all of its `max_vus` (they are never given back), were drops
    /// with every VU busy.
    pub(crate) fn tick(&mut self, contexts: &[Arc<ScenarioCtx>]) {
        for ctx in contexts {
            let dropped = ctx.stats.dropped.load(Ordering::Relaxed);
            let seen = self
                .dropped_seen
                .entry(ctx.config.name.clone())
                .or_default();
            let new = dropped.saturating_sub(*seen);
            *seen = dropped;
            let max_vus = ctx.config.max_vus();
            if new > 0 && ctx.stats.allocated_vus.load(Ordering::Relaxed) >= max_vus {
                let entry = self
                    .dropped_at_max
                    .entry(ctx.config.name.clone())
                    .or_default();
                entry.0 += new;
                entry.1 = max_vus;
            }
        }
    }

    /// The verdict, given the run's `iteration_start_lag` p99 in milliseconds (`None`
    /// when no open-model scenario ran).
    pub(crate) fn verdict(&self, start_lag_p99_ms: Option<f64>) -> GeneratorVerdict {
        let mut evidence = Vec::new();
        if self.longest_s >= CPU_SUSTAINED_S {
            evidence.push(Evidence {
                signal: "cpu".into(),
                observed: self.longest_s,
                limit: CPU_SUSTAINED_S,
                detail: format!(
                    "its CPU stayed above {:.0}% of the {} core{} it may use for {:.0} s (peak {:.0}%)",
                    CPU_SHARE * 100.0,
                    self.cpus,
                    if self.cpus == 1.0 { "" } else { "s" },
                    self.longest_s,
                    self.peak_percent
                ),
            });
        }
        for (scenario, (dropped, max_vus)) in &self.dropped_at_max {
            evidence.push(Evidence {
                signal: "vus_exhausted".into(),
                observed: *dropped as f64,
                limit: 0.0,
                detail: format!(
                    "scenario {scenario} dropped {dropped} iterations while all of its {max_vus} VUs (max_vus) were busy"
                ),
            });
        }
        if let Some(p99) = start_lag_p99_ms.filter(|p| *p > START_LAG_P99_MS) {
            evidence.push(Evidence {
                signal: "start_lag".into(),
                observed: p99,
                limit: START_LAG_P99_MS,
                detail: format!(
                    "iteration_start_lag p99 was {p99:.1} ms (over {START_LAG_P99_MS:.0} ms): iterations started late"
                ),
            });
        }
        GeneratorVerdict {
            saturated: !evidence.is_empty(),
            evidence,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen(t: f64, cpu: f64) -> Sample {
        Sample {
            t,
            service: "generator".into(),
            source: "self".into(),
            cpu_percent: cpu,
            cpus: 2.0,
            cores: None,
            memory_bytes: 0,
            memory_limit_bytes: None,
            net_rx_bytes: None,
            net_tx_bytes: None,
            blk_read_bytes: None,
            blk_write_bytes: None,
            pids: None,
        }
    }

    #[test]
    fn cpu_near_every_core_for_seconds_saturates() {
        let mut w = SaturationWatch::new(1.0);
        // Two seconds over 180% (90% of 2 cores), a dip, then three seconds over.
        for (t, cpu) in [
            (1.0, 190.0),
            (2.0, 195.0),
            (3.0, 100.0),
            (4.0, 185.0),
            (5.0, 199.0),
        ] {
            w.generator(&gen(t, cpu));
        }
        assert!(
            !w.verdict(None).saturated,
            "two seconds are not enough: {:?}",
            w.verdict(None)
        );
        w.generator(&gen(6.0, 181.0));
        let v = w.verdict(None);
        assert!(v.saturated);
        assert_eq!(v.evidence[0].signal, "cpu");
        assert_eq!(v.evidence[0].observed, 3.0);
        assert!(
            v.evidence[0].detail.contains("2 cores"),
            "{}",
            v.evidence[0].detail
        );
        let warning = v.warning().unwrap();
        assert!(warning.contains("lower bound of the target's capacity, not its ceiling"));
    }

    #[test]
    fn start_lag_over_the_line_saturates_and_under_it_does_not() {
        let w = SaturationWatch::new(1.0);
        assert!(!w.verdict(Some(9.9)).saturated);
        assert!(!w.verdict(None).saturated);
        assert!(w.verdict(None).warning().is_none());
        let v = w.verdict(Some(25.0));
        assert!(v.saturated);
        assert_eq!(v.evidence[0].signal, "start_lag");
        assert!(v.evidence[0].detail.contains("25.0 ms"));
    }
}
