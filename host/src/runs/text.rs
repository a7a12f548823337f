//! What `host runs list`, `show` and `trend` print: plain tables, one run per line.

use super::query::RunRow;
use std::fmt::Write;

/// One run of a trend and its value of the statistic (none when it lacks the metric).
pub(crate) struct TrendPoint {
    /// The run.
    pub run: RunRow,
    /// Its value.
    pub value: Option<f64>,
}

/// `2026-12-05T00:07:42.753527911Z` → `2026-12-05T00:07:42Z`: to the second, for columns.
fn short_time(t: &str) -> String {
    match t.get(..19) {
        Some(head) if t.len() > 20 => format!("{head}Z"),
        _ => t.to_string(),
    }
}

fn code(c: Option<i32>) -> String {
    c.map_or_else(|| "-".to_string(), |c| c.to_string())
}

/// `host runs list`: one line per run, oldest first; baselines marked.
pub(crate) fn list(rows: &[RunRow], baselines: &[(String, String, i64)]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5}  {:<20}  {:<16}  {:<16}  {:>8}  {:<11}  {:>4}  results folder",
        "id", "started", "plugin", "scenarios", "length", "status", "exit"
    );
    for r in rows {
        let marks: Vec<&str> = baselines
            .iter()
            .filter(|b| b.2 == r.id)
            .map(|b| b.1.as_str())
            .collect();
        let baseline = if marks.is_empty() {
            String::new()
        } else {
            format!("  (baseline of {})", marks.join(", "))
        };
        let _ = writeln!(
            out,
            "{:>5}  {:<20}  {:<16}  {:<16}  {:>7.1}s  {:<11}  {:>4}  {}{baseline}",
            r.id,
            short_time(&r.started_at),
            r.plugin,
            r.scenarios,
            r.duration_s,
            r.status,
            code(r.exit_code),
            r.name
        );
    }
    if rows.is_empty() {
        out.push_str("  (no run matches)\n");
    }
    out
}

/// `host runs show RUN`: the run's facts, thresholds and every metric's figures.
pub(crate) fn show(
    run: &RunRow,
    details: &super::query::Details,
    tags: &[(String, String)],
    thresholds: &[super::query::ThresholdRow],
    figures: &[(String, String, String, f64)],
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "run {}: {}", run.id, run.folder);
    let _ = writeln!(
        out,
        "  plugin:    {} {} (sha256 {})",
        run.plugin, run.plugin_version, run.plugin_sha256
    );
    let scenarios: Vec<String> = details
        .scenarios
        .iter()
        .map(|(name, executor, exec)| {
            if exec == name || exec.is_empty() {
                format!("{name} ({executor})")
            } else {
                format!("{name} ({executor}, exec {exec})")
            }
        })
        .collect();
    let _ = writeln!(out, "  scenarios: {}", scenarios.join(", "));
    let _ = writeln!(out, "  config:    sha256 {}", details.config_hash);
    let _ = writeln!(
        out,
        "  machine:   {}, host {}",
        details.machine, details.host_version
    );
    if !tags.is_empty() {
        let t: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "  tags:      {}", t.join(", "));
    }
    let _ = writeln!(
        out,
        "  started:   {}, {:.1} s, {}, exit code {}",
        run.started_at,
        run.duration_s,
        run.status,
        code(run.exit_code)
    );
    if !thresholds.is_empty() {
        out.push_str("\n  thresholds:\n");
        for (metric, threshold, ok, observed) in thresholds {
            let _ = writeln!(
                out,
                "    {} {metric}: {threshold} (observed {})",
                if *ok { "✓" } else { "✗" },
                observed.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"))
            );
        }
    }
    out.push_str("\n  metrics:\n");
    let mut current = "";
    let mut line = String::new();
    for (metric, kind, stat, value) in figures {
        if metric != current {
            if !line.is_empty() {
                let _ = writeln!(out, "{line}");
            }
            line = format!("    {metric} ({kind}):");
            current = metric;
        }
        let _ = write!(line, " {stat}={}", number(*value));
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// `host runs trend`: one line per run with its value and the change from the first.
pub(crate) fn trend(metric: &str, stat: &str, points: &[TrendPoint]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5}  {:<20}  {:<16}  {:<11}  {:>14}  {:>10}",
        "id",
        "started",
        "plugin",
        "status",
        format!("{metric} {stat}"),
        "vs first"
    );
    let first = points.iter().find_map(|p| p.value);
    for p in points {
        let change = match (first, p.value) {
            (Some(a), Some(b)) if a != 0.0 => format!("{:+.1}%", (b - a) / a.abs() * 100.0),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            out,
            "{:>5}  {:<20}  {:<16}  {:<11}  {:>14}  {:>10}",
            p.run.id,
            short_time(&p.run.started_at),
            p.run.plugin,
            p.run.status,
            p.value.map_or_else(|| "-".to_string(), number),
            change
        );
    }
    if points.is_empty() {
        out.push_str("  (no run matches)\n");
    }
    out
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}
