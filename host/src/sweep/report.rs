//! The sweep's text outputs: `sweep.json` (every level and the model), `sweep.md` (one
//! row per level, then the model) and the lines printed at the end.

use super::figures::{LevelFigures, Percentiles, Verdict};
use super::levels::label;
use super::model::CapacityModel;
use serde::Serialize;
use std::fmt::Write as _;

/// Below this share of its cap the nearest resource is not taken to be what binds.
const BINDING_SHARE: f64 = 0.5;

/// What `sweep.json` holds.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SweepResult {
    /// Schema version of this file.
    pub schema: u32,
    /// The plugin's name.
    pub plugin: String,
    /// What a level counts (`iterations/s` or `VUs`).
    pub unit: String,
    /// Seconds each level held its load.
    pub hold_s: f64,
    /// Seconds each level ramped up first.
    pub ramp_s: f64,
    /// Whether Ctrl-C ended the sweep early.
    pub interrupted: bool,
    /// The levels, in the order they ran.
    pub levels: Vec<LevelFigures>,
    /// The capacity model.
    pub model: CapacityModel,
}

fn ms(p: Option<Percentiles>, f: impl Fn(&Percentiles) -> f64) -> String {
    p.map_or("-".into(), |p| format!("{:.1}", f(&p)))
}

fn services(l: &LevelFigures) -> String {
    let parts: Vec<String> = l
        .services
        .iter()
        .filter(|s| s.service != "generator")
        .map(|s| {
            format!(
                "{} {:.0}/{:.0}% {:.0} MiB",
                s.service,
                s.cpu_avg_percent,
                s.cpu_peak_percent,
                s.memory_peak_bytes as f64 / (1024.0 * 1024.0)
            )
        })
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join("; ")
    }
}

/// The verdict with its caveat, if any.
fn verdict_cell(l: &LevelFigures) -> String {
    match &l.caveat {
        Some(c) => format!("{} ({c})", l.verdict.text()),
        None => l.verdict.text(),
    }
}

/// `sweep.md`.
pub(crate) fn markdown(r: &SweepResult) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Sweep of {}\n", r.plugin);
    let _ = writeln!(
        md,
        "Levels in {}; each held {:.0} s{}.{}\n",
        r.unit,
        r.hold_s,
        if r.ramp_s > 0.0 {
            format!(" after a {:.0} s ramp", r.ramp_s)
        } else {
            String::new()
        },
        if r.interrupted {
            " **Interrupted (Ctrl-C): only the levels done are listed.**"
        } else {
            ""
        }
    );
    md.push_str(
        "| level | offered/s | good throughput/s | http p50 | p95 | p99 (ms) | iteration latency p50 | p95 | p99 (ms) | errors | dropped | services CPU avg/peak, memory peak | generator CPU avg/peak | verdict |\n",
    );
    md.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|\n");
    for l in &r.levels {
        let generator = l.generator().map_or("-".into(), |g| {
            format!("{:.0}/{:.0}%", g.cpu_avg_percent, g.cpu_peak_percent)
        });
        let _ = writeln!(
            md,
            "| {} | {:.1} | {:.1} | {} | {} | {} | {} | {} | {} | {:.2}% | {} | {} | {} | {} |",
            label(l.level),
            l.offered_per_s,
            l.throughput_per_s,
            ms(l.http_req_duration, |p| p.p50),
            ms(l.http_req_duration, |p| p.p95),
            ms(l.http_req_duration, |p| p.p99),
            ms(l.iteration_latency, |p| p.p50),
            ms(l.iteration_latency, |p| p.p95),
            ms(l.iteration_latency, |p| p.p99),
            l.error_rate * 100.0,
            l.dropped,
            services(l),
            generator,
            verdict_cell(l).replace('|', "\\|"),
        );
    }
    md.push_str("\n## Capacity model\n\n");
    md.push_str(&model_lines(r).join("\n"));
    md.push_str("\n\n### Little's law (in flight = throughput × mean iteration duration)\n\n");
    md.push_str(
        "| level | in flight | VUs | generator-limited | note |\n|---:|---:|---:|---|---|\n",
    );
    for c in &r.model.littles_law {
        let _ = writeln!(
            md,
            "| {} | {:.1} | {} | {} | {} |",
            label(c.level),
            c.in_flight,
            c.vus,
            if c.generator_limited { "yes" } else { "no" },
            c.note
        );
    }
    md.push_str("\nEach level's own results (summary.json, report.html) are in its folder: ");
    let folders: Vec<String> = r
        .levels
        .iter()
        .map(|l| format!("`{}`", l.results))
        .collect();
    md.push_str(&folders.join(", "));
    md.push('\n');
    md
}

