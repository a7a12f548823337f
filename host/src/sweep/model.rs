//! The capacity model of a sweep: the breakpoint, the capacity the measurements
//! support, the knee, the Universal Scalability Law fit (its peak marked as an
//! extrapolation when it lies outside the concurrency it was fitted on), the binding
//! resource and a Little's-law check of each level.

use super::figures::{LevelFigures, Verdict};
use super::usl::{self, Usl};
use serde::{Deserialize, Serialize};

/// How much p99 per unit of throughput may rise over its best before a level counts as
/// past the knee: half again, which absorbs the jitter of a p99 of a few milliseconds.
pub(crate) const KNEE_RISE: f64 = 1.5;

/// A generator whose VUs were this busy (work in flight ÷ VUs available) limited the
/// load, not the target.
const VU_POOL_LIMIT: f64 = 0.9;

/// Levels whose good throughput is within this share of the best form a plateau.
const PLATEAU_SHARE: f64 = 0.1;

/// A failing level that still served this share of its offered load was not short of
/// throughput: a threshold on latency failed first.
const SERVED_OFFERED: f64 = 0.95;

/// Closed levels whose VUs spent less than this share of their time waiting on the
/// target were limited by the generator (or think time), not the target.
const TARGET_SHARE_LIMIT: f64 = 0.5;

/// The highest level that passed below the lowest that failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Breakpoint {
    /// The highest level that passed, below `failed`.
    pub passed: Option<f64>,
    /// The lowest level that failed.
    pub failed: Option<f64>,
    /// What failed there.
    pub threshold: Option<String>,
}

/// The capacity the measurements support: the most good throughput a valid level
/// measured, and how to read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CapacityEstimate {
    /// Good iterations per second.
    pub throughput_per_s: f64,
    /// The level that measured it.
    pub level: f64,
    /// `failing_level` (what the target sustained at a level past its capacity),
    /// `plateau` (levels past the breakpoint that served about the same), `peak`
    /// (throughput fell at higher levels: a retrograde target) or `lower_bound` (no
    /// level was short of throughput: the capacity is higher).
    pub basis: String,
    /// True when the capacity may be higher than this figure.
    pub lower_bound: bool,
    /// How it was found, in words.
    pub note: String,
}

/// The USL's peak against the concurrency it was fitted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct UslRange {
    /// The lowest and highest concurrency of the points fitted.
    pub fitted: [f64; 2],
    /// Whether the predicted peak lies within them; when not, the peak is an
    /// extrapolation, not a measurement.
    pub peak_within: bool,
    /// Whether the peak exceeds every throughput measured by more than 10 %: the
    /// curve's overshoot between levels (a flat ceiling fitted by a smooth curve),
    /// which no level supports.
    #[serde(default)]
    pub above_measured: bool,
}

/// Where latency starts to grow faster than throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Knee {
    /// The last level before latency grew faster than linearly.
    pub level: f64,
    /// Its throughput (iterations/s).
    pub throughput_per_s: f64,
    /// Its p99 (ms).
    pub p99_ms: f64,
    /// The first level past it.
    pub next_level: f64,
}

/// The resource nearest its cap at the breakpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Binding {
    /// The service.
    pub service: String,
    /// `cpu` (share of its cpuset) or `memory` (share of its limit).
    pub resource: String,
    /// How near its cap, 0 to 1 (and above for CPU briefly past its share).
    pub share: f64,
    /// The level it was read at.
    pub level: f64,
}

/// One level's Little's-law check: work in flight = throughput × time in the system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LittleCheck {
    /// The level.
    pub level: f64,
    /// Throughput × mean iteration duration: the mean number of iterations in flight.
    pub in_flight: f64,
    /// VUs the level had (closed) or could make (open).
    pub vus: u64,
    /// Whether the generator, not the target, limited the load (its own evidence, or
    /// a closed level whose VUs hardly waited on the target).
    pub generator_limited: bool,
    /// Whether every VU was busy waiting on the target (an open level that dropped
    /// iterations, or had its VU pool nearly full): the target's latency times the
    /// rate outgrew `max_vus`. Not the generator's fault.
    #[serde(default)]
    pub vu_limited: bool,
    /// Why, in words.
    pub note: String,
}

