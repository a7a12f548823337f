//! The state shared by every connection and request of one server.

use std::sync::Arc;
use std::time::Instant;

use crate::accounts::Accounts;
use crate::clients::Clients;
use crate::commands::Commands;
use crate::faults::FaultInjector;
use crate::invoke::Invoker;
use crate::live::{LiveConfig, LiveHub};
use crate::metrics::Metrics;
use crate::site::SiteCounters;
use crate::store::{NoteStore, TokenStore};
use crate::survey::Survey;
use crate::timings::RouteTimings;
use crate::webhooks::Outbox;
use crate::DemoConfig;

/// Shared application state, held in an `Arc` by the server and each connection.
pub struct AppState {
    /// Request, response and connection counters.
    pub metrics: Metrics,
    /// Handling time of each request, by method and route.
    pub timings: RouteTimings,
    /// The active faults and the clock their stall windows are measured from.
    pub faults: FaultInjector,
    /// Notes, by group.
    pub notes: NoteStore,
    /// Issued sign-in tokens.
    pub tokens: TokenStore,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Peers that may call `/admin/*` (empty: anyone).
    pub admin_from: Vec<crate::Cidr>,
    /// Memory taken by `POST /admin/hold`, and the most it may hold (MiB).
    pub held: (std::sync::Mutex<Vec<Vec<u8>>>, usize),
    /// Live-update WebSockets and their subscriptions.
    pub live: Arc<LiveHub>,
    /// The survey's sessions and single-use tokens.
    pub survey: Survey,
    /// Client addresses (trusted proxies) and per-address rate limits.
    pub clients: Clients,
    /// Asynchronous commands and the outbox the worker claims them from.
    pub commands: Commands,
    /// What the app shell, its assets and its API calls served.
    pub site: SiteCounters,
    /// Accounts of the REST API and their access and refresh tokens.
    pub accounts: Accounts,
    /// Groups seeded at start: (small, large); small ones are `1..=small`, large ones
    /// follow.
    pub seeded_groups: (u32, u32),
    /// The invoke endpoint's key, slots and counters.
    pub invoker: Invoker,
    /// Events waiting to be delivered as signed webhooks, and the receiver's counts.
    pub outbox: Arc<Outbox>,
    /// What the gRPC face (`--grpc-listen`) answered.
    pub grpc: crate::grpc::GrpcCounters,
}

impl AppState {
    /// Builds the state for a server that started at `started`.
    pub fn new(config: &DemoConfig, started: Instant) -> Self {
        let notes = NoteStore::seeded(config.seed_groups, config.notes_per_group);
        notes.seed_large(
            config.seed_groups + 1,
            config.large_groups,
            config.large_group_notes,
        );
        AppState {
            metrics: Metrics::default(),
            timings: RouteTimings::default(),
            faults: FaultInjector::new(config.faults.clone(), started),
            notes,
            tokens: TokenStore::new(config.max_tokens),
            max_body_bytes: config.max_body_bytes,
            admin_from: config.admin_from.clone(),
            held: (Default::default(), config.max_held_mb),
            live: Arc::new(LiveHub::new(LiveConfig::from_demo(config))),
            survey: Survey::default(),
            clients: Clients::new(config.trusted_proxies.clone(), config.rate_limit, started),
            commands: Commands::new(config.max_tokens),
            site: SiteCounters::default(),
            accounts: Accounts::new(config.access_token_ttl, config.max_tokens),
            seeded_groups: (config.seed_groups, config.large_groups),
            invoker: Invoker::new(
                config.invoke_api_key.clone(),
                config.invoke_concurrency,
                config.invoke_work,
            ),
            outbox: Arc::new(Outbox::new(&config.webhook_secret, config.webhook_rate)),
            grpc: Default::default(),
        }
    }
}
