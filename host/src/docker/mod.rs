//! The Docker Engine as the stack and the samplers both need it: the connection
//! ([`engine`]), a Compose project's containers with their limits ([`containers`]),
//! a file read out of one ([`files`]), and the labels Compose puts on them. A leaf: it imports nothing of the host but
//! the config's core sets.

pub(crate) mod containers;
pub(crate) mod engine;
pub(crate) mod files;

pub(crate) use containers::{project_containers, ContainerTarget, ServiceContainer};
pub(crate) use engine::connect;

/// The label Compose (v1 and v2) puts on every container, network and volume of a
/// project; the one reliable way to find them (container names differ between v1 and
/// v2, so they are never parsed).
pub const PROJECT_LABEL: &str = "com.docker.compose.project";

/// The label that names a container's Compose service.
pub(crate) const SERVICE_LABEL: &str = "com.docker.compose.service";
