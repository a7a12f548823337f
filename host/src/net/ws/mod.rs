//! The host side of the plugin's `websocket` import: sockets the host holds for a VU.
//!
//! A VU may hold many sockets, and a socket may live across iterations (the plugin
//! keeps the resource). Each socket is owned by one small tokio task ([`driver`]) that
//! reads frames into a bounded channel, answers pings, sends the host's own pings and
//! writes what the plugin sends. When the channel is full, or holds the socket's byte
//! budget ([`held`]), the task stops reading the TCP stream, so a plugin that never reads applies backpressure to the server instead
//! of making the host buffer without bound. Dropping the [`Socket`] (the plugin drops
//! the resource, or the VU's store goes away) closes the channel, and the task closes
//! the socket and ends.

//!
//! The files import one way: `open` → `socket` → `driver` → `session`, `held`,
//! `transport`, `message` (the leaf: what is sent and received, and the errors).

mod driver;
mod held;
mod message;
mod open;
mod session;
pub(crate) mod socket;
#[cfg(test)]
mod tests;
mod transport;

pub(crate) use message::{WsError, WsMessage};
pub(crate) use open::connect_from;
pub(crate) use socket::Socket;
