//! Who was the bottleneck of a run: the generator, the target, or neither.
//!
//! The generator is named only on its own evidence: its CPU near every core it may use
//! for a while (`cpu`), or iterations starting late (`start_lag`, p99 of
//! `iteration_start_lag`; an iteration only starts on an idle VU, so a late start is the
//! generator's lateness, not a wait for a VU). Either makes the figures a lower bound of
//! the target's capacity.
//!
//! An arrival-rate scenario dropping iterations with all of its `max_vus` busy is not
//! the generator's fault: by Little's law the VUs in flight are the rate times the time
//! each iteration takes, so when the target's latency rises, `offered rate × latency`
//! outgrows `max_vus` and the due iterations find no VU. That is the target saturating
//! (`vus_exhausted`, under `target_saturated`): what it served at that latency is its
//! capacity at that latency. When its latency stayed steady, the VU pool was too small
//! for the offered rate at the target's latency: the same evidence, with
//! `latency_rose: false`, and the fix is more `max_vus`.

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
/// `iteration_start_lag` p99 above this (milliseconds) means iterations started late...
pub(crate) const START_LAG_P99_MS: f64 = 10.0;
/// ...when it is also at least this share of the mean iteration: 12 ms late (a busy
/// machine) against iterations of 100 ms or more spent waiting on the target did not
/// shape the run; the target's latency did.
pub(crate) const START_LAG_SHARE: f64 = 0.25;
/// The target's latency rose when its median is at least this many times its fastest
/// response...
pub(crate) const LATENCY_ROSE: f64 = 2.0;
/// ...and at least this many milliseconds slower (so 0.2 ms against 0.1 ms is jitter).
const LATENCY_ROSE_MS: f64 = 5.0;

/// What the signals of one side found (`generator_saturated` and `target_saturated`
/// in summary.json).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SaturationVerdict {
    /// True when this side was the bottleneck. For the generator: the figures are then
    /// a lower bound of the target's capacity, not its ceiling. For the target: every
    /// VU was busy waiting on it (its evidence is kept, with `saturated` false, when the
    /// generator saturated too, since a starved generator also holds its VUs longer).
    pub saturated: bool,
    /// Each signal that fired.
    pub evidence: Vec<Evidence>,
}

/// One signal that fired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// `cpu` or `start_lag` (the generator), `vus_exhausted` (the target).
    pub signal: String,
    /// The figure observed: seconds over the CPU line, p99 ms of the start lag, or the
    /// VUs the offered rate needs at the iterations' duration (Little's law).
    pub observed: f64,
    /// The line it crossed (for `vus_exhausted`: the scenario's `max_vus`).
    pub limit: f64,
    /// The same in words.
    pub detail: String,
    /// The scenario (`vus_exhausted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// Its dropped iterations, the same count as its `dropped` and the warning's
    /// (`vus_exhausted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
    /// Whether the target's latency rose during the run (`vus_exhausted`): true is a
    /// saturating target, false a VU pool too small for its steady latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_rose: Option<bool>,
}

/// Who was the bottleneck.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Who {
    /// Nothing ran out.
    #[default]
    None,
    /// The target: all VUs busy while its latency rose.
    Target,
    /// The VU pool: all VUs busy at the target's steady latency (raise `max_vus`).
    VuPool,
    /// The generator, on its own evidence (CPU or late starts).
    Generator,
    /// Nobody's capacity: most requests could not reach the target (it stopped, or
    /// refused connections), so iterations failed fast and the generator's figures
    /// say nothing about either side.
    TargetUnreachable,
}

