//! `/metrics` on the dashboard's address: the run's totals so far in OpenMetrics text,
//! so that a Prometheus can scrape a long run. Counters are `_total`, rates are the
//! share of true samples (`_rate`), trends are summaries (seconds for timings), and the
//! sampled services' CPU and memory are gauges.

use super::prom::{labels, metric_name, trend_scale};
use super::{series_of, ServiceNow};
use crate::metrics::{MetricDef, MetricKind, SeriesMap, Value};
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
    let mut family = String::new();
    for (def, tags, value) in series_of(totals, defs) {
        let base = metric_name(prefix, &def.name);
        let (name, kind) = match def.kind {
            MetricKind::Counter => (base, "counter"),
            MetricKind::Gauge => (base, "gauge"),
            MetricKind::Rate => (format!("{base}_rate"), "gauge"),
            MetricKind::Trend => (base, "summary"),
        };
        if name != family {
            let _ = writeln!(out, "# TYPE {name} {kind}");
            family = name.clone();
        }
        let labels = labels(tags);
        match value {
            Value::Counter(c) => sample(&mut out, &format!("{name}_total"), &labels, None, *c),
            Value::Gauge { value, .. } => sample(&mut out, &name, &labels, None, *value),
            Value::Rate { hits, total } => {
                let share = if *total == 0 {
                    0.0
                } else {
                    *hits as f64 / *total as f64
                };
                sample(&mut out, &name, &labels, None, share)
            }
            Value::Trend(h) => {
                let scale = trend_scale(def);
                for q in QUANTILES {
                    let v = if h.is_empty() {
                        0.0
                    } else {
                        h.value_at_quantile(*q) as f64 * scale
                    };
                    sample(&mut out, &name, &labels, Some(*q), v);
                }
                let sum = h.mean() * h.len() as f64 * scale;
                sample(&mut out, &format!("{name}_sum"), &labels, None, sum);
                sample(
                    &mut out,
                    &format!("{name}_count"),
                    &labels,
                    None,
                    h.len() as f64,
                );
            }
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
    let _ = writeln!(out, " {}", super::aggregate::number(v));
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
}
