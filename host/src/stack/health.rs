//! Waiting until a project's services are ready, through the Engine API (Compose v1
//! has no `up --wait`): a service with a healthcheck when it is `healthy`, one without
//! when it is `running`. A service that exits, is OOM-killed, turns `unhealthy` or is
//! not ready in time fails the wait with its last healthcheck output and log lines.

use super::containers::{project_containers, ServiceContainer};
use anyhow::{bail, Result};
use bollard::query_parameters::LogsOptionsBuilder;
use bollard::Docker;
use futures::StreamExt;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// How often the containers are inspected while waiting.
const POLL: Duration = Duration::from_millis(250);

/// Log lines shown of a service that failed.
const LOG_LINES: usize = 20;

/// Waits until each of `services` has a ready container; returns the project's
/// containers then. On failure the error describes every service not ready.
pub(crate) async fn wait_ready(
    docker: &Docker,
    project: &str,
    services: &[&str],
    timeout: Duration,
) -> Result<Vec<ServiceContainer>> {
    let started = Instant::now();
    loop {
        let containers = project_containers(docker, project).await?;
        let mut waiting = Vec::new();
        let mut failed = Vec::new();
        for &service in services {
            let mine: Vec<&ServiceContainer> =
                containers.iter().filter(|c| c.service == service).collect();
            if mine.is_empty() {
                waiting.push((service, None));
                continue;
            }
            for container in mine {
                match readiness(container) {
                    Readiness::Ready => {}
                    Readiness::Waiting => waiting.push((service, Some(container))),
                    Readiness::Failed(why) => failed.push((container, why)),
                }
            }
        }
        if !failed.is_empty() {
            let mut message = String::from("the stack did not come up:");
            for (container, why) in failed {
                message.push_str(&describe(docker, container, &why).await);
            }
            bail!(message);
        }
        if waiting.is_empty() {
            return Ok(containers);
        }
        if started.elapsed() >= timeout {
            let mut message = format!("the stack was not ready within {}s:", timeout.as_secs_f64());
            for (service, container) in waiting {
                match container {
                    Some(c) => {
                        let why = match &c.health {
                            Some(h) => format!("still {h} (not healthy)"),
                            None => format!("still {}", c.state),
                        };
                        message.push_str(&describe(docker, c, &why).await);
                    }
                    None => {
                        let _ = write!(message, "\n  {service}: no container was created");
                    }
                }
            }
            bail!(message);
        }
        tokio::time::sleep(POLL).await;
    }
}

enum Readiness {
    Ready,
    Waiting,
    Failed(String),
}

fn readiness(c: &ServiceContainer) -> Readiness {
    if c.oom_killed {
        return Readiness::Failed(format!(
            "was OOM-killed (over its memory limit of {})",
            c.memory_limit
                .map(|m| format!("{} MiB", m >> 20))
                .unwrap_or_else(|| "the machine".into())
        ));
    }
    match c.state.as_str() {
        "exited" | "dead" => {
            return Readiness::Failed(format!(
                "exited with code {}",
                c.exit_code.unwrap_or_default()
            ))
        }
        "running" => {}
        _ => return Readiness::Waiting,
    }
    match c.health.as_deref() {
        None | Some("healthy") => Readiness::Ready,
        Some("unhealthy") => Readiness::Failed("is unhealthy".into()),
        Some(_) => Readiness::Waiting,
    }
}

/// `\n  SERVICE (CONTAINER) WHY` plus its last healthcheck output and log lines.
async fn describe(docker: &Docker, c: &ServiceContainer, why: &str) -> String {
    let mut text = format!("\n  {} ({}) {why}", c.service, c.name);
    if let Some(check) = last_healthcheck(docker, &c.id).await {
        let _ = write!(text, "\n    last healthcheck: {check}");
    }
    let lines = last_log_lines(docker, &c.id).await;
    if lines.is_empty() {
        text.push_str("\n    (no log lines)");
    } else {
        let _ = write!(text, "\n    last log lines:");
        for line in lines {
            let _ = write!(text, "\n      {line}");
        }
    }
    text
}

/// The newest healthcheck's exit code and output, as `docker inspect` keeps them.
pub(crate) async fn last_healthcheck(docker: &Docker, id: &str) -> Option<String> {
    let inspected = docker.inspect_container(id, None).await.ok()?;
    let log = inspected.state?.health?.log?;
    let last = log.last()?;
    let output = last.output.clone().unwrap_or_default();
    Some(format!(
        "exit {}: {}",
        last.exit_code.unwrap_or_default(),
        output.trim()
    ))
}

/// The last lines the container wrote to stdout and stderr.
pub(crate) async fn last_log_lines(docker: &Docker, id: &str) -> Vec<String> {
    let options = LogsOptionsBuilder::default()
        .stdout(true)
        .stderr(true)
        .tail(&LOG_LINES.to_string())
        .build();
    let mut logs = docker.logs(id, Some(options));
    let mut text = String::new();
    while let Some(Ok(chunk)) = logs.next().await {
        text.push_str(&chunk.to_string());
    }
    text.lines()
        .map(|l| l.trim_end().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}
