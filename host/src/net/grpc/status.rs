//! What a call ends with: its status (code, message, headers, trailers), the typed
//! errors the plugin sees, and the per-call options.

use http::HeaderMap;

/// gRPC status codes the host itself produces.
pub(crate) mod code {
    /// OK.
    pub(crate) const OK: u32 = 0;
    /// DEADLINE_EXCEEDED.
    pub(crate) const DEADLINE_EXCEEDED: u32 = 4;
    /// UNIMPLEMENTED (a server without reflection answers it).
    pub(crate) const UNIMPLEMENTED: u32 = 12;
    /// INTERNAL: what clients report for a broken protocol.
    pub(crate) const INTERNAL: u32 = 13;
    /// UNAVAILABLE: what clients report when the connection cannot be made.
    pub(crate) const UNAVAILABLE: u32 = 14;
    /// CANCELLED.
    pub(crate) const CANCELLED: u32 = 1;
}

/// The end of a call: the status and the metadata that came with it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallStatus {
    /// The gRPC status code.
    pub code: u32,
    /// `grpc-message`, percent-decoded.
    pub message: String,
    /// Response header fields.
    pub headers: Vec<(String, String)>,
    /// Trailer fields.
    pub trailers: Vec<(String, String)>,
}

/// Why a call failed; mirrors the WIT `grpc-error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrpcError {
    /// Not allowed by the run's allowlist; nothing was sent.
    #[error("denied: {0}")]
    Denied(String),
    /// A malformed target, method, metadata or message, or a proto that does not compile.
    #[error("invalid: {0}")]
    Invalid(String),
    /// The connection could not be made.
    #[error("connect: {0}")]
    Connect(String),
    /// The TLS handshake failed.
    #[error("tls: {0}")]
    Tls(String),
    /// The deadline passed.
    #[error("deadline: {0}")]
    Deadline(String),
    /// The server answered a status that is neither OK nor expected.
    #[error("status {}: {}", .0.code, .0.message)]
    Status(Box<CallStatus>),
    /// The peer broke HTTP/2 or gRPC framing, or reset the stream.
    #[error("protocol: {0}")]
    Protocol(String),
}

impl GrpcError {
    /// A short name for the `error` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Denied(_) => "denied",
            Self::Invalid(_) => "invalid",
            Self::Connect(_) => "connect",
            Self::Tls(_) => "tls",
            Self::Deadline(_) => "deadline",
            Self::Status(_) => "status",
            Self::Protocol(_) => "protocol",
        }
    }

    /// The status code a gRPC client reports for this failure (the `status` tag).
    pub fn code(&self) -> u32 {
        match self {
            Self::Status(s) => s.code,
            Self::Deadline(_) => code::DEADLINE_EXCEEDED,
            Self::Connect(_) | Self::Tls(_) | Self::Denied(_) => code::UNAVAILABLE,
            Self::Invalid(_) | Self::Protocol(_) => code::INTERNAL,
        }
    }

    /// From an error of the host's HTTP connect code.
    pub(super) fn from_http(e: crate::net::HttpError) -> Self {
        use crate::net::types::HttpErrorKind as K;
        match e.kind() {
            K::Denied => Self::Denied(e.into_message()),
            K::Invalid => Self::Invalid(e.into_message()),
            K::Tls => Self::Tls(e.into_message()),
            K::Timeout | K::Connect => Self::Connect(e.into_message()),
            K::Protocol | K::BodyTooLarge(_) => Self::Protocol(e.to_string()),
        }
    }
}

/// Per-call options.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Metadata sent as header fields.
    pub metadata: Vec<(String, String)>,
    /// The deadline.
    pub timeout: Option<std::time::Duration>,
    /// Tags of the call's metrics.
    pub tags: Vec<(String, String)>,
    /// Non-OK codes that count as expected.
    pub expected_codes: Vec<u32>,
}

impl CallOptions {
    /// Whether a call that ended with `code` passed.
    pub fn expected(&self, code: u32) -> bool {
        code == code::OK || self.expected_codes.contains(&code)
    }
}

/// The status in `fields` (trailers, or the headers of a trailers-only answer), if
/// `grpc-status` is there.
pub(super) fn from_fields(fields: &HeaderMap) -> Option<(u32, String)> {
    let code = fields
        .get("grpc-status")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let message = fields
        .get("grpc-message")
        .map(|v| percent_decode(v.as_bytes()))
        .unwrap_or_default();
    Some((code, message))
}

/// Header fields as name/value pairs (values that are not UTF-8 replaced lossily).
pub(super) fn pairs(fields: &HeaderMap) -> Vec<(String, String)> {
    fields
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// `grpc-message` is percent-encoded UTF-8 (the gRPC HTTP/2 spec).
fn percent_decode(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' && i + 2 < raw.len() {
            let hex = std::str::from_utf8(&raw[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_message_is_percent_decoded() {
        assert_eq!(percent_decode(b"bad%20name%3A%20x"), "bad name: x");
        assert_eq!(percent_decode(b"100%"), "100%");
        assert_eq!(percent_decode(b"%zz"), "%zz");
    }

    #[test]
    fn a_status_comes_from_trailers() {
        let mut t = HeaderMap::new();
        t.insert("grpc-status", "3".parse().unwrap());
        t.insert("grpc-message", "no%20name".parse().unwrap());
        assert_eq!(from_fields(&t), Some((3, "no name".into())));
        assert_eq!(from_fields(&HeaderMap::new()), None);
    }
}
