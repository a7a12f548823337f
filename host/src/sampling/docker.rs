//! Containers read through the Docker Engine API (bollard): what each may use (cpuset,
//! memory limit) from `inspect`, and one streaming `stats` call per container, turned
//! into [`Sample`]s as `docker stats` computes them.

use super::sample::{cpu_percent, memory_without_cache, CpuReading, Message, Sample};
use crate::config::CpuSet;
pub(crate) use crate::docker::ContainerTarget;
use crate::docker::SERVICE_LABEL;
use anyhow::{bail, Context, Result};
use bollard::models::ContainerStatsResponse;
use bollard::query_parameters::StatsOptions;
use bollard::Docker;
use futures::StreamExt;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::mpsc::Sender;

pub(crate) use crate::docker::connect;

/// Looks a container up by name or id.
pub(crate) async fn inspect(docker: &Docker, name: &str) -> Result<ContainerTarget> {
    let info = docker
        .inspect_container(name, None)
        .await
        .with_context(|| {
            format!(
                "--sample-container {name}: no such container (see `docker ps` for running ones)"
            )
        })?;
    if !info.state.as_ref().and_then(|s| s.running).unwrap_or(false) {
        bail!("--sample-container {name}: the container is not running (start it first)");
    }
    let host = info.host_config.unwrap_or_default();
    let name_ = info
        .name
        .unwrap_or_else(|| name.to_string())
        .trim_start_matches('/')
        .to_string();
    let labels = info.config.and_then(|c| c.labels).unwrap_or_default();
    Ok(ContainerTarget {
        id: info.id.unwrap_or_else(|| name.to_string()),
        service: labels
            .get(SERVICE_LABEL)
            .cloned()
            .unwrap_or_else(|| name_.clone()),
        name: name_,
        cpuset: host
            .cpuset_cpus
            .filter(|s| !s.trim().is_empty())
            .and_then(|s| CpuSet::parse(&s).ok()),
        memory_limit: host.memory.filter(|m| *m > 0).map(|m| m as u64),
    })
}

/// The running containers of a Compose project (as `host up` made them), sorted by
/// service.
pub(crate) async fn project_containers(
    docker: &Docker,
    project: &str,
) -> Result<Vec<ContainerTarget>> {
    Ok(crate::docker::project_containers(docker, project)
        .await?
        .into_iter()
        .filter(|c| c.state == "running")
        .map(ContainerTarget::from)
        .collect())
}

/// Cumulative figures of one stats frame.
struct Frame {
    cpu: CpuReading,
    memory: u64,
    net: (u64, u64),
    blk: (u64, u64),
    pids: Option<u64>,
}

impl Frame {
    /// `None` for a frame without CPU counters (the container has stopped).
    fn of(stats: &ContainerStatsResponse) -> Option<Frame> {
        let cpu = stats.cpu_stats.as_ref()?;
        let used_ns = cpu.cpu_usage.as_ref()?.total_usage?;
        let clock_ns = cpu.system_cpu_usage?;
        if clock_ns == 0 {
            return None;
        }
        let online = cpu.online_cpus.filter(|n| *n > 0).unwrap_or_else(|| {
            cpu.cpu_usage
                .as_ref()
                .and_then(|u| u.percpu_usage.as_ref())
                .map_or(1, |p| p.len() as u32)
        });
        let mem = stats.memory_stats.as_ref();
        let memory = mem
            .and_then(|m| {
                Some(memory_without_cache(
                    m.usage?,
                    m.stats.as_ref().unwrap_or(&HashMap::new()),
                ))
            })
            .unwrap_or(0);
        let net = stats
            .networks
            .iter()
            .flatten()
            .fold((0, 0), |(rx, tx), (_, n)| {
                (rx + n.rx_bytes.unwrap_or(0), tx + n.tx_bytes.unwrap_or(0))
            });
        let blk = stats
            .blkio_stats
            .as_ref()
            .and_then(|b| b.io_service_bytes_recursive.as_ref())
            .into_iter()
            .flatten()
            .fold((0, 0), |(r, w), e| {
                match e.op.as_deref().map(str::to_ascii_lowercase).as_deref() {
                    Some("read") => (r + e.value.unwrap_or(0), w),
                    Some("write") => (r, w + e.value.unwrap_or(0)),
                    _ => (r, w),
                }
            });
        Some(Frame {
            cpu: CpuReading {
                used_ns,
                clock_ns,
                clock_cpus: online,
            },
            memory,
            net,
            blk,
            pids: stats.pids_stats.as_ref().and_then(|p| p.current),
        })
    }
}

/// Streams `target`'s stats until the container stops or `tx` closes, sending a sample
/// every `interval` (the engine sends a frame a second). The first frame only sets the
/// baseline: its CPU counters have nothing before them.
pub(crate) async fn stream(
    docker: Docker,
    target: ContainerTarget,
    interval: Duration,
    t0: Instant,
    tx: Sender<Message>,
) {
    let options = StatsOptions {
        stream: true,
        one_shot: false,
    };
    let mut frames = docker.stats(&target.id, Some(options));
    let mut last: Option<(Instant, Frame)> = None;
    // Network and block I/O count from the first frame: the run's own traffic.
    let mut base = ((0, 0), (0, 0));
    // A frame arrives about every second; a little slack keeps a 1 s interval from
    // skipping a frame that came a few milliseconds early.
    let due_after = interval.saturating_sub(Duration::from_millis(150));
    let why = loop {
        let frame = match frames.next().await {
            None => break "the stats stream ended (the container stopped)".to_string(),
            Some(Err(e)) => break format!("the stats stream failed: {e}"),
            Some(Ok(stats)) => match Frame::of(&stats) {
                Some(f) => f,
                None => break "the container stopped".to_string(),
            },
        };
        let now = Instant::now();
        let Some((at, before)) = &last else {
            base = (frame.net, frame.blk);
            last = Some((now, frame));
            continue;
        };
        if now.duration_since(*at) < due_after {
            continue;
        }
        let sample = Sample {
            t: now.duration_since(t0).as_secs_f64(),
            service: target.service.clone(),
            source: target.name.clone(),
            cpu_percent: cpu_percent(&before.cpu, &frame.cpu),
            cpus: target
                .cpuset
                .as_ref()
                .map_or(frame.cpu.clock_cpus as f64, |c| c.len() as f64),
            cores: None,
            memory_bytes: frame.memory,
            memory_limit_bytes: target.memory_limit,
            net_rx_bytes: Some(frame.net.0.saturating_sub(base.0 .0)),
            net_tx_bytes: Some(frame.net.1.saturating_sub(base.0 .1)),
            blk_read_bytes: Some(frame.blk.0.saturating_sub(base.1 .0)),
            blk_write_bytes: Some(frame.blk.1.saturating_sub(base.1 .1)),
            pids: frame.pids,
        };
        // Full: the drainer stalled; a lost sample beats unbounded memory.
        if let Err(TrySendError::Closed(_)) = tx.try_send(Message::Sample(sample)) {
            return;
        }
        last = Some((now, frame));
    };
    let _ = tx
        .send(Message::Ended {
            service: target.service,
            source: target.name,
            t: t0.elapsed().as_secs_f64(),
            why,
        })
        .await;
}
