//! `/metrics` on the dashboard's address: the run's totals so far in OpenMetrics text,
//! so that a Prometheus can scrape a long run. Counters are `_total`, rates are the
//! share of true samples (`_rate`), trends are summaries (seconds for timings), and the
//! sampled services' CPU and memory are gauges.
//!
//! Prometheus refuses a whole scrape over one duplicate, so names are made unique
//! after sanitising: tag sets that read the same once their keys are label names
//! (`a-b`, `a.b`) are one series (their values merged), and a family whose name (or a
//! sample name it writes) another metric's family already has gets a `_2` suffix.

use super::frame::{series_of, ServiceNow};
use super::prom::{labels, metric_name, trend_scale};
use crate::metrics::{MetricDef, MetricKind, SeriesMap, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// The content type of the text.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Quantiles each trend summary gives.
const QUANTILES: &[f64] = &[0.5, 0.9, 0.95, 0.99];

/// Renders `totals` and `services` with metric names under `prefix`.
pub(crate) fn render(
    totals: &SeriesMap,
    defs: &[MetricDef],
    services: &[ServiceNow],
    prefix: &str,
) -> String {
    let mut out = String::new();
    for family in families(totals, defs, prefix) {
        let _ = writeln!(out, "# TYPE {} {}", family.name, family.kind);
        for (labels, value) in &family.series {
            write_series(&mut out, &family.name, family.def, labels, value);
        }
    }
    if !services.is_empty() {
        let cpu = format!("{prefix}service_cpu_percent");
        let mem = format!("{prefix}service_memory_bytes");
        let _ = writeln!(out, "# TYPE {cpu} gauge");
        for s in services {
            let l = vec![("service".to_string(), s.service.clone())];
            sample(&mut out, &cpu, &l, None, s.cpu_percent);
        }
        let _ = writeln!(out, "# TYPE {mem} gauge");
        for s in services {
            let l = vec![("service".to_string(), s.service.clone())];
            sample(&mut out, &mem, &l, None, s.memory_mib * 1048576.0);
        }
    }
    out.push_str("# EOF\n");
    out
}

/// One family: its unique name, type, and series by their label sets.
struct Family<'a> {
    name: String,
    kind: &'static str,
    def: &'a MetricDef,
    series: BTreeMap<Vec<(String, String)>, Value>,
}

