//! The leaf types of `net`: what goes into and comes out of an HTTP exchange (the
//! request as the plugin asked for it, the response with its timing phases, why a
//! request failed, the protocol it went over) and how a request ended, for its one
//! record. This module imports nothing of `net`, so every file of `net` may import it.

use crate::metrics::{builtin, Shard, TagSet};
use bytes::Bytes;
use std::time::Duration;

/// An HTTP request as the plugin asked for it.
#[derive(Debug, Clone, Default)]
pub struct HttpRequest {
    /// Method, upper case.
    pub method: String,
    /// Absolute URL.
    pub url: String,
    /// Header fields.
    pub headers: Vec<(String, String)>,
    /// Body (empty for none); `Bytes` so redirects and retries share it without copies.
    pub body: Bytes,
    /// Timeout; the run's default when `None`.
    pub timeout: Option<Duration>,
    /// Tags for the request's metrics.
    pub tags: Vec<(String, String)>,
    /// Count but do not keep the body.
    pub discard_body: bool,
    /// Inclusive status ranges that count as expected; 200-399 when `None`.
    pub expected_statuses: Option<Vec<(u16, u16)>>,
    /// Redirects to follow; the run's `max_redirects` when `None`.
    pub redirects: Option<u32>,
    /// Leave the VU's cookie jar out of this request.
    pub no_cookie_jar: bool,
    /// The HTTP version the plugin asked for (contract 0.3.4), for every hop; `None`:
    /// as `[http] versions` chooses.
    pub version: Option<Proto>,
}

/// Phases of a request, as k6 names them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    /// Waiting for a connection (pool, name resolution).
    pub blocked: Duration,
    /// TCP connect.
    pub connecting: Duration,
    /// TLS handshake.
    pub tls_handshaking: Duration,
    /// Writing the request.
    pub sending: Duration,
    /// From the end of writing to the response head.
    pub waiting: Duration,
    /// Reading the body.
    pub receiving: Duration,
}

impl Timings {
    /// sending + waiting + receiving (k6's `http_req_duration`).
    pub fn duration(&self) -> Duration {
        self.sending + self.waiting + self.receiving
    }
}

/// A response.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Header fields and body, converted for the plugin only if it asks.
    pub content: ResponseContent,
    /// Body bytes received.
    pub body_size: u64,
    /// Phases.
    pub timings: Timings,
    /// The protocol it came over (the `proto` tag).
    pub proto: Proto,
    /// The URL it came from (the last hop's after redirects).
    pub url: String,
}

/// A response's header fields and body, held in the VU's resource table until the
/// plugin asks for them (the WIT `response-content`), so a plugin that reads only the
/// status pays for no conversion and no copy into its memory.
#[derive(Debug, Clone, Default)]
pub struct ResponseContent {
    /// Header fields as hyper parsed them.
    pub headers: http::HeaderMap,
    /// The body, empty when discarded.
    pub body: Vec<u8>,
}

impl ResponseContent {
    /// The first value of `name` (any case), lossily decoded.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).map(lossy)
    }

    /// Every field in hyper's order: names grouped in the order first received.
    pub fn fields(&self) -> Vec<(String, String)> {
        self.headers
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), lossy(v)))
            .collect()
    }
}

fn lossy(value: &http::HeaderValue) -> String {
    String::from_utf8_lossy(value.as_bytes()).into_owned()
}

/// What kind of failure a request met: the cases of the WIT `http-error`, and the
/// value of the `error` tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpErrorKind {
    /// Not allowed by the run's allowlist; nothing was sent.
    Denied,
    /// Bad URL, method or header.
    Invalid,
    /// Connection could not be made.
    Connect,
    /// The request took longer than its timeout.
    Timeout,
    /// TLS failed.
    Tls,
    /// The peer broke the protocol or the connection.
    Protocol,
    /// The body was larger than the cap (`[limits] max_body_mb`), in bytes.
    BodyTooLarge(u64),
}

impl HttpErrorKind {
    /// Its name in the `error` tag.
    pub fn tag(self) -> &'static str {
        match self {
            Self::Denied => "denied",
            Self::Invalid => "invalid",
            Self::Connect => "connect",
            Self::Timeout => "timeout",
            Self::Tls => "tls",
            Self::Protocol => "protocol",
            Self::BodyTooLarge(_) => "body_too_large",
        }
    }
}

/// Why a request failed: its kind, and what happened in words. The plugin gets it as
/// the WIT `http-error` (`plugin::imports::http` maps one onto the other).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    kind: HttpErrorKind,
    message: String,
}

