//! The system under test as a throwaway Compose stack: images built from this
//! project's binaries without a registry, `docker-compose up` with the cores and memory
//! asked for, readiness through the Engine API, and teardown by the project's label.
//!
//! Each file has one job: [`engine`] connects to the Docker Engine, [`containers`]
//! lists a project's containers with their limits (what the samplers read),
//! [`resources`] checks the cores and memory asked for,
//! [`compose`] drives `docker-compose` and writes the override file, [`images`] wraps a
//! built binary into an image, [`health`] waits until the services are ready,
//! [`render`] prints a stack, [`teardown`] removes what a project left behind, [`up`]
//! puts them in order, [`watch`] notes services that die during a run, and [`cycle`] is
//! `run --stack`: up, run, down.

pub mod compose;
pub mod containers;
pub mod cycle;
pub mod engine;
pub mod health;
pub mod images;
pub mod render;
pub mod resources;
pub mod teardown;
pub mod up;
pub mod watch;

pub use crate::config::CpuSet;
pub use containers::{project_containers, PublishedPort, ServiceContainer};
pub use engine::connect;
pub use resources::Resources;
pub use up::{down, up, Stack, UpOptions};

/// The label Compose (v1 and v2) puts on every container, network and volume of a
/// project; the one reliable way to find them (container names differ between v1 and
/// v2, so they are never parsed).
pub const PROJECT_LABEL: &str = "com.docker.compose.project";

/// The label that names a container's Compose service.
pub const SERVICE_LABEL: &str = "com.docker.compose.service";
