//! The system under test as a throwaway Compose stack: images built from this
//! project's binaries without a registry, `docker-compose up` with the cores and memory
//! asked for, readiness through the Engine API, and teardown by the project's label.
//!
//! Each file has one job (the Engine connection and the listing of a project's
//! containers are in [`crate::docker`], below the samplers that read them too):
//! [`resources`] checks the cores and memory asked for,
//! [`compose`] drives `docker-compose` and writes the override file, [`images`] wraps a
//! built binary into an image, [`health`] waits until the services are ready,
//! [`entry`] finds its entry URLs (http or https, with the CA to trust),
//! [`claim`] keeps a second host off a project name in use,
//! [`render`] prints a stack, [`teardown`] removes what a project left behind, [`up`]
//! puts them in order, [`watch`] notes services that die during a run, [`session`] is
//! one stack's life around its user (`host up`, `run --stack`, `sweep --stack`: start,
//! Ctrl-C while starting, keep or remove, in the same words), and [`cycle`] is
//! `run --stack`: up, run, down.

pub(crate) mod claim;
pub(crate) mod compose;
pub(crate) mod cycle;
pub(crate) mod entry;
pub(crate) mod health;
pub(crate) mod images;
pub(crate) mod render;
pub(crate) mod resources;
pub(crate) mod session;
pub(crate) mod teardown;
pub(crate) mod up;
pub(crate) mod watch;

pub(crate) use crate::config::CpuSet;
// The Engine connection and the project's containers live below this module (in
// `docker`), since the samplers read them too.
pub(crate) use crate::docker::ServiceContainer;
pub(crate) use crate::docker::{containers, engine};
pub(crate) use up::{down, UpOptions};

pub(crate) use crate::docker::{PROJECT_LABEL, SERVICE_LABEL};