/// Everything the sweep concludes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CapacityModel {
    /// The breakpoint.
    pub breakpoint: Breakpoint,
    /// The capacity the measurements support.
    pub capacity: Option<CapacityEstimate>,
    /// The knee, if latency grew faster than linearly within the sweep.
    pub knee: Option<Knee>,
    /// How the knee is computed, in words.
    pub knee_rule: String,
    /// The USL fit, if there were enough levels.
    pub usl: Option<Usl>,
    /// Why there is no fit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usl_note: Option<String>,
    /// The points fitted: (concurrency, throughput) of each valid level.
    pub usl_points: Vec<(f64, f64)>,
    /// The fit's concurrency range, and whether its peak lies within it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usl_range: Option<UslRange>,
    /// The binding resource, if services were sampled.
    pub binding: Option<Binding>,
    /// One check per level.
    pub littles_law: Vec<LittleCheck>,
}

/// Levels that tell about the target: finished, generator not saturated.
fn valid(levels: &[LevelFigures]) -> Vec<&LevelFigures> {
    let mut v: Vec<&LevelFigures> = levels
        .iter()
        .filter(|l| matches!(l.verdict, Verdict::Pass | Verdict::Fail { .. }))
        .collect();
    v.sort_by(|a, b| a.level.total_cmp(&b.level));
    v
}

/// The lowest failed level and the highest passed level below it.
pub(crate) fn breakpoint(levels: &[LevelFigures]) -> Breakpoint {
    let valid = valid(levels);
    let failed = valid
        .iter()
        .find(|l| matches!(l.verdict, Verdict::Fail { .. }));
    let passed = valid
        .iter()
        .rfind(|l| l.verdict == Verdict::Pass && failed.is_none_or(|f| l.level < f.level));
    Breakpoint {
        passed: passed.map(|l| l.level),
        failed: failed.map(|l| l.level),
        threshold: failed.and_then(|l| match &l.verdict {
            Verdict::Fail { reason } => Some(reason.clone()),
            _ => None,
        }),
    }
}

/// The knee rule, as written into sweep.md and sweep.json.
pub(crate) fn knee_rule() -> String {
    format!(
        "Valid levels in order of load; P = p99 of http_req_duration (else of \
         iteration_duration), X = throughput. While latency grows no faster than \
         throughput, P/X does not rise. A level is past the knee when its P/X exceeds \
         {KNEE_RISE} × the lowest P/X of the levels below it; the knee is the last level \
         before the first one past it."
    )
}

/// The knee, by [`knee_rule`].
pub(crate) fn knee(levels: &[LevelFigures]) -> Option<Knee> {
    let points: Vec<(f64, f64, f64)> = valid(levels)
        .into_iter()
        .filter_map(|l| {
            let p99 = l.http_req_duration.or(l.iteration_duration)?.p99;
            (l.throughput_per_s > 0.0 && p99 > 0.0).then_some((l.level, l.throughput_per_s, p99))
        })
        .collect();
    let mut best = f64::INFINITY;
    for (i, &(level, x, p)) in points.iter().enumerate() {
        if i > 0 && p / x > KNEE_RISE * best {
            let (knee_level, knee_x, knee_p) = points[i - 1];
            return Some(Knee {
                level: knee_level,
                throughput_per_s: knee_x,
                p99_ms: knee_p,
                next_level: level,
            });
        }
        best = best.min(p / x);
    }
    None
}

