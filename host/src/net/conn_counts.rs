//! Connections a run opened, by HTTP version, with their TLS handshakes, and the
//! origins whose `Alt-Svc` moved VUs to HTTP/3: the summary's `connections`.

use super::types::Proto;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters shared by every VU's client (a connection is opened far less often than a
/// request is sent, so plain atomics suffice).
#[derive(Debug, Default)]
pub struct ConnectionCounts {
    opened: [AtomicU64; 3],
    handshakes: [AtomicU64; 3],
    alt_svc_upgrades: AtomicU64,
    alt_svc_denied: AtomicU64,
}

/// The summary's `connections`: what each HTTP version cost in connections and
/// handshakes, and how many upgrades `Alt-Svc` brought.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct ConnectionSummary {
    /// Connections opened, by the `proto` tag's names (`HTTP/1.1`, `HTTP/2`, `HTTP/3`).
    pub opened: BTreeMap<String, u64>,
    /// TLS handshakes completed, by the same names (HTTP/3's is QUIC's, always TLS 1.3).
    pub tls_handshakes: BTreeMap<String, u64>,
    /// Times a VU learnt from an origin's `Alt-Svc` to send its next requests over HTTP/3.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub alt_svc_upgrades: u64,
    /// `Alt-Svc` alternatives not used because the allowlist denies their endpoint.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub alt_svc_denied: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ConnectionCounts {
    /// Counts a connection opened over `proto`, with a TLS handshake or not.
    pub(crate) fn opened(&self, proto: Proto, handshake: bool) {
        let i = proto as usize;
        self.opened[i].fetch_add(1, Ordering::Relaxed);
        if handshake {
            self.handshakes[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a VU's move of an origin to HTTP/3 on its `Alt-Svc`.
    pub(crate) fn alt_svc_upgrade(&self) {
        self.alt_svc_upgrades.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an `Alt-Svc` alternative the allowlist denied.
    pub(crate) fn alt_svc_denied(&self) {
        self.alt_svc_denied.fetch_add(1, Ordering::Relaxed);
    }

    /// The summary; `None` when no connection was opened (no HTTP in the run).
    pub fn summary(&self) -> Option<ConnectionSummary> {
        let mut s = ConnectionSummary {
            alt_svc_upgrades: self.alt_svc_upgrades.load(Ordering::Relaxed),
            alt_svc_denied: self.alt_svc_denied.load(Ordering::Relaxed),
            ..Default::default()
        };
        for proto in Proto::ALL {
            let i = proto as usize;
            let opened = self.opened[i].load(Ordering::Relaxed);
            if opened > 0 {
                s.opened.insert(proto.name().into(), opened);
            }
            let handshakes = self.handshakes[i].load(Ordering::Relaxed);
            if handshakes > 0 {
                s.tls_handshakes.insert(proto.name().into(), handshakes);
            }
        }
        (!s.opened.is_empty()).then_some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_version() {
        let c = ConnectionCounts::default();
        assert_eq!(c.summary(), None);
        c.opened(Proto::Http1, false);
        c.opened(Proto::Http2, true);
        c.opened(Proto::Http3, true);
        c.opened(Proto::Http3, true);
        c.alt_svc_upgrade();
        let s = c.summary().unwrap();
        assert_eq!(s.opened["HTTP/1.1"], 1);
        assert_eq!(s.opened["HTTP/3"], 2);
        assert_eq!(s.tls_handshakes.get("HTTP/1.1"), None);
        assert_eq!(s.tls_handshakes["HTTP/2"], 1);
        assert_eq!(s.alt_svc_upgrades, 1);
    }
}
