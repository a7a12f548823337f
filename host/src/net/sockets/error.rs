//! Why a socket call failed: a kind (the contract's `socket-error` case and the
//! `error` tag of `socket_errors`) and a message that says what to fix.

/// The kind of a socket failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SocketErrorKind {
    /// The allowlist refused the host:port; nothing was sent.
    Denied,
    /// A bad argument or a closed socket.
    Invalid,
    /// Nothing listens on the port.
    Refused,
    /// Resolution, reachability or the connect's timeout.
    Connect,
    /// The TLS handshake failed.
    Tls,
    /// Nothing, or not enough, arrived in time; or a write did not finish in time.
    Timeout,
    /// The peer closed before the read got what it asked for.
    Closed,
    /// The read or write passed the host's bound.
    TooLarge,
    /// The connection broke.
    Io,
}

impl SocketErrorKind {
    /// The `error` tag of `socket_errors`.
    pub(crate) fn tag(self) -> &'static str {
        match self {
            Self::Denied => "denied",
            Self::Invalid => "invalid",
            Self::Refused => "refused",
            Self::Connect => "connect",
            Self::Tls => "tls",
            Self::Timeout => "timeout",
            Self::Closed => "closed",
            Self::TooLarge => "too_large",
            Self::Io => "io",
        }
    }
}

/// A socket failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct SocketError {
    /// Its kind.
    pub kind: SocketErrorKind,
    /// What happened, naming the socket.
    pub message: String,
}

impl SocketError {
    /// A failure of `kind`.
    pub(crate) fn new(kind: SocketErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// An `invalid` failure.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(SocketErrorKind::Invalid, message)
    }

    /// The failure of an I/O call on the socket `name`: a refusal, a reset, a
    /// closed peer or another break, by the error's kind.
    pub(crate) fn io(name: &str, e: &std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        let kind = match e.kind() {
            K::ConnectionRefused => SocketErrorKind::Refused,
            K::UnexpectedEof => SocketErrorKind::Closed,
            K::TimedOut => SocketErrorKind::Timeout,
            K::HostUnreachable | K::NetworkUnreachable | K::AddrNotAvailable => {
                SocketErrorKind::Connect
            }
            _ => SocketErrorKind::Io,
        };
        Self::new(kind, format!("{name}: {e}"))
    }
}
