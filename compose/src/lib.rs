//! The demo system under test: a small notes application on hyper 1.x.
//!
//! It serves sign-in tokens, notes CRUD in groups, a cached static site, Prometheus
//! metrics and runtime-switchable fault injection (latency, periodic stalls, errors).
//! It runs embedded through [`DemoServer`] or as the `demo-target` binary.

mod faults;
mod metrics;
mod routes;
mod server;
mod state;
mod store;

pub use faults::Faults;
pub use server::DemoServer;

/// Everything [`DemoServer::start`] needs; every field has a sensible default.
#[derive(Clone, Debug)]
pub struct DemoConfig {
    /// Faults active from the start; change them later with [`DemoServer::set_faults`].
    pub faults: Faults,
    /// Groups seeded at start, numbered `1..=seed_groups`.
    pub seed_groups: u32,
    /// Notes seeded into each seeded group.
    pub notes_per_group: u32,
    /// Largest request body accepted; bigger ones get 413.
    pub max_body_bytes: usize,
    /// Most sign-in tokens kept; the oldest are forgotten first, so a load test that
    /// signs in on every iteration cannot grow memory without bound.
    pub max_tokens: usize,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            faults: Faults::default(),
            seed_groups: 10,
            notes_per_group: 20,
            max_body_bytes: 64 * 1024,
            max_tokens: 100_000,
        }
    }
}
