//! WebSockets held by the host.
//!
//! A [`Socket`] may outlive an iteration (keep it in a `thread_local!`) and dies with
//! its VU; a VU may hold many. The host reads each socket in the background into a
//! small buffer (`[websocket] recv_buffer` messages; when it is full the host stops
//! reading, so the server feels the backpressure), answers pings, sends its own pings
//! when `[websocket] ping_interval` is set, and records `ws_sessions`, `ws_msgs_sent`,
//! `ws_msgs_received`, `ws_ping`, `ws_errors` and the other WebSocket metrics.
//!
//! [`Socket::recv`] with `Duration::ZERO` takes only what has already arrived, which is
//! how one VU drains many sockets in turn. Once a socket has ended, its calls return
//! why ([`WsError::Closed`] with the server's code and reason, or
//! [`WsError::Protocol`]), after the messages that arrived before the end.
//!
//! ```no_run
//! use std::time::Duration;
//! use loadtest::websocket::{Message, Socket};
//!
//! # fn f() -> Result<(), String> {
//! let ws = Socket::connect("ws://127.0.0.1:8080/ws")?;
//! ws.send_text("hello")?;
//! if let Some(Message::Text(t)) = ws.recv(Duration::from_secs(1))? { /* ... */ }
//! ws.close(1000, "bye")?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::time::Duration;

use crate::bindings::loadtest::scenario::websocket as wit;
use crate::tags::owned;

/// A message received: `Text(String)` or `Binary(Vec<u8>)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A text message.
    Text(String),
    /// A binary message.
    Binary(Vec<u8>),
}

impl Message {
    /// The text of a text message.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Message::Text(t) => Some(t),
            Message::Binary(_) => None,
        }
    }
}

/// Why a socket operation failed.
///
/// It converts into `String`, so `?` works in [`Scenario`](crate::Scenario) functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WsError {
    /// The target is not in the run's allowlist.
    Denied(String),
    /// A malformed URL or header.
    Invalid(String),
    /// The connection or the upgrade failed.
    Connect(String),
    /// The peer closed the socket with this code and reason.
    Closed(u16, String),
    /// The connection broke or the peer broke the protocol.
    Protocol(String),
}

impl WsError {
    fn from_wit(e: wit::WsError) -> Self {
        match e {
            wit::WsError::Denied(m) => WsError::Denied(m),
            wit::WsError::Invalid(m) => WsError::Invalid(m),
            wit::WsError::Connect(m) => WsError::Connect(m),
            wit::WsError::Closed((code, reason)) => WsError::Closed(code, reason),
            wit::WsError::Protocol(m) => WsError::Protocol(m),
        }
    }
}

impl fmt::Display for WsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WsError::Denied(m) => write!(f, "websocket denied: {m}"),
            WsError::Invalid(m) => write!(f, "invalid websocket request: {m}"),
            WsError::Connect(m) => write!(f, "websocket connection failed: {m}"),
            WsError::Closed(code, reason) => {
                write!(f, "websocket closed by the peer ({code}): {reason}")
            }
            WsError::Protocol(m) => write!(f, "websocket protocol error: {m}"),
        }
    }
}

impl std::error::Error for WsError {}

impl From<WsError> for String {
    fn from(e: WsError) -> String {
        e.to_string()
    }
}

/// An open WebSocket.
#[derive(Debug)]
pub struct Socket {
    inner: wit::Socket,
}

impl Socket {
    /// Opens a socket to a `ws://` or `wss://` URL.
    pub fn connect(url: &str) -> Result<Socket, WsError> {
        Socket::connect_with(url, &[], &[])
    }

    /// Opens a socket with extra header fields for the upgrade request and tags for
    /// the socket's metrics.
    pub fn connect_with(
        url: &str,
        headers: &[(&str, &str)],
        tags: &[(&str, &str)],
    ) -> Result<Socket, WsError> {
        wit::Socket::connect(url, &owned(headers), &owned(tags))
            .map(|inner| Socket { inner })
            .map_err(WsError::from_wit)
    }

    /// Sends a text message.
    pub fn send_text(&self, text: &str) -> Result<(), WsError> {
        self.inner.send_text(text).map_err(WsError::from_wit)
    }

    /// Sends a binary message.
    pub fn send_binary(&self, data: &[u8]) -> Result<(), WsError> {
        self.inner.send_binary(data).map_err(WsError::from_wit)
    }

    /// Waits up to `timeout` (whole milliseconds, saturating) for the next message;
    /// `Ok(None)` when none came in time.
    pub fn recv(&self, timeout: Duration) -> Result<Option<Message>, WsError> {
        let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        self.inner
            .recv(ms)
            .map(|m| {
                m.map(|m| match m {
                    wit::Message::Text(t) => Message::Text(t),
                    wit::Message::Binary(b) => Message::Binary(b),
                })
            })
            .map_err(WsError::from_wit)
    }

    /// Closes the socket with a close `code` (1000 for a normal close) and `reason`.
    pub fn close(self, code: u16, reason: &str) -> Result<(), WsError> {
        self.inner.close(code, reason).map_err(WsError::from_wit)
    }
}
