//! The host side of `http.send`: a per-VU keep-alive connection pool on hyper's
//! connection API (each VU owns its connections, as each k6 VU does, so no lock is
//! shared between VUs), per-request timeout, bounded bodies, and k6's timing phases.

use super::allowlist::{Allowlist, Origin};
use super::connect::{connect, Connection};
use super::cookies::CookieJar;
use super::redirect;
use super::request_tags::{RequestTags, Slot};
use super::targets::{PoolKey, Target, Targets};
use crate::deadline::Deadline;
use crate::metrics::{builtin, Recorder, TagSet};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rustc_hash::FxHashMap;
use std::net::IpAddr;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::time::Sleep;

/// Idle connections kept per origin and VU (browsers keep six).
const MAX_IDLE_PER_ORIGIN: usize = 6;

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

/// Why a request failed; mirrors the WIT `http-error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// Not allowed by the run's allowlist; nothing was sent.
    #[error("denied: {0}")]
    Denied(String),
    /// Bad URL, method or header.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// Connection could not be made.
    #[error("connect: {0}")]
    Connect(String),
    /// The request took longer than its timeout.
    #[error("timeout: {0}")]
    Timeout(String),
    /// TLS failed.
    #[error("tls: {0}")]
    Tls(String),
    /// The peer broke the protocol or the connection.
    #[error("protocol: {0}")]
    Protocol(String),
    /// The body was larger than the cap.
    #[error("response body larger than {0} bytes")]
    BodyTooLarge(u64),
}

impl HttpError {
    /// A short name for the `error` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Denied(_) => "denied",
            Self::Invalid(_) => "invalid",
            Self::Connect(_) => "connect",
            Self::Timeout(_) => "timeout",
            Self::Tls(_) => "tls",
            Self::Protocol(_) => "protocol",
            Self::BodyTooLarge(_) => "body_too_large",
        }
    }
}

/// What all VUs' clients share: policy, limits and counters. Read-only or atomic.
pub struct NetShared {
    /// Targets that may be reached.
    pub allowlist: Allowlist,
    /// Default request timeout.
    pub default_timeout: Duration,
    /// Body cap in bytes.
    pub max_body: u64,
    /// Where samples go.
    pub recorder: Arc<Recorder>,
    /// Requests sent and not yet completed.
    pub in_flight: AtomicI64,
    /// Redirects followed per request.
    pub max_redirects: u32,
    /// Denied origins already warned about (warned once each).
    pub denied_warned: std::sync::Mutex<std::collections::HashSet<String>>,
    /// How WebSockets are kept alive (`[websocket]`).
    pub websocket: crate::config::WebSocketOptions,
    /// WebSockets open now, over all VUs.
    pub ws_open: AtomicI64,
    /// Whether any WebSocket was opened in this run (its gauge is shown only then).
    pub ws_used: std::sync::atomic::AtomicBool,
    /// Redirects, cookies and source addresses (`[http]`).
    pub http: crate::config::HttpOptions,
}

impl NetShared {
    /// Shared state for a run.
    pub fn new(
        allowlist: Allowlist,
        default_timeout: Duration,
        max_body: u64,
        recorder: Arc<Recorder>,
    ) -> Self {
        Self {
            allowlist,
            default_timeout,
            max_body,
            recorder,
            in_flight: AtomicI64::new(0),
            max_redirects: super::redirect::DEFAULT_MAX_REDIRECTS,
            denied_warned: Default::default(),
            websocket: Default::default(),
            ws_open: AtomicI64::new(0),
            ws_used: Default::default(),
            http: Default::default(),
        }
    }

    /// The same, with the run's `[http]` options.
    pub fn with_http(mut self, options: crate::config::HttpOptions) -> Self {
        self.max_redirects = options.max_redirects;
        self.http = options;
        self
    }

    /// The same, with the run's WebSocket options.
    pub fn with_websocket(mut self, options: crate::config::WebSocketOptions) -> Self {
        self.websocket = options;
        self
    }
}

/// One VU's HTTP client.
pub struct HttpClient {
    shared: Arc<NetShared>,
    idle: FxHashMap<PoolKey, Vec<Connection>>,
    tags: RequestTags,
    targets: Targets,
    /// The timeout timer of single requests (a batch's requests each get their own).
    deadline: Deadline,
    /// The VU's cookies.
    jar: CookieJar,
    /// The source address of the VU's connections (`[http] local_ips`).
    local_ip: Option<IpAddr>,
}

