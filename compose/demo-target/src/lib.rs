//! The demo system under test: a small notes application on hyper 1.x.
//!
//! It serves sign-in tokens, notes CRUD in groups, a WebSocket that pushes note changes
//! to subscribers, a cached static site, a survey behind a form sign-in (session
//! cookie, CSRF and single-use tokens), per-address rate limits that trust
//! `X-Forwarded-For` only from configured proxies, Prometheus metrics and
//! runtime-switchable fault injection (latency, periodic stalls, errors, a capacity
//! limit of workers × service time with a queue), and
//! asynchronous commands that a worker process ([`worker`]) claims from an outbox and
//! completes off the request path (or, embedded, an in-process worker), an invoke
//! endpoint behind an API key that sheds load past a concurrency limit, and an outbox
//! delivering HMAC-signed webhooks to its own receiver.
//! For first visits it serves an app shell and its 40 assets; for the REST API,
//! sign-up, account deletion and rotating refresh tokens; large groups and search.
//! Beside the REST API, an optional gRPC face ([`grpc`], `--grpc-listen`) shaped like
//! the Camunda starter's gateway, on the same state.
//! It runs embedded through [`DemoServer`] or as the `demo-target` binary.

mod accounts;
pub mod args;
pub mod capacity;
mod clients;
mod commands;
mod counters;
mod faults;
pub mod grpc;
mod http3;
mod inline_worker;
mod invoke;
mod live;
mod metrics;
pub mod probe;
mod routes;
mod server;
mod site;
mod state;
mod store;
mod survey;
mod timings;
pub mod tls;
mod webhooks;
pub mod worker;

pub use capacity::Capacity;
pub use clients::Cidr;
pub use faults::Faults;
pub use server::DemoServer;
pub use survey::SurveyCounts;
pub use tls::DemoTls;

use std::time::Duration;

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
    /// How often the server pings each live-updates WebSocket (`GET /ws`).
    pub ws_ping_interval: Duration,
    /// A WebSocket from which nothing (not even a pong) arrived for this long is closed.
    pub ws_idle_timeout: Duration,
    /// Most WebSockets one user may hold at once; the next is refused with 429.
    pub ws_max_per_user: usize,
    /// Pushes queued per WebSocket; a client that falls this far behind is disconnected.
    pub ws_queue: usize,
    /// Peers whose `X-Forwarded-For` is believed (a proxy in front of the target);
    /// from anyone else the header is ignored.
    pub trusted_proxies: Vec<Cidr>,
    /// Requests per second each client address may make (except `/health`,
    /// `/metrics` and `/admin/*`); past it the answer is 429 with `Retry-After`.
    pub rate_limit: Option<u32>,
    /// How long an access token of the account API (`POST /accounts`,
    /// `POST /auth/refresh`) is valid.
    pub access_token_ttl: Duration,
    /// Large groups seeded after the `seed_groups` ones (numbered from
    /// `seed_groups + 1`), for searches and paging over many notes.
    pub large_groups: u32,
    /// Notes in each large group.
    pub large_group_notes: u32,
    /// Whether the server completes its commands itself (the embedded demo); false
    /// when a `demo-target worker` process claims them (the Compose stack).
    pub in_process_worker: bool,
    /// How long the in-process worker works on each command.
    pub command_work: Duration,
    /// The key `POST /invoke` wants in `X-Api-Key`.
    pub invoke_api_key: String,
    /// Invocations served at once; past it they are shed with 503 and `Retry-After`.
    pub invoke_concurrency: usize,
    /// How long each invocation holds its slot.
    pub invoke_work: Duration,
    /// The HMAC-SHA256 key webhooks are signed (and verified) with.
    pub webhook_secret: String,
    /// Webhooks delivered per second at most, so the outbox drains at a known pace.
    pub webhook_rate: u32,
    /// Peers that may call `/admin/*` (switch faults, hold memory, claim the outbox);
    /// others get 403. Empty: anyone who reaches the port (the Compose files publish
    /// it on 127.0.0.1 only).
    pub admin_from: Vec<Cidr>,
    /// The most MiB `POST /admin/hold` holds in all; past it the answer is 409.
    pub max_held_mb: usize,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            faults: Faults::default(),
            seed_groups: 10,
            notes_per_group: 20,
            max_body_bytes: 64 * 1024,
            max_tokens: 100_000,
            ws_ping_interval: Duration::from_secs(30),
            ws_idle_timeout: Duration::from_secs(90),
            ws_max_per_user: 20,
            ws_queue: 256,
            trusted_proxies: Vec::new(),
            rate_limit: None,
            access_token_ttl: Duration::from_secs(30),
            large_groups: 0,
            large_group_notes: 10_000,
            in_process_worker: true,
            command_work: Duration::from_millis(50),
            invoke_api_key: "demo-key".to_string(),
            invoke_concurrency: 8,
            invoke_work: Duration::from_millis(20),
            webhook_secret: "demo-webhook-secret".to_string(),
            webhook_rate: 100,
            admin_from: Vec::new(),
            max_held_mb: 4096,
        }
    }
}
