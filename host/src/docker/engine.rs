//! The connection to the Docker Engine API (bollard), with the API version negotiated
//! so one build works against old engines (20.10 speaks 1.41) and new ones.

use anyhow::{anyhow, Result};
use bollard::Docker;

/// Connects to the engine `DOCKER_HOST` names (the local socket when unset) and checks
/// that it answers; the error says how to start one.
pub async fn connect() -> Result<Docker> {
    let docker = Docker::connect_with_defaults().map_err(|e| unreachable_daemon(&e))?;
    // negotiate_version is the first request: it fails when nothing listens.
    let docker = docker
        .negotiate_version()
        .await
        .map_err(|e| unreachable_daemon(&e))?;
    docker.ping().await.map_err(|e| unreachable_daemon(&e))?;
    Ok(docker)
}

fn unreachable_daemon(error: &bollard::errors::Error) -> anyhow::Error {
    let at = match std::env::var("DOCKER_HOST") {
        Ok(host) if !host.is_empty() => format!("DOCKER_HOST={host}"),
        _ => "unix:///var/run/docker.sock (DOCKER_HOST is not set)".to_string(),
    };
    anyhow!(
        "cannot reach the Docker daemon at {at}: {error}\n  \
         start it (`sudo systemctl start docker`, or `sudo dockerd &`), \
         or set DOCKER_HOST to a running engine (for example unix:///run/docker.sock)"
    )
}