/// The capacity the valid levels support (see [`CapacityEstimate`]); `bp` is the
/// breakpoint.
pub(crate) fn capacity(levels: &[LevelFigures], bp: &Breakpoint) -> Option<CapacityEstimate> {
    use crate::sampling::saturation::Who;
    let valid: Vec<&LevelFigures> = valid(levels)
        .into_iter()
        .filter(|l| l.throughput_per_s > 0.0)
        .collect();
    let best = *valid
        .iter()
        .max_by(|a, b| a.throughput_per_s.total_cmp(&b.throughput_per_s))?;
    let x = best.throughput_per_s;
    let label = super::levels::label;
    let near = |l: &LevelFigures| l.throughput_per_s >= (1.0 - PLATEAU_SHARE) * x;
    let failing: Vec<&LevelFigures> = valid
        .iter()
        .copied()
        .filter(|l| bp.failed.is_some_and(|f| l.level >= f))
        .collect();
    // A level above the best that served clearly less: past a peak.
    let fell = valid
        .iter()
        .copied()
        .filter(|l| l.level > best.level && l.throughput_per_s < (1.0 - PLATEAU_SHARE) * x)
        .min_by(|a, b| a.throughput_per_s.total_cmp(&b.throughput_per_s));
    let short = |l: &LevelFigures| l.throughput_per_s < SERVED_OFFERED * l.offered_per_s;
    let (basis, lower_bound, mut note) = if let Some(f) = fell {
        (
            "peak",
            false,
            format!(
                "throughput peaked at {x:.1}/s (level {}) and fell to {:.1}/s at level {}: \
                 past its peak the target serves less as load grows",
                label(best.level),
                f.throughput_per_s,
                label(f.level)
            ),
        )
    } else if failing.is_empty() || !failing.iter().any(|l| short(l)) {
        (
            "lower_bound",
            true,
            if failing.is_empty() {
                format!(
                    "at least {x:.1}/s (level {}): no level failed, so the capacity is \
                     higher; sweep higher",
                    label(best.level)
                )
            } else {
                format!(
                    "at least {x:.1}/s (level {}): the failing levels still served the \
                     load offered, so a threshold failed before the throughput ran out",
                    label(best.level)
                )
            },
        )
    } else {
        let plateau: Vec<&LevelFigures> = failing.iter().copied().filter(|l| near(l)).collect();
        if plateau.len() >= 2 {
            let lo = plateau
                .iter()
                .map(|l| l.level)
                .fold(f64::INFINITY, f64::min);
            let hi = plateau.iter().map(|l| l.level).fold(0.0, f64::max);
            (
                "plateau",
                false,
                format!(
                    "{x:.1}/s: the plateau of the levels past the breakpoint ({} to {}), \
                     which served about the same while the load offered rose",
                    label(lo),
                    label(hi)
                ),
            )
        } else {
            let f = failing.iter().copied().find(|l| short(l)).unwrap_or(best);
            let at = if f.level == best.level {
                format!("at the failing level {}", label(f.level))
            } else {
                format!(
                    "at level {}; the failing level {} served {:.1}/s",
                    label(best.level),
                    label(f.level),
                    f.throughput_per_s
                )
            };
            (
                "failing_level",
                false,
                format!(
                    "{x:.1}/s: the good throughput the target sustained {at}, of {:.1}/s \
                     offered: past its capacity",
                    f.offered_per_s
                ),
            )
        }
    };
    let lower_bound = lower_bound || best.bottleneck == Who::VuPool;
    if best.bottleneck == Who::VuPool {
        note.push_str(
            "; at that level every VU was busy at the target's steady latency, so max_vus, \
             not the target, set the figure: raise max_vus",
        );
    }
    Some(CapacityEstimate {
        throughput_per_s: x,
        level: best.level,
        basis: basis.into(),
        lower_bound,
        note,
    })
}

/// The fit's concurrency range and whether its peak lies within it.
pub(crate) fn usl_range(usl: &Usl, points: &[(f64, f64)]) -> Option<UslRange> {
    let ns = points
        .iter()
        .map(|p| p.0)
        .filter(|n| n.is_finite() && *n > 0.0);
    let lo = ns.clone().fold(f64::INFINITY, f64::min);
    let hi = ns.fold(0.0, f64::max);
    if points.is_empty() || lo > hi {
        return None;
    }
    let measured = points.iter().map(|p| p.1).fold(0.0, f64::max);
    Some(UslRange {
        fitted: [lo, hi],
        peak_within: usl.peak_concurrency.is_some_and(|n| n >= lo && n <= hi),
        above_measured: usl.peak_throughput > (1.0 + PLATEAU_SHARE) * measured,
    })
}

