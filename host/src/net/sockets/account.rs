//! One socket's metrics: its connect (`socket_connects`, `socket_connecting`), its
//! bytes (`data_sent`, `data_received`, counted as they move), its failures
//! (`socket_errors{error}`) and its place in the `sockets_open` gauge, left when the
//! account is dropped with its socket.

use super::error::{SocketError, SocketErrorKind};
use crate::metrics::{builtin, TagSet};
use crate::net::counting_io::IoStats;
use crate::net::NetShared;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The tags of a socket's metrics: the VU's, `proto`, `name` (`host:port` unless the
/// plugin's tags give one) and the plugin's.
pub(crate) fn socket_tags(
    base: &TagSet,
    proto: &str,
    name: &str,
    plugin: &[(String, String)],
) -> TagSet {
    let named = plugin.iter().any(|(k, _)| k == "name");
    base.with(
        [("proto", proto)]
            .into_iter()
            .chain((!named).then_some(("name", name)))
            .chain(plugin.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
    )
}

/// Counts a connect that failed: a denied one in `socket_connects_denied`, any
/// other in `socket_errors`; bytes a failed handshake moved in `data_*`.
pub(crate) fn connect_failed(
    shared: &NetShared,
    tags: &TagSet,
    error: &SocketError,
    io: Option<&IoStats>,
) {
    shared.recorder.with_shard(|s| {
        if error.kind == SocketErrorKind::Denied {
            s.count(builtin::SOCKET_CONNECTS_DENIED, tags, 1.0);
        } else {
            s.count(
                builtin::SOCKET_ERRORS,
                &tags.with([("error", error.kind.tag())]),
                1.0,
            );
        }
        if let Some(io) = io {
            io.take_unaccounted().record(s, tags);
        }
    });
}

/// The metrics of one open socket.
pub(crate) struct Account {
    shared: Arc<NetShared>,
    tags: TagSet,
    stats: Arc<IoStats>,
}

impl Account {
    /// A socket that took `connecting` to open (with its TLS handshake), counted
    /// open until the account is dropped.
    pub(crate) fn open(
        shared: &Arc<NetShared>,
        tags: TagSet,
        stats: Arc<IoStats>,
        connecting: Duration,
    ) -> Self {
        shared.sockets_open.fetch_add(1, Ordering::Relaxed);
        shared.sockets_used.store(true, Ordering::Relaxed);
        shared.recorder.with_shard(|s| {
            s.count(builtin::SOCKET_CONNECTS, &tags, 1.0);
            s.trend(
                builtin::SOCKET_CONNECTING,
                &tags,
                connecting.as_micros() as u64,
            );
            stats.take_unaccounted().record(s, &tags);
        });
        Self {
            shared: shared.clone(),
            tags,
            stats,
        }
    }

    /// The byte counts the socket's transport updates.
    pub(crate) fn stats(&self) -> &IoStats {
        &self.stats
    }

    /// Records the bytes moved since the last call.
    pub(crate) fn flush(&self) {
        let io = self.stats.take_unaccounted();
        if io.sent > 0 || io.received > 0 {
            self.shared
                .recorder
                .with_shard(|s| io.record(s, &self.tags));
        }
    }

    /// Counts a failed call (and the bytes it moved).
    pub(crate) fn failed(&self, error: &SocketError) {
        let io = self.stats.take_unaccounted();
        self.shared.recorder.with_shard(|s| {
            s.count(
                builtin::SOCKET_ERRORS,
                &self.tags.with([("error", error.kind.tag())]),
                1.0,
            );
            io.record(s, &self.tags);
        });
    }
}

impl Drop for Account {
    fn drop(&mut self) {
        self.flush();
        self.shared.sockets_open.fetch_sub(1, Ordering::Relaxed);
    }
}
