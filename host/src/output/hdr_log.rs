//! `histograms/<metric>.hlog`: each trend's histogram of every second, in HdrHistogram's
//! interval-log format (the Java `HistogramLogWriter` layout, V2 compressed), so runs and
//! segments can be merged exactly later and read by HdrHistogram's own tools.

use crate::metrics::{MetricDef, MetricId, Value};
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The column header the Java writer puts after the metadata.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// Intervals kept for a log that could not be opened, to be written on a later tick.
const MAX_PENDING: usize = 60;

/// An interval whose log could not be opened yet.
struct Pending {
    def: MetricDef,
    start: Duration,
    length: Duration,
    histogram: Histogram<u64>,
}

/// One open log per trend metric, made when the metric first has samples. A log that
/// cannot be opened (too many open files, a full disk) is tried again on the next
/// tick with the intervals kept meanwhile, so a passing error loses nothing.
pub(crate) struct HdrLogs {
    dir: PathBuf,
    base_time: SystemTime,
    logs: BTreeMap<MetricId, BufWriter<File>>,
    serializer: V2DeflateSerializer,
    pending: VecDeque<(MetricId, Pending)>,
    lost: u64,
}

impl HdrLogs {
    /// Logs under `dir` (made on first use), timestamps relative to `base_time`.
    pub(crate) fn new(dir: &Path, base_time: SystemTime) -> Self {
        Self {
            dir: dir.to_path_buf(),
            base_time,
            logs: BTreeMap::new(),
            serializer: V2DeflateSerializer::new(),
            pending: VecDeque::new(),
            lost: 0,
        }
    }

    /// Intervals given up after waiting too long for their log to open.
    pub(crate) fn lost(&self) -> u64 {
        self.lost
    }

    /// Intervals waiting for their log to open.
    pub(crate) fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The file a metric's log goes to.
    pub(crate) fn path_of(dir: &Path, metric: &str) -> PathBuf {
        dir.join(format!("{metric}.hlog"))
    }

    /// Appends each trend's histogram of the interval `[start, start + length]` (from
    /// the base time) and flushes; first retries intervals kept from earlier ticks.
    /// Returns the first error; what could not be written is kept for the next tick.
    pub(crate) fn write_tick(
        &mut self,
        start: Duration,
        length: Duration,
        metrics: &BTreeMap<MetricId, Value>,
        defs: &[MetricDef],
    ) -> std::io::Result<()> {
        let mut first_error = self.retry_pending();
        for (id, value) in metrics {
            let (Value::Trend(h), Some(def)) = (value, defs.get(*id as usize)) else {
                continue;
            };
            if h.is_empty() {
                continue;
            }
            // A log's intervals stay in order: behind those still waiting.
            if self.pending.iter().any(|(p, _)| p == id) {
                self.keep(*id, def, h, start, length);
                continue;
            }
            match self.append(*id, def, h, start, length) {
                Appended::Written => {}
                Appended::Unflushed(e) => {
                    first_error.get_or_insert(e);
                }
                Appended::NotOpened(e) => {
                    self.keep(*id, def, h, start, length);
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Writes the intervals kept from earlier ticks, oldest first; the first error.
    fn retry_pending(&mut self) -> Option<std::io::Error> {
        let mut still = VecDeque::new();
        let mut first_error = None;
        while let Some((id, p)) = self.pending.pop_front() {
            if still.iter().any(|(k, _): &(MetricId, Pending)| *k == id) {
                still.push_back((id, p));
                continue;
            }
            match self.append(id, &p.def, &p.histogram, p.start, p.length) {
                Appended::Written => {}
                Appended::Unflushed(e) => {
                    first_error.get_or_insert(e);
                }
                Appended::NotOpened(e) => {
                    first_error.get_or_insert(e);
                    still.push_back((id, p));
                }
            }
        }
        self.pending = still;
        first_error
    }

    /// Keeps an interval for a later tick; past [`MAX_PENDING`] the oldest is lost.
    fn keep(
        &mut self,
        id: MetricId,
        def: &MetricDef,
        h: &Histogram<u64>,
        start: Duration,
        length: Duration,
    ) {
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
            self.lost += 1;
        }
        self.pending.push_back((
            id,
            Pending {
                def: def.clone(),
                start,
                length,
                histogram: h.clone(),
            },
        ));
    }

    /// Appends one interval to its log, opening the log first if needed.
    fn append(
        &mut self,
        id: MetricId,
        def: &MetricDef,
        h: &Histogram<u64>,
        start: Duration,
        length: Duration,
    ) -> Appended {
        let file = match self.logs.entry(id) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                let opened = open_log(&self.dir, def, self.base_time, &mut self.serializer);
                match opened {
                    Ok(file) => e.insert(file),
                    Err(error) => return Appended::NotOpened(error),
                }
            }
        };
        // A builder with no headers writes nothing but the interval line, so one log
        // can be continued tick after tick. The line goes into the log's buffer; a
        // failed flush leaves it there for the next flush.
        let written = IntervalLogWriterBuilder::new()
            .with_max_value_divisor(1000.0)
            .begin_log_with(file, &mut self.serializer)
            .and_then(|mut w| {
                w.write_histogram(h, start, length, None)
                    .map_err(|e| std::io::Error::other(e.to_string()))
            })
            .and_then(|()| file.flush());
        match written {
            Ok(()) => Appended::Written,
            Err(e) => Appended::Unflushed(e),
        }
    }

    /// Flushes every log.
    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        for file in self.logs.values_mut() {
            file.flush()?;
        }
        Ok(())
    }
}

