//! What a sweep keeps of each level's run: the figures of one row of sweep.md, and the
//! level's verdict.

use crate::metrics::summary::Stats;
use crate::summary::Summary;
use serde::{Deserialize, Serialize};

/// A level's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// Every threshold held.
    Pass,
    /// A threshold failed (the first one named), or the run measured nothing.
    Fail {
        /// `http_req_duration p(99)<100 (observed p(99)=231.5ms)`.
        reason: String,
    },
    /// The generator saturated (its CPU, or late starts), on its own evidence: the
    /// figures are a lower bound of the target's capacity, so the level says nothing
    /// about the target's breakpoint. All VUs busy waiting on the target is not this.
    Invalid {
        /// The generator's evidence, in words.
        reason: String,
    },
    /// Ctrl-C stopped the level before its end; it is not used by the model.
    Interrupted,
}

impl Verdict {
    /// `pass`, `fail`, `invalid` or `interrupted`.
    pub(crate) fn word(&self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail { .. } => "fail",
            Self::Invalid { .. } => "invalid",
            Self::Interrupted => "interrupted",
        }
    }

    /// The word and its reason, for a table cell.
    pub(crate) fn text(&self) -> String {
        match self {
            Self::Fail { reason } | Self::Invalid { reason } => {
                format!("{}: {reason}", self.word())
            }
            _ => self.word().to_string(),
        }
    }
}

/// p50, p95 and p99 of a trend, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Percentiles {
    /// Mean.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// One service's resources during a level (from the run's sampled stats).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ServiceFigures {
    /// The service (`generator` is the host itself).
    pub service: String,
    /// Average CPU, percent of one core.
    pub cpu_avg_percent: f64,
    /// Peak CPU, percent of one core.
    pub cpu_peak_percent: f64,
    /// The peak as a share of the cores it may use (its cpuset).
    pub cpu_peak_share: f64,
    /// Peak memory.
    pub memory_peak_bytes: u64,
    /// The peak as a share of its memory limit, if it has one.
    pub memory_peak_share: Option<f64>,
}

/// Everything a sweep keeps of one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LevelFigures {
    /// The level: iterations per second, or VUs.
    pub level: f64,
    /// Offered load in iterations per second: the level for arrival rates; for VU
    /// levels, the iterations the VUs started per second.
    pub offered_per_s: f64,
    /// Good iterations per second of the level's run: those that ended without an
    /// error, discounted by the share of failed requests (`http_req_failed`), so that a
    /// target shedding load with fast 503s is not credited with serving it. The model
    /// uses this figure.
    pub throughput_per_s: f64,
    /// Iterations completed per second, good or not.
    pub completed_per_s: f64,
    /// HTTP responses per second of the level's schedule.
    pub http_reqs_per_s: f64,
    /// `http_req_duration`.
    pub http_req_duration: Option<Percentiles>,
    /// `iteration_latency` (arrival-rate levels: end − due).
    pub iteration_latency: Option<Percentiles>,
    /// `iteration_duration`.
    pub iteration_duration: Option<Percentiles>,
    /// `http_req_failed` rate, 0 to 1.
    pub error_rate: f64,
    /// Iterations dropped for want of a VU.
    pub dropped: u64,
    /// VUs the level ran (closed) or could make at most (open).
    pub vus: u64,
    /// Sampled services, the generator included.
    pub services: Vec<ServiceFigures>,
    /// The level's verdict.
    pub verdict: Verdict,
    /// Who was the bottleneck of the level's run (`target`, `vu_pool`, `generator`,
    /// `none`).
    #[serde(default)]
    pub bottleneck: crate::sampling::saturation::Who,
    /// What qualifies the verdict (a generator that was late, but not enough to matter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
    /// Where its results are, relative to the sweep folder.
    pub results: String,
}

impl LevelFigures {
    /// The generator's own figures (service `generator`), if it was sampled.
    pub(crate) fn generator(&self) -> Option<&ServiceFigures> {
        self.services.iter().find(|s| s.service == "generator")
    }
}

/// Reads a level's figures from its run's summary; `ramp_s` is the level's ramp.
///
/// Rates are per second of the run's whole length (`duration_s`), its drain included:
/// past the capacity, work queued at the end of the hold completes during the graceful
/// stop, and counting it over the hold alone would credit the target with the offered
/// rate. A linear ramp offers half the load, so half of it is taken off.
pub(crate) fn from_summary(
    level: f64,
    open: bool,
    ramp_s: f64,
    summary: &Summary,
    exit_code: i32,
) -> LevelFigures {
    let schedule_s = (summary.duration_s - ramp_s / 2.0).max(0.0);
    let trend = |name: &str| match summary.metrics.get(name).map(|m| &m.stats) {
        Some(Stats::Trend(t)) if t.count > 0 => Some(Percentiles {
            avg: t.avg,
            p50: t.med,
            p95: t.p95,
            p99: t.p99,
        }),
        _ => None,
    };
    let counter = |name: &str| match summary.metrics.get(name).map(|m| &m.stats) {
        Some(Stats::Counter { count, .. }) => *count,
        _ => 0.0,
    };
    let error_rate = match summary.metrics.get("http_req_failed").map(|m| &m.stats) {
        Some(Stats::Rate { rate, .. }) => *rate,
        _ => 0.0,
    };
    let completed: u64 = summary.scenarios.values().map(|s| s.completed).sum();
    let failed_iterations: u64 = summary.scenarios.values().map(|s| s.failed).sum();
    let started: u64 = summary.scenarios.values().map(|s| s.started).sum();
    let dropped: u64 = summary.scenarios.values().map(|s| s.dropped).sum();
    let per_s = |n: f64| {
        if schedule_s > 0.0 {
            n / schedule_s
        } else {
            0.0
        }
    };
    let vus = if open {
        max_vus(&summary.config)
    } else {
        level.round() as u64
    };
    let offered = if open { level } else { per_s(started as f64) };
    let good = completed.saturating_sub(failed_iterations) as f64 * (1.0 - error_rate);
    let throughput = per_s(good);
    let served_share = if offered > 0.0 {
        throughput / offered
    } else {
        0.0
    };
    let (verdict, caveat) = verdict(summary, exit_code, served_share);
    let services = summary
        .stack
        .as_ref()
        .map(|stack| {
            stack
                .services
                .iter()
                .map(|s| ServiceFigures {
                    service: s.service.clone(),
                    cpu_avg_percent: s.cpu_avg_percent,
                    cpu_peak_percent: s.cpu_peak_percent,
                    cpu_peak_share: s.cpu_peak_share,
                    memory_peak_bytes: s.memory_peak_bytes,
                    memory_peak_share: s.memory_peak_share,
                })
                .collect()
        })
        .unwrap_or_default();
    LevelFigures {
        level,
        offered_per_s: offered,
        throughput_per_s: throughput,
        completed_per_s: per_s(completed as f64),
        http_reqs_per_s: per_s(counter("http_reqs")),
        http_req_duration: trend("http_req_duration"),
        iteration_latency: trend("iteration_latency"),
        iteration_duration: trend("iteration_duration"),
        error_rate,
        dropped,
        vus,
        services,
        verdict,
        bottleneck: summary.bottleneck.who,
        caveat,
        results: String::new(),
    }
}

