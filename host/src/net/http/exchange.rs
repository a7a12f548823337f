//! One request on the wire: a connection from the pool or a new one, the request, the
//! response head and a bounded body, timed in k6's phases and cut off at the deadline;
//! a request dropped with its iteration is still counted, as `interrupted`.

use super::prepared::{Meta, Prepared};
use super::record::{record, Outcome};
use super::route::Route;
use crate::net::connect::{connect, connect_h3, Connection, SendError};
use crate::net::targets::PoolKey;
use crate::net::types::{HttpError, HttpResponse, IoBytes, ResponseContent, Timings};
use crate::net::NetShared;
use std::pin::Pin;
use std::time::Instant;
use tokio::time::Sleep;

/// Follows one request from its start to its end. It is `sent` once written to a
/// connection (counted in `http_reqs_sent` and in flight from then on). If its future is
/// dropped before the end, because its iteration was interrupted (iteration timeout,
/// graceful stop, a stop of the run), the drop records it as a failed request of kind
/// `interrupted`, with its duration so far: else it would vanish from the counts, and
/// `sent = received + failed + in flight` would not hold.
struct Tracker<'a> {
    shared: &'a NetShared,
    meta: &'a Meta,
    sent_at: std::sync::OnceLock<Instant>,
    ended: bool,
}

impl<'a> Tracker<'a> {
    fn new(shared: &'a NetShared, meta: &'a Meta) -> Self {
        Self {
            shared,
            meta,
            sent_at: std::sync::OnceLock::new(),
            ended: false,
        }
    }

    /// The request is about to be written to a ready connection.
    fn sent(&self) {
        if self.sent_at.set(Instant::now()).is_ok() {
            self.shared.in_flight.add(1);
            self.shared
                .recorder
                .with_shard(|s| s.http_sent(&self.meta.tags));
        }
    }

    /// The request ended (the caller records it); when it was sent, if it was.
    fn end(mut self) -> Option<Instant> {
        self.ended = true;
        let sent_at = self.sent_at.get().copied();
        if sent_at.is_some() {
            self.shared.in_flight.sub(1);
        }
        sent_at
    }
}

impl Drop for Tracker<'_> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let sent_at = self.sent_at.get().copied();
        if sent_at.is_some() {
            self.shared.in_flight.sub(1);
        }
        let outcome = Outcome::Interrupted {
            meta: self.meta,
            sent_at,
        };
        record(self.shared, None, outcome);
    }
}

/// What came of one request on the wire, for the client to pool and record.
pub(super) struct Exchange {
    /// The response, or why it failed.
    pub(super) result: Result<HttpResponse, HttpError>,
    /// The connection to pool again, if it can take another request.
    pub(super) conn: Option<(PoolKey, Connection)>,
    /// The request's bytes on the wire.
    pub(super) io: IoBytes,
    /// When it was written, if it was.
    pub(super) sent_at: Option<Instant>,
}

/// What the exchange itself returns: the result, the connection if it is reusable,
/// the bytes.
type Exchanged = (Result<HttpResponse, HttpError>, Option<Connection>, IoBytes);

/// Sends a prepared request; the caller records it (it holds the VU's tag cache).
pub(super) async fn execute(
    shared: &NetShared,
    meta: &Meta,
    prepared: Prepared,
    conn: Option<Connection>,
    deadline: Pin<&mut Sleep>,
) -> Exchange {
    let key = prepared.pool_key.clone();
    let timeout = prepared.timeout;
    let quic_to = match &prepared.route {
        Route::H3(to) => Some(to.clone()),
        Route::Tcp(_) => None,
    };
    let tracker = Tracker::new(shared, meta);
    // The exchange's state (~1.5 KB) goes on the heap once: held inline, every async
    // layer above it would copy it again when it starts (memmove was 5 % of CPU).
    let outcome = tokio::select! {
        biased;
        r = Box::pin(exchange(shared, prepared, conn, &tracker)) => Some(r),
        _ = deadline => None,
    };
    let sent_at = tracker.end();
    let (result, conn, io) = match outcome {
        Some(r) => r,
        None => {
            let within = crate::config::format_duration(timeout);
            let message = match quic_to {
                // Nothing answered the QUIC handshake: most often no HTTP/3 server on
                // that UDP port, or a network that drops UDP.
                Some(to) if sent_at.is_none() => format!(
                    "QUIC connect timeout: no HTTP/3 handshake with {to} over UDP within \
                     {within} (is an HTTP/3 server listening on that UDP port? networks \
                     often drop UDP)"
                ),
                _ => format!("no complete response within {within}"),
            };
            (Err(HttpError::timeout(message)), None, IoBytes::default())
        }
    };
    Exchange {
        result,
        conn: conn.map(|c| (key, c)),
        io,
        sent_at,
    }
}

