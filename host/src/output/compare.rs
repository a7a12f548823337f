//! `host compare A B`: two runs' summary.json side by side, with the change of each
//! metric and the regressions flagged (latency up, errors up, throughput down), so CI
//! can hold a run against a baseline. A change is flagged only when it is beyond the
//! tolerance and also significant: larger than the run-to-run and second-to-second
//! noise of the machine, judged from each run's per-second data ([`significance`]).
//! The target's and the generator's resources follow, side by side ([`compare_stack`]).
//!
//! Both files are read back into the typed [`Summary`] the host wrote them from, so
//! compare reads the same fields the writer writes, and a file of another shape is
//! refused with what it is instead of being compared as zeros.

use super::compare_stack::{self, ResourceRow};
use super::significance::{self, Significance, Stat};
use crate::metrics::summary::{MetricSummary, Stats};
use crate::metrics::{MetricKind, Registry, Unit};
use crate::summary::Summary;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// summary.json's `metrics`: each metric's (or sub-metric's) statistics by name.
pub(crate) type Metrics = BTreeMap<String, MetricSummary>;

/// Rates below this difference (0.1 percentage point) are noise, not a regression.
const RATE_NOISE: f64 = 0.001;

/// What makes a change a regression.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Relative change allowed (0.1 = 10 %).
    pub relative: f64,
    /// Timings must also rise by at least this many milliseconds: sub-millisecond
    /// jitter of a fast target is not a regression.
    pub min_latency_ms: f64,
}

/// Counters where more per second is worse.
const WORSE_WHEN_HIGHER: &[&str] = &[
    "plugin_errors",
    "dropped_iterations",
    "http_req_errors",
    "interrupted_iterations",
    "http_reqs_denied",
    "http_reqs_unsent",
];

/// Counters where fewer per second is worse (throughput).
const WORSE_WHEN_LOWER: &[&str] = &[
    "http_reqs",
    "http_reqs_sent",
    "iterations",
    "data_sent",
    "data_received",
    "ws_sessions",
    "ws_msgs_sent",
    "ws_msgs_received",
];

/// Which way a metric gets worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Worse {
    Higher,
    Lower,
    /// Shown, never flagged (custom metrics whose meaning is unknown).
    Unknown,
}

/// One compared value.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The metric.
    pub metric: String,
    /// Which statistic (`p95`, `rate`, ...).
    pub stat: &'static str,
    /// Run A's value.
    pub a: Option<f64>,
    /// Run B's value.
    pub b: Option<f64>,
    /// Milliseconds for timings, per second for counter rates, a share (0–1, shown
    /// as a percentage) for rates; `None` for gauges and other figures.
    pub unit: Option<Unit>,
    /// Why B is a regression, if it is.
    pub regression: Option<&'static str>,
    /// Whether the change is beyond noise; `None` for metrics never flagged.
    pub significance: Option<Significance>,
}

impl Row {
    /// Change from A to B in percent of A (percentage points for rates).
    pub fn change(&self) -> Option<f64> {
        let (a, b) = (self.a?, self.b?);
        if self.unit == Some(Unit::Percent) {
            return Some((b - a) * 100.0);
        }
        if a == 0.0 {
            return (b == 0.0).then_some(0.0);
        }
        Some((b - a) / a.abs() * 100.0)
    }
}

/// The comparison of two runs.
#[derive(Debug)]
pub struct Comparison {
    /// Run A's summary.json.
    pub a: PathBuf,
    /// Run B's summary.json.
    pub b: PathBuf,
    /// What counted as a regression.
    pub tolerance: Tolerance,
    /// One row per metric statistic present in either run.
    pub rows: Vec<Row>,
    /// One line describing each run.
    pub about: [String; 2],
    /// Whole seconds of per-second data of each run (`None`: only summary.json).
    pub seconds: [Option<usize>; 2],
    /// Each sampled service's CPU and memory in both runs (summary.json's `stack`).
    pub resources: Vec<ResourceRow>,
}

impl Comparison {
    /// Rows flagged as regressions.
    pub fn regressions(&self) -> usize {
        self.rows.iter().filter(|r| r.regression.is_some()).count()
    }
}

/// A `--tolerance` that is not a percentage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tolerance {0:?}: write a percentage such as 10%")]
pub(crate) struct ToleranceError(String);

/// Parses `10%`, `10` (both ten percent) or `0.5%`.
pub(crate) fn parse_tolerance(text: &str) -> Result<f64, ToleranceError> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v / 100.0),
        _ => Err(ToleranceError(text.to_owned())),
    }
}

