//! The resource side of `host compare`: each sampled service's average and peak CPU
//! and peak memory (summary.json's `stack` section) in run A and run B, side by side.
//! A faster run that needed twice the CPU is not the same result; these rows say so.
//! They are shown, never flagged: more CPU for more throughput is no regression.

use crate::sampling::files::bytes;
use crate::sampling::StackSummary;
use std::fmt::Write;

/// One service's resource figures in the two runs (`None`: not sampled in that run).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceRow {
    /// The service (`api`, `worker`, `generator`, ...).
    pub service: String,
    /// Average CPU in percent of one core, in A and B.
    pub cpu_avg: [Option<f64>; 2],
    /// Highest CPU of one interval, in percent of one core, in A and B.
    pub cpu_peak: [Option<f64>; 2],
    /// Highest memory in use, in bytes, in A and B.
    pub memory_peak: [Option<u64>; 2],
    /// Sources (containers, processes) that made up the service, in A and B.
    pub sources: [usize; 2],
}

/// A service's figures in one run, over its sources: replicas' average CPU adds up
/// (what the service used in all), while peaks are the highest of any one source.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    cpu_avg: f64,
    cpu_peak: f64,
    memory_peak: u64,
    sources: usize,
}

fn services(stack: Option<&StackSummary>) -> Vec<(String, Figures)> {
    let mut out: Vec<(String, Figures)> = Vec::new();
    for s in stack.into_iter().flat_map(|s| &s.services) {
        let name = s.service.as_str();
        let i = match out.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                out.push((name.to_string(), Figures::default()));
                out.len() - 1
            }
        };
        let f = &mut out[i].1;
        f.cpu_avg += s.cpu_avg_percent;
        f.cpu_peak = f.cpu_peak.max(s.cpu_peak_percent);
        f.memory_peak = f.memory_peak.max(s.memory_peak_bytes);
        f.sources += 1;
    }
    out
}

/// The services sampled in either run, in A's order then B's new ones (the generator
/// wherever it came). `None`: the run sampled nothing (summary.json has no `stack`).
pub(crate) fn rows(a: Option<&StackSummary>, b: Option<&StackSummary>) -> Vec<ResourceRow> {
    let (sa, sb) = (services(a), services(b));
    let mut names: Vec<&String> = sa.iter().map(|(n, _)| n).collect();
    for (n, _) in &sb {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let find = |s: &[(String, Figures)]| s.iter().find(|(n, _)| n == name).map(|x| x.1);
            let (fa, fb) = (find(&sa), find(&sb));
            ResourceRow {
                service: name.clone(),
                cpu_avg: [fa.map(|f| f.cpu_avg), fb.map(|f| f.cpu_avg)],
                cpu_peak: [fa.map(|f| f.cpu_peak), fb.map(|f| f.cpu_peak)],
                memory_peak: [fa.map(|f| f.memory_peak), fb.map(|f| f.memory_peak)],
                sources: [fa.map_or(0, |f| f.sources), fb.map_or(0, |f| f.sources)],
            }
        })
        .collect()
}