/// The model in a few lines (sweep.md and the printed summary).
pub(crate) fn model_lines(r: &SweepResult) -> Vec<String> {
    let m = &r.model;
    let unit = &r.unit;
    let mut lines = Vec::new();
    let bp = &m.breakpoint;
    lines.push(match (bp.passed, bp.failed) {
        (Some(p), Some(f)) => format!(
            "- breakpoint: passed at {} {unit}, failed at {} {unit} ({})",
            label(p),
            label(f),
            bp.threshold.as_deref().unwrap_or("?")
        ),
        (None, Some(f)) => format!(
            "- breakpoint: below the lowest level; {} {unit} already failed ({})",
            label(f),
            bp.threshold.as_deref().unwrap_or("?")
        ),
        (Some(p), None) => format!(
            "- breakpoint: above {} {unit}: no level failed; sweep higher (--to or more --levels)",
            label(p)
        ),
        (None, None) => "- breakpoint: none; no level gave a valid verdict".to_string(),
    });
    lines.push(match &m.capacity {
        Some(c) => format!(
            "- capacity: {}{:.1} good iterations/s ({}: {})",
            if c.lower_bound { "at least " } else { "" },
            c.throughput_per_s,
            c.basis.replace('_', " "),
            c.note
        ),
        None => "- capacity: unknown (no valid level served anything)".into(),
    });
    lines.push(match &m.knee {
        Some(k) => format!(
            "- knee: {} {unit} (throughput {:.1}/s, p99 {:.1} ms); latency outgrew throughput at {} {unit}",
            label(k.level),
            k.throughput_per_s,
            k.p99_ms,
            label(k.next_level)
        ),
        None => "- knee: none within the sweep (latency never grew faster than throughput)".into(),
    });
    lines.push(format!("  (knee rule: {})", m.knee_rule));
    lines.push(match &m.usl {
        Some(u) => format!(
            "- USL fit: λ = {:.2}/s, σ = {:.4}, κ = {:.6}, R² = {:.3}; {}",
            u.lambda,
            u.sigma,
            u.kappa,
            u.r_squared,
            usl_peak(m, u)
        ),
        None => format!(
            "- USL fit: none ({})",
            m.usl_note.as_deref().unwrap_or("no points")
        ),
    });
    lines.push(match &m.binding {
        Some(b) => format!(
            "- binding resource: {} {} at {:.0}% of its cap (at {} {unit}){}",
            b.service,
            if b.resource == "cpu" {
                "CPU (share of its cpuset)"
            } else {
                "memory (share of its limit)"
            },
            b.share * 100.0,
            label(b.level),
            // Far from its cap, the nearest resource is not what binds: something
            // unsampled (a pool, a lock, a queue, a downstream service) is.
            if b.share < BINDING_SHARE {
                "; no sampled resource was near its cap, so the limit is elsewhere \
                 (a worker pool, a lock, a queue or a service not sampled)"
            } else {
                ""
            }
        ),
        None => "- binding resource: unknown (no service was sampled: use --stack, --sample-pid or --sample-container)".into(),
    });
    let levels_where = |pick: fn(&super::model::LittleCheck) -> bool| -> Vec<String> {
        m.littles_law
            .iter()
            .filter(|c| pick(c))
            .map(|c| label(c.level))
            .collect()
    };
    let limited = levels_where(|c| c.generator_limited);
    if !limited.is_empty() {
        lines.push(format!(
            "- generator-limited levels (Little's law): {}",
            limited.join(", ")
        ));
    }
    let full = levels_where(|c| c.vu_limited);
    if !full.is_empty() {
        lines.push(format!(
            "- levels with every VU busy waiting on the target (the target's latency × the \
             rate outgrew max_vus; not the generator): {}",
            full.join(", ")
        ));
    }
    let invalid = r
        .levels
        .iter()
        .filter(|l| matches!(l.verdict, Verdict::Invalid { .. }))
        .count();
    if invalid > 0 {
        lines.push(format!(
            "- {invalid} level(s) invalid: the generator saturated (its CPU, or late starts); \
             they are not taken as the target's breakpoint"
        ));
    }
    lines
}