/// Share of the offered load a level must have served for late starts alone not to
/// void its pass: the target then did take (about) the load the level asked for.
const SERVED_SHARE: f64 = 0.9;

/// The level's verdict:
///
/// - interrupted, when Ctrl-C ended it;
/// - invalid, when the generator saturated by its CPU: the load the target saw was not
///   the level's, nor were the timings the target's alone (VUs all busy waiting on the
///   target are the target's verdict, not the generator's: such a level passes or
///   fails on its thresholds);
/// - when the generator's only fault was starting iterations late (`start_lag`, p99
///   of L ms): a pass stands if the target still served 90 % of the offered load; a
///   failed time threshold stands if the value observed exceeds its limit by more than
///   L (more than the lateness can explain); otherwise the level is invalid;
/// - else fail (a threshold, or a run that measured nothing), else pass.
fn verdict(summary: &Summary, exit_code: i32, served_share: f64) -> (Verdict, Option<String>) {
    use crate::run::exit_code as code;
    if exit_code == code::INTERRUPTED {
        return (Verdict::Interrupted, None);
    }
    let g = &summary.generator_saturated;
    let failed: Vec<_> = summary.thresholds.iter().filter(|t| !t.ok).collect();
    let mut caveat = None;
    if g.saturated {
        let why: Vec<&str> = g.evidence.iter().map(|e| e.detail.as_str()).collect();
        let invalid = Verdict::Invalid {
            reason: format!("the generator saturated ({})", why.join("; ")),
        };
        let lateness = match g.evidence.as_slice() {
            [only] if only.signal == "start_lag" => only.observed,
            _ => return (invalid, None),
        };
        // Drops come from VUs all busy, not from late starts: with the target's
        // evidence of exhausted VUs, a failed threshold on them stands.
        let vus_exhausted = !summary.target_saturated.evidence.is_empty();
        let explained = failed.iter().any(|t| {
            if vus_exhausted && t.metric == "dropped_iterations" {
                return false;
            }
            let excess = t
                .unit
                .filter(|u| *u == crate::metrics::Unit::Millis)
                .and(t.observed)
                .and_then(|observed| {
                    threshold_limit(&t.threshold).map(|limit| (observed - limit).abs())
                });
            excess.is_none_or(|excess| excess <= lateness)
        });
        let served = failed.is_empty() && served_share >= SERVED_SHARE;
        if explained || (failed.is_empty() && !served) {
            return (invalid, None);
        }
        caveat = Some(format!(
            "the generator started iterations late (iteration_start_lag p99 {lateness:.1} ms), \
             too little to change this verdict"
        ));
    }
    if let Some(t) = failed.first() {
        let reason = format!(
            "{} {} (observed {})",
            t.metric,
            t.threshold,
            t.observed_text()
        );
        return (Verdict::Fail { reason }, caveat);
    }
    if let Some(failure) = &summary.failure {
        let reason = failure.clone();
        return (Verdict::Fail { reason }, caveat);
    }
    if exit_code != code::OK && exit_code != code::THRESHOLDS {
        let reason = format!(
            "the run ended with exit code {exit_code} ({})",
            code::meaning(exit_code)
        );
        return (Verdict::Fail { reason }, caveat);
    }
    (Verdict::Pass, caveat)
}

/// The number a threshold compares with: `250` of `p(99)<250`, `0.01` of `rate<=0.01`.
fn threshold_limit(expression: &str) -> Option<f64> {
    let at = expression.rfind(['<', '>', '='])?;
    expression[at + 1..].trim().parse().ok()
}

/// The most VUs the level's open scenarios could make (from its config).
fn max_vus(config: &serde_json::Value) -> u64 {
    config
        .get("scenarios")
        .and_then(|s| s.as_object())
        .map(|s| {
            s.values()
                .filter_map(|sc| sc.get("max_vus").and_then(|v| v.as_u64()))
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_limits_are_read_after_the_operator() {
        assert_eq!(threshold_limit("p(99)<250"), Some(250.0));
        assert_eq!(threshold_limit("rate<=0.01"), Some(0.01));
        assert_eq!(threshold_limit("count>= 3"), Some(3.0));
        assert_eq!(threshold_limit("avg"), None);
    }
}