/// A results folder or a summary.json file → the summary.json path.
fn summary_path(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("summary.json")
    } else {
        path.to_path_buf()
    }
}

/// The per-second data beside a summary.json, if its folder has any.
fn load_series(summary: &Path) -> Result<Option<significance::Series>> {
    match summary.parent() {
        Some(dir) => significance::load(dir),
        None => Ok(None),
    }
}

/// Reads a summary.json back into its type, saying what is wrong with a file that is
/// not one: not JSON, not a host summary at all, or one of another schema.
pub(crate) fn load(path: &Path) -> Result<(PathBuf, Summary)> {
    let file = summary_path(path);
    let text = std::fs::read_to_string(&file).with_context(|| {
        format!(
            "cannot read {} (give a results folder or its summary.json)",
            file.display()
        )
    })?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", file.display()))?;
    if !json
        .get("metrics")
        .is_some_and(serde_json::Value::is_object)
    {
        bail!(
            "{} has no `metrics`: is it a host summary.json?",
            file.display()
        );
    }
    let schema = json.get("schema").and_then(serde_json::Value::as_u64);
    let summary: Summary = serde_json::from_value(json).map_err(|e| {
        anyhow::anyhow!(
            "{} is not a summary.json this host can read (schema {}; this host writes schema {}): {e}; \
             compare runs written by the same version of host",
            file.display(),
            schema.map_or_else(|| "missing".to_string(), |s| s.to_string()),
            crate::summary::SCHEMA,
        )
    })?;
    Ok((file, summary))
}

/// Compares the runs at `a` and `b` (folders or summary.json files).
pub fn compare_runs(a: &Path, b: &Path, tolerance: Tolerance) -> Result<Comparison> {
    let (a_path, a_sum) = load(a)?;
    let (b_path, b_sum) = load(b)?;
    let series = [load_series(&a_path)?, load_series(&b_path)?];
    let [sa, sb] = series;
    Ok(compare_loaded(
        (a_path, a_sum, sa),
        (b_path, b_sum, sb),
        tolerance,
    ))
}

/// One run as compared: where it is, its summary, its per-second data.
pub(crate) type Loaded = (PathBuf, Summary, Option<significance::Series>);

/// Compares two runs already read (from their folders, or from the store of runs).
pub(crate) fn compare_loaded(a: Loaded, b: Loaded, tolerance: Tolerance) -> Comparison {
    let (a_path, a_sum, sa) = a;
    let (b_path, b_sum, sb) = b;
    Comparison {
        rows: compare_with(
            &a_sum.metrics,
            &b_sum.metrics,
            [sa.as_ref(), sb.as_ref()],
            tolerance,
        ),
        about: [describe(&a_sum), describe(&b_sum)],
        resources: compare_stack::rows(a_sum.stack.as_ref(), b_sum.stack.as_ref()),
        seconds: [
            sa.as_ref().map(|s| s.seconds),
            sb.as_ref().map(|s| s.seconds),
        ],
        a: a_path,
        b: b_path,
        tolerance,
    }
}

fn describe(summary: &Summary) -> String {
    format!(
        "{} {}, {:.1} s, {}, started {}",
        summary.plugin.name,
        summary.plugin.version,
        summary.duration_s,
        summary.status,
        summary.started_at,
    )
}

/// The statistics compared for a metric of `kind`: trends by mean and percentiles,
/// counters by their rate per second, rates by their share; gauges are not compared.
fn compared_stats(kind: MetricKind) -> &'static [&'static str] {
    match kind {
        MetricKind::Trend => &["avg", "p50", "p95", "p99"],
        MetricKind::Counter | MetricKind::Rate => &["rate"],
        MetricKind::Gauge => &[],
    }
}

/// The value of one of [`compared_stats`] in `stats`.
fn stat_value(stats: &Stats, stat: &str) -> Option<f64> {
    match (stats, stat) {
        (Stats::Trend(t), "avg") => Some(t.avg),
        (Stats::Trend(t), "p50") => Some(t.med),
        (Stats::Trend(t), "p95") => Some(t.p95),
        (Stats::Trend(t), "p99") => Some(t.p99),
        (Stats::Counter { rate, .. } | Stats::Rate { rate, .. }, "rate") => Some(*rate),
        _ => None,
    }
}