/// The families of `totals`, each name and sample name used once.
fn families<'a>(totals: &'a SeriesMap, defs: &'a [MetricDef], prefix: &str) -> Vec<Family<'a>> {
    let mut out: Vec<Family<'a>> = Vec::new();
    // Every name written so far (family and sample names), by the metric that wrote it.
    let mut taken: HashMap<String, &str> = HashMap::new();
    for (def, tags, value) in series_of(totals, defs) {
        let labels = labels(tags);
        if let Some(f) = out.iter_mut().rev().find(|f| f.def.name == def.name) {
            match f.series.get_mut(&labels) {
                Some(existing) => existing.merge(value),
                None => {
                    f.series.insert(labels, value.clone());
                }
            }
            continue;
        }
        let base = metric_name(prefix, &def.name);
        let (stem, kind, suffixes): (String, _, &[&str]) = match def.kind {
            MetricKind::Counter => (base, "counter", &["_total"]),
            MetricKind::Gauge => (base, "gauge", &[""]),
            MetricKind::Rate => (format!("{base}_rate"), "gauge", &[""]),
            MetricKind::Trend => (base, "summary", &["", "_sum", "_count"]),
        };
        let mut name = stem.clone();
        let mut n = 1;
        let clashes = |name: &str, taken: &HashMap<String, &str>| {
            std::iter::once(String::new())
                .chain(suffixes.iter().map(|s| s.to_string()))
                .any(|s| {
                    taken
                        .get(&format!("{name}{s}"))
                        .is_some_and(|by| *by != def.name)
                })
        };
        while clashes(&name, &taken) {
            n += 1;
            name = format!("{stem}_{n}");
        }
        taken.insert(name.clone(), &def.name);
        for s in suffixes {
            taken.insert(format!("{name}{s}"), &def.name);
        }
        out.push(Family {
            name,
            kind,
            def,
            series: BTreeMap::from([(labels, value.clone())]),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn write_series(
    out: &mut String,
    name: &str,
    def: &MetricDef,
    labels: &[(String, String)],
    value: &Value,
) {
    match value {
        Value::Counter(c) => sample(out, &format!("{name}_total"), labels, None, *c),
        Value::Gauge { value, .. } => sample(out, name, labels, None, *value),
        Value::Rate { hits, total } => {
            let share = if *total == 0 {
                0.0
            } else {
                *hits as f64 / *total as f64
            };
            sample(out, name, labels, None, share)
        }
        Value::Trend(h) => {
            let scale = trend_scale(def);
            for q in QUANTILES {
                let v = if h.is_empty() {
                    0.0
                } else {
                    h.value_at_quantile(*q) as f64 * scale
                };
                sample(out, name, labels, Some(*q), v);
            }
            let sum = h.mean() * h.len() as f64 * scale;
            sample(out, &format!("{name}_sum"), labels, None, sum);
            sample(out, &format!("{name}_count"), labels, None, h.len() as f64);
        }
    }
}

fn sample(out: &mut String, name: &str, labels: &[(String, String)], q: Option<f64>, v: f64) {
    out.push_str(name);
    let mut parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if let Some(q) = q {
        parts.push(format!("quantile=\"{q}\""));
    }
    if !parts.is_empty() {
        let _ = write!(out, "{{{}}}", parts.join(","));
    }
    let _ = writeln!(out, " {}", number(v));
}

/// A sample value as OpenMetrics spells it: `+Inf`, `-Inf` and `NaN` for the
/// non-finite ones.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        super::aggregate::number(v)
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{builtin, Recorder, Registry, TagSet};
    use std::sync::Arc;

    #[test]
    fn renders_families_with_their_types_and_eof() {
        let registry = Arc::new(Registry::new());
        let r = Recorder::new(registry.clone());
        let a = TagSet::from_pairs([("name", "a\"b"), ("method", "GET")]);
        r.count(builtin::HTTP_REQS, &a, 3.0);
        r.trend(builtin::HTTP_REQ_DURATION, &a, 2_000);
        r.rate(
            builtin::CHECKS,
            &TagSet::from_pairs([("check", "ok")]),
            true,
        );
        let text = render(&r.drain(), &registry.all(), &[], "k6_");
        assert!(text.contains("# TYPE k6_http_reqs counter\n"), "{text}");
        assert!(
            text.contains("k6_http_reqs_total{method=\"GET\",name=\"a\\\"b\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE k6_http_req_duration summary"),
            "{text}"
        );
        assert!(text.contains("k6_http_req_duration_count{method=\"GET\",name=\"a\\\"b\"} 1"));
        assert!(text.contains("quantile=\"0.95\"} 0.002"), "{text}");
        assert!(text.contains("k6_checks_rate{check=\"ok\"} 1"), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn names_that_collide_once_sanitised_make_one_family_and_one_series() {
        let registry = Arc::new(Registry::new());
        let r = Recorder::new(registry.clone());
        // Tag keys `a-b` and `a.b` are both the label `a_b`.
        r.count(builtin::HTTP_REQS, &TagSet::from_pairs([("a-b", "1")]), 2.0);
        r.count(builtin::HTTP_REQS, &TagSet::from_pairs([("a.b", "1")]), 3.0);
        // The rate `x` is written `x_rate`, the name of this counter's family too.
        let x = registry.get_or_register("x", MetricKind::Rate).unwrap();
        let x_rate = registry
            .get_or_register("x_rate", MetricKind::Counter)
            .unwrap();
        r.rate(x, &TagSet::empty(), true);
        r.count(x_rate, &TagSet::empty(), f64::INFINITY);
        let text = render(&r.drain(), &registry.all(), &[], "k6_");
        assert_eq!(
            text.matches("# TYPE k6_http_reqs counter").count(),
            1,
            "{text}"
        );
        assert!(text.contains("k6_http_reqs_total{a_b=\"1\"} 5\n"), "{text}");
        assert_eq!(text.matches("k6_http_reqs_total{").count(), 1, "{text}");
        let families: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        let unique: std::collections::HashSet<_> = families.iter().collect();
        assert_eq!(unique.len(), families.len(), "{text}");
        assert!(text.contains("k6_x_rate 1\n"), "{text}");
        assert!(
            text.contains("# TYPE k6_x_rate_2 counter\nk6_x_rate_2_total +Inf\n"),
            "{text}"
        );
    }
}