/// The figures a verdict is read from (summary.json `bottleneck.figures`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// The generator's mean CPU, percent of one core.
    pub generator_cpu_avg_percent: f64,
    /// Its peak CPU, percent of one core.
    pub generator_cpu_peak_percent: f64,
    /// The cores it may use.
    pub generator_cpus: f64,
    /// `iteration_start_lag` p99 (ms), when an arrival-rate scenario ran.
    pub start_lag_p99_ms: Option<f64>,
    /// The metric the target's latency is read from (`http_req_duration`, else
    /// `iteration_duration`).
    pub latency_metric: Option<String>,
    /// Its fastest value (ms).
    pub latency_min_ms: Option<f64>,
    /// Its median (ms).
    pub latency_p50_ms: Option<f64>,
    /// Its p95 (ms).
    pub latency_p95_ms: Option<f64>,
    /// Iterations completed without failing per second of the run: what the target
    /// served (a failed iteration was not served).
    pub served_per_s: f64,
}

/// The run's bottleneck (summary.json `bottleneck`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Bottleneck {
    /// Who.
    pub who: Who,
    /// The figures of both sides.
    pub figures: Figures,
    /// Which, why and what to do, in words (also among the warnings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Both sides' verdicts and the bottleneck.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Saturation {
    /// The generator's own evidence.
    pub(crate) generator: SaturationVerdict,
    /// The target's.
    pub(crate) target: SaturationVerdict,
    /// Who, with the figures.
    pub(crate) bottleneck: Bottleneck,
}

impl Saturation {
    /// The plain-words warning the summary and report show, if anything ran out.
    pub(crate) fn warning(&self) -> Option<String> {
        self.bottleneck.message.clone()
    }
}

/// One scenario's counts at the end of the run.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ScenarioCounts {
    /// Iterations started.
    pub started: u64,
    /// Iterations completed (those that failed included).
    pub completed: u64,
    /// Of those, the ones that failed.
    pub failed: u64,
    /// Iterations dropped.
    pub dropped: u64,
}

/// Most requests the run tried could not reach the target: the requests never sent
/// for want of a connection (refused, timed out, TLS; not those cut by the run's end)
/// and all requests tried. Below [`UNREACHABLE_MIN`] tries, or at half or less, it is
/// `None`.
pub(crate) fn unreachable(unsent: u64, tried: u64) -> Option<(u64, u64)> {
    (tried >= UNREACHABLE_MIN && unsent * 2 > tried).then_some((unsent, tried))
}

/// Fewest requests tried before a run can be called one whose target was out of
/// reach (a run of three requests that failed says little).
pub(crate) const UNREACHABLE_MIN: u64 = 10;

/// The run's figures a verdict needs, read from its summary.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunFigures {
    /// The run's length (s).
    pub duration_s: f64,
    /// `iteration_start_lag` p99 (ms).
    pub start_lag_p99_ms: Option<f64>,
    /// (metric, min, p50, p95) of the target's latency, in ms.
    pub latency: Option<(String, f64, f64, f64)>,
    /// Mean `iteration_duration` (ms).
    pub iteration_avg_ms: Option<f64>,
    /// Per scenario.
    pub scenarios: BTreeMap<String, ScenarioCounts>,
    /// Requests never sent for want of a connection, and all requests tried, when
    /// most could not reach the target ([`unreachable`]).
    pub unreachable: Option<(u64, u64)>,
}

impl RunFigures {
    fn per_s(&self, n: u64) -> f64 {
        if self.duration_s > 0.0 {
            n as f64 / self.duration_s
        } else {
            0.0
        }
    }

    /// Whether the target's latency rose: its median well above its fastest.
    fn latency_rose(&self) -> Option<bool> {
        let (_, min, med, _) = self.latency.as_ref()?;
        Some(*med >= LATENCY_ROSE * min && med - min >= LATENCY_ROSE_MS)
    }
}

