//! What every connect passes before any packet: a host and port that make sense, the
//! run's allowlist (by scheme `tcp` or `udp`, host and port), then name resolution.

use super::error::{SocketError, SocketErrorKind};
use crate::net::allowlist::Origin;
use crate::net::NetShared;
use std::net::SocketAddr;

/// A host:port the allowlist let through.
pub(crate) struct Target {
    /// `tcp://host:port` or `udp://host:port`, host in lower case.
    pub origin: Origin,
    /// `host:port` as the plugin wrote it (IPv6 in brackets), for messages and the
    /// `name` tag.
    pub name: String,
}

/// `host:port` as shown in messages and the `name` tag.
pub(crate) fn display_name(host: &str, port: u16) -> String {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Checks `host` and `port` for a socket of `scheme` (`tcp` or `udp`): a bad one
/// fails `invalid`, one outside the allowlist `denied` (warned once per origin).
pub(crate) fn check(
    shared: &NetShared,
    scheme: &str,
    host: &str,
    port: u16,
) -> Result<Target, SocketError> {
    let bare = host.trim().trim_start_matches('[').trim_end_matches(']');
    if bare.is_empty() {
        return Err(SocketError::invalid("a socket needs a host; it was empty"));
    }
    if bare
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || "/?#@".contains(c))
    {
        return Err(SocketError::invalid(format!(
            "{host:?} is not a host name or address"
        )));
    }
    if port == 0 {
        return Err(SocketError::invalid(format!(
            "{host}: port 0 cannot be connected to; give the server's port"
        )));
    }
    let origin = Origin {
        scheme: scheme.to_string(),
        host: bare.to_ascii_lowercase(),
        port,
    };
    if let Err(why) = shared.allowlist.check(&origin) {
        shared.warn_denied_once(&origin, "open a socket to", &why);
        return Err(SocketError::new(SocketErrorKind::Denied, why.to_string()));
    }
    Ok(Target {
        name: display_name(bare, port),
        origin,
    })
}

/// The target's addresses (an IP address as it is).
pub(crate) async fn resolve(target: &Target) -> Result<Vec<SocketAddr>, SocketError> {
    crate::net::address::resolve(&target.origin)
        .await
        .map_err(|e| SocketError::new(SocketErrorKind::Connect, e.message().to_string()))
}
