//! `--out json=FILE`: k6's JSON lines. A metric's first appearance writes its
//! `{"type":"Metric",...}` declaration; then each second, one `{"type":"Point",...}`
//! per series, whose `value` is the aggregate k6 would give a sample and whose
//! `metadata` holds the rest of it (a trend's count and percentiles, a rate's passes).

use super::aggregate::Aggregate;
use super::frame::Frame;
use super::output::Output;
use super::sink_file::SinkFile;
use crate::metrics::{MetricDef, MetricKind};
use crate::summary::Summary;
use serde_json::{json, Map, Value as Json};
use std::collections::HashSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes the JSON output.
pub(crate) struct JsonOutput {
    /// Where it goes (named in a warning).
    path: PathBuf,
    out: SinkFile,
    declared: HashSet<String>,
}

impl JsonOutput {
    /// Creates the file.
    pub(crate) fn create(path: &Path) -> io::Result<Self> {
        Ok(Self {
            path: path.to_path_buf(),
            out: SinkFile::create(path)?,
            declared: HashSet::new(),
        })
    }

    /// The interval's lines; flushed at once.
    pub(crate) fn write(&mut self, frame: &Frame<'_>) -> io::Result<()> {
        let time = rfc3339(frame.unix);
        for (def, tags, value) in frame.series() {
            if self.declared.insert(def.name.clone()) {
                serde_json::to_writer(&mut self.out, &declaration(def))?;
                self.out.write_all(b"\n")?;
            }
            let agg = Aggregate::of(value);
            let tags: Map<String, Json> = tags
                .iter()
                // A `k6/secrets` value in a tag is written redacted (stderr::redact).
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        Json::from(crate::stderr::redact::redact(v).as_ref()),
                    )
                })
                .collect();
            let mut data = json!({ "time": time, "value": agg.value, "tags": tags });
            if !agg.metadata.is_empty() {
                let metadata: Map<String, Json> = agg
                    .metadata
                    .iter()
                    .map(|(k, v)| (k.to_string(), json!(v)))
                    .collect();
                data["metadata"] = Json::Object(metadata);
            }
            let line = json!({ "type": "Point", "data": data, "metric": def.name });
            serde_json::to_writer(&mut self.out, &line)?;
            self.out.write_all(b"\n")?;
        }
        self.out.flush_tick()
    }

    /// Ends the file (the gzip trailer).
    pub(crate) fn end(&mut self) -> io::Result<()> {
        self.out.finish()
    }
}

impl Output for JsonOutput {
    fn describe(&self) -> String {
        format!("--out json={}", self.path.display())
    }

    fn tick(&mut self, frame: &Frame<'_>) -> anyhow::Result<()> {
        Ok(self.write(frame)?)
    }

    fn finish(&mut self, _summary: &Summary, _results_dir: &Path) -> anyhow::Result<()> {
        Ok(self.end()?)
    }
}

/// k6's metric declaration line.
fn declaration(def: &MetricDef) -> Json {
    let kind = match def.kind {
        MetricKind::Counter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Rate => "rate",
        MetricKind::Trend => "trend",
    };
    let contains = if def.is_time {
        "time"
    } else if def.is_bytes {
        "data"
    } else {
        "default"
    };
    json!({
        "type": "Metric",
        "data": {
            "name": def.name,
            "type": kind,
            "contains": contains,
            "thresholds": [],
            "submetrics": null,
        },
        "metric": def.name,
    })
}

/// Unix seconds as RFC 3339 in UTC with microseconds, as k6 writes times.
pub(crate) fn rfc3339(unix: f64) -> String {
    let nanos = (unix * 1e9) as i128;
    let nanos = nanos - nanos % 1000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}