/// Watches the generator's samples and the scenarios' drops as the run goes.
#[derive(Debug, Default)]
pub(crate) struct SaturationWatch {
    /// Start and last time of the current run of samples over the CPU line.
    streak: Option<(f64, f64)>,
    longest_s: f64,
    peak_percent: f64,
    cpu_sum: f64,
    cpu_samples: u64,
    cpus: f64,
    interval_s: f64,
    /// Drops per scenario already seen.
    dropped_seen: BTreeMap<String, u64>,
    /// Scenarios that dropped with all of their `max_vus` made: that `max_vus`, and
    /// the seconds their schedule lasts (the offered rate is due iterations over it).
    exhausted: BTreeMap<String, (u64, f64)>,
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
        self.cpu_sum += s.cpu_percent;
        self.cpu_samples += 1;
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
                let schedule_s = ctx.config.executor.duration().as_secs_f64();
                self.exhausted
                    .insert(ctx.config.name.clone(), (max_vus, schedule_s));
            }
        }
    }

    /// The verdicts, from the run's figures.
    pub(crate) fn verdict(&self, run: &RunFigures) -> Saturation {
        let figures = Figures {
            generator_cpu_avg_percent: if self.cpu_samples > 0 {
                self.cpu_sum / self.cpu_samples as f64
            } else {
                0.0
            },
            generator_cpu_peak_percent: self.peak_percent,
            generator_cpus: self.cpus,
            start_lag_p99_ms: run.start_lag_p99_ms,
            latency_metric: run.latency.as_ref().map(|l| l.0.clone()),
            latency_min_ms: run.latency.as_ref().map(|l| l.1),
            latency_p50_ms: run.latency.as_ref().map(|l| l.2),
            latency_p95_ms: run.latency.as_ref().map(|l| l.3),
            served_per_s: run.per_s(
                run.scenarios
                    .values()
                    .map(|s| s.completed.saturating_sub(s.failed))
                    .sum(),
            ),
        };
        let generator = self.generator_evidence(run);
        let target = self.target_evidence(run);
        // A target out of reach makes iterations fail fast: a busy generator or late
        // starts then say nothing of the generator, and nothing of the target's capacity.
        let who = if run.unreachable.is_some() {
            Who::TargetUnreachable
        } else if !generator.is_empty() {
            Who::Generator
        } else if target.is_empty() {
            Who::None
        } else if target.iter().all(|e| e.latency_rose == Some(false)) {
            Who::VuPool
        } else {
            Who::Target
        };
        let message = match (who, run.unreachable) {
            (Who::TargetUnreachable, Some((unsent, tried))) => {
                Some(unreachable_message(unsent, tried))
            }
            _ => message(who, &generator, &target, &figures),
        };
        Saturation {
            generator: SaturationVerdict {
                saturated: who == Who::Generator,
                evidence: generator,
            },
            target: SaturationVerdict {
                saturated: matches!(who, Who::Target | Who::VuPool),
                evidence: target,
            },
            bottleneck: Bottleneck {
                who,
                figures,
                message,
            },
        }
    }

    fn generator_evidence(&self, run: &RunFigures) -> Vec<Evidence> {
        let mut evidence = Vec::new();
        if self.longest_s >= CPU_SUSTAINED_S {
            evidence.push(Evidence {
                signal: "cpu".into(),
                observed: self.longest_s,
                limit: CPU_SUSTAINED_S,
                detail: format!(
                    "its CPU stayed above {:.0}% of the {} it may use for {:.0} s (peak {:.0}%)",
                    CPU_SHARE * 100.0,
                    cores(self.cpus),
                    self.longest_s,
                    self.peak_percent
                ),
                scenario: None,
                dropped: None,
                latency_rose: None,
            });
        }
        let line = start_lag_line(run);
        if let Some(p99) = run.start_lag_p99_ms.filter(|p| *p > line) {
            evidence.push(Evidence {
                signal: "start_lag".into(),
                observed: p99,
                limit: line,
                detail: format!(
                    "iterations started late on idle VUs: iteration_start_lag p99 was \
                     {p99:.1} ms (over {line:.1} ms: {START_LAG_P99_MS:.0} ms, or {:.0}% of \
                     the mean iteration if more)",
                    START_LAG_SHARE * 100.0
                ),
                scenario: None,
                dropped: None,
                latency_rose: None,
            });
        }
        evidence
    }

    fn target_evidence(&self, run: &RunFigures) -> Vec<Evidence> {
        let rose = run.latency_rose();
        let iteration_s = run
            .iteration_avg_ms
            .or(run.latency.as_ref().map(|l| l.2))
            .unwrap_or(0.0)
            / 1000.0;
        self.exhausted
            .iter()
            .map(|(name, &(max_vus, schedule_s))| {
                let counts = run.scenarios.get(name).copied().unwrap_or_default();
                let due = counts.started + counts.dropped;
                let offered = if schedule_s > 0.0 {
                    due as f64 / schedule_s
                } else {
                    run.per_s(due)
                };
                let needed = offered * iteration_s;
                let latency = match (&run.latency, rose) {
                    (Some((metric, min, med, p95)), Some(true)) => format!(
                        "while the target's latency rose from {min:.1} ms (fastest) to \
                         p50 {med:.1} ms (p95 {p95:.1} ms, {metric})"
                    ),
                    (Some((metric, min, med, _)), _) => format!(
                        "while the target's latency held steady (p50 {med:.1} ms, fastest \
                         {min:.1} ms, {metric})"
                    ),
                    (None, _) => "with no latency measured".to_string(),
                };
                Evidence {
                    signal: "vus_exhausted".into(),
                    observed: needed,
                    limit: max_vus as f64,
                    detail: format!(
                        "scenario {name} had all {max_vus} of its VUs (max_vus) busy and \
                         dropped {} of {due} iterations ({:.1}%) {latency}: at {:.3} s an \
                         iteration, the offered {offered:.1}/s needs {needed:.0} VUs \
                         (Little's law: rate × time in flight), more than its {max_vus}",
                        counts.dropped,
                        100.0 * counts.dropped as f64 / due.max(1) as f64,
                        iteration_s,
                    ),
                    scenario: Some(name.clone()),
                    dropped: Some(counts.dropped),
                    latency_rose: rose,
                }
            })
            .collect()
    }
}

