//! Removes everything of a Compose project — containers, networks, volumes — found by
//! the project's label, so it also cleans up after a host that was killed mid-run.

use anyhow::{Context, Result};
use bollard::query_parameters::{
    ListNetworksOptionsBuilder, ListVolumesOptionsBuilder, RemoveContainerOptionsBuilder,
    RemoveVolumeOptionsBuilder,
};
use bollard::Docker;

/// What [`remove_project`] removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Removed {
    /// Containers removed (running ones are killed first).
    pub containers: usize,
    /// Networks removed.
    pub networks: usize,
    /// Volumes removed.
    pub volumes: usize,
}

impl Removed {
    /// True when the project had nothing left.
    pub fn is_empty(&self) -> bool {
        *self == Removed::default()
    }
}

/// Removes the project's containers (forced, with their anonymous volumes), then its
/// networks, then its named volumes. Removing what is already gone is not an error.
pub async fn remove_project(docker: &Docker, project: &str) -> Result<Removed> {
    let filters = crate::docker::containers::project_filter(project);
    let mut removed = Removed::default();
    let containers = crate::docker::containers::list_project(docker, project).await?;
    for container in containers {
        let Some(id) = container.id else { continue };
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match docker.remove_container(&id, Some(options)).await {
            Ok(()) => removed.containers += 1,
            Err(e) if gone(&e) => {}
            Err(e) => return Err(e).with_context(|| format!("cannot remove container {id}")),
        }
    }
    let networks = docker
        .list_networks(Some(
            ListNetworksOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .with_context(|| format!("cannot list the networks of project {project}"))?;
    for network in networks {
        let Some(id) = network.id else { continue };
        match docker.remove_network(&id).await {
            Ok(()) => removed.networks += 1,
            Err(e) if gone(&e) => {}
            Err(e) => return Err(e).with_context(|| format!("cannot remove network {id}")),
        }
    }
    let volumes = docker
        .list_volumes(Some(
            ListVolumesOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .with_context(|| format!("cannot list the volumes of project {project}"))?;
    for volume in volumes.volumes.unwrap_or_default() {
        let options = RemoveVolumeOptionsBuilder::default().force(true).build();
        match docker.remove_volume(&volume.name, Some(options)).await {
            Ok(()) => removed.volumes += 1,
            Err(e) if gone(&e) => {}
            Err(e) => {
                return Err(e).with_context(|| format!("cannot remove volume {}", volume.name))
            }
        }
    }
    Ok(removed)
}

/// A 404 (already removed) or 409 (removal already in progress) is what we wanted.
fn gone(error: &bollard::errors::Error) -> bool {
    matches!(
        error,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404 | 409,
            ..
        }
    )
}
