//! `[regressions]` rules judged between a baseline run (A) and a new one (B): a rule's
//! statistic must have moved the worse way by more than its tolerance, and the move
//! must be beyond noise by the same test `host compare` uses ([`significance`]: a
//! bootstrap over seconds for timings, Welch's t-test on per-second values otherwise);
//! timings must also move by at least `host compare`'s minimum (1 ms by default), so
//! sub-millisecond jitter of a fast target is no regression.

use crate::config::regressions::{Rule, Worse};
use crate::metrics::summary::MetricSummary;
use crate::metrics::{MetricKind, Registry};
use crate::output::significance::{self, Series, Significance, Stat};
use crate::summary::Summary;
use std::fmt::Write;

/// One rule, judged.
#[derive(Debug, Clone)]
pub(crate) struct Judged {
    /// The rule.
    pub rule: Rule,
    /// The baseline's value.
    pub a: Option<f64>,
    /// The new run's value.
    pub b: Option<f64>,
    /// Whether the change is beyond noise.
    pub significance: Significance,
    /// Whether the rule is broken.
    pub regressed: bool,
    /// Milliseconds (timings) or nothing.
    pub millis: bool,
}

impl Judged {
    /// The relative change from A to B (0.12 = +12 %).
    pub(crate) fn change(&self) -> Option<f64> {
        let (a, b) = (self.a?, self.b?);
        if a == 0.0 {
            return (b == 0.0).then_some(0.0);
        }
        Some((b - a) / a.abs())
    }
}

/// Judges each rule of `rules` between the baseline `a` and the run `b`.
pub(crate) fn judge(
    rules: &[Rule],
    a: (&Summary, Option<&Series>),
    b: (&Summary, Option<&Series>),
    min_latency_ms: f64,
) -> Vec<Judged> {
    let builtins = Registry::new();
    rules
        .iter()
        .map(|rule| {
            let ma = metric(a.0, &rule.metric);
            let mb = metric(b.0, &rule.metric);
            let kind = ma.or(mb).map(|m| m.stats.kind());
            let millis = kind == Some(MetricKind::Trend)
                && builtins
                    .lookup(base_name(&rule.metric))
                    .is_some_and(|id| builtins.def(id).is_time);
            let va = ma.and_then(|m| stat_value(m, &rule.stat));
            let vb = mb.and_then(|m| stat_value(m, &rule.stat));
            let significance = match kind {
                Some(kind) => significance_of(&rule.metric, kind, &rule.stat, a.1, b.1),
                None => Significance::NoData,
            };
            let beyond = match (va, vb) {
                (Some(x), Some(y)) => {
                    let change = if x == 0.0 {
                        if y == 0.0 {
                            0.0
                        } else {
                            f64::INFINITY.copysign(y)
                        }
                    } else {
                        (y - x) / x.abs()
                    };
                    let big_enough = !millis || (y - x).abs() >= min_latency_ms;
                    big_enough
                        && match rule.worse {
                            Worse::Up => change > rule.tolerance,
                            Worse::Down => change < -rule.tolerance,
                        }
                }
                _ => false,
            };
            Judged {
                rule: rule.clone(),
                a: va,
                b: vb,
                regressed: beyond && significance.significant() != Some(false),
                significance,
                millis,
            }
        })
        .collect()
}

/// `http_req_duration{name:x}` → `http_req_duration`.
fn base_name(metric: &str) -> &str {
    metric.split('{').next().unwrap_or(metric)
}

fn metric<'s>(summary: &'s Summary, name: &str) -> Option<&'s MetricSummary> {
    summary
        .metrics
        .get(name)
        .or_else(|| summary.submetrics.get(name))
}

/// A statistic as summary.json keys it (`p95`, `p99.9`, `rate`).
fn stat_value(m: &MetricSummary, stat: &str) -> Option<f64> {
    serde_json::to_value(&m.stats).ok()?.get(stat)?.as_f64()
}

fn significance_of(
    metric: &str,
    kind: MetricKind,
    stat: &str,
    a: Option<&Series>,
    b: Option<&Series>,
) -> Significance {
    let (Some(sa), Some(sb)) = (a, b) else {
        return Significance::NoData;
    };
    let shorter = sa.seconds.min(sb.seconds);
    if shorter < significance::MIN_SECONDS {
        return Significance::TooShort { seconds: shorter };
    }
    match kind {
        MetricKind::Trend => {
            let wanted = match stat {
                "avg" => Stat::Avg,
                "min" => Stat::Quantile(0.0),
                "max" => Stat::Quantile(1.0),
                "med" => Stat::Quantile(0.5),
                other => match other.strip_prefix('p').and_then(|q| q.parse::<f64>().ok()) {
                    Some(q) => Stat::Quantile(q / 100.0),
                    None => return Significance::NoData,
                },
            };
            let (Some(ta), Some(tb)) = (sa.trends.get(metric), sb.trends.get(metric)) else {
                return Significance::NoData;
            };
            if ta.len().min(tb.len()) < significance::MIN_SECONDS {
                return Significance::TooShort {
                    seconds: ta.len().min(tb.len()),
                };
            }
            let (low, high) = significance::bootstrap(ta, tb, &[wanted])[0];
            Significance::Interval { low, high }
        }
        MetricKind::Counter | MetricKind::Rate => {
            let values = |s: &Series| {
                s.values.get(metric).cloned().unwrap_or_else(|| {
                    if kind == MetricKind::Counter {
                        vec![0.0; s.seconds]
                    } else {
                        Vec::new()
                    }
                })
            };
            match significance::welch(&values(sa), &values(sb)) {
                Some(p) => Significance::Welch { p },
                None => Significance::NoData,
            }
        }
        MetricKind::Gauge => Significance::NoData,
    }
}

/// The judged rules as printed, one line each; says which broke.
pub(crate) fn render(judged: &[Judged]) -> String {
    let mut out = String::new();
    for j in judged {
        let value = |v: Option<f64>| match v {
            None => "-".to_string(),
            Some(v) if j.millis => format!("{v:.3}ms"),
            Some(v) => format!("{v:.4}"),
        };
        let change = j
            .change()
            .map_or_else(|| "-".to_string(), Rule::describe_change);
        let noise = match j.significance {
            Significance::Interval { low, high } => {
                format!("95% CI of the change {low:+.3}..{high:+.3}")
            }
            Significance::Welch { p } => format!("p={p:.3}"),
            Significance::TooShort { seconds } => {
                format!("too short to judge noise ({seconds} s), judged on size")
            }
            Significance::NoData | Significance::NotTested => {
                "no per-second data, judged on size".to_string()
            }
        };
        let verdict = if j.regressed { "REGRESSION" } else { "ok" };
        let _ = writeln!(
            out,
            "  {verdict}: {} {} {} -> {} ({change}; allowed \"{}\"; {noise})",
            j.rule.metric,
            j.rule.stat,
            value(j.a),
            value(j.b),
            j.rule.text,
        );
    }
    out
}
