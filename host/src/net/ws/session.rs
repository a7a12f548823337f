//! One socket's life for the metrics: messages and bytes each way, ping round trips,
//! how and when it ended (`ws_session_duration`, `ws_errors{error}`), and the reason
//! the plugin is told once the socket is gone.

use super::message::WsError;
use crate::metrics::{builtin, TagSet};
use crate::net::counting_io::IoStats;
use crate::net::types::IoBytes;
use crate::net::NetShared;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a socket ended.
pub(super) enum Ending {
    /// Its VU let go of it (the resource was dropped, or the VU's store went away).
    Dropped,
    /// The plugin closed it with this code and reason.
    ClosedByPlugin(u16, String),
    /// The peer closed it or the connection failed (tagged by the error's kind).
    Failed(WsError),
    /// The peer stopped answering pings (tagged `ping_timeout`).
    PingTimeout(WsError),
}

impl Ending {
    /// The failure, with the `error` tag `ws_errors` counts it under; `None` when the
    /// plugin or its VU ended the socket.
    fn failure(&self) -> Option<(&WsError, &'static str)> {
        match self {
            Self::Failed(e) => Some((e, e.kind())),
            Self::PingTimeout(e) => Some((e, "ping_timeout")),
            Self::Dropped | Self::ClosedByPlugin(..) => None,
        }
    }
}

/// Shared by the plugin's [`Socket`](super::socket::Socket) handle and the socket's task.
pub(super) struct Session {
    shared: Arc<NetShared>,
    tags: TagSet,
    started: Instant,
    io: Arc<IoStats>,
    reported_sent: AtomicU64,
    reported_received: AtomicU64,
    end: Mutex<Option<WsError>>,
    finished: AtomicBool,
}

impl Session {
    /// A session that started at `started`, counted open from now on.
    pub(super) fn open(
        shared: Arc<NetShared>,
        tags: TagSet,
        started: Instant,
        io: Arc<IoStats>,
    ) -> Self {
        shared.ws_open.fetch_add(1, Ordering::Relaxed);
        shared.ws_used.store(true, Ordering::Relaxed);
        Self {
            shared,
            tags,
            started,
            io,
            reported_sent: AtomicU64::new(0),
            reported_received: AtomicU64::new(0),
            end: Mutex::new(None),
            finished: AtomicBool::new(false),
        }
    }

    /// Counts a message received from the peer, when the plugin takes it from the inbox.
    pub(super) fn received(&self) {
        let io = self.io_delta();
        self.shared.recorder.with_shard(|s| {
            s.count(builtin::WS_MSGS_RECEIVED, &self.tags, 1.0);
            io.record(s, &self.tags);
        });
    }

    /// Counts a message sent by the plugin.
    pub(super) fn sent(&self) {
        let io = self.io_delta();
        self.shared.recorder.with_shard(|s| {
            s.count(builtin::WS_MSGS_SENT, &self.tags, 1.0);
            io.record(s, &self.tags);
        });
    }

    /// Counts an operation the host refused on the open socket (`ws_errors{error}`,
    /// `kind` the reason), which does not end it.
    pub(super) fn refused(&self, kind: &'static str) {
        self.shared
            .recorder
            .count(builtin::WS_ERRORS, &self.tags.with([("error", kind)]), 1.0);
    }

    /// Records a ping's round trip.
    pub(super) fn ping_answered(&self, round_trip: Duration) {
        self.shared
            .recorder
            .trend(builtin::WS_PING, &self.tags, round_trip.as_micros() as u64);
    }

    /// Ends the session once: the first call records its duration, its error if it
    /// failed, and the bytes not yet counted; later calls change nothing.
    pub(super) fn finish(&self, ending: Ending) {
        {
            let mut end = self.end.lock().unwrap_or_else(|p| p.into_inner());
            if end.is_none() {
                *end = Some(match &ending {
                    Ending::Dropped => WsError::Protocol("the socket was dropped".into()),
                    Ending::ClosedByPlugin(code, reason) => WsError::Closed(*code, reason.clone()),
                    Ending::Failed(e) | Ending::PingTimeout(e) => e.clone(),
                });
            }
        }
        if self.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        self.shared.ws_open.fetch_sub(1, Ordering::Relaxed);
        let io = self.io_delta();
        let duration = self.started.elapsed().as_micros() as u64;
        self.shared.recorder.with_shard(|s| {
            s.trend(builtin::WS_SESSION_DURATION, &self.tags, duration);
            io.record(s, &self.tags);
            if let Some((error, kind)) = ending.failure() {
                let mut tags = vec![("error", kind.to_string())];
                if let WsError::Closed(code, _) = error {
                    tags.push(("close_code", code.to_string()));
                }
                s.count(builtin::WS_ERRORS, &self.tags.with(tags), 1.0);
            }
        });
    }

    /// Why the socket can no longer be used.
    pub(super) fn end_error(&self) -> WsError {
        self.end
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| WsError::Protocol("the socket's task ended unexpectedly".into()))
    }

    /// Bytes sent and received since the last call.
    fn io_delta(&self) -> IoBytes {
        let sent = self.io.sent();
        let received = self.io.received();
        let sent_before = self.reported_sent.swap(sent, Ordering::Relaxed);
        let received_before = self.reported_received.swap(received, Ordering::Relaxed);
        IoBytes {
            sent: sent.saturating_sub(sent_before),
            received: received.saturating_sub(received_before),
        }
    }
}