/// The USL's peak in words: a prediction where it lies within the concurrency the fit
/// saw, marked as an extrapolation (with that range) where it does not.
pub(crate) fn usl_peak(m: &CapacityModel, u: &super::usl::Usl) -> String {
    let range = m
        .usl_range
        .as_ref()
        .map(|r| format!("N = {:.1} to {:.1}", r.fitted[0], r.fitted[1]))
        .unwrap_or_else(|| "the levels'".into());
    let measured = m.usl_points.iter().map(|p| p.1).fold(0.0, f64::max);
    match u.peak_concurrency {
        Some(n)
            if m.usl_range
                .as_ref()
                .is_some_and(|r| r.peak_within && r.above_measured) =>
        {
            format!(
                "peak {:.1}/s at N* = {n:.1} lies within the fitted range {range} but above \
                 every throughput measured ({measured:.1}/s): the curve's overshoot between \
                 levels, not a measurement; read the capacity above",
                u.peak_throughput
            )
        }
        Some(n) if m.usl_range.as_ref().is_some_and(|r| r.peak_within) => format!(
            "predicted peak {:.1}/s at concurrency N* = {n:.1}, within the fitted range {range}",
            u.peak_throughput
        ),
        Some(n) => format!(
            "peak {:.1}/s at N* = {n:.1} is an extrapolation outside the fitted range \
             {range}, not a measurement",
            u.peak_throughput
        ),
        None if u.peak_throughput.is_finite() => format!(
            "no peak (κ = 0): the curve levels off toward λ/σ = {:.1}/s only as N grows \
             without bound, an extrapolation past the fitted range {range}",
            u.peak_throughput
        ),
        None => format!(
            "no predicted peak (σ = κ = 0: throughput grew linearly with concurrency over \
             the fitted range {range}; sweep higher)"
        ),
    }
}

/// What is printed at the end of a sweep.
pub(crate) fn printed(r: &SweepResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nsweep of {} ({}):", r.plugin, r.unit);
    for l in &r.levels {
        let _ = writeln!(
            out,
            "  {:>8}  throughput {:>9.1}/s  p99 {:>9}  {}",
            label(l.level),
            l.throughput_per_s,
            l.http_req_duration
                .map_or("-".into(), |p| format!("{:.1}ms", p.p99)),
            l.verdict.text()
        );
    }
    out.push_str("capacity model:\n");
    for line in model_lines(r) {
        let _ = writeln!(out, "  {line}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::figures::Percentiles;
    use crate::sweep::model;

    fn level(level: f64, p99: f64, verdict: Verdict) -> LevelFigures {
        let p = Percentiles {
            avg: p99 / 2.0,
            p50: p99 / 3.0,
            p95: p99 / 1.5,
            p99,
        };
        LevelFigures {
            level,
            offered_per_s: level,
            throughput_per_s: level.min(400.0),
            http_reqs_per_s: level.min(400.0),
            completed_per_s: level.min(400.0),
            http_req_duration: Some(p),
            iteration_latency: None,
            iteration_duration: Some(p),
            error_rate: 0.0,
            dropped: 0,
            vus: 100,
            services: Vec::new(),
            verdict,
            bottleneck: Default::default(),
            caveat: None,
            results: format!("level-{level}/run"),
        }
    }

    #[test]
    fn markdown_has_a_row_per_level_and_the_model() {
        let levels = vec![
            level(100.0, 12.0, Verdict::Pass),
            level(400.0, 14.0, Verdict::Pass),
            level(
                600.0,
                900.0,
                Verdict::Fail {
                    reason: "http_req_duration p(99)<100 (observed p(99)=900ms)".into(),
                },
            ),
        ];
        let r = SweepResult {
            schema: 1,
            plugin: "hello".into(),
            unit: "iterations/s".into(),
            hold_s: 3.0,
            ramp_s: 0.0,
            interrupted: true,
            model: model::build(&levels, true),
            levels,
        };
        let md = markdown(&r);
        assert!(md.contains("| 100 | 100.0 | 100.0 |"), "{md}");
        assert!(md.contains("| 600 |"), "{md}");
        assert!(md.contains("fail: http_req_duration p(99)<100"), "{md}");
        assert!(
            md.contains("breakpoint: passed at 400 iterations/s, failed at 600"),
            "{md}"
        );
        assert!(md.contains("knee: 400"), "{md}");
        assert!(md.contains("USL fit: none"), "{md}");
        assert!(md.contains("Interrupted"), "{md}");
        assert!(md.contains("binding resource: unknown"), "{md}");
    }
}