/// Mean iterations in flight by Little's law: throughput × mean iteration duration.
pub(crate) fn in_flight(l: &LevelFigures) -> Option<f64> {
    let r = l.iteration_duration?.avg / 1000.0;
    Some(l.throughput_per_s * r)
}

/// USL points: concurrency (the VUs of a closed level, the work in flight by Little's
/// law of an arrival-rate level) against throughput, for each valid level.
pub(crate) fn usl_points(levels: &[LevelFigures], open: bool) -> Vec<(f64, f64)> {
    valid(levels)
        .into_iter()
        .filter_map(|l| {
            let n = if open { in_flight(l)? } else { l.vus as f64 };
            Some((n, l.throughput_per_s))
        })
        .collect()
}

/// The service resource nearest its cap at the breakpoint's failed level (else the
/// highest level run), the generator left out.
pub(crate) fn binding(levels: &[LevelFigures], bp: &Breakpoint) -> Option<Binding> {
    let at = bp
        .failed
        .or(bp.passed)
        .or_else(|| valid(levels).last().map(|l| l.level))?;
    let level = levels.iter().find(|l| l.level == at)?;
    let mut best: Option<Binding> = None;
    for s in level.services.iter().filter(|s| s.service != "generator") {
        let candidates = [
            Some(("cpu", s.cpu_peak_share)),
            s.memory_peak_share.map(|m| ("memory", m)),
        ];
        for (resource, share) in candidates.into_iter().flatten() {
            if best.as_ref().is_none_or(|b| share > b.share) {
                best = Some(Binding {
                    service: s.service.clone(),
                    resource: resource.into(),
                    share,
                    level: at,
                });
            }
        }
    }
    best
}

/// Little's-law check of one level.
pub(crate) fn little(l: &LevelFigures, open: bool) -> LittleCheck {
    let n = in_flight(l).unwrap_or(0.0);
    let vus = l.vus.max(1) as f64;
    let mut vu_limited = false;
    let (limited, note) = if matches!(l.verdict, Verdict::Invalid { .. }) {
        (
            true,
            "the generator saturated (its CPU, or late starts)".to_string(),
        )
    } else if open && l.dropped > 0 {
        vu_limited = true;
        (
            false,
            format!(
                "{} iterations dropped with every VU busy waiting on the target ({n:.0} in \
                 flight of {vus:.0} VUs): the target's latency × the rate outgrew max_vus, \
                 not the generator; raise max_vus to queue more at the target",
                l.dropped
            ),
        )
    } else if open && n >= VU_POOL_LIMIT * vus {
        vu_limited = true;
        (
            false,
            format!(
                "{n:.0} in flight of {vus:.0} VUs: the VU pool was nearly full at the \
                 target's latency; raise max_vus"
            ),
        )
    } else if !open {
        // N = X × (time on the target + time elsewhere): the share on the target.
        let on_target = l
            .http_req_duration
            .map(|d| d.avg / 1000.0 * l.http_reqs_per_s)
            .unwrap_or(0.0);
        let share = on_target / vus;
        if l.http_reqs_per_s > 0.0 && share < TARGET_SHARE_LIMIT {
            (
                true,
                format!(
                    "VUs waited on the target {:.0}% of the time: the generator (or think time) limited the load",
                    share * 100.0
                ),
            )
        } else {
            (
                false,
                format!("VUs waited on the target {:.0}% of the time", share * 100.0),
            )
        }
    } else {
        (false, format!("{n:.1} in flight of {vus:.0} VUs"))
    };
    LittleCheck {
        level: l.level,
        in_flight: n,
        vus: l.vus,
        generator_limited: limited,
        vu_limited,
        note,
    }
}

