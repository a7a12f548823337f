//! The sampling files of a results folder: `stats.jsonl` (a line per sample, written as
//! the run goes) and `stats.md` (the per-service table, written at the end).

use super::book::StackSummary;
use super::sample::Sample;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Lines held while stats.jsonl cannot be written (a full disk): a few megabytes; the
/// samples past that are counted as lost rather than held without bound.
const MAX_PENDING: usize = 10_000;

/// stats.jsonl while the run goes on. Each tick's lines are written at once, so a
/// killed run keeps them. A write that fails does not turn the file off: its lines are
/// kept and tried again on the next tick (a full disk may be freed during a long run),
/// and the failures are counted for the summary's warnings.
pub(crate) struct StatsJsonl<W: Write = File> {
    /// Where the lines go (a real file; a test may swap it).
    pub(crate) out: W,
    /// Lines not yet written whole, oldest first; the first may be written in part.
    pending: VecDeque<Vec<u8>>,
    /// Bytes of the first pending line already written.
    written: usize,
    /// Ticks on which writing failed.
    failures: u64,
    /// The first error, as said on stderr.
    first_error: Option<String>,
    /// Samples dropped because too many were waiting.
    lost: u64,
}

impl StatsJsonl {
    /// Creates the file.
    pub(crate) fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self::new(crate::files::create_private(path)?))
    }
}

impl<W: Write> StatsJsonl<W> {
    /// Lines written to `out`.
    pub(crate) fn new(out: W) -> Self {
        Self {
            out,
            pending: VecDeque::new(),
            written: 0,
            failures: 0,
            first_error: None,
            lost: 0,
        }
    }

    /// Appends the samples, after any lines earlier ticks could not write. A failure
    /// is counted (and said once on stderr); its lines wait for the next call.
    pub(crate) fn write(&mut self, samples: &[&Sample]) {
        for s in samples {
            if self.pending.len() >= MAX_PENDING {
                self.lost += 1;
                continue;
            }
            match serde_json::to_vec(s) {
                Ok(mut line) => {
                    line.push(b'\n');
                    self.pending.push_back(line);
                }
                Err(_) => self.lost += 1,
            }
        }
        if let Err(e) = self.drain() {
            self.failures += 1;
            if self.first_error.is_none() {
                crate::stderr::warn(format_args!(
                    "cannot write stats.jsonl: {e}; trying again every tick"
                ));
                self.first_error = Some(e.to_string());
            }
        }
    }

