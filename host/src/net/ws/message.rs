//! What a WebSocket carries and how its operations fail: the leaf types of `ws`.

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
