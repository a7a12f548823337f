//! Raw sockets for plugins (contract 0.3.7, `sockets`): TCP, optionally TLS, and UDP,
//! for protocols the contract does not name. The protocol's client lives in the
//! plugin; the host checks each connect against the allowlist by host and port before
//! any packet, counts bytes, connects, failures and open sockets, and bounds what one
//! socket may make it hold (`MAX_READ`, `MAX_WRITE`).
//!
//! `error` holds the failure kinds, `account` one socket's metrics, `tcp` and `udp`
//! the sockets themselves; `target` the checks every connect passes first.

pub(crate) mod account;
pub(crate) mod error;
pub(crate) mod frame;
pub(crate) mod limits;
pub(crate) mod resp;
pub(crate) mod target;
pub(crate) mod tcp;
pub(crate) mod udp;

#[cfg(test)]
mod tests;

pub(crate) use error::{SocketError, SocketErrorKind};
pub(crate) use limits::{MAX_READ, MAX_SOCKETS, MAX_WRITE};
pub(crate) use tcp::TcpConn;
pub(crate) use udp::UdpConn;