/// Compares two runs' metrics without per-second data: changes are judged on their
/// size alone.
#[cfg(test)]
pub(crate) fn compare(a: &Metrics, b: &Metrics, tolerance: Tolerance) -> Vec<Row> {
    compare_with(a, b, [None, None], tolerance)
}

/// Compares two runs' metrics, judging the significance of each change from the
/// runs' per-second data where both have it.
pub(crate) fn compare_with(
    ma: &Metrics,
    mb: &Metrics,
    series: [Option<&significance::Series>; 2],
    tolerance: Tolerance,
) -> Vec<Row> {
    let builtins = Registry::new();
    let mut names: Vec<&String> = ma.keys().chain(mb.keys()).collect();
    names.sort();
    names.dedup();
    let mut rows = Vec::new();
    for name in names {
        let (xa, xb) = (ma.get(name), mb.get(name));
        let Some(kind) = xa.or(xb).map(|m| m.stats.kind()) else {
            continue;
        };
        // A metric of another kind in the other run is not the same metric.
        let (xa, xb) = (
            xa.filter(|m| m.stats.kind() == kind),
            xb.filter(|m| m.stats.kind() == kind),
        );
        let def = builtins.lookup(name).map(|id| builtins.def(id));
        let is_time = def.as_ref().is_some_and(|d| d.is_time);
        let stats = compared_stats(kind);
        let worse = match kind {
            MetricKind::Trend if is_time => Worse::Higher,
            MetricKind::Counter if WORSE_WHEN_HIGHER.contains(&name.as_str()) => Worse::Higher,
            MetricKind::Counter if WORSE_WHEN_LOWER.contains(&name.as_str()) => Worse::Lower,
            MetricKind::Rate if name == "http_req_failed" => Worse::Higher,
            MetricKind::Rate if name == "checks" => Worse::Lower,
            _ => Worse::Unknown,
        };
        let unit = match kind {
            MetricKind::Trend if is_time => Some(Unit::Millis),
            MetricKind::Counter => Some(Unit::PerSecond),
            MetricKind::Rate => Some(Unit::Percent),
            _ => None,
        };
        // A counter missing from a run counted nothing there (errors, drops).
        let absent = (kind == MetricKind::Counter).then_some(0.0);
        let value = |x: Option<&MetricSummary>, stat: &str| {
            x.and_then(|m| stat_value(&m.stats, stat)).or(absent)
        };
        let mut metric_rows: Vec<Row> = stats
            .iter()
            .map(|stat| Row {
                metric: name.clone(),
                stat,
                a: value(xa, stat),
                b: value(xb, stat),
                unit,
                regression: None,
                significance: None,
            })
            .collect();
        let by_size: Vec<Option<&'static str>> = metric_rows
            .iter()
            .map(|r| judge(r, worse, kind, tolerance))
            .collect();
        if worse != Worse::Unknown {
            // A bootstrap is worth its time only where the size alone would flag.
            let judged = if kind == MetricKind::Trend && by_size.iter().all(Option::is_none) {
                vec![Significance::NotTested; stats.len()]
            } else {
                significance_of(name, kind, stats, series)
            };
            for (row, judged) in metric_rows.iter_mut().zip(judged) {
                row.significance = Some(judged);
            }
        }
        for (mut row, size) in metric_rows.into_iter().zip(by_size) {
            row.regression =
                size.filter(|_| row.significance.and_then(|s| s.significant()) != Some(false));
            rows.push(row);
        }
    }
    rows
}

