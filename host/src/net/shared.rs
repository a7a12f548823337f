//! What every VU's HTTP client and WebSocket share over a run: the allowlist, limits
//! and counters.

use super::allowlist::Allowlist;
use crate::metrics::Recorder;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::Duration;

/// What all VUs' clients share: policy, limits and counters. Read-only or atomic.
pub struct NetShared {
    /// Targets that may be reached.
    pub allowlist: Allowlist,
    /// Default request timeout.
    pub default_timeout: Duration,
    /// Body cap in bytes.
    pub max_body: u64,
    /// Where samples go.
    pub recorder: Arc<Recorder>,
    /// Requests sent and not yet completed (read with `get_signed`); striped, as every
    /// VU thread writes it twice per request.
    pub in_flight: crate::striped::StripedCounter,
    /// Redirects followed per request.
    pub max_redirects: u32,
    /// Denied origins already warned about (warned once each).
    pub denied_warned: crate::bounded::WarnOnce,
    /// How WebSockets are kept alive (`[websocket]`).
    pub websocket: crate::config::WebSocketOptions,
    /// WebSockets open now, over all VUs.
    pub ws_open: AtomicI64,
    /// Whether any WebSocket was opened in this run (its gauge is shown only then).
    pub ws_used: std::sync::atomic::AtomicBool,
    /// Raw sockets (`sockets` interface) open now, over all VUs.
    pub sockets_open: AtomicI64,
    /// Whether any raw socket was opened in this run (its gauge is shown only then).
    pub sockets_used: std::sync::atomic::AtomicBool,
    /// Redirects, cookies and source addresses (`[http]`).
    pub http: crate::config::HttpOptions,
    /// TLS configuration and what handshakes negotiated (`[tls]`); shared with the
    /// setup's own `NetShared`, so its handshakes count too.
    pub tls: Arc<super::tls::TlsClient>,
    /// Connections opened by HTTP version, and Alt-Svc upgrades (the summary's
    /// `connections`).
    pub connections: super::conn_counts::ConnectionCounts,
    /// Failed gRPC calls by status, with the first message of each (the summary's
    /// `grpc_failures`).
    pub grpc_failures: super::grpc::failures::GrpcFailures,
    /// Requests that stopped at the redirect limit, and the first URL that did with
    /// its limit.
    redirect_limit: std::sync::Mutex<(u64, Option<(String, u32)>)>,
}

impl NetShared {
    /// Shared state for a run.
    pub fn new(
        allowlist: Allowlist,
        default_timeout: Duration,
        max_body: u64,
        recorder: Arc<Recorder>,
    ) -> Self {
        Self {
            allowlist,
            default_timeout,
            max_body,
            recorder,
            in_flight: Default::default(),
            max_redirects: crate::config::http::DEFAULT_MAX_REDIRECTS,
            denied_warned: Default::default(),
            websocket: Default::default(),
            ws_open: AtomicI64::new(0),
            ws_used: Default::default(),
            sockets_open: AtomicI64::new(0),
            sockets_used: Default::default(),
            http: Default::default(),
            tls: Default::default(),
            connections: Default::default(),
            grpc_failures: Default::default(),
            redirect_limit: Default::default(),
        }
    }

    /// Notes a request that was still redirected after `limit` hops (its own, or
    /// `max_redirects`); warns the first time.
    pub(crate) fn redirect_limit_reached(&self, url: &str, status: u16, limit: u32) {
        let mut seen = self
            .redirect_limit
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        seen.0 += 1;
        if seen.1.is_none() {
            crate::stderr::warn(format_args!(
                "{url} still redirected ({status}) after {limit} redirects; the last \
                 redirect was returned (a redirect loop?)"
            ));
            seen.1 = Some((url.to_owned(), limit));
        }
    }

    /// Warnings about the run's requests for the summary.
    pub fn warnings(&self) -> Vec<String> {
        let seen = self
            .redirect_limit
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut warnings = self.tls.warnings();
        if let Some((url, limit)) = &seen.1 {
            warnings.push(format!(
                "{} requests were still redirected after {limit} redirects and returned the last \
                 redirect (first: {url}); a redirect loop?",
                seen.0
            ));
        }
        warnings
    }

    /// The same, with the run's TLS client.
    pub fn with_tls(mut self, tls: Arc<super::tls::TlsClient>) -> Self {
        self.tls = tls;
        self
    }

    /// Warns on stderr that the plugin tried to reach a denied `origin`, once per
    /// origin for the run: a plugin looping on a denied URL would flood it otherwise.
    pub fn warn_denied_once(
        &self,
        origin: &impl std::fmt::Display,
        what: &str,
        why: &super::allowlist::NotAllowed,
    ) {
        let origin = origin.to_string();
        self.denied_warned.warn(
            &origin,
            &format!("plugin tried to {what} {origin}: denied ({why})"),
        );
    }

    /// The same, with the run's `[http]` options.
    pub fn with_http(mut self, options: crate::config::HttpOptions) -> Self {
        self.max_redirects = options.max_redirects;
        self.http = options;
        self
    }

    /// The same, with the run's WebSocket options.
    pub fn with_websocket(mut self, options: crate::config::WebSocketOptions) -> Self {
        self.websocket = options;
        self
    }
}