/// The exchange itself: connection, request, response, body.
async fn exchange(
    shared: &NetShared,
    prepared: Prepared,
    conn: Option<Connection>,
    tracker: &Tracker<'_>,
) -> Exchanged {
    let start = Instant::now();
    let mut timings = Timings::default();
    let mut conn = match conn {
        Some(c) => c,
        // Boxed: opening a connection (TCP, a TLS handshake, a QUIC endpoint) is the
        // largest state of an exchange, ~6 KB, and rare with keep-alive; held inline it
        // made every exchange that large, and `execute` copies the whole state into
        // its box per request (8.4 KB of memcpy a request under callgrind).
        None => match Box::pin(open(&prepared, shared)).await {
            Ok(c) => c,
            Err(e) => return (Err(e), None, IoBytes::default()),
        },
    };
    // A connection opened for this request, or for a batch and not used yet.
    if let Some(connect_timings) = conn.take_fresh() {
        timings.connecting = connect_timings.connecting;
        timings.tls_handshaking = connect_timings.tls_handshaking;
    }
    let mark = conn.io_mark();
    let ready = Instant::now();
    tracker.sent();
    timings.blocked = ready
        .duration_since(start)
        .saturating_sub(timings.connecting + timings.tls_handshaking);
    let debug = super::debug::mode();
    if debug != super::debug::Mode::Off {
        debug_request(&prepared.request, conn.proto(), debug).await;
    }
    let (head, mut body_stream) = match conn.send(prepared.request, &prepared.target.absolute).await
    {
        Ok(r) => r,
        Err(e) => {
            let io = conn.io_since(mark);
            return (Err(classify(&e, &conn, shared.http.max_headers)), None, io);
        }
    };
    let head_at = Instant::now();
    let written_at = conn
        .stats
        .last_write()
        .filter(|t| *t >= ready && *t <= head_at)
        .unwrap_or(ready);
    timings.sending = written_at.duration_since(ready);
    timings.waiting = head_at.duration_since(written_at);

    let status = head.status.as_u16();
    let proto = conn.proto();
    let headers = head.headers;
    // A body announced beyond the cap is refused from the header, not downloaded first.
    let announced = announced_length(&headers);
    if announced.is_some_and(|n| n > shared.max_body) {
        let io = conn.io_since(mark);
        return (Err(HttpError::body_too_large(shared.max_body)), None, io);
    }
    // The announced length is reserved at once: growing by doubling would copy the body
    // several times and leave up to twice its size allocated while the plugin holds
    // the response (a page's 40 assets per visitor add up).
    let mut body = match announced {
        Some(n) if !prepared.discard_body => Vec::with_capacity(n as usize),
        _ => Vec::new(),
    };
    let mut body_size = 0u64;
    let (max_body, discard) = (shared.max_body, prepared.discard_body);
    let mut too_large = false;
    let mut sink = |data: &[u8]| {
        body_size += data.len() as u64;
        if body_size > max_body {
            too_large = true;
            return false;
        }
        if !discard {
            body.extend_from_slice(data);
        }
        true
    };
    let read = conn.read_body(&mut body_stream, &mut sink).await;
    if let Err(e) = read {
        let io = conn.io_since(mark);
        return (Err(classify(&e, &conn, shared.http.max_headers)), None, io);
    }
    if too_large {
        let io = conn.io_since(mark);
        return (Err(HttpError::body_too_large(shared.max_body)), None, io);
    }
    timings.receiving = head_at.elapsed();
    if debug != super::debug::Mode::Off {
        let full = debug == super::debug::Mode::Full && !discard;
        super::debug::print(&super::debug::response_text(
            status,
            proto_text(proto),
            &headers,
            full.then_some(body.as_slice()),
        ));
    }
    let io = conn.io_since(mark);
    let response = HttpResponse {
        status,
        content: ResponseContent { headers, body },
        body_size,
        timings,
        proto,
        // Set by the client, which owns the request's URL.
        url: String::new(),
    };
    (Ok(response), Some(conn), io)
}

