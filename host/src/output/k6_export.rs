//! `--summary-export FILE`: the run's summary in the JSON shape k6's own
//! `--summary-export` writes, so the scripts and CI steps that read k6 summaries read
//! this one too. The shape is k6 1.1.0's, checked against a file k6 wrote
//! (host/tests/fixtures/k6-summary-export.json):
//!
//! - `metrics`: every metric and the sub-metrics thresholds name, keyed as k6 keys them
//!   (`http_req_duration{name:static}`). A counter has `count` and `rate`; a gauge
//!   `value`, `min` and `max`; a rate `passes`, `fails` and `value`; a trend the columns
//!   of `--summary-trend-stats` (`avg`, `p(95)`, ...), times in milliseconds.
//! - a metric's `thresholds`: expression → whether it was crossed (k6 writes `!ok`:
//!   `false` is a threshold that held).
//! - `root_group`: the checks, each with its `passes` and `fails`, `path` `::NAME` and
//!   `id` the MD5 of the path, as k6 names them.
//!
//! [`handle_summary_data`] is the other shape k6 has for the same figures: the `data`
//! it hands a script's `handleSummary(data)` (metrics with `type`, `contains` and
//! `values`, thresholds as `{ok}`, checks as a list, `options` and `state`).

use crate::files::WriteFailure;
use crate::metrics::summary::{MetricSummary, Stats};
use crate::summary::Summary;
use md5::{Digest, Md5};
use serde_json::{json, Map, Value};
use std::path::Path;

/// The summary in k6's summary-export shape.
pub(crate) fn render(summary: &Summary) -> Value {
    let mut metrics = Map::new();
    for m in summary.metrics.values().chain(summary.submetrics.values()) {
        let mut fields = fields_of(m, summary);
        let thresholds: Map<String, Value> = summary
            .thresholds
            .iter()
            .filter(|t| t.metric.trim() == m.name)
            .map(|t| (t.threshold.clone(), Value::Bool(!t.ok)))
            .collect();
        if !thresholds.is_empty() {
            fields.insert("thresholds".into(), Value::Object(thresholds));
        }
        metrics.insert(m.name.clone(), Value::Object(fields));
    }
    let checks: Map<String, Value> = summary
        .checks
        .iter()
        .map(|c| (c.name.clone(), check_json(c)))
        .collect();
    let mut export = json!({
        "metrics": metrics,
        "root_group": {
            "name": "",
            "path": "",
            "id": md5_hex(""),
            "groups": {},
            "checks": checks,
        },
    });
    // k6 writes `setup_data` when setup() returned something. Its shape is kept and
    // every value masked, as results mask the env: setup() returns tokens and
    // passwords, and an export file is a result shared like the others.
    if let Some(mut data) = setup_data(summary) {
        mask(&mut data);
        export["setup_data"] = data;
    }
    export
}

/// `value` with its keys and shape kept and every string, number and boolean in it
/// written [`crate::config::secrets::MASK`].
fn mask(value: &mut Value) {
    match value {
        Value::Object(map) => map.values_mut().for_each(mask),
        Value::Array(items) => items.iter_mut().for_each(mask),
        Value::Null => {}
        other => *other = Value::String(crate::config::secrets::MASK.into()),
    }
}

/// What `setup()` returned, as JSON, unless it returned nothing (`null`, empty, or
/// text that is not JSON, which a Rust or Python plugin may return).
fn setup_data(summary: &Summary) -> Option<Value> {
    let text = summary.setup_data.as_deref()?;
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(|v| !v.is_null())
}

/// A check as k6 writes it in `root_group`: its path `::NAME` and the path's MD5 as id.
fn check_json(c: &crate::summary::CheckSummary) -> Value {
    let path = format!("::{}", c.name);
    json!({
        "name": c.name,
        "path": path,
        "id": md5_hex(&path),
        "passes": c.passes,
        "fails": c.fails,
    })
}

/// A metric's figures under k6's names.
fn fields_of(m: &MetricSummary, summary: &Summary) -> Map<String, Value> {
    let mut out = Map::new();
    match &m.stats {
        Stats::Counter { count, rate } => {
            out.insert("count".into(), number(*count));
            out.insert("rate".into(), number(*rate));
        }
        Stats::Gauge { value, min, max } => {
            out.insert("value".into(), number(*value));
            out.insert("min".into(), number(*min));
            out.insert("max".into(), number(*max));
        }
        Stats::Rate {
            rate,
            passes,
            fails,
        } => {
            out.insert("passes".into(), (*passes).into());
            out.insert("fails".into(), (*fails).into());
            out.insert("value".into(), number(*rate));
        }
        Stats::Trend(t) => {
            for stat in &summary.trend_stats {
                out.insert(stat.label().into(), number(stat.value(t)));
            }
        }
    }
    out
}

