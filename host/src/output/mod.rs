//! Results of a run, written under `results/<UTC time>-<plugin name>/`: the time series
//! and histogram logs as the run goes (every tick), then the summary, junit.xml and the
//! HTML report at the end. An interrupted run writes everything it gathered.

pub(crate) mod chart_data;
pub(crate) mod charts;
pub(crate) mod compare;
pub(crate) mod compare_stack;
pub(crate) mod handled;
pub(crate) mod hdr_log;
pub(crate) mod junit;
pub(crate) mod k6_export;
pub(crate) mod report;
pub(crate) mod significance;
pub(crate) mod text;
pub(crate) mod timeseries;

pub(crate) use crate::files::{write_whole, WriteFailure};
use crate::metrics::Second;
use crate::summary::Summary;
use anyhow::{Context, Result};
use chart_data::ChartData;
use hdr_log::HdrLogs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use timeseries::TimeseriesWriter;

/// A run's results folder while the run goes on.
pub(crate) struct ResultsWriter {
    dir: PathBuf,
    start: SystemTime,
    last_tick: Duration,
    timeseries: TimeseriesWriter,
    histograms: HdrLogs,
    charts: ChartData,
    trouble: Trouble,
}

/// Writes that failed while the run went on, for the summary's warnings.
#[derive(Default)]
struct Trouble {
    /// Seconds of timeseries.jsonl that failed to be written, and the first error.
    timeseries: (u64, Option<String>),
    /// Ticks on which a histogram log failed to be written, and the first error.
    histograms: (u64, Option<String>),
}

/// What [`ResultsWriter::finish`] wrote.
pub(crate) struct Written {
    /// The folder.
    pub dir: PathBuf,
    /// Each file that could not be written.
    pub failures: Vec<WriteFailure>,
}

impl ResultsWriter {
    /// Makes the run's folder under `out` and opens the files written every tick;
    /// times in them count from now.
    pub(crate) fn create(out: &Path, plugin_name: &str) -> Result<Self> {
        let dir = crate::files::new_dated_dir(out, plugin_name, "results")?;
        let timeseries = TimeseriesWriter::create(&dir.join("timeseries.jsonl"))
            .with_context(|| format!("cannot write {}", dir.join("timeseries.jsonl").display()))?;
        let start = SystemTime::now();
        Ok(Self {
            histograms: HdrLogs::new(&dir.join("histograms"), start),
            dir,
            start,
            last_tick: Duration::ZERO,
            timeseries,
            charts: ChartData::default(),
            trouble: Trouble::default(),
        })
    }

    /// The folder.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records `second`'s interval: a line per metric in
    /// timeseries.jsonl, a histogram per trend in its log, a point for the charts. A
    /// write that fails is counted and tried again on the next tick (a histogram log
    /// that cannot be opened keeps its intervals until it can), so neither a full disk
    /// nor a passing lack of descriptors stops the run or turns a file off for good.
    pub(crate) fn tick(&mut self, second: &Second<'_>) {
        let (elapsed, interval, registry) = (second.elapsed, second.interval, second.registry);
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
        if let Err(e) = self
            .timeseries
            .write_tick(elapsed, unix_end, secs, &metrics, &defs)
        {
            note(&mut self.trouble.timeseries, "timeseries.jsonl", &e);
        }
        if let Err(e) = self.histograms.write_tick(start, length, &metrics, &defs) {
            note(&mut self.trouble.histograms, "a histogram log", &e);
        }
        self.charts.push(elapsed.as_secs_f64(), secs, &metrics);
    }

    /// Hands over the sampled services' chart points (CPU and memory over time).
    pub(crate) fn set_services(&mut self, services: Vec<(String, crate::sampling::book::Series)>) {
        self.charts.services = services;
    }

