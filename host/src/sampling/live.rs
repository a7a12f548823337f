//! `host stats`: a live table of a Compose project's containers (or of every running
//! container), refreshed every interval, as `docker stats` shows it.

use super::docker::{self, ContainerTarget};
use super::files::bytes;
use super::sample::Sample;
use super::sampler::{Message, Sampler, Sources};
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// What `host stats` was asked.
#[derive(Debug, Clone)]
pub(crate) struct LiveOptions {
    /// The Compose project.
    pub project: String,
    /// Time between two tables.
    pub interval: Duration,
    /// Tables to print before stopping; `None`: until Ctrl-C.
    pub count: Option<u64>,
}

/// Prints the table every interval until `count` tables or Ctrl-C; returns the exit code.
pub(crate) async fn run(options: LiveOptions) -> Result<i32> {
    let client = docker::connect().await?;
    let targets = docker::project_containers(&client, &options.project).await?;
    if targets.is_empty() {
        let p = &options.project;
        bail!(
            "Compose project {p} has no running container; start it with `host up --project {p}` \
             (`docker ps --filter label=com.docker.compose.project={p}` lists them)"
        );
    }
    let mut sampler = Sampler::start(
        Sources {
            containers: targets.clone(),
            processes: Vec::new(),
        },
        options.interval,
        Instant::now(),
    )?;
    let tty = std::io::stdout().is_terminal();
    let mut rows: BTreeMap<(String, String), Row> = BTreeMap::new();
    let mut shown = 0u64;
    let mut waited = 0u32;
    let mut signals = crate::signals::listen();
    let mut tick = tokio::time::interval(options.interval);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = signals.next() => break,
            _ = tick.tick() => {}
        }
        let mut fresh = false;
        for m in sampler.drain() {
            match m {
                Message::Sample(s) => {
                    fresh = true;
                    rows.insert((s.service.clone(), s.source.clone()), Row::Sample(s));
                }
                Message::Ended {
                    service,
                    source,
                    why,
                    ..
                } => {
                    fresh = true;
                    rows.insert((service, source), Row::Ended(why));
                }
            }
        }
        waited += 1;
        // The first frames are baselines: nothing to show for a second or two, and a
        // table waits (a few intervals at most) until every container is in it.
        if !fresh || (rows.len() < targets.len() && waited < 4) {
            continue;
        }
        let table = render(&targets, &rows);
        if tty {
            print!("\x1b[2J\x1b[H{table}");
        } else {
            println!("{table}");
        }
        shown += 1;
        if options.count.is_some_and(|n| shown >= n)
            || rows.values().all(|r| matches!(r, Row::Ended(_)))
        {
            break;
        }
    }
    sampler.stop();
    Ok(0)
}

/// A container's latest line.
enum Row {
    Sample(Sample),
    Ended(String),
}

fn render(targets: &[ContainerTarget], rows: &BTreeMap<(String, String), Row>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<14} {:<28} {:>8} {:>7} {:>22} {:>7} {:>21} {:>21} {:>5}",
        "SERVICE",
        "CONTAINER",
        "CPU %",
        "CPUSET",
        "MEM USAGE / LIMIT",
        "MEM %",
        "NET I/O",
        "BLOCK I/O",
        "PIDS"
    );
    for ((service, source), row) in rows {
        let cpuset = targets
            .iter()
            .find(|t| &t.name == source)
            .and_then(|t| t.cpuset.as_ref())
            .map_or_else(|| "all".to_string(), |c| c.to_string());
        match row {
            Row::Sample(s) => {
                let limit = s.memory_limit_bytes;
                let _ = writeln!(
                    out,
                    "{:<14} {:<28} {:>7.2}% {:>7} {:>22} {:>7} {:>21} {:>21} {:>5}",
                    service,
                    source,
                    s.cpu_percent,
                    cpuset,
                    format!(
                        "{} / {}",
                        bytes(s.memory_bytes),
                        limit.map_or_else(|| "no limit".into(), bytes)
                    ),
                    limit.filter(|l| *l > 0).map_or_else(
                        || "—".into(),
                        |l| format!("{:.2}%", s.memory_bytes as f64 / l as f64 * 100.0)
                    ),
                    format!(
                        "{} / {}",
                        bytes(s.net_rx_bytes.unwrap_or(0)),
                        bytes(s.net_tx_bytes.unwrap_or(0))
                    ),
                    format!(
                        "{} / {}",
                        bytes(s.blk_read_bytes.unwrap_or(0)),
                        bytes(s.blk_write_bytes.unwrap_or(0))
                    ),
                    s.pids.map_or_else(|| "—".into(), |p| p.to_string()),
                );
            }
            Row::Ended(why) => {
                let _ = writeln!(out, "{service:<14} {source:<28} stopped: {why}");
            }
        }
    }
    out.push_str(
        "(network and block I/O count from the start of `host stats`; CPU % of one core)\n",
    );
    out
}