/// The whole model.
pub(crate) fn build(levels: &[LevelFigures], open: bool) -> CapacityModel {
    let bp = breakpoint(levels);
    let points = usl_points(levels, open);
    let (usl, usl_note) = match usl::fit(&points) {
        Ok(u) => (Some(u), None),
        Err(e) => (None, Some(e.to_string())),
    };
    CapacityModel {
        binding: binding(levels, &bp),
        capacity: capacity(levels, &bp),
        usl_range: usl.as_ref().and_then(|u| usl_range(u, &points)),
        breakpoint: bp,
        knee: knee(levels),
        knee_rule: knee_rule(),
        usl,
        usl_note,
        usl_points: points,
        littles_law: levels
            .iter()
            .filter(|l| l.verdict != Verdict::Interrupted)
            .map(|l| little(l, open))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::figures::{Percentiles, ServiceFigures};

    fn level(level: f64, x: f64, p99: f64, verdict: Verdict) -> LevelFigures {
        let p = Percentiles {
            avg: p99 / 2.0,
            p50: p99 / 3.0,
            p95: p99 / 1.5,
            p99,
        };
        LevelFigures {
            level,
            offered_per_s: level,
            throughput_per_s: x,
            http_reqs_per_s: x,
            completed_per_s: x,
            http_req_duration: Some(p),
            iteration_latency: Some(p),
            iteration_duration: Some(p),
            error_rate: 0.0,
            dropped: 0,
            vus: 1000,
            services: vec![ServiceFigures {
                service: "api".into(),
                cpu_avg_percent: 50.0,
                cpu_peak_percent: level / 5.0,
                cpu_peak_share: level / 500.0,
                memory_peak_bytes: 1 << 20,
                memory_peak_share: Some(0.1),
            }],
            verdict,
            bottleneck: Default::default(),
            caveat: None,
            results: String::new(),
        }
    }

    fn fail() -> Verdict {
        Verdict::Fail {
            reason: "http_req_duration p(99)<100".into(),
        }
    }

    #[test]
    fn breakpoint_skips_invalid_levels() {
        let levels = vec![
            level(100.0, 100.0, 10.0, Verdict::Pass),
            level(200.0, 200.0, 11.0, Verdict::Pass),
            level(300.0, 250.0, 900.0, Verdict::Invalid { reason: "g".into() }),
            level(400.0, 300.0, 500.0, fail()),
        ];
        let bp = breakpoint(&levels);
        assert_eq!(bp.passed, Some(200.0));
        assert_eq!(bp.failed, Some(400.0));
        assert!(bp.threshold.unwrap().contains("p(99)<100"));
    }

    #[test]
    fn knee_is_the_last_level_before_latency_outgrows_throughput() {
        let levels = vec![
            level(100.0, 100.0, 13.0, Verdict::Pass),
            // Jitter: p99 up by less than the throughput's rise.
            level(200.0, 200.0, 20.0, Verdict::Pass),
            level(300.0, 300.0, 15.0, Verdict::Pass),
            level(400.0, 390.0, 18.0, Verdict::Pass),
            level(500.0, 400.0, 400.0, fail()),
        ];
        let k = knee(&levels).unwrap();
        assert_eq!(k.level, 400.0);
        assert_eq!(k.next_level, 500.0);
        assert!(knee(&levels[..4]).is_none());
    }

    #[test]
    fn binding_resource_is_read_at_the_failed_level() {
        let levels = vec![
            level(100.0, 100.0, 10.0, Verdict::Pass),
            level(450.0, 400.0, 500.0, fail()),
        ];
        let b = binding(&levels, &breakpoint(&levels)).unwrap();
        assert_eq!((b.service.as_str(), b.resource.as_str()), ("api", "cpu"));
        assert!((b.share - 0.9).abs() < 1e-9);
    }

    fn estimate(points: &[(f64, f64, bool)]) -> CapacityEstimate {
        let levels: Vec<LevelFigures> = points
            .iter()
            .map(|&(l, x, ok)| level(l, x, 10.0, if ok { Verdict::Pass } else { fail() }))
            .collect();
        capacity(&levels, &breakpoint(&levels)).unwrap()
    }

    #[test]
    fn capacity_of_a_flat_ceiling_is_its_plateau() {
        // Three workers of 20 ms: 150/s.
        let c = estimate(&[
            (60.0, 60.0, true),
            (120.0, 119.0, true),
            (140.0, 139.0, true),
            (160.0, 150.5, false),
            (240.0, 149.0, false),
        ]);
        assert_eq!(
            (c.basis.as_str(), c.lower_bound),
            ("plateau", false),
            "{c:?}"
        );
        assert_eq!((c.throughput_per_s, c.level), (150.5, 160.0));
        let c = estimate(&[(100.0, 100.0, true), (160.0, 150.5, false)]);
        assert_eq!(c.basis, "failing_level", "{c:?}");
        assert!(c.note.contains("at the failing level 160"), "{c:?}");
    }

    #[test]
    fn capacity_of_a_retrograde_target_is_its_peak() {
        let c = estimate(&[
            (2.0, 97.0, true),
            (4.0, 168.0, true),
            (8.0, 213.0, true),
            (12.0, 196.0, true),
            (16.0, 168.0, true),
            (24.0, 125.0, false),
        ]);
        assert_eq!((c.basis.as_str(), c.level), ("peak", 8.0), "{c:?}");
        assert!(c.note.contains("fell to 125.0/s at level 24"), "{c:?}");
    }

    #[test]
    fn capacity_is_a_lower_bound_until_throughput_runs_out() {
        let c = estimate(&[(100.0, 100.0, true), (200.0, 199.0, true)]);
        assert_eq!((c.basis.as_str(), c.lower_bound), ("lower_bound", true));
        assert!(c.note.contains("no level failed"), "{c:?}");
        // The failing level served what it was offered: latency failed first.
        let c = estimate(&[(100.0, 100.0, true), (200.0, 198.0, false)]);
        assert!(c.lower_bound, "{c:?}");
        assert!(c.note.contains("a threshold failed before"), "{c:?}");
        // Every VU busy at the target's steady latency: max_vus set the figure.
        let mut levels = vec![
            level(10.0, 10.0, 10.0, Verdict::Pass),
            level(200.0, 80.0, 10.0, fail()),
        ];
        levels[1].bottleneck = crate::sampling::saturation::Who::VuPool;
        let c = capacity(&levels, &breakpoint(&levels)).unwrap();
        assert!(c.lower_bound && c.note.contains("raise max_vus"), "{c:?}");
    }

    #[test]
    fn a_usl_peak_outside_the_fitted_range_is_an_extrapolation() {
        let u = |n: Option<f64>| Usl {
            lambda: 100.0,
            sigma: 0.1,
            kappa: 0.001,
            r_squared: 0.99,
            peak_concurrency: n,
            peak_throughput: 300.0,
        };
        let points = [(1.0, 100.0), (2.5, 180.0), (6.0, 300.0)];
        let r = usl_range(&u(Some(30.0)), &points).unwrap();
        assert_eq!((r.fitted, r.peak_within), ([1.0, 6.0], false));
        assert!(usl_range(&u(Some(4.0)), &points).unwrap().peak_within);
        assert!(!usl_range(&u(None), &points).unwrap().peak_within);
        assert!(!usl_range(&u(Some(4.0)), &points).unwrap().above_measured);
        let high = Usl {
            peak_throughput: 340.0,
            ..u(Some(4.0))
        };
        assert!(usl_range(&high, &points).unwrap().above_measured);
    }

    #[test]
    fn littles_law_flags_a_pool_that_ran_out_as_the_targets_not_the_generators() {
        let mut l = level(400.0, 380.0, 100.0, Verdict::Pass);
        l.vus = 20;
        // 380/s × 50 ms mean = 19 in flight of 20 VUs.
        // A full pool is the target's latency × the rate, not the generator.
        let c = little(&l, true);
        assert!(c.vu_limited && !c.generator_limited, "{c:?}");
        assert!((c.in_flight - 19.0).abs() < 1e-9);
        l.vus = 1000;
        assert!(!little(&l, true).vu_limited);
        l.verdict = Verdict::Invalid { reason: "g".into() };
        let c = little(&l, true);
        assert!(c.generator_limited && !c.vu_limited, "{c:?}");
    }
}