/// A request checked and ready to go on the wire.
struct Prepared {
    target: Arc<Target>,
    local_ip: Option<IpAddr>,
    request: http::Request<Full<Bytes>>,
    timeout: Duration,
    discard_body: bool,
    expected: Option<Vec<(u16, u16)>>,
    tags: TagSet,
    slot: Slot,
}

impl HttpClient {
    /// A client with no connections yet.
    pub fn new(shared: Arc<NetShared>) -> Self {
        let jar = CookieJar::new(!shared.http.no_cookies_reset);
        Self {
            shared,
            idle: FxHashMap::default(),
            tags: RequestTags::new(),
            targets: Targets::default(),
            deadline: Deadline::default(),
            jar,
            local_ip: None,
        }
    }

    /// Binds the client's connections to the source address of VU `vu_id` when the run
    /// sets `[http] local_ips`.
    pub fn for_vu(mut self, vu_id: u64) -> Self {
        self.local_ip = self.shared.http.local_ip(vu_id);
        self
    }

    /// The VU's cookie jar.
    pub fn jar(&self) -> &CookieJar {
        &self.jar
    }

    /// The VU's cookie jar, to change.
    pub fn jar_mut(&mut self) -> &mut CookieJar {
        &mut self.jar
    }

    /// Sends one request, following redirects; `tags` are the VU's base tags.
    pub async fn send(
        &mut self,
        mut req: HttpRequest,
        tags: &TagSet,
    ) -> Result<HttpResponse, HttpError> {
        let limit = req.redirects.unwrap_or(self.shared.max_redirects);
        let mut hops = 0;
        loop {
            let mut response = self.send_once(&req, tags).await?;
            match redirect::next_hop(&req, &response) {
                Some(next) if hops < limit => {
                    req = next?;
                    hops += 1;
                }
                _ => {
                    response.url = req.url;
                    return Ok(response);
                }
            }
        }
    }

    /// Sends one request without following redirects.
    async fn send_once(
        &mut self,
        req: &HttpRequest,
        tags: &TagSet,
    ) -> Result<HttpResponse, HttpError> {
        let prepared = self.prepare(req, tags)?;
        let conn = self.checkout(&prepared.target.pool_key);
        let meta = prepared.clone_meta();
        let deadline = self.deadline.at(Instant::now() + prepared.timeout);
        let (result, conn, io) = execute(&self.shared, &meta, prepared, conn, deadline).await;
        if let Some((key, conn)) = conn {
            self.checkin(key, conn);
        }
        self.record(&meta, &result, io);
        if let Ok(response) = &result {
            self.keep_cookies(req, response);
        }
        result
    }

    /// Stores the response's cookies, unless the request left the jar out.
    fn keep_cookies(&mut self, req: &HttpRequest, response: &HttpResponse) {
        if !req.no_cookie_jar {
            self.jar.store_response(&req.url, &response.content.headers);
        }
    }

    /// Sends requests in parallel, each on its own connection; results in order.
    /// Redirects are then followed one request at a time.
    pub async fn send_batch(
        &mut self,
        reqs: Vec<HttpRequest>,
        tags: &TagSet,
    ) -> Vec<Result<HttpResponse, HttpError>> {
        let mut slots: Vec<Option<Result<HttpResponse, HttpError>>> =
            Vec::with_capacity(reqs.len());
        let mut work = Vec::new();
        for (i, req) in reqs.iter().enumerate() {
            match self.prepare(req, tags) {
                Ok(p) => {
                    let conn = self.checkout(&p.target.pool_key);
                    work.push((i, p, conn));
                    slots.push(None);
                }
                Err(e) => slots.push(Some(Err(e))),
            }
        }
        let shared = self.shared.clone();
        let futures = work.into_iter().map(|(i, p, conn)| {
            let shared = shared.clone();
            async move {
                let meta = p.clone_meta();
                let deadline = pin!(tokio::time::sleep(p.timeout));
                let outcome = execute(&shared, &meta, p, conn, deadline).await;
                (i, meta, outcome)
            }
        });
        for (i, meta, (result, conn, io)) in futures::future::join_all(futures).await {
            if let Some((key, conn)) = conn {
                self.checkin(key, conn);
            }
            self.record(&meta, &result, io);
            if let Ok(response) = &result {
                self.keep_cookies(&reqs[i], response);
            }
            slots[i] = Some(result);
        }
        let mut results = Vec::with_capacity(slots.len());
        for (slot, req) in slots.into_iter().zip(reqs) {
            let result = slot.expect("every slot filled");
            let limit = req.redirects.unwrap_or(self.shared.max_redirects);
            let next = match &result {
                Ok(response) if limit > 0 => redirect::next_hop(&req, response),
                _ => None,
            };
            results.push(match next {
                Some(Ok(mut next)) => {
                    // The first hop was the batch's own request.
                    next.redirects = Some(limit - 1);
                    self.send(next, tags).await
                }
                Some(Err(e)) => Err(e),
                None => result.map(|mut r| {
                    r.url = req.url;
                    r
                }),
            });
        }
        results
    }

