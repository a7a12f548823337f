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

mod driver;
mod held;
mod open;
mod session;
#[cfg(test)]
mod tests;
mod transport;

pub(crate) use open::connect_from;

use session::Session;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// A message received from or sent to the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WsMessage {
    /// A text message.
    Text(String),
    /// A binary message.
    Binary(Vec<u8>),
}

/// Why a socket operation failed; mirrors the WIT `ws-error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WsError {
    /// Not allowed by the run's allowlist; nothing was sent.
    #[error("denied: {0}")]
    Denied(String),
    /// A malformed URL, header or close code.
    #[error("invalid: {0}")]
    Invalid(String),
    /// The connection or the upgrade failed.
    #[error("connect: {0}")]
    Connect(String),
    /// The socket is closed: by the peer with this code and reason (or by the plugin).
    #[error("closed ({0}): {1}")]
    Closed(u16, String),
    /// The connection broke, the peer broke the protocol or stopped answering pings.
    #[error("protocol: {0}")]
    Protocol(String),
}

impl WsError {
    /// A short name for the `error` tag of `ws_errors`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Denied(_) => "denied",
            Self::Invalid(_) => "invalid",
            Self::Connect(_) => "connect",
            Self::Closed(..) => "closed",
            Self::Protocol(_) => "protocol",
        }
    }
}

/// What the plugin asks the socket's task to do.
enum Command {
    /// Write a message; the reply says whether it was written.
    Send(tokio_tungstenite::tungstenite::Message, Reply),
    /// Close with this code and reason, wait (briefly) for the peer's close.
    Close(u16, String, Reply),
}

type Reply = oneshot::Sender<Result<(), WsError>>;

/// An open WebSocket held by the host for a plugin.
pub struct Socket {
    commands: mpsc::Sender<Command>,
    incoming: mpsc::Receiver<WsMessage>,
    held: Arc<held::Held>,
    session: Arc<Session>,
    /// `[websocket] max_message`, for sends too: a message waits in the host (encoded,
    /// then in the write buffer) outside the plugin's memory cap.
    max_message: usize,
}

impl WsMessage {
    /// Payload bytes.
    pub fn len(&self) -> usize {
        match self {
            Self::Text(t) => t.len(),
            Self::Binary(b) => b.len(),
        }
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A byte count for messages: `16 MiB`, `512 KiB`, `100 B`.
pub(crate) fn format_size(bytes: usize) -> String {
    let text = format!("{:.1}", bytesize::ByteSize(bytes as u64).display().iec());
    text.replace(".0 ", " ")
}

impl Socket {
    /// Sends a text message.
    pub async fn send_text(&mut self, text: String) -> Result<(), WsError> {
        self.check_size(text.len())?;
        let message = tokio_tungstenite::tungstenite::Message::Text(text.into());
        self.request(|reply| Command::Send(message, reply)).await
    }

    /// Sends a binary message.
    pub async fn send_binary(&mut self, data: Vec<u8>) -> Result<(), WsError> {
        self.check_size(data.len())?;
        let message = tokio_tungstenite::tungstenite::Message::Binary(data.into());
        self.request(|reply| Command::Send(message, reply)).await
    }

    fn check_size(&self, len: usize) -> Result<(), WsError> {
        if len > self.max_message {
            return Err(WsError::Invalid(format!(
                "a message of {} is larger than [websocket] max_message = {}; raise \
                 max_message to send it",
                format_size(len),
                format_size(self.max_message)
            )));
        }
        Ok(())
    }

    /// The next message, waiting up to `timeout` (`Duration::ZERO`: only what has
    /// already arrived); `None` when nothing came in time. Messages that arrived before
    /// the socket ended are delivered first, then the reason it ended.
    pub async fn recv(&mut self, timeout: Duration) -> Result<Option<WsMessage>, WsError> {
        let next = if timeout.is_zero() {
            match self.incoming.try_recv() {
                Ok(message) => Some(message),
                Err(mpsc::error::TryRecvError::Empty) => return Ok(None),
                Err(mpsc::error::TryRecvError::Disconnected) => None,
            }
        } else {
            match tokio::time::timeout(timeout, self.incoming.recv()).await {
                Ok(next) => next,
                Err(_elapsed) => return Ok(None),
            }
        };
        if let Some(message) = &next {
            self.held.take(message.len());
        }
        next.map(Some).ok_or_else(|| self.session.end_error())
    }

    /// Closes the socket with `code` and `reason` and waits briefly for the peer's
    /// close frame. Closing an already ended socket reports why it ended.
    pub async fn close(&mut self, code: u16, reason: String) -> Result<(), WsError> {
        let allowed =
            tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::from(code)
                .is_allowed();
        if !allowed || code < 1000 {
            return Err(WsError::Invalid(format!(
                "close code {code} may not be sent; use 1000 (normal) or 3000-4999"
            )));
        }
        if reason.len() > 123 {
            return Err(WsError::Invalid(
                "a close reason may be at most 123 bytes".into(),
            ));
        }
        self.request(|reply| Command::Close(code, reason, reply))
            .await
    }

    async fn request(&mut self, command: impl FnOnce(Reply) -> Command) -> Result<(), WsError> {
        let (reply, answer) = oneshot::channel();
        if self.commands.send(command(reply)).await.is_err() {
            return Err(self.session.end_error());
        }
        match answer.await {
            Ok(result) => result,
            Err(_) => Err(self.session.end_error()),
        }
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // The session ends for the metrics now, when its VU lets go of it; the task
        // still says goodbye to the peer in the background.
        self.session.finish(session::Ending::Dropped);
    }
}