    /// Writes the pending lines in order, keeping track of a line written in part so
    /// that no line is written twice or torn.
    fn drain(&mut self) -> std::io::Result<()> {
        while let Some(line) = self.pending.front() {
            match self.out.write(&line[self.written..]) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.written += n;
                    if self.written == line.len() {
                        self.pending.pop_front();
                        self.written = 0;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.out.flush()
    }

    /// Samples not in the file: dropped, or still waiting for a write that works.
    pub(crate) fn missing(&self) -> u64 {
        self.lost + self.pending.len() as u64
    }

    /// The summary's warning when some write failed, saying whether the retries
    /// caught up.
    pub(crate) fn warning(&self) -> Option<String> {
        let error = self.first_error.as_ref()?;
        let outcome = match self.missing() {
            0 => "retried on later ticks: every sample was written".to_string(),
            n => format!("retried on later ticks, but {n} samples could not be written"),
        };
        Some(format!(
            "stats.jsonl: writing failed on {} ticks; {outcome} (first error: {error})",
            self.failures
        ))
    }
}

/// Bytes in binary units: `512 B`, `1.5 KiB`, `12.0 MiB`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

fn opt_bytes(n: Option<u64>) -> String {
    n.map_or_else(|| "—".into(), bytes)
}

fn cores(n: f64) -> String {
    if n == 1.0 {
        "1 core".into()
    } else {
        format!("{n} cores")
    }
}

/// stats.md: a table per sampled service, then how to read it.
pub(crate) fn render_md(title: &str, stack: &StackSummary, saturation: Option<&str>) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Resources: {title}\n");
    let _ = writeln!(
        md,
        "Sampled every {} s. CPU is in percent of one core (200% = two cores busy); its peak is \
         also given as a share of the cores the service may use (its cpuset). Memory leaves out \
         the page cache (containers) or is the resident set (processes). Network and block I/O \
         are totals over the run.\n",
        stack.stats_interval_s
    );
    if let Some(warning) = saturation {
        let _ = writeln!(md, "**Warning:** {warning}.\n");
    }
    md.push_str("| service | source | samples | CPU avg | CPU peak | peak of cpuset | memory peak | of limit | net rx | net tx | block read | block write | pids peak |\n");
    md.push_str("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for s in &stack.services {
        let limit = match (s.memory_peak_share, s.memory_limit_bytes) {
            (Some(share), Some(limit)) => format!("{:.0}% of {}", share * 100.0, bytes(limit)),
            _ => "no limit".into(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.1}% | {:.1}% | {:.0}% of {} | {} | {} | {} | {} | {} | {} | {} |",
            s.service,
            s.source,
            s.samples,
            s.cpu_avg_percent,
            s.cpu_peak_percent,
            s.cpu_peak_share * 100.0,
            cores(s.cpus),
            bytes(s.memory_peak_bytes),
            limit,
            opt_bytes(s.net_rx_bytes),
            opt_bytes(s.net_tx_bytes),
            opt_bytes(s.blk_read_bytes),
            opt_bytes(s.blk_write_bytes),
            s.pids_peak.map_or_else(|| "—".into(), |p| p.to_string()),
        );
    }
    let ended: Vec<String> = stack
        .services
        .iter()
        .filter_map(|s| {
            let e = s.ended.as_ref()?;
            Some(format!(
                "- {} ({}): no samples after {:.1} s: {}",
                s.service, s.source, e.t, e.why
            ))
        })
        .collect();
    if !ended.is_empty() {
        let _ = writeln!(md, "\n{}", ended.join("\n"));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampling::book::StatsBook;

    fn sample(t: f64) -> Sample {
        Sample {
            t,
            service: "api".into(),
            source: "p_api_1".into(),
            cpu_percent: 80.0,
            cpus: 1.0,
            cores: None,
            memory_bytes: 16 << 20,
            memory_limit_bytes: Some(64 << 20),
            net_rx_bytes: Some(2048),
            net_tx_bytes: Some(4096),
            blk_read_bytes: Some(0),
            blk_write_bytes: Some(0),
            pids: Some(3),
        }
    }

    #[test]
    fn a_failed_write_is_counted_and_its_lines_written_once_writing_works_again() {
        // /dev/full fails every write with "no space left on device", as a full disk.
        let full = File::options().write(true).open("/dev/full").unwrap();
        let mut jsonl = StatsJsonl::new(full);
        let (a, b, c) = (sample(1.0), sample(2.0), sample(3.0));
        jsonl.write(&[&a]);
        jsonl.write(&[&b]);
        assert_eq!(jsonl.missing(), 2);
        let warning = jsonl.warning().unwrap();
        assert!(
            warning.starts_with("stats.jsonl: writing failed on 2 ticks; retried on later ticks, but 2 samples could not be written (first error: "),
            "{warning}"
        );
        assert!(warning.contains("No space left on device"), "{warning}");

        // Space again: the waiting lines go first, in order, each once.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.jsonl");
        jsonl.out = File::create(&path).unwrap();
        jsonl.write(&[&c]);
        assert_eq!(jsonl.missing(), 0);
        let times: Vec<f64> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Sample>(l).unwrap().t)
            .collect();
        assert_eq!(times, [1.0, 2.0, 3.0]);
        assert_eq!(
            jsonl.warning().unwrap(),
            "stats.jsonl: writing failed on 2 ticks; retried on later ticks: every sample was \
             written (first error: No space left on device (os error 28))"
        );
    }

    #[test]
    fn samples_past_the_bound_are_counted_as_lost_and_a_clean_file_warns_nothing() {
        let full = File::options().write(true).open("/dev/full").unwrap();
        let mut jsonl = StatsJsonl::new(full);
        let s = sample(1.0);
        let many: Vec<&Sample> = std::iter::repeat_n(&s, MAX_PENDING + 5).collect();
        jsonl.write(&many);
        assert_eq!(jsonl.lost, 5);
        assert_eq!(jsonl.missing(), MAX_PENDING as u64 + 5);

        let dir = tempfile::tempdir().unwrap();
        let mut clean = StatsJsonl::create(&dir.path().join("stats.jsonl")).unwrap();
        clean.write(&[&s]);
        assert_eq!(clean.warning(), None);
    }

    #[test]
    fn bytes_read_as_people_write_them() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(64 << 20), "64.0 MiB");
    }

    #[test]
    fn the_table_has_a_row_per_service_with_shares() {
        let mut book = StatsBook::default();
        book.add(&sample(1.0));
        book.ended("api", "p_api_1", 7.0, "the container stopped");
        let md = render_md(
            "notes",
            &book.summary(1.0),
            Some("the load generator was the bottleneck"),
        );
        assert!(md.contains("| api | p_api_1 | 1 | 80.0% | 80.0% | 80% of 1 core | 16.0 MiB | 25% of 64.0 MiB | 2.0 KiB | 4.0 KiB | 0 B | 0 B | 3 |"), "{md}");
        assert!(md.contains("**Warning:** the load generator was the bottleneck"));
        assert!(md.contains("no samples after 7.0 s: the container stopped"));
    }
}
