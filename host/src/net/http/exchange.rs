//! One request on the wire: a connection from the pool or a new one, the request, the
//! response head and a bounded body, timed in k6's phases and cut off at the deadline.

use super::{HttpError, HttpResponse, Meta, Prepared, ResponseContent, Timings};
use crate::metrics::builtin;
use crate::net::connect::{connect, Connection};
use crate::net::targets::PoolKey;
use crate::net::NetShared;
use http_body_util::BodyExt;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;
use tokio::time::Sleep;

/// Counts a request as in flight until it ends, or until its future is dropped because
/// its iteration was interrupted (else `http_reqs_in_flight` would keep it forever).
struct InFlight<'a>(&'a AtomicI64);

impl<'a> InFlight<'a> {
    fn new(counter: &'a AtomicI64) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        Self(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Sends a prepared request; the caller records it (it holds the VU's tag cache).
pub(super) async fn execute(
    shared: &NetShared,
    meta: &Meta,
    prepared: Prepared,
    conn: Option<Connection>,
    deadline: Pin<&mut Sleep>,
) -> (
    Result<HttpResponse, HttpError>,
    Option<(PoolKey, Connection)>,
    (u64, u64),
) {
    let key = prepared.target.pool_key.clone();
    let timeout = prepared.timeout;
    let in_flight = InFlight::new(&shared.in_flight);
    shared
        .recorder
        .count(builtin::HTTP_REQS_SENT, &meta.tags, 1.0);
    // The exchange's state (~1.5 KB) goes on the heap once: held inline, every async
    // layer above it would copy it again when it starts (memmove was 5 % of CPU).
    let outcome = tokio::select! {
        biased;
        r = Box::pin(exchange(shared, prepared, conn)) => Some(r),
        _ = deadline => None,
    };
    drop(in_flight);
    let (result, conn, io) = match outcome {
        Some(r) => r,
        None => (
            Err(HttpError::Timeout(format!(
                "no complete response within {}",
                crate::config::format_duration(timeout)
            ))),
            None,
            (0, 0),
        ),
    };
    (result, conn.map(|c| (key, c)), io)
}

/// The exchange itself: connection, request, response, body.
async fn exchange(
    shared: &NetShared,
    prepared: Prepared,
    conn: Option<Connection>,
) -> (
    Result<HttpResponse, HttpError>,
    Option<Connection>,
    (u64, u64),
) {
    let start = Instant::now();
    let mut timings = Timings::default();
    let mut conn = match conn {
        Some(c) => c,
        None => match connect(&prepared.target.origin).await {
            Ok((c, connect_timings)) => {
                timings.connecting = connect_timings.connecting;
                timings.tls_handshaking = connect_timings.tls_handshaking;
                c
            }
            Err(e) => return (Err(e), None, (0, 0)),
        },
    };
    let (sent0, recv0) = (conn.stats.sent(), conn.stats.received());
    let ready = Instant::now();
    timings.blocked = ready
        .duration_since(start)
        .saturating_sub(timings.connecting + timings.tls_handshaking);
    let response = match conn.send(prepared.request).await {
        Ok(r) => r,
        Err(e) => {
            let io = (conn.stats.sent() - sent0, conn.stats.received() - recv0);
            return (Err(classify(&e)), None, io);
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

    let status = response.status().as_u16();
    let (head, mut body_stream) = response.into_parts();
    let headers = head.headers;
    let mut body = Vec::new();
    let mut body_size = 0u64;
    while let Some(frame) = body_stream.frame().await {
        let frame = match frame {
            Ok(f) => f,
            Err(e) => {
                let io = (conn.stats.sent() - sent0, conn.stats.received() - recv0);
                return (Err(classify(&e)), None, io);
            }
        };
        if let Ok(data) = frame.into_data() {
            body_size += data.len() as u64;
            if body_size > shared.max_body {
                let io = (conn.stats.sent() - sent0, conn.stats.received() - recv0);
                return (Err(HttpError::BodyTooLarge(shared.max_body)), None, io);
            }
            if !prepared.discard_body {
                body.extend_from_slice(&data);
            }
        }
    }
    timings.receiving = head_at.elapsed();
    let io = (conn.stats.sent() - sent0, conn.stats.received() - recv0);
    let response = HttpResponse {
        status,
        content: ResponseContent { headers, body },
        body_size,
        timings,
    };
    (Ok(response), Some(conn), io)
}

fn classify(e: &hyper::Error) -> HttpError {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    HttpError::Protocol(text)
}