/// The words of a run whose target was out of reach.
pub(crate) fn unreachable_message(unsent: u64, tried: u64) -> String {
    format!(
        "the target stopped answering: {unsent} of {tried} requests could not be sent (no \
         connection: refused, timed out or failed TLS). Neither the target's capacity nor \
         the load generator limited this run, and its figures measure neither: check that \
         the target runs (and stayed up), then run again"
    )
}

/// The start lag p99 (ms) above which iterations started late enough to matter.
fn start_lag_line(run: &RunFigures) -> f64 {
    START_LAG_P99_MS.max(START_LAG_SHARE * run.iteration_avg_ms.unwrap_or(0.0))
}

fn cores(n: f64) -> String {
    format!("{n} core{}", if n == 1.0 { "" } else { "s" })
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1} ms"))
}

/// The words of a verdict: who, with both sides' figures, and what to do.
fn message(who: Who, generator: &[Evidence], target: &[Evidence], f: &Figures) -> Option<String> {
    let details = |e: &[Evidence]| -> String {
        e.iter()
            .map(|e| e.detail.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    };
    let generator_room = format!(
        "the generator was not the limit (CPU avg {:.0}%, peak {:.0}% of the {} it may \
         use; iteration_start_lag p99 {}, small against the iterations' time)",
        f.generator_cpu_avg_percent,
        f.generator_cpu_peak_percent,
        cores(f.generator_cpus),
        ms(f.start_lag_p99_ms)
    );
    match who {
        Who::None | Who::TargetUnreachable => None,
        Who::Generator => {
            let also = if target.is_empty() {
                String::new()
            } else {
                ". All VUs were busy too, which a starved generator also causes, so that \
                 says nothing of the target"
                    .to_string()
            };
            Some(format!(
                "the load generator was the bottleneck of this run ({}), while the target \
                 answered in p50 {} and served {:.1} iterations/s. These figures are a \
                 lower bound of the target's capacity, not its ceiling: give the generator \
                 more cores, or spread the load over more generators (host coordinate \
                 --workers N), and run again to find the ceiling{also}",
                details(generator),
                ms(f.latency_p50_ms),
                f.served_per_s
            ))
        }
        Who::Target => Some(format!(
            "the target saturated, not the load generator: {}; {generator_room}. The \
             target served {:.1} iterations/s at p50 {}: that is its capacity at this \
             latency. Raise max_vus to queue more load at it (its latency will grow), or \
             find what limits the target",
            details(target),
            f.served_per_s,
            ms(f.latency_p50_ms)
        )),
        Who::VuPool => {
            let needed = target.iter().map(|e| e.observed).fold(0.0, f64::max);
            Some(format!(
                "the VU pool was too small for the target's latency, not the load \
                 generator nor a saturating target: {}; {generator_room}. Raise max_vus \
                 to at least {needed:.0} to offer the whole rate at this latency",
                details(target)
            ))
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

    fn run(lag: Option<f64>) -> RunFigures {
        RunFigures {
            duration_s: 10.0,
            start_lag_p99_ms: lag,
            ..RunFigures::default()
        }
    }

    /// A run of 10 s whose scenario `open` dropped 400 of 1,000 iterations with its 20
    /// VUs busy, at a latency from `min` to p50 `med` (ms), iterations of 500 ms.
    fn exhausted(min: f64, med: f64) -> (SaturationWatch, RunFigures) {
        let mut w = SaturationWatch::new(1.0);
        w.generator(&gen(1.0, 10.0));
        w.exhausted.insert("open".into(), (20, 10.0));
        let mut r = run(Some(1.2));
        r.latency = Some(("http_req_duration".into(), min, med, med * 1.5));
        r.iteration_avg_ms = Some(500.0);
        r.scenarios.insert(
            "open".into(),
            ScenarioCounts {
                started: 600,
                completed: 400,
                failed: 0,
                dropped: 400,
            },
        );
        (w, r)
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
        let v = w.verdict(&run(None));
        assert!(!v.generator.saturated, "two seconds are not enough: {v:?}");
        assert_eq!(v.bottleneck.who, Who::None);
        w.generator(&gen(6.0, 181.0));
        let v = w.verdict(&run(None));
        assert!(v.generator.saturated);
        assert_eq!(v.bottleneck.who, Who::Generator);
        assert_eq!(v.generator.evidence[0].signal, "cpu");
        assert_eq!(v.generator.evidence[0].observed, 3.0);
        assert!(
            v.generator.evidence[0].detail.contains("2 cores"),
            "{}",
            v.generator.evidence[0].detail
        );
        assert_eq!(v.bottleneck.figures.generator_cpu_peak_percent, 199.0);
        let warning = v.warning().unwrap();
        assert!(warning.contains("lower bound of the target's capacity, not its ceiling"));
        assert!(warning.contains("more cores"), "{warning}");
    }

    #[test]
    fn start_lag_over_the_line_saturates_and_under_it_does_not() {
        let w = SaturationWatch::new(1.0);
        assert!(!w.verdict(&run(Some(9.9))).generator.saturated);
        assert!(!w.verdict(&run(None)).generator.saturated);
        assert!(w.verdict(&run(None)).warning().is_none());
        let v = w.verdict(&run(Some(25.0)));
        assert!(v.generator.saturated);
        assert_eq!(v.generator.evidence[0].signal, "start_lag");
        assert!(v.generator.evidence[0].detail.contains("25.0 ms"));
    }

    #[test]
    fn a_start_lag_small_against_the_iterations_does_not_name_the_generator() {
        // Measured on a loaded 2-core machine: 12.6 ms late against iterations of
        // 235 ms queued at a 40/s target, the generator at 9 % CPU.
        let (w, mut r) = exhausted(52.0, 243.0);
        r.iteration_avg_ms = Some(235.0);
        r.start_lag_p99_ms = Some(12.6);
        let v = w.verdict(&r);
        assert_eq!(v.bottleneck.who, Who::Target, "{v:?}");
        assert!(v.warning().unwrap().contains("p99 12.6 ms, small against"));
        // Late by more than a quarter of an iteration: the generator shaped the run.
        r.start_lag_p99_ms = Some(60.0);
        let v = w.verdict(&r);
        assert_eq!(v.bottleneck.who, Who::Generator, "{v:?}");
        assert_eq!(v.generator.evidence[0].limit, 58.75);
    }

    #[test]
    fn all_vus_busy_while_latency_rose_is_the_target() {
        let (w, r) = exhausted(20.0, 800.0);
        let v = w.verdict(&r);
        assert!(!v.generator.saturated, "{v:?}");
        assert!(v.generator.evidence.is_empty());
        assert!(v.target.saturated);
        assert_eq!(v.bottleneck.who, Who::Target);
        let e = &v.target.evidence[0];
        assert_eq!(
            (e.signal.as_str(), e.dropped, e.latency_rose),
            ("vus_exhausted", Some(400), Some(true))
        );
        // 100/s offered × 0.5 s = 50 VUs needed, of 20.
        assert!((e.observed - 50.0).abs() < 1e-9, "{e:?}");
        assert_eq!(e.limit, 20.0);
        let w = v.warning().unwrap();
        assert!(
            w.starts_with("the target saturated, not the load generator"),
            "{w}"
        );
        assert!(!w.contains("lower bound"), "{w}");
        for figure in [
            "400 of 1000",
            "p50 800.0 ms",
            "40.0 iterations/s",
            "p99 1.2 ms",
        ] {
            assert!(w.contains(figure), "{figure}: {w}");
        }
        assert!(
            w.contains("raise max_vus") || w.contains("Raise max_vus"),
            "{w}"
        );
    }

    #[test]
    fn all_vus_busy_at_a_steady_latency_is_the_vu_pool() {
        let (w, r) = exhausted(480.0, 500.0);
        let v = w.verdict(&r);
        assert_eq!(v.bottleneck.who, Who::VuPool);
        assert!(v.target.saturated && !v.generator.saturated);
        let w = v.warning().unwrap();
        assert!(w.contains("at least 50"), "{w}");
        assert!(!w.contains("lower bound"), "{w}");
    }

    #[test]
    fn a_starved_generator_is_named_even_with_every_vu_busy() {
        let (mut w, mut r) = exhausted(20.0, 800.0);
        r.start_lag_p99_ms = Some(150.0);
        for t in 2..=6 {
            w.generator(&gen(t as f64, 195.0));
        }
        let v = w.verdict(&r);
        assert_eq!(v.bottleneck.who, Who::Generator);
        assert!(v.generator.saturated && !v.target.saturated);
        let signals: Vec<&str> = v
            .generator
            .evidence
            .iter()
            .map(|e| e.signal.as_str())
            .collect();
        assert_eq!(signals, ["cpu", "start_lag"]);
        assert_eq!(v.target.evidence.len(), 1, "the drops are kept as a fact");
        assert!(v.warning().unwrap().contains("says nothing of the target"));
    }

    #[test]
    fn a_target_out_of_reach_is_named_and_failed_iterations_are_not_served() {
        let mut w = SaturationWatch::new(1.0);
        // Iterations that fail at once keep the generator's CPU up.
        for t in 1..=6 {
            w.generator(&gen(t as f64, 195.0));
        }
        let mut r = run(Some(150.0));
        r.scenarios.insert(
            "load".into(),
            ScenarioCounts {
                started: 8000,
                completed: 8000,
                failed: 5039,
                dropped: 0,
            },
        );
        r.unreachable = unreachable(5039, 8000);
        let v = w.verdict(&r);
        assert_eq!(v.bottleneck.who, Who::TargetUnreachable);
        assert!(!v.generator.saturated && !v.target.saturated);
        assert!((v.bottleneck.figures.served_per_s - 296.1).abs() < 1e-9);
        let words = v.warning().unwrap();
        assert!(
            words.contains("5039 of 8000 requests could not be sent"),
            "{words}"
        );
        assert!(
            !words.contains("load generator was the bottleneck"),
            "{words}"
        );
        // Half or less, or too few tries, is no verdict of its own.
        assert_eq!(unreachable(50, 100), None);
        assert_eq!(unreachable(9, 9), None);
    }
}