    /// The parsed, allowed target of `url`, from the cache after its first request.
    fn target(&mut self, url: &str, base_tags: &TagSet) -> Result<Arc<Target>, HttpError> {
        if let Some(target) = self.targets.get(url) {
            return Ok(target);
        }
        let origin = Origin::parse(url).map_err(HttpError::Invalid)?;
        if origin.scheme != "http" && origin.scheme != "https" {
            return Err(HttpError::Invalid(format!(
                "{url}: HTTP requests need an http:// or https:// URL"
            )));
        }
        if let Err(why) = self.shared.allowlist.check(&origin) {
            self.shared
                .recorder
                .count(builtin::HTTP_REQS_DENIED, base_tags, 1.0);
            let mut warned = self
                .shared
                .denied_warned
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if warned.insert(origin.to_string()) {
                eprintln!("warning: plugin tried to reach {origin}: denied ({why})");
            }
            return Err(HttpError::Denied(why));
        }
        let target = Arc::new(Target::parse(url, origin).map_err(HttpError::Invalid)?);
        self.targets.insert(url, target.clone());
        Ok(target)
    }

    fn prepare(&mut self, req: &HttpRequest, base_tags: &TagSet) -> Result<Prepared, HttpError> {
        let target = self.target(&req.url, base_tags)?;
        let method = if req.method.bytes().any(|b| b.is_ascii_lowercase()) {
            http::Method::from_bytes(req.method.to_ascii_uppercase().as_bytes())
        } else {
            http::Method::from_bytes(req.method.as_bytes())
        }
        .map_err(|_| HttpError::Invalid(format!("invalid method {:?}", req.method)))?;
        let mut builder = http::Request::builder()
            .method(method.clone())
            .uri(target.path.clone());
        let mut has_host = false;
        for (name, value) in &req.headers {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| HttpError::Invalid(format!("invalid header name {name:?}")))?;
            let value = http::HeaderValue::from_str(value).map_err(|_| {
                HttpError::Invalid(format!(
                    "invalid value for header {name}: {value:?} (CR, LF and other control characters are not allowed)"
                ))
            })?;
            has_host |= name == http::header::HOST;
            builder = builder.header(name, value);
        }
        if !has_host {
            builder = builder.header(http::header::HOST, target.host_header.clone());
        }
        if !req.no_cookie_jar {
            if let Some(jar_cookies) = self.jar.header_for(&req.url) {
                builder = with_jar_cookies(builder, jar_cookies)?;
            }
        }
        let body = req.body.clone();
        let request = builder
            .body(Full::new(body))
            .map_err(|e| HttpError::Invalid(e.to_string()))?;
        let (slot, tags) = self
            .tags
            .request(base_tags, method.as_str(), &req.url, &req.tags);
        Ok(Prepared {
            target,
            local_ip: self.local_ip,
            request,
            timeout: req.timeout.unwrap_or(self.shared.default_timeout),
            discard_body: req.discard_body,
            expected: req.expected_statuses.clone(),
            tags,
            slot,
        })
    }

    fn checkout(&mut self, key: &PoolKey) -> Option<Connection> {
        let idle = self.idle.get_mut(key)?;
        while let Some(conn) = idle.pop() {
            if conn.is_usable() {
                return Some(conn);
            }
        }
        None
    }

    fn checkin(&mut self, key: PoolKey, conn: Connection) {
        let idle = self.idle.entry(key).or_default();
        if idle.len() < MAX_IDLE_PER_ORIGIN && conn.is_usable() {
            idle.push(conn);
        }
    }
}