/// The significance of each of `stats` of metric `name`, from both runs' seconds.
fn significance_of(
    name: &str,
    kind: MetricKind,
    stats: &[&'static str],
    series: [Option<&significance::Series>; 2],
) -> Vec<Significance> {
    let [Some(sa), Some(sb)] = series else {
        return vec![Significance::NoData; stats.len()];
    };
    let shorter = sa.seconds.min(sb.seconds);
    if shorter < significance::MIN_SECONDS {
        return vec![Significance::TooShort { seconds: shorter }; stats.len()];
    }
    match kind {
        MetricKind::Trend => {
            let (Some(ta), Some(tb)) = (sa.trends.get(name), sb.trends.get(name)) else {
                return vec![Significance::NoData; stats.len()];
            };
            if ta.len().min(tb.len()) < significance::MIN_SECONDS {
                let seconds = ta.len().min(tb.len());
                return vec![Significance::TooShort { seconds }; stats.len()];
            }
            let wanted: Vec<Stat> = stats
                .iter()
                .map(|stat| match *stat {
                    "avg" => Stat::Avg,
                    "p50" => Stat::Quantile(0.5),
                    "p95" => Stat::Quantile(0.95),
                    _ => Stat::Quantile(0.99),
                })
                .collect();
            significance::bootstrap(ta, tb, &wanted)
                .into_iter()
                .map(|(low, high)| Significance::Interval { low, high })
                .collect()
        }
        _ => {
            // A counter absent from a run's seconds was 0 in each of them.
            let zeros = |n: usize| vec![0.0; n];
            let values = |s: &significance::Series| {
                s.values.get(name).cloned().unwrap_or_else(|| {
                    if kind == MetricKind::Counter {
                        zeros(s.seconds)
                    } else {
                        Vec::new()
                    }
                })
            };
            let judged = match significance::welch(&values(sa), &values(sb)) {
                Some(p) => Significance::Welch { p },
                None => Significance::NoData,
            };
            vec![judged; stats.len()]
        }
    }
}

fn judge(row: &Row, worse: Worse, kind: MetricKind, tolerance: Tolerance) -> Option<&'static str> {
    let (a, b) = (row.a?, row.b?);
    if kind == MetricKind::Trend && b - a < tolerance.min_latency_ms {
        return None;
    }
    let tolerance = tolerance.relative;
    // For rates the bad share is compared: failures of http_req_failed, misses of checks.
    let (a, b, worse) = if kind == MetricKind::Rate && worse == Worse::Lower {
        (1.0 - a, 1.0 - b, Worse::Higher)
    } else {
        (a, b, worse)
    };
    if kind == MetricKind::Rate && (b - a).abs() < RATE_NOISE {
        return None;
    }
    let why = match (kind, worse) {
        (MetricKind::Trend, _) => "latency up",
        (MetricKind::Rate, _) | (MetricKind::Counter, Worse::Higher) => "errors up",
        _ => "throughput down",
    };
    match worse {
        Worse::Higher if b > a * (1.0 + tolerance) && b > a => Some(why),
        Worse::Lower if b < a * (1.0 - tolerance) => Some(why),
        _ => None,
    }
}

