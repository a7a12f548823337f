//! Indexing one results folder in the store: what summary.json says of the run (plugin,
//! config hash, scenarios, machine, times, status, thresholds, every metric's key
//! figures), the per-second rates of timeseries.jsonl, and every interval of the HDR
//! logs as it is serialized there (V2, compressed), so any percentile of any window can
//! be recomputed by merging them. Everything comes from the folder's files, which are
//! written with secrets masked (summary.json's config is `config::secrets::redacted`),
//! so the store holds no secret the results do not.
//!
//! The folder is read whole before the store is touched, and written in one
//! transaction: a concurrent reader sees a run entirely or not at all.

use crate::metrics::summary::MetricSummary;
use crate::output::significance;
use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What [`record`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Recorded {
    /// The run's id in the store.
    pub id: i64,
    /// Whether it was new (false: the folder was indexed already).
    pub new: bool,
}

/// One interval of a trend's HDR log: start and length in ms from the run's start,
/// and the histogram as the log serializes it.
pub(crate) struct Interval {
    pub start_ms: f64,
    pub length_ms: f64,
    pub histogram: Vec<u8>,
}

/// Indexes the results folder `dir`; `exit_code` is the run's when it is known (a run
/// that just ended), `None` for an import. A folder indexed already keeps its id (its
/// exit code is filled in if it was unknown).
pub(crate) fn record(
    conn: &mut Connection,
    dir: &Path,
    exit_code: Option<i32>,
) -> Result<Recorded> {
    let folder = std::fs::canonicalize(dir)
        .with_context(|| format!("cannot find the results folder {}", dir.display()))?;
    let (file, summary) = crate::output::compare::load(&folder)?;
    let raw = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let series = significance::load(&folder)?.unwrap_or_default();
    let intervals = read_intervals(&folder.join("histograms"))?;
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let folder_text = folder.to_string_lossy().into_owned();
    let config_hash = hex::encode(Sha256::digest(
        serde_json::to_string(&summary.config).unwrap_or_default(),
    ));
    let recorded_at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();

    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let existing: Option<i64> = tx
        .query_row(
            "SELECT id FROM runs WHERE folder = ?1",
            [&folder_text],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = existing {
        if let Some(code) = exit_code {
            tx.execute(
                "UPDATE runs SET exit_code = ?1 WHERE id = ?2 AND exit_code IS NULL",
                params![code, id],
            )?;
        }
        tx.commit()?;
        return Ok(Recorded { id, new: false });
    }
    tx.execute(
        "INSERT INTO runs (folder, name, plugin, plugin_version, plugin_sha256, config_hash,
            host_version, machine, machine_json, started_at, duration_s, status, exit_code,
            seconds, summary, recorded_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        params![
            folder_text,
            name,
            summary.plugin.name,
            summary.plugin.version,
            summary.plugin.file.sha256,
            config_hash,
            summary.host.version,
            summary.machine.hostname,
            serde_json::to_string(&summary.machine)?,
            summary.started_at,
            summary.duration_s,
            summary.status.as_str(),
            exit_code,
            series.seconds as i64,
            raw,
            recorded_at,
        ],
    )?;
    let id = tx.last_insert_rowid();
    for (scenario, s) in &summary.scenarios {
        tx.execute(
            "INSERT INTO scenarios (run_id, name, executor, exec) VALUES (?1, ?2, ?3, ?4)",
            params![id, scenario, s.executor, s.exec],
        )?;
    }
    for (key, value) in scenario_tags(&summary.config) {
        tx.execute(
            "INSERT INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)",
            params![id, key, value],
        )?;
    }
    for t in &summary.thresholds {
        tx.execute(
            "INSERT INTO thresholds (run_id, metric, threshold, ok, observed)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, t.metric, t.threshold, t.ok, t.observed],
        )?;
    }
    {
        let mut insert = tx.prepare(
            "INSERT OR REPLACE INTO figures (run_id, metric, kind, stat, value)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for (metric, m) in summary.metrics.iter().chain(&summary.submetrics) {
            for (kind, stat, value) in figures(m) {
                insert.execute(params![id, metric, kind, stat, value])?;
            }
        }
        let mut insert = tx.prepare(
            "INSERT INTO seconds (run_id, metric, kind, per_second) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for (metric, values) in &series.values {
            let kind = summary
                .metrics
                .get(metric)
                .map(|m| kind_name(m.stats.kind()))
                .unwrap_or("counter");
            insert.execute(params![id, metric, kind, serde_json::to_string(values)?])?;
        }
        let mut insert = tx.prepare(
            "INSERT INTO intervals (run_id, metric, start_ms, length_ms, histogram)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for (metric, list) in &intervals {
            for i in list {
                insert.execute(params![id, metric, i.start_ms, i.length_ms, i.histogram])?;
            }
        }
    }
    tx.commit()?;
    Ok(Recorded { id, new: true })
}

/// A metric's key figures: every number summary.json gives it (`count`, `avg`, `p95`,
/// `rate`...), with its kind.
fn figures(m: &MetricSummary) -> Vec<(&'static str, String, f64)> {
    let kind = kind_name(m.stats.kind());
    let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(&m.stats) else {
        return Vec::new();
    };
    fields
        .into_iter()
        .filter_map(|(stat, v)| Some((kind, stat, v.as_f64()?)))
        .collect()
}

/// A metric kind as summary.json's `type` names it.
pub(crate) fn kind_name(kind: crate::metrics::MetricKind) -> &'static str {
    use crate::metrics::MetricKind;
    match kind {
        MetricKind::Counter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Rate => "rate",
        MetricKind::Trend => "trend",
    }
}

/// The `tags` of every scenario of the (redacted) config, as key/value pairs.
fn scenario_tags(config: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(scenarios) = config.get("scenarios").and_then(|s| s.as_object()) else {
        return out;
    };
    for scenario in scenarios.values() {
        let Some(tags) = scenario.get("tags").and_then(|t| t.as_object()) else {
            continue;
        };
        for (k, v) in tags {
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            if !out.contains(&(k.clone(), v.clone())) {
                out.push((k.clone(), v));
            }
        }
    }
    out
}

/// Every interval of every `<metric>.hlog` under `dir` (none when it is absent).
fn read_intervals(dir: &Path) -> Result<Vec<(String, Vec<Interval>)>> {
    use base64::Engine;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(out);
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let Some(metric) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".hlog"))
        else {
            continue;
        };
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let mut list = Vec::new();
        for entry in IntervalLogIterator::new(&bytes) {
            let Ok(LogEntry::Interval(interval)) = entry else {
                continue;
            };
            let histogram = base64::engine::general_purpose::STANDARD
                .decode(interval.encoded_histogram())
                .with_context(|| format!("{}: an interval is not base64", path.display()))?;
            list.push(Interval {
                start_ms: interval.start_timestamp().as_secs_f64() * 1000.0,
                length_ms: interval.duration().as_secs_f64() * 1000.0,
                histogram,
            });
        }
        out.push((metric.to_string(), list));
    }
    Ok(out)
}
