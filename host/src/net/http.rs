//! The host side of `http.send`: a per-VU keep-alive connection pool on hyper's
//! connection API (each VU owns its connections, as each k6 VU does, so no lock is
//! shared between VUs), per-request timeout, bounded bodies, and k6's timing phases.
//!
//! This file is the client and its pool; `message` holds what goes in and out,
//! `exchange` one request on the wire, `record` its metrics.

mod exchange;
mod message;
mod record;

pub use message::{HttpError, HttpRequest, HttpResponse, ResponseContent, Timings};

use super::allowlist::Origin;
use super::connect::Connection;
use super::redirect;
use super::request_tags::{RequestTags, Slot};
use super::targets::{PoolKey, Target, Targets};
use super::NetShared;
use crate::deadline::Deadline;
use crate::metrics::{builtin, TagSet};
use bytes::Bytes;
use exchange::execute;
use http_body_util::Full;
use record::Ended;
use rustc_hash::FxHashMap;
use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Idle connections kept per origin and VU (browsers keep six).
const MAX_IDLE_PER_ORIGIN: usize = 6;

/// One VU's HTTP client.
pub struct HttpClient {
    shared: Arc<NetShared>,
    idle: FxHashMap<PoolKey, Vec<Connection>>,
    tags: RequestTags,
    targets: Targets,
    /// The timeout timer of single requests (a batch's requests each get their own).
    deadline: Deadline,
}

/// A request checked and ready to go on the wire.
struct Prepared {
    target: Arc<Target>,
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
        Self {
            shared,
            idle: FxHashMap::default(),
            tags: RequestTags::new(),
            targets: Targets::default(),
            deadline: Deadline::default(),
        }
    }

    /// Sends one request; `tags` are the VU's base tags (scenario, ...). Redirects are
    /// followed hop by hop, each hop a request of its own.
    pub async fn send(
        &mut self,
        mut req: HttpRequest,
        tags: &TagSet,
    ) -> Result<HttpResponse, HttpError> {
        let mut hops = 0;
        loop {
            let (result, ended) = self.send_once(&req, tags).await;
            let response = match result {
                Ok(response) => response,
                Err(e) => {
                    self.record(&ended, Err(&e));
                    return Err(e);
                }
            };
            match self.follow(&req, &response, hops, tags) {
                Ok(Some(next)) => {
                    self.record(&ended, Ok(&response));
                    req = next;
                    hops += 1;
                }
                Ok(None) => {
                    self.record(&ended, Ok(&response));
                    return Ok(response);
                }
                Err(e) => {
                    // The plugin gets an error, so the hop that led to it is no success.
                    self.record(&ended, Err(&e));
                    return Err(e);
                }
            }
        }
    }

    /// The next hop if `response` redirects and it may be followed; an error if its
    /// target is invalid or denied. Past the redirect limit the redirect itself is the
    /// answer, with a warning (as k6 does): a loop would otherwise pass unnoticed.
    fn follow(
        &mut self,
        req: &HttpRequest,
        response: &HttpResponse,
        hops: u32,
        tags: &TagSet,
    ) -> Result<Option<HttpRequest>, HttpError> {
        let Some(next) = redirect::next_hop(req, response) else {
            return Ok(None);
        };
        if hops >= self.shared.max_redirects {
            // A limit of 0 means "do not follow", not a loop.
            if self.shared.max_redirects > 0 {
                self.shared
                    .redirect_limit_reached(&req.url, response.status);
            }
            return Ok(None);
        }
        let next = next?;
        self.target(&next.url, tags)?;
        Ok(Some(next))
    }

    /// Sends one request without following redirects; the caller records it.
    async fn send_once(
        &mut self,
        req: &HttpRequest,
        tags: &TagSet,
    ) -> (Result<HttpResponse, HttpError>, Ended) {
        let prepared = match self.prepare(req, tags) {
            Ok(p) => p,
            Err(e) => return (Err(e), Ended::NotRecorded),
        };
        let conn = self.checkout(&prepared.target.pool_key);
        let meta = prepared.clone_meta();
        let deadline = self.deadline.at(Instant::now() + prepared.timeout);
        let (result, conn, io, sent_at) =
            execute(&self.shared, &meta, prepared, conn, deadline).await;
        if let Some((key, conn)) = conn {
            self.checkin(key, conn);
        }
        (result, Ended::Request { meta, io, sent_at })
    }

    /// Sends requests in parallel, each on its own connection; results in order.
    /// Redirects are then followed one request at a time.
    pub async fn send_batch(
        &mut self,
        reqs: Vec<HttpRequest>,
        tags: &TagSet,
    ) -> Vec<Result<HttpResponse, HttpError>> {
        let mut slots: Vec<Option<(Result<HttpResponse, HttpError>, Ended)>> =
            Vec::with_capacity(reqs.len());
        let mut work = Vec::new();
        for (i, req) in reqs.iter().enumerate() {
            match self.prepare(req, tags) {
                Ok(p) => {
                    let conn = self.checkout(&p.target.pool_key);
                    work.push((i, p, conn));
                    slots.push(None);
                }
                Err(e) => slots.push(Some((Err(e), Ended::NotRecorded))),
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
        for (i, meta, (result, conn, io, sent_at)) in futures::future::join_all(futures).await {
            if let Some((key, conn)) = conn {
                self.checkin(key, conn);
            }
            slots[i] = Some((result, Ended::Request { meta, io, sent_at }));
        }
        let mut results = Vec::with_capacity(slots.len());
        for (slot, req) in slots.into_iter().zip(reqs) {
            let (result, ended) = slot.expect("every slot filled");
            let response = match result {
                Ok(response) => response,
                Err(e) => {
                    self.record(&ended, Err(&e));
                    results.push(Err(e));
                    continue;
                }
            };
            results.push(match self.follow(&req, &response, 0, tags) {
                Ok(Some(next)) => {
                    self.record(&ended, Ok(&response));
                    self.send(next, tags).await
                }
                Ok(None) => {
                    self.record(&ended, Ok(&response));
                    Ok(response)
                }
                Err(e) => {
                    self.record(&ended, Err(&e));
                    Err(e)
                }
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
        let body = req.body.clone();
        let request = builder
            .body(Full::new(body))
            .map_err(|e| HttpError::Invalid(e.to_string()))?;
        let (slot, tags) = self
            .tags
            .request(base_tags, method.as_str(), &req.url, &req.tags);
        Ok(Prepared {
            target,
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