    /// Warnings for the summary about writes that failed during the run.
    pub(crate) fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let (n @ 1.., Some(e)) = &self.trouble.timeseries {
            out.push(format!(
                "timeseries.jsonl: writing failed on {n} ticks, so seconds may be missing (first error: {e})"
            ));
        }
        if let (n @ 1.., Some(e)) = &self.trouble.histograms {
            let lost = self.histograms.lost() + self.histograms.pending() as u64;
            let outcome = if lost == 0 {
                "retried on later ticks: every interval was written".to_string()
            } else {
                format!("retried on later ticks, but {lost} intervals could not be written")
            };
            out.push(format!(
                "histograms/: writing failed on {n} ticks; {outcome} (first error: {e})"
            ));
        }
        out
    }

    /// Writes summary.json, summary.txt, junit.xml and report.html, each to a
    /// temporary name then renamed, so a file is either whole or absent; a file that
    /// cannot be written does not stop the others. Returns the folder and what failed.
    pub(crate) fn finish(mut self, summary: &Summary) -> Written {
        let mut failures = Vec::new();
        let _ =
            self.histograms
                .write_tick(self.last_tick, Duration::ZERO, &Default::default(), &[]);
        if let Err(e) = self.histograms.flush() {
            failures.push(failure("histograms/", &e));
        }
        if self.histograms.pending() > 0 {
            failures.push(WriteFailure {
                file: "histograms/".into(),
                error: format!(
                    "{} intervals could not be written",
                    self.histograms.pending()
                ),
            });
        }
        let files: [(&str, Result<String>); 5] = [
            (
                "summary.json",
                serde_json::to_string_pretty(summary)
                    .map(|t| t + "\n")
                    .map_err(Into::into),
            ),
            ("summary.txt", Ok(text::render(summary))),
            (
                "endpoints.md",
                Ok(crate::metrics::endpoints::markdown(&summary.endpoints)),
            ),
            ("junit.xml", Ok(junit::render(summary))),
            ("report.html", report::render(summary, &self.charts)),
        ];
        for (name, text) in files {
            let written = match text {
                Ok(text) => {
                    write_whole(&self.dir, name, text.as_bytes()).map_err(|e| failure(name, &e))
                }
                Err(e) => Err(WriteFailure {
                    file: name.into(),
                    error: format!("cannot be rendered: {e:#}"),
                }),
            };
            if let Err(f) = written {
                failures.push(f);
            }
        }
        Written {
            dir: self.dir,
            failures,
        }
    }
}

/// Counts a failed write; the first error is kept, and said once on stderr.
fn note(trouble: &mut (u64, Option<String>), what: &str, e: &std::io::Error) {
    trouble.0 += 1;
    if trouble.1.is_none() {
        let text = describe(e);
        crate::stderr::warn(format_args!(
            "cannot write {what}: {text}; trying again every second"
        ));
        trouble.1 = Some(text);
    }
}

fn failure(file: &str, e: &std::io::Error) -> WriteFailure {
    WriteFailure {
        file: file.into(),
        error: describe(e),
    }
}

/// An I/O error, with what to do when it is running out of descriptors.
fn describe(e: &std::io::Error) -> String {
    if crate::net::descriptors::check(e) {
        format!("{e}: {}", crate::net::descriptors::advice())
    } else {
        e.to_string()
    }
}

/// Checks that results can be written under `out` (without making it), so a folder
/// that cannot take them is refused before any load is sent, not after the run.
pub(crate) fn check_writable(out: &Path) -> Result<()> {
    let hint = "pick a writable folder with --out";
    // Nothing is created before the run starts: the probe goes into `out` if it
    // exists, else into its nearest existing ancestor (where `out` would be made).
    let mut existing = out;
    while !existing.exists() {
        match existing.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => existing = parent,
            _ => {
                existing = Path::new(".");
                break;
            }
        }
    }
    if !existing.is_dir() {
        anyhow::bail!("{} is not a folder; {hint}", existing.display());
    }
    let probe = existing.join(format!(".host-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("cannot create files in {}; {hint}", existing.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}
