//! `--out csv=FILE`: k6's CSV columns, one row per series (metric and tags) per second,
//! with the aggregate's value in `metric_value` and the rest of it in `metadata`.
//! Tags k6 has a column for go there; the others go to `extra_tags` as `k=v&k=v`.

use super::aggregate::{number, Aggregate};
use super::frame::Frame;
use super::output::Output;
use super::sink_file::SinkFile;
use crate::summary::Summary;
use std::io;
use std::path::{Path, PathBuf};

/// k6's CSV header.
pub(crate) const HEADER: &[&str] = &[
    "metric_name",
    "timestamp",
    "metric_value",
    "check",
    "error",
    "error_code",
    "group",
    "method",
    "name",
    "proto",
    "scenario",
    "status",
    "subproto",
    "tls_version",
    "url",
    "extra_tags",
    "metadata",
];

/// Tags with a column of their own (the header between `metric_value` and `extra_tags`).
const TAG_COLUMNS: std::ops::Range<usize> = 3..15;

/// Writes the CSV output.
pub(crate) struct CsvOutput {
    /// Where it goes (named in a warning).
    path: PathBuf,
    /// `None` once finished.
    out: Option<csv::Writer<SinkFile>>,
}

impl CsvOutput {
    /// Creates the file and writes the header.
    pub(crate) fn create(path: &Path) -> io::Result<Self> {
        let mut out = csv::Writer::from_writer(SinkFile::create(path)?);
        out.write_record(HEADER)?;
        Ok(Self {
            path: path.to_path_buf(),
            out: Some(out),
        })
    }

    /// One row per series of the interval; flushed at once.
    pub(crate) fn write(&mut self, frame: &Frame<'_>) -> io::Result<()> {
        let Some(out) = &mut self.out else {
            return Err(io::Error::other("the CSV output is already finished"));
        };
        let timestamp = (frame.unix.floor() as i64).to_string();
        for (def, tags, value) in frame.series() {
            let agg = Aggregate::of(value);
            let mut row: Vec<String> = Vec::with_capacity(HEADER.len());
            row.push(def.name.clone());
            row.push(timestamp.clone());
            row.push(number(agg.value));
            for column in &HEADER[TAG_COLUMNS] {
                // A `k6/secrets` value in a tag is written redacted (stderr::redact).
                let value = tags.get(column).unwrap_or_default();
                row.push(crate::stderr::redact::redact(value).into_owned());
            }
            let extra: Vec<String> = tags
                .iter()
                .filter(|(k, _)| !HEADER[TAG_COLUMNS].contains(k))
                .map(|(k, v)| format!("{k}={}", crate::stderr::redact::redact(v)))
                .collect();
            row.push(extra.join("&"));
            row.push(agg.metadata_text());
            out.write_record(&row)?;
        }
        // Down to the file (a gzip stream is sync-flushed): readable as the run goes.
        out.flush()
    }

    /// Ends the file (the gzip trailer).
    pub(crate) fn end(&mut self) -> io::Result<()> {
        match self.out.take() {
            Some(out) => out.into_inner().map_err(|e| e.into_error())?.finish(),
            None => Ok(()),
        }
    }
}

impl Output for CsvOutput {
    fn describe(&self) -> String {
        format!("--out csv={}", self.path.display())
    }

    fn tick(&mut self, frame: &Frame<'_>) -> anyhow::Result<()> {
        Ok(self.write(frame)?)
    }

    fn finish(&mut self, _summary: &Summary, _results_dir: &Path) -> anyhow::Result<()> {
        Ok(self.end()?)
    }
}