impl HttpError {
    fn new(kind: HttpErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// Not allowed by the run's allowlist (`why`).
    pub fn denied(why: impl Into<String>) -> Self {
        Self::new(HttpErrorKind::Denied, why)
    }

    /// A bad URL, method or header.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(HttpErrorKind::Invalid, message)
    }

    /// The connection could not be made.
    pub fn connect(message: impl Into<String>) -> Self {
        Self::new(HttpErrorKind::Connect, message)
    }

    /// The request took longer than its timeout.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(HttpErrorKind::Timeout, message)
    }

    /// TLS failed.
    pub fn tls(message: impl Into<String>) -> Self {
        Self::new(HttpErrorKind::Tls, message)
    }

    /// The peer broke the protocol or the connection.
    pub fn protocol(message: impl Into<String>) -> Self {
        Self::new(HttpErrorKind::Protocol, message)
    }

    /// The body was larger than `cap` bytes.
    pub fn body_too_large(cap: u64) -> Self {
        Self::new(HttpErrorKind::BodyTooLarge(cap), String::new())
    }

    /// Its kind.
    pub fn kind(&self) -> HttpErrorKind {
        self.kind
    }

    /// What happened, without the kind (empty for a body too large: the cap says it).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message, taken out.
    pub fn into_message(self) -> String {
        self.message
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let label = match self.kind {
            HttpErrorKind::BodyTooLarge(cap) => {
                return write!(
                    f,
                    "response body larger than {cap} bytes, the cap set by [limits] \
                     max_body_mb; raise it to accept larger bodies"
                )
            }
            HttpErrorKind::Invalid => "invalid request",
            kind => kind.tag(),
        };
        write!(f, "{label}: {}", self.message)
    }
}

impl std::error::Error for HttpError {}

/// The protocol of a connection, as the `proto` tag names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// `HTTP/1.1`.
    Http1,
    /// `HTTP/2`.
    Http2,
    /// `HTTP/3`.
    Http3,
}

impl Proto {
    /// The tag's value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Http1 => "HTTP/1.1",
            Self::Http2 => "HTTP/2",
            Self::Http3 => "HTTP/3",
        }
    }

    /// Whether one connection carries concurrent requests (HTTP/2 and HTTP/3), so the
    /// pool keeps one per origin and hands out handles on it.
    pub fn multiplexed(self) -> bool {
        self != Self::Http1
    }

    /// Every protocol, in the summary's order.
    pub const ALL: [Proto; 3] = [Self::Http1, Self::Http2, Self::Http3];
}

/// Time spent opening a connection.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ConnectTimings {
    /// TCP connect.
    pub connecting: Duration,
    /// TLS handshake.
    pub tls_handshaking: Duration,
}

/// The bytes a request or a connection put on the wire and took off it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct IoBytes {
    /// Bytes written.
    pub sent: u64,
    /// Bytes read.
    pub received: u64,
}

impl IoBytes {
    /// Adds them to `data_sent` and `data_received` under `tags` (WebSockets, gRPC;
    /// an HTTP request's bytes are part of its fused record).
    pub(crate) fn record(self, s: &mut Shard, tags: &TagSet) {
        if self.sent > 0 {
            s.count(builtin::DATA_SENT, tags, self.sent as f64);
        }
        if self.received > 0 {
            s.count(builtin::DATA_RECEIVED, tags, self.received as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_content_reads_headers_in_any_case_and_lossily() {
        let mut headers = http::HeaderMap::new();
        headers.insert("content-type", "text/plain".parse().unwrap());
        headers.append("set-cookie", "a=1".parse().unwrap());
        headers.append("set-cookie", "b=2".parse().unwrap());
        headers.insert("x-raw", http::HeaderValue::from_bytes(b"caf\xe9").unwrap());
        let content = ResponseContent {
            headers,
            body: b"hi".to_vec(),
        };
        assert_eq!(
            content.header("Content-Type").as_deref(),
            Some("text/plain")
        );
        assert_eq!(content.header("SET-COOKIE").as_deref(), Some("a=1"));
        assert_eq!(content.header("x-raw").as_deref(), Some("caf\u{fffd}"));
        assert_eq!(content.header("etag"), None);
        assert_eq!(content.header("not a header name"), None);
        let fields = content.fields();
        assert_eq!(fields.len(), 4);
        assert_eq!(fields[0], ("content-type".into(), "text/plain".into()));
        assert_eq!(fields[1], ("set-cookie".into(), "a=1".into()));
        assert_eq!(fields[2], ("set-cookie".into(), "b=2".into()));
    }
}