/// The resource table as `host compare` prints it; empty when neither run sampled
/// anything (a summary.json from before sampling existed).
pub(crate) fn render(rows: &[ResourceRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n  resources (CPU in % of one core, memory without page cache; shown, never flagged):"
    );
    let width = rows
        .iter()
        .map(|r| r.service.len())
        .max()
        .unwrap_or(7)
        .max(7);
    let _ = writeln!(
        out,
        "  {:<width$}  {:<11}  {:>14}  {:>14}  {:>10}",
        "service", "stat", "A", "B", "change"
    );
    for r in rows {
        let cpu = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}%"));
        let mem = |v: Option<u64>| v.map_or_else(|| "-".to_string(), bytes);
        let lines = [
            (
                "CPU avg",
                cpu(r.cpu_avg[0]),
                cpu(r.cpu_avg[1]),
                change(r.cpu_avg),
            ),
            (
                "CPU peak",
                cpu(r.cpu_peak[0]),
                cpu(r.cpu_peak[1]),
                change(r.cpu_peak),
            ),
            (
                "memory peak",
                mem(r.memory_peak[0]),
                mem(r.memory_peak[1]),
                change(r.memory_peak.map(|m| m.map(|m| m as f64))),
            ),
        ];
        for (stat, a, b, ch) in lines {
            let _ = writeln!(
                out,
                "  {:<width$}  {stat:<11}  {a:>14}  {b:>14}  {ch:>10}",
                r.service
            );
        }
        if r.sources[0] > 1 || r.sources[1] > 1 {
            let _ = writeln!(
                out,
                "  {:<width$}  (sources: {} in A, {} in B; average CPU summed over them, peaks of any one)",
                "", r.sources[0], r.sources[1]
            );
        }
    }
    out
}

/// Change from A to B in percent of A.
fn change([a, b]: [Option<f64>; 2]) -> String {
    match (a, b) {
        (Some(a), Some(b)) if a != 0.0 => format!("{:+.1}%", (b - a) / a * 100.0),
        (Some(_), Some(0.0)) => "+0.0%".to_string(),
        _ => "-".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampling::book::ServiceStats;

    fn summary(services: Vec<ServiceStats>) -> StackSummary {
        StackSummary {
            stats_interval_s: 1.0,
            services,
        }
    }

    fn service(name: &str, source: &str, avg: f64, peak: f64, mem: u64) -> ServiceStats {
        ServiceStats {
            service: name.to_string(),
            source: source.to_string(),
            samples: 10,
            cpu_avg_percent: avg,
            cpu_peak_percent: peak,
            cpus: 1.0,
            cpu_peak_share: peak / 100.0,
            memory_peak_bytes: mem,
            memory_limit_bytes: None,
            memory_peak_share: None,
            net_rx_bytes: None,
            net_tx_bytes: None,
            blk_read_bytes: None,
            blk_write_bytes: None,
            pids_peak: None,
            ended: None,
        }
    }

    #[test]
    fn each_service_is_shown_in_both_runs_with_its_change() {
        let a = summary(vec![
            service("api", "a_api_1", 40.0, 60.0, 20 << 20),
            service("generator", "self", 10.0, 15.0, 30 << 20),
        ]);
        let b = summary(vec![
            service("api", "b_api_1", 80.0, 95.0, 30 << 20),
            service("api", "b_api_2", 20.0, 50.0, 40 << 20),
            service("worker", "b_worker_1", 5.0, 6.0, 8 << 20),
            service("generator", "self", 10.0, 15.0, 30 << 20),
        ]);
        let rows = rows(Some(&a), Some(&b));
        let names: Vec<&str> = rows.iter().map(|r| r.service.as_str()).collect();
        assert_eq!(names, ["api", "generator", "worker"]);
        assert_eq!(rows[0].cpu_avg, [Some(40.0), Some(100.0)]);
        assert_eq!(rows[0].cpu_peak, [Some(60.0), Some(95.0)]);
        assert_eq!(rows[0].memory_peak, [Some(20 << 20), Some(40 << 20)]);
        assert_eq!(rows[2].cpu_avg, [None, Some(5.0)]);

        let text = render(&rows);
        assert!(
            text.contains("  api        CPU avg               40.0%          100.0%     +150.0%"),
            "{text}"
        );
        assert!(
            text.contains("  api        memory peak        20.0 MiB        40.0 MiB     +100.0%"),
            "{text}"
        );
        assert!(
            text.contains("  worker     CPU avg                   -            5.0%           -"),
            "{text}"
        );
        assert!(text.contains("(sources: 1 in A, 2 in B;"), "{text}");
    }

    #[test]
    fn runs_without_a_stack_section_show_no_table() {
        assert!(rows(None, None).is_empty());
        assert_eq!(render(&[]), "");
    }
}