/// A JSON number, whole numbers without a fraction (k6 writes `20`, not `20.0`).
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < (1u64 << 53) as f64 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

fn md5_hex(text: &str) -> String {
    hex::encode(Md5::digest(text.as_bytes()))
}

/// Writes the export to `path` (a temporary name then renamed, so it is whole or
/// absent); a failure is returned to be reported with the results' own.
pub(crate) fn write(path: &Path, summary: &Summary) -> Result<(), WriteFailure> {
    let failure = |error: String| WriteFailure {
        file: path.display().to_string(),
        error,
    };
    let text = serde_json::to_string_pretty(&render(summary))
        .map_err(|e| failure(format!("cannot be rendered: {e}")))?;
    let name = path
        .file_name()
        .ok_or_else(|| failure("is not a file name; give --summary-export FILE".into()))?
        .to_string_lossy()
        .into_owned();
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    crate::files::write_whole(dir, &name, (text + "\n").as_bytes())
        .map_err(|e| failure(e.to_string()))
}

/// What `handleSummary(data)` receives, in k6's shape: each metric as
/// `{type, contains, values, thresholds: {expr: {ok}}}`, `root_group` with the checks
/// as a list, `options` (`summaryTrendStats`, `summaryTimeUnit`, `noColor`), `state`
/// (`isStdOutTTY`, `isStdErrTTY`, `testRunDurationMs`) and `setup_data`.
pub(crate) fn handle_summary_data(summary: &Summary) -> Value {
    use std::io::IsTerminal;
    let mut metrics = Map::new();
    for m in summary.metrics.values().chain(summary.submetrics.values()) {
        let (kind, contains) = match (&m.stats, &m.def) {
            (Stats::Counter { .. }, Some(d)) if d.is_bytes => ("counter", "data"),
            (Stats::Counter { .. }, _) => ("counter", "default"),
            (Stats::Gauge { .. }, _) => ("gauge", "default"),
            (Stats::Rate { .. }, _) => ("rate", "default"),
            (Stats::Trend(_), Some(d)) if d.is_time => ("trend", "time"),
            (Stats::Trend(_), _) => ("trend", "default"),
        };
        let mut values = fields_of(m, summary);
        if let Stats::Rate { rate, .. } = &m.stats {
            // k6 names a rate's share `rate` here (`value` in the export).
            values.remove("value");
            values.insert("rate".into(), number(*rate));
        }
        let mut metric = Map::new();
        metric.insert("type".into(), kind.into());
        metric.insert("contains".into(), contains.into());
        metric.insert("values".into(), Value::Object(values));
        let thresholds: Map<String, Value> = summary
            .thresholds
            .iter()
            .filter(|t| t.metric.trim() == m.name)
            .map(|t| (t.threshold.clone(), json!({ "ok": t.ok })))
            .collect();
        if !thresholds.is_empty() {
            metric.insert("thresholds".into(), Value::Object(thresholds));
        }
        metrics.insert(m.name.clone(), Value::Object(metric));
    }
    let checks: Vec<Value> = summary.checks.iter().map(check_json).collect();
    let trend_stats: Vec<&str> = summary.trend_stats.iter().map(|s| s.label()).collect();
    json!({
        "metrics": metrics,
        "root_group": {
            "name": "",
            "path": "",
            "id": md5_hex(""),
            "groups": [],
            "checks": checks,
        },
        "options": {
            "summaryTrendStats": trend_stats,
            "summaryTimeUnit": "",
            "noColor": std::env::var_os("NO_COLOR").is_some(),
        },
        "state": {
            "isStdOutTTY": std::io::stdout().is_terminal(),
            "isStdErrTTY": std::io::stderr().is_terminal(),
            "testRunDurationMs": summary.duration_s * 1000.0,
        },
        "setup_data": setup_data(summary).unwrap_or(Value::Null),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_data_keeps_its_shape_with_every_value_masked() {
        let mut v = json!({"token": "s3cret", "n": 3, "ok": true, "none": null,
            "users": [{"name": "a", "password": "hunter2"}]});
        mask(&mut v);
        assert_eq!(
            v,
            json!({"token": "***", "n": "***", "ok": "***", "none": null,
                "users": [{"name": "***", "password": "***"}]})
        );
    }

    #[test]
    fn whole_numbers_are_written_as_k6_writes_them() {
        assert_eq!(number(20.0).to_string(), "20");
        assert_eq!(number(0.5).to_string(), "0.5");
        assert_eq!(number(1e300).to_string(), "1e+300");
    }

    #[test]
    fn check_ids_are_the_md5_of_their_path() {
        // Both from a file k6 1.1.0 wrote.
        assert_eq!(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            md5_hex("::status is 200"),
            "6210a8cd14cd70477eba5c5e4cb3fb5f"
        );
    }
}
