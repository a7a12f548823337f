//! A Compose project's containers as the Engine reports them: service, state, cpuset
//! and memory limit. This is what the samplers and the health wait read.

use super::labels::{PROJECT_LABEL, SERVICE_LABEL};
use crate::config::CpuSet;
use anyhow::{Context, Result};
use bollard::query_parameters::ListContainersOptionsBuilder;
use bollard::Docker;
use std::collections::HashMap;

/// One container of a Compose project.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceContainer {
    /// The Engine's container id (what the stats and inspect calls take).
    pub id: String,
    /// The container's name, without the leading `/`.
    pub name: String,
    /// Its Compose service (the `com.docker.compose.service` label).
    pub service: String,
    /// `created`, `running`, `exited`, ... as the Engine says.
    pub state: String,
    /// The cores it may run on; `None` when it may use every core.
    pub cpuset: Option<CpuSet>,
    /// Its memory limit in bytes; `None` when it has none.
    pub memory_limit: Option<u64>,
    /// `starting`, `healthy` or `unhealthy`; `None` without a healthcheck.
    pub health: Option<String>,
    /// The exit code once it has stopped.
    pub exit_code: Option<i64>,
    /// True when the kernel killed it for exceeding its memory limit.
    pub oom_killed: bool,
    /// Ports published on the host.
    pub published: Vec<PublishedPort>,
    /// Its labels (Compose's own and the file's, such as `loadtest.tls-ports`).
    pub labels: std::collections::BTreeMap<String, String>,
}

/// A container port published on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedPort {
    /// The port inside the container (`8080`).
    pub container_port: u16,
    /// The host address it is bound to (`127.0.0.1`, or `0.0.0.0` for every one).
    pub host_ip: String,
    /// The port on the host.
    pub host_port: u16,
    /// `tcp` or `udp` (`sctp` too, which no entry uses).
    pub protocol: String,
}

/// The Engine's filter for the objects (containers, networks, volumes) of `project`.
pub(crate) fn project_filter(project: &str) -> HashMap<String, Vec<String>> {
    HashMap::from([(
        "label".to_string(),
        vec![format!("{PROJECT_LABEL}={project}")],
    )])
}

/// Every container (running or not) of `project`, as the Engine lists them.
pub(crate) async fn list_project(
    docker: &Docker,
    project: &str,
) -> Result<Vec<bollard::models::ContainerSummary>> {
    docker
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&project_filter(project))
                .build(),
        ))
        .await
        .with_context(|| format!("cannot list the containers of Compose project {project}"))
}

/// Every container (running or not) labelled with `project`, sorted by service then
/// name. Each one is inspected, since only inspect reports the limits.
pub async fn project_containers(docker: &Docker, project: &str) -> Result<Vec<ServiceContainer>> {
    let listed = list_project(docker, project).await?;
    let mut containers = Vec::new();
    for summary in listed {
        let Some(id) = summary.id else { continue };
        let inspected = match docker.inspect_container(&id, None).await {
            Ok(inspected) => inspected,
            // Removed between the list and the inspect: it is no longer part of it.
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot inspect container {id}")),
        };
        let labels = summary.labels.unwrap_or_default();
        let host = inspected.host_config.unwrap_or_default();
        let state = inspected.state.unwrap_or_default();
        let published = published_ports(inspected.network_settings.and_then(|n| n.ports));
        containers.push(ServiceContainer {
            name: inspected
                .name
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_string(),
            service: labels.get(SERVICE_LABEL).cloned().unwrap_or_default(),
            state: state.status.map(|s| s.to_string()).unwrap_or_default(),
            health: state
                .health
                .and_then(|h| h.status)
                .map(|s| s.to_string())
                .filter(|s| !s.is_empty() && s != "none"),
            exit_code: state.exit_code.filter(|_| state.running != Some(true)),
            oom_killed: state.oom_killed == Some(true),
            published,
            cpuset: host
                .cpuset_cpus
                .filter(|s| !s.is_empty())
                .and_then(|s| CpuSet::parse(&s).ok()),
            memory_limit: host.memory.filter(|&m| m > 0).map(|m| m as u64),
            labels: labels.into_iter().collect(),
            id,
        });
    }
    containers.sort_by(|a, b| (&a.service, &a.name).cmp(&(&b.service, &b.name)));
    Ok(containers)
}

/// `{"8080/tcp": [{"HostIp": "127.0.0.1", "HostPort": "49153"}]}` → published ports.
fn published_ports(ports: Option<bollard::models::PortMap>) -> Vec<PublishedPort> {
    let mut published = Vec::new();
    for (key, bindings) in ports.unwrap_or_default() {
        let mut parts = key.split('/');
        let Some(container_port) = parts.next().and_then(|p| p.parse().ok()) else {
            continue;
        };
        let protocol = parts.next().unwrap_or("tcp").to_string();
        for binding in bindings.unwrap_or_default() {
            let Some(host_port) = binding.host_port.and_then(|p| p.parse().ok()) else {
                continue;
            };
            published.push(PublishedPort {
                container_port,
                host_ip: binding.host_ip.unwrap_or_default(),
                host_port,
                protocol: protocol.clone(),
            });
        }
    }
    // TCP before UDP of one port, so `published[0]` stays the first TCP port.
    published.sort_by(|a, b| {
        (a.container_port, a.protocol != "tcp", a.host_port).cmp(&(
            b.container_port,
            b.protocol != "tcp",
            b.host_port,
        ))
    });
    published
}

/// A container to sample and what it may use.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerTarget {
    /// Its id.
    pub id: String,
    /// Its name, without Docker's leading `/`.
    pub name: String,
    /// Its Compose service, else its name.
    pub service: String,
    /// The cores its cpuset names; `None` when it may run on any.
    pub cpuset: Option<CpuSet>,
    /// Its memory limit in bytes; `None` when it has none.
    pub memory_limit: Option<u64>,
}

impl From<ServiceContainer> for ContainerTarget {
    fn from(c: ServiceContainer) -> Self {
        ContainerTarget {
            service: if c.service.is_empty() {
                c.name.clone()
            } else {
                c.service
            },
            id: c.id,
            name: c.name,
            cpuset: c.cpuset,
            memory_limit: c.memory_limit,
        }
    }
}
