//! The labels Compose puts on a project's containers: a leaf the containers' listing
//! and the rest of the host both read.

/// The label Compose (v1 and v2) puts on every container, network and volume of a
/// project; the one reliable way to find them (container names differ between v1 and
/// v2, so they are never parsed).
pub const PROJECT_LABEL: &str = "com.docker.compose.project";

/// The label that names a container's Compose service.
pub(crate) const SERVICE_LABEL: &str = "com.docker.compose.service";
