//! The Docker Engine as the stack and the samplers both need it: the connection
//! ([`engine`]), a Compose project's containers with their limits ([`containers`]),
//! a file read out of one ([`files`]), and the labels Compose puts on them. A leaf: it imports nothing of the host but
//! the config's core sets.

pub(crate) mod containers;
pub(crate) mod engine;
pub(crate) mod files;
mod labels;

pub(crate) use containers::{project_containers, ContainerTarget, ServiceContainer};
pub(crate) use engine::connect;
pub use labels::PROJECT_LABEL;
pub(crate) use labels::SERVICE_LABEL;
