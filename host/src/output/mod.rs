//! Results of a run, written under `results/<UTC time>-<plugin name>/`: the time series
//! and histogram logs as the run goes (every tick), then the summary, junit.xml and the
//! HTML report at the end. An interrupted run writes everything it gathered.

pub mod chart_data;
pub mod charts;
pub mod compare;
pub mod hdr_log;
pub mod junit;
pub mod report;
pub mod text;
pub mod timeseries;

use crate::metrics::{Registry, SeriesMap};
use crate::summary::Summary;
use anyhow::{Context, Result};
use chart_data::ChartData;
use hdr_log::HdrLogs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use timeseries::TimeseriesWriter;

/// A run's results folder while the run goes on.
pub struct ResultsWriter {
    dir: PathBuf,
    start: SystemTime,
    last_tick: Duration,
    timeseries: Option<TimeseriesWriter>,
    histograms: Option<HdrLogs>,
    charts: ChartData,
}

impl ResultsWriter {
    /// Makes the run's folder under `out` and opens the files written every tick;
    /// times in them count from now.
    pub fn create(out: &Path, plugin_name: &str) -> Result<Self> {
        let dir = results_dir(out, plugin_name)?;
        let timeseries = TimeseriesWriter::create(&dir.join("timeseries.jsonl"))
            .with_context(|| format!("cannot write {}", dir.join("timeseries.jsonl").display()))?;
        let start = SystemTime::now();
        Ok(Self {
            histograms: Some(HdrLogs::new(&dir.join("histograms"), start)),
            dir,
            start,
            last_tick: Duration::ZERO,
            timeseries: Some(timeseries),
            charts: ChartData::default(),
        })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records the interval that ended `elapsed` after the start: a line per metric in
    /// timeseries.jsonl, a histogram per trend in its log, a point for the charts. A
    /// file that cannot be written is reported once and then left alone, so a full disk
    /// does not stop the run.
    pub fn tick(&mut self, elapsed: Duration, interval: &SeriesMap, registry: &Registry) {
        let length = elapsed.saturating_sub(self.last_tick);
        let start = self.last_tick;
        self.last_tick = elapsed;
        if interval.is_empty() || length.is_zero() {
            return;
        }
        let metrics = timeseries::per_metric(interval);
        let defs = registry.all();
        let secs = length.as_secs_f64();
        let unix_end = (self.start + elapsed)
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        if let Some(w) = &mut self.timeseries {
            if let Err(e) = w.write_tick(elapsed, unix_end, secs, &metrics, &defs) {
                eprintln!("warning: timeseries.jsonl is no longer written: {e}");
                self.timeseries = None;
            }
        }
        if let Some(h) = &mut self.histograms {
            if let Err(e) = h.write_tick(start, length, &metrics, &defs) {
                eprintln!("warning: histogram logs are no longer written: {e}");
                self.histograms = None;
            }
        }
        self.charts.push(elapsed.as_secs_f64(), secs, &metrics);
    }

    /// Writes summary.json, summary.txt, junit.xml and report.html; returns the folder.
    pub fn finish(mut self, summary: &Summary) -> Result<PathBuf> {
        if let Some(h) = &mut self.histograms {
            h.flush().context("cannot write the histogram logs")?;
        }
        let dir = self.dir;
        let write = |name: &str, text: String| {
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
        };
        write(
            "summary.json",
            serde_json::to_string_pretty(summary)? + "\n",
        )?;
        write("summary.txt", text::render(summary))?;
        write(
            "endpoints.md",
            crate::metrics::endpoints::markdown(&summary.endpoints),
        )?;
        write("junit.xml", junit::render(summary))?;
        write("report.html", report::render(summary, &self.charts)?)?;
        Ok(dir)
    }
}

/// A new folder named after the current UTC time and the plugin.
fn results_dir(out: &Path, plugin_name: &str) -> Result<PathBuf> {
    let now = time::OffsetDateTime::now_utc();
    let stamp = now
        .format(&time::macros::format_description!(
            "[year][month][day]T[hour][minute][second]Z"
        ))
        .unwrap_or_else(|_| "run".into());
    let safe: String = plugin_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    for n in 0..1000 {
        let name = if n == 0 {
            format!("{stamp}-{safe}")
        } else {
            format!("{stamp}-{safe}-{n}")
        };
        let dir = out.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
        }
    }
    anyhow::bail!(
        "cannot find a free results folder name under {}",
        out.display()
    )
}