/// What became of one interval.
enum Appended {
    /// In the log, flushed.
    Written,
    /// In the log's buffer; the flush failed and is tried again with the next one.
    Unflushed(std::io::Error),
    /// The log could not be opened; the interval is to be kept.
    NotOpened(std::io::Error),
}

fn open_log(
    dir: &Path,
    def: &MetricDef,
    base_time: SystemTime,
    serializer: &mut V2DeflateSerializer,
) -> std::io::Result<BufWriter<File>> {
    crate::files::create_private_dir_all(dir)?;
    let mut file = BufWriter::new(crate::files::create_private(&HdrLogs::path_of(
        dir, &def.name,
    ))?);
    write_header(&mut file, def, base_time, serializer)?;
    Ok(file)
}

fn write_header(
    file: &mut BufWriter<File>,
    def: &MetricDef,
    base_time: SystemTime,
    serializer: &mut V2DeflateSerializer,
) -> std::io::Result<()> {
    let unit = if def.is_time {
        "values in microseconds; Interval_Max in milliseconds"
    } else {
        "values in thousandths of the plugin's unit; Interval_Max in the plugin's unit"
    };
    IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "[Histogram log of `{}` written by host {}]",
            def.name,
            env!("CARGO_PKG_VERSION")
        ))
        .add_comment(&format!("[{unit}]"))
        .with_start_time(base_time)
        .with_base_time(base_time)
        .with_max_value_divisor(1000.0)
        .begin_log_with(file, serializer)?;
    writeln!(file, "{LEGEND}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{builtin, Registry};
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    #[test]
    fn logs_read_back_as_the_histograms_written() {
        let dir = tempfile::tempdir().unwrap();
        let defs = Registry::new().all();
        let mut logs = HdrLogs::new(&dir.path().join("histograms"), SystemTime::now());
        for second in 0..3u64 {
            let mut value = Value::empty(crate::metrics::MetricKind::Trend);
            if let Value::Trend(h) = &mut value {
                for v in 1..=100 {
                    h.record(v * 1000 * (second + 1)).unwrap();
                }
            }
            let metrics = BTreeMap::from([(builtin::HTTP_REQ_DURATION, value)]);
            logs.write_tick(
                Duration::from_secs(second),
                Duration::from_secs(1),
                &metrics,
                &defs,
            )
            .unwrap();
        }
        let text = std::fs::read(HdrLogs::path_of(
            &dir.path().join("histograms"),
            "http_req_duration",
        ))
        .unwrap();
        let mut histograms = Vec::new();
        let mut saw_base_time = false;
        for entry in IntervalLogIterator::new(&text) {
            match entry.unwrap() {
                LogEntry::BaseTime(_) => saw_base_time = true,
                LogEntry::Interval(i) => {
                    let bytes = base64_decode(i.encoded_histogram());
                    let h: hdrhistogram::Histogram<u64> =
                        Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
                    histograms.push((i.start_timestamp(), h));
                }
                _ => {}
            }
        }
        assert!(saw_base_time);
        assert_eq!(histograms.len(), 3);
        assert_eq!(histograms[2].0, Duration::from_secs(2));
        assert_eq!(histograms[2].1.len(), 100);
        assert!(histograms[2].1.max() >= 300_000 && histograms[2].1.max() < 301_000);
    }

    fn base64_decode(text: &str) -> Vec<u8> {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap()
    }
}
