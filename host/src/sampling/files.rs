//! The sampling files of a results folder: `stats.jsonl` (a line per sample, written as
//! the run goes) and `stats.md` (the per-service table, written at the end).

use super::book::StackSummary;
use super::sample::Sample;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// stats.jsonl while the run goes on; flushed every tick so a killed run keeps its lines.
pub struct StatsJsonl {
    out: BufWriter<File>,
}

impl StatsJsonl {
    /// Creates the file.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            out: BufWriter::new(File::create(path)?),
        })
    }

    /// Appends the samples and flushes.
    pub fn write(&mut self, samples: &[&Sample]) -> std::io::Result<()> {
        for s in samples {
            serde_json::to_writer(&mut self.out, s)?;
            self.out.write_all(b"\n")?;
        }
        self.out.flush()
    }
}

/// Bytes in binary units: `512 B`, `1.5 KiB`, `12.0 MiB`.
pub fn bytes(n: u64) -> String {
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
pub fn render_md(title: &str, stack: &StackSummary, saturation: Option<&str>) -> String {
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

    #[test]
    fn bytes_read_as_people_write_them() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(64 << 20), "64.0 MiB");
    }

    #[test]
    fn the_table_has_a_row_per_service_with_shares() {
        let mut book = StatsBook::default();
        book.add(&Sample {
            t: 1.0,
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
        });
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