/// What is needed to record a request after it is consumed.
struct Meta {
    tags: TagSet,
    slot: Slot,
    expected: Option<Vec<(u16, u16)>>,
}

impl Prepared {
    fn clone_meta(&self) -> Meta {
        Meta {
            tags: self.tags.clone(),
            slot: self.slot,
            expected: self.expected.clone(),
        }
    }
}

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
async fn execute(
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
        None => match connect(&prepared.target.origin, prepared.local_ip).await {
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
        // Set by the client, which owns the request's URL.
        url: String::new(),
    };
    (Ok(response), Some(conn), io)
}

/// Adds the jar's cookies to a request: into the plugin's own `Cookie` field if it set
/// one (its cookies win over the jar's of the same name, as in k6), else as the field.
fn with_jar_cookies(
    mut builder: http::request::Builder,
    jar_cookies: String,
) -> Result<http::request::Builder, HttpError> {
    let Some(headers) = builder.headers_mut() else {
        return Ok(builder);
    };
    let value = match headers.get(http::header::COOKIE) {
        None => jar_cookies,
        Some(own) => {
            let own = own.to_str().unwrap_or_default().to_owned();
            let names: Vec<&str> = own
                .split(';')
                .filter_map(|p| p.trim().split_once('=').map(|(n, _)| n))
                .collect();
            let mut merged = own.clone();
            for pair in jar_cookies.split("; ") {
                let name = pair.split_once('=').map_or(pair, |(n, _)| n);
                if !names.contains(&name) {
                    merged.push_str("; ");
                    merged.push_str(pair);
                }
            }
            merged
        }
    };
    let value = http::HeaderValue::from_str(&value)
        .map_err(|_| HttpError::Invalid(format!("invalid Cookie value {value:?}")))?;
    headers.insert(http::header::COOKIE, value);
    Ok(builder)
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

fn is_expected(status: u16, expected: &Option<Vec<(u16, u16)>>) -> bool {
    match expected {
        None => (200..=399).contains(&status),
        Some(ranges) => ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&status)),
    }
}

impl HttpClient {
    /// Records a finished request under its cached tag sets.
    fn record(&mut self, meta: &Meta, result: &Result<HttpResponse, HttpError>, io: (u64, u64)) {
        let us = |d: Duration| d.as_micros() as u64;
        let (status, expected) = match result {
            Ok(r) => (r.status, is_expected(r.status, &meta.expected)),
            Err(_) => (0, false),
        };
        let tags = self.tags.outcome(meta.slot, &meta.tags, status, expected);
        let err_tags = match result {
            Err(e) => Some(self.tags.error(meta.slot, &meta.tags, e.kind())),
            Ok(_) => None,
        };
        self.shared.recorder.with_shard(|s| {
            s.count(builtin::HTTP_REQS, &tags, 1.0);
            s.rate(builtin::HTTP_REQ_FAILED, &tags, !expected);
            s.count(builtin::DATA_SENT, &meta.tags, io.0 as f64);
            s.count(builtin::DATA_RECEIVED, &meta.tags, io.1 as f64);
            match result {
                Ok(r) => {
                    let t = &r.timings;
                    s.trend(builtin::HTTP_REQ_DURATION, &tags, us(t.duration()));
                    s.trend(builtin::HTTP_REQ_BLOCKED, &tags, us(t.blocked));
                    s.trend(builtin::HTTP_REQ_CONNECTING, &tags, us(t.connecting));
                    s.trend(
                        builtin::HTTP_REQ_TLS_HANDSHAKING,
                        &tags,
                        us(t.tls_handshaking),
                    );
                    s.trend(builtin::HTTP_REQ_SENDING, &tags, us(t.sending));
                    s.trend(builtin::HTTP_REQ_WAITING, &tags, us(t.waiting));
                    s.trend(builtin::HTTP_REQ_RECEIVING, &tags, us(t.receiving));
                }
                Err(_) => {
                    if let Some(err_tags) = &err_tags {
                        s.count(builtin::HTTP_REQ_ERRORS, err_tags, 1.0);
                    }
                }
            }
        });
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

    #[test]
    fn expected_statuses_default_to_2xx_3xx() {
        assert!(is_expected(200, &None));
        assert!(is_expected(304, &None));
        assert!(!is_expected(404, &None));
        assert!(is_expected(404, &Some(vec![(404, 404)])));
        assert!(!is_expected(200, &Some(vec![(404, 404)])));
    }
}
