//! The host side of the plugin's `websocket` import: sockets the host holds for a VU.
//!
//! A VU may hold many sockets, and a socket may live across iterations (the plugin
//! keeps the resource). Each socket is owned by one small tokio task ([`driver`]) that
//! reads frames into a bounded inbox, answers pings, sends the host's own pings and
//! writes what the plugin sends. When the inbox is full, or holds the socket's byte
//! budget ([`link`]), the task stops reading the TCP stream, so a plugin that never
//! reads applies backpressure to the server instead of making the host buffer without
//! bound. Dropping the [`Socket`] (the plugin drops the resource, or the VU's store goes
//! away) tells the task, which closes the socket and ends.
//!
//! An idle socket is what there are tens of thousands of, so its parts are kept small:
//! one shared allocation ([`link`]) rather than channels, a small read buffer, and the
//! task's rare paths boxed (see `results/websockets.md` for the measured cost).
//!
//! The files import one way: `open` → `socket` → `driver` → `link` → `session`,
//! `transport`, `message` (the leaf: what is sent and received, and the errors).

mod driver;
mod link;
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