/// Prints a request for `--http-debug` (its body with `full`), in the version its
/// connection speaks.
async fn debug_request(
    request: &http::Request<http_body_util::Full<bytes::Bytes>>,
    proto: crate::net::types::Proto,
    mode: super::debug::Mode,
) {
    use http_body_util::BodyExt;
    let body = match mode {
        // A `Full` body is one frame already in memory: collecting it does not wait.
        super::debug::Mode::Full => request
            .body()
            .clone()
            .collect()
            .await
            .ok()
            .map(|c| c.to_bytes()),
        _ => None,
    };
    let version = match proto {
        crate::net::types::Proto::Http1 => http::Version::HTTP_11,
        crate::net::types::Proto::Http2 => http::Version::HTTP_2,
        crate::net::types::Proto::Http3 => http::Version::HTTP_3,
    };
    super::debug::print(&super::debug::request_text(
        request.method(),
        request.uri(),
        version,
        request.headers(),
        body.as_ref(),
    ));
}

/// `HTTP/1.1`, as a status line writes the protocol.
fn proto_text(proto: crate::net::types::Proto) -> &'static str {
    match proto {
        crate::net::types::Proto::Http1 => "HTTP/1.1",
        crate::net::types::Proto::Http2 => "HTTP/2.0",
        crate::net::types::Proto::Http3 => "HTTP/3.0",
    }
}

/// Opens the connection a request's route asks for: TCP (with TLS for https), or
/// HTTP/3 to its QUIC endpoint.
pub(super) async fn open(prepared: &Prepared, shared: &NetShared) -> Result<Connection, HttpError> {
    match &prepared.route {
        Route::Tcp(version) => {
            connect(&prepared.target.origin, *version, prepared.local_ip, shared).await
        }
        Route::H3(to) => connect_h3(&prepared.target.origin, to, prepared.local_ip, shared).await,
    }
}

/// The body length a response's `Content-Length` announces, if it has a valid one.
fn announced_length(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A TLS failure (such as a client certificate the server refused, which TLS 1.3
/// reports only at the first read) is a `tls` error; anything else a `protocol` one,
/// with its chain of causes. A response head too large for the parser names the
/// setting that lifts the limit.
fn classify(e: &SendError, conn: &Connection, max_headers: usize) -> HttpError {
    let e = match e {
        SendError::Classified(e) => return e.clone(),
        SendError::Lean(e) => return classify_lean(e, conn, max_headers),
        SendError::Hyper(e) => e,
    };
    if let Some(tls) = crate::net::tls::find(e) {
        return HttpError::tls(crate::net::tls::describe(tls));
    }
    if let Some(failure) = conn.tls_failure() {
        return HttpError::tls(failure.to_string());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    if e.is_parse_too_large() {
        text.push_str(&too_large_advice(max_headers));
    }
    HttpError::protocol(text)
}

/// [`classify`] for the lean client's errors, by the same rules: a TLS failure in the
/// transport's error or noted on the connection is `tls`, anything else `protocol`.
fn classify_lean(
    e: &crate::net::lean::LeanError,
    conn: &Connection,
    max_headers: usize,
) -> HttpError {
    if let Some(tls) = e.io_error().and_then(|io| crate::net::tls::find(io)) {
        return HttpError::tls(crate::net::tls::describe(tls));
    }
    if let Some(failure) = conn.tls_failure() {
        return HttpError::tls(failure.to_string());
    }
    let mut text = e.message().to_owned();
    if e.is_too_large() {
        text.push_str(&too_large_advice(max_headers));
    }
    HttpError::protocol(text)
}

/// What a head too large for the parser says about the limits.
fn too_large_advice(max_headers: usize) -> String {
    format!(
        " (more than {max_headers} header fields, or a head over the parser's buffer of \
         about 400 KiB; raise [http] max_headers to accept more fields)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of what `f` returns, without calling it.
    fn size_of_output<A, B, C, D, F>(_: impl FnOnce(A, B, C, D) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// `execute` boxes the exchange's state, copying all of it, once per request: it
    /// must not hold the rare, large states (opening a connection) inline again.
    #[test]
    fn an_exchange_keeps_opening_a_connection_out_of_its_state() {
        let exchange_size = size_of_output::<
            &'static NetShared,
            Prepared,
            Option<Connection>,
            &'static Tracker<'static>,
            _,
        >(exchange);
        let open_size =
            size_of_output::<&'static Prepared, &'static NetShared, (), (), _>(|p, s, (), ()| {
                open(p, s)
            });
        assert!(
            exchange_size < open_size,
            "the exchange's state is {exchange_size} bytes, opening a connection's \
             {open_size}: the exchange holds the opening inline again"
        );
        assert!(
            exchange_size <= 4096,
            "the exchange's state grew to {exchange_size} bytes (was under 4 KiB in a \
             debug build): `execute` copies all of it per request"
        );
        eprintln!("exchange {exchange_size} B, open {open_size} B");
    }
}