/// The table as printed.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  A: {} ({})", c.a.display(), c.about[0]);
    let _ = writeln!(out, "  B: {} ({})", c.b.display(), c.about[1]);
    let _ = writeln!(
        out,
        "  tolerance: {}% (timings also by at least {}ms), and significant: p < {} \
         (Welch's t-test on per-second rates) or a 95% interval of B - A that leaves out 0 \
         (bootstrap over seconds of the HDR logs, for timings)",
        fmt_num(c.tolerance.relative * 100.0),
        fmt_num(c.tolerance.min_latency_ms),
        significance::ALPHA
    );
    match c.seconds {
        [Some(a), Some(b)] if a.min(b) < significance::MIN_SECONDS => {
            let _ = writeln!(
                out,
                "  too short to judge significance: A has {a} whole seconds, B {b}; at least {} \
                 are needed, so changes are judged on their size alone",
                significance::MIN_SECONDS
            );
        }
        [Some(_), Some(_)] => {}
        _ => {
            let _ = writeln!(
                out,
                "  no per-second data (timeseries.jsonl, histograms/) beside a summary.json, so \
                 changes are judged on their size alone"
            );
        }
    }
    let _ = writeln!(out);
    let width = c
        .rows
        .iter()
        .map(|r| r.metric.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let _ = writeln!(
        out,
        "  {:<width$}  {:<4}  {:>14}  {:>14}  {:>10}  {:<24}",
        "metric", "stat", "A", "B", "change", "significance"
    );
    for r in &c.rows {
        let unit_text = r.unit.map(Unit::as_str).unwrap_or("");
        let value = |v: Option<f64>| match v {
            None => "-".to_string(),
            Some(v) if r.unit == Some(Unit::Percent) => format!("{}%", fmt_num(v * 100.0)),
            Some(v) if r.unit == Some(Unit::Millis) => format!("{v:.3}ms"),
            Some(v) => format!("{}{}", fmt_num(v), unit_text),
        };
        let change = match r.change() {
            None => "-".to_string(),
            Some(ch) if r.unit == Some(Unit::Percent) => format!("{ch:+.2}pp"),
            Some(ch) => format!("{ch:+.1}%"),
        };
        let flag = match r.regression {
            Some(why) => format!("  ✗ regression ({why})"),
            None => String::new(),
        };
        let judged = match r.significance {
            None | Some(Significance::NoData) => "-".to_string(),
            Some(Significance::NotTested) => "within tolerance".to_string(),
            Some(Significance::TooShort { .. }) => "too short".to_string(),
            Some(Significance::Welch { p }) if p < 0.001 => "p<0.001".to_string(),
            Some(Significance::Welch { p }) => format!("p={p:.3}"),
            Some(Significance::Interval { low, high }) => {
                format!("95% CI {low:+.3}..{high:+.3}{unit_text}")
            }
        };
        let _ = writeln!(
            out,
            "  {:<width$}  {:<4}  {:>14}  {:>14}  {:>10}  {:<24}{flag}",
            r.metric,
            r.stat,
            value(r.a),
            value(r.b),
            change,
            judged
        );
    }
    out.push_str(&compare_stack::render(&c.resources));
    let n = c.regressions();
    let _ = writeln!(
        out,
        "\n  {} beyond {}%",
        match n {
            0 => "no regression".to_string(),
            1 => "1 regression".to_string(),
            n => format!("{n} regressions"),
        },
        fmt_num(c.tolerance.relative * 100.0)
    );
    out
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summary::TrendStats;

    fn metric(name: &str, stats: Stats) -> (String, MetricSummary) {
        let m = MetricSummary {
            name: name.to_string(),
            def: None,
            stats,
        };
        (name.to_string(), m)
    }

    fn trend(avg: f64, p95: f64) -> Stats {
        Stats::Trend(TrendStats {
            count: 100,
            avg,
            min: 0.0,
            med: avg,
            p90: p95,
            p95,
            p99: p95,
            p999: p95,
            max: p95,
        })
    }

    fn rate(rate: f64) -> Stats {
        Stats::Rate {
            rate,
            passes: 0,
            fails: 0,
        }
    }

    fn counter(rate: f64) -> Stats {
        Stats::Counter {
            count: rate * 10.0,
            rate,
        }
    }

    fn summary(p95: f64, reqs_rate: f64, failed: f64, checks: f64) -> Metrics {
        [
            metric("http_req_duration", trend(p95 / 2.0, p95)),
            metric("http_reqs", counter(reqs_rate)),
            metric("http_req_failed", rate(failed)),
            metric("checks", rate(checks)),
            metric("my_sizes", trend(1.0, 1.0)),
            metric(
                "vus",
                Stats::Gauge {
                    value: 1.0,
                    min: 1.0,
                    max: 1.0,
                },
            ),
        ]
        .into_iter()
        .collect()
    }

    const TEN: Tolerance = Tolerance {
        relative: 0.1,
        min_latency_ms: 1.0,
    };

    fn flagged(rows: &[Row]) -> Vec<(String, &'static str)> {
        rows.iter()
            .filter(|r| r.regression.is_some())
            .map(|r| (r.metric.clone(), r.stat))
            .collect()
    }

    #[test]
    fn same_runs_flag_nothing() {
        let s = summary(10.0, 100.0, 0.0, 1.0);
        let rows = compare(&s, &s, TEN);
        assert!(flagged(&rows).is_empty());
        assert!(rows.iter().all(|r| r.change() == Some(0.0)));
        assert!(
            !rows.iter().any(|r| r.metric == "vus"),
            "gauges are not compared"
        );
    }

    #[test]
    fn latency_up_errors_up_throughput_down_are_flagged() {
        let a = summary(10.0, 100.0, 0.0, 1.0);
        let b = summary(12.0, 85.0, 0.05, 0.9);
        let got = flagged(&compare(&a, &b, TEN));
        for want in [
            ("http_req_duration", "p95"),
            ("http_req_duration", "avg"),
            ("http_reqs", "rate"),
            ("http_req_failed", "rate"),
            ("checks", "rate"),
        ] {
            assert!(
                got.contains(&(want.0.to_string(), want.1)),
                "{want:?} in {got:?}"
            );
        }
        assert!(!got.iter().any(|(m, _)| m == "my_sizes"));
    }

    #[test]
    fn changes_within_tolerance_or_for_the_better_pass() {
        let a = summary(10.0, 100.0, 0.02, 0.99);
        let b = summary(10.9, 95.0, 0.0205, 1.0);
        assert!(flagged(&compare(&a, &b, TEN)).is_empty());
        let faster = summary(5.0, 200.0, 0.0, 1.0);
        assert!(flagged(&compare(&a, &faster, TEN)).is_empty());
    }

    #[test]
    fn sub_millisecond_jitter_and_missing_counters() {
        let a = summary(0.2, 100.0, 0.0, 1.0);
        let b = summary(0.9, 100.0, 0.0, 1.0);
        assert!(
            flagged(&compare(&a, &b, TEN)).is_empty(),
            "+0.7 ms is jitter"
        );
        let mut c = summary(0.2, 100.0, 0.0, 1.0);
        c.extend([metric("plugin_errors", counter(0.3))]);
        assert_eq!(
            flagged(&compare(&a, &c, TEN)),
            vec![("plugin_errors".to_string(), "rate")],
            "errors where there were none"
        );
        assert!(flagged(&compare(&c, &a, TEN)).is_empty(), "errors gone");
    }

    fn series(rates: &[f64]) -> significance::Series {
        significance::Series {
            seconds: rates.len(),
            values: [("http_reqs".to_string(), rates.to_vec())].into(),
            trends: Default::default(),
        }
    }

    #[test]
    fn only_significant_changes_beyond_the_tolerance_are_flagged() {
        let a = summary(10.0, 100.0, 0.0, 1.0);
        let b = summary(10.0, 85.0, 0.0, 1.0);
        let reqs = |rows: &[Row]| {
            rows.iter()
                .find(|r| r.metric == "http_reqs")
                .cloned()
                .unwrap()
        };
        // -15 %, but the seconds of each run scatter more than that: noise.
        let noisy_a = series(&[60.0, 140.0, 90.0, 120.0, 90.0]);
        let noisy_b = series(&[100.0, 50.0, 130.0, 60.0, 85.0]);
        let row = reqs(&compare_with(&a, &b, [Some(&noisy_a), Some(&noisy_b)], TEN));
        assert_eq!(row.regression, None);
        assert!(
            matches!(row.significance, Some(Significance::Welch { p }) if p > significance::ALPHA)
        );
        // -15 % with steady seconds: a real drop.
        let steady_a = series(&[99.0, 101.0, 100.0, 100.0, 100.0]);
        let steady_b = series(&[84.0, 86.0, 85.0, 85.0, 85.0]);
        let row = reqs(&compare_with(
            &a,
            &b,
            [Some(&steady_a), Some(&steady_b)],
            TEN,
        ));
        assert_eq!(row.regression, Some("throughput down"));
        assert!(matches!(row.significance, Some(Significance::Welch { p }) if p < 0.001));
        // Significant but within the tolerance: not flagged either.
        let b5 = summary(10.0, 95.0, 0.0, 1.0);
        let steady_b5 = series(&[94.0, 96.0, 95.0, 95.0, 95.0]);
        let row = reqs(&compare_with(
            &a,
            &b5,
            [Some(&steady_a), Some(&steady_b5)],
            TEN,
        ));
        assert_eq!(row.regression, None);
    }

    #[test]
    fn a_run_too_short_to_judge_says_so_and_is_judged_on_size() {
        let a = summary(10.0, 100.0, 0.0, 1.0);
        let b = summary(10.0, 85.0, 0.0, 1.0);
        let short = series(&[100.0, 100.0]);
        let long = series(&[100.0, 90.0, 110.0, 100.0]);
        let rows = compare_with(&a, &b, [Some(&long), Some(&short)], TEN);
        let row = rows.iter().find(|r| r.metric == "http_reqs").unwrap();
        assert_eq!(
            row.significance,
            Some(Significance::TooShort { seconds: 2 })
        );
        assert_eq!(row.regression, Some("throughput down"));
        let c = Comparison {
            a: "a".into(),
            b: "b".into(),
            tolerance: TEN,
            rows,
            about: [String::new(), String::new()],
            seconds: [Some(4), Some(2)],
            resources: Vec::new(),
        };
        let text = render(&c);
        assert!(text.contains("too short to judge significance"), "{text}");
        assert!(text.contains("B 2"), "{text}");
    }

    #[test]
    fn tolerance_is_a_percentage() {
        assert_eq!(parse_tolerance("10%"), Ok(0.1));
        assert_eq!(parse_tolerance("5"), Ok(0.05));
        assert_eq!(parse_tolerance("0.5 %"), Ok(0.005));
        assert_eq!(
            parse_tolerance("ten").unwrap_err().to_string(),
            "invalid tolerance \"ten\": write a percentage such as 10%"
        );
        assert!(parse_tolerance("-1%").is_err());
    }
}
