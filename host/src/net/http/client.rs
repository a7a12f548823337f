//! One VU's HTTP client: sends a request (or a prepared one, or a batch), follows its
//! redirects hop by hop, and hands each hop's outcome to `record`, the one accounting
//! point. A request's way: `prepare` (target, allowlist, headers, tags, route) →
//! `pool::checkout` → `exchange::execute` → `pool::checkin` → `follow_through`
//! (cookies, `Alt-Svc`, the next hop) → `record::record`.

use super::exchange::{execute, open, Exchange};
use super::pool::{checkin, checkout, lock, BatchTurns};
use super::prepared::{Meta, Prepared, PreparedRequest, Template};
use super::record::{record, Outcome};
use super::redirect;
use super::route::{check_version, AltRoutes, Route};
use crate::deadline::Deadline;
use crate::metrics::TagSet;
use crate::net::allowlist::Origin;
use crate::net::connect::Connection;
use crate::net::cookies::CookieJar;
use crate::net::request_tags::{RequestTags, Slot};
use crate::net::targets::{PoolKey, Target, Targets};
use crate::net::types::{HttpError, HttpRequest, HttpResponse, IoBytes};
use crate::net::NetShared;
use http_body_util::Full;
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::net::IpAddr;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// A hop made and ended: what its record needs besides its result. `None` beside a
/// result: the hop was refused before it was made (denied, counted where refused; or
/// invalid, counted nowhere).
struct Made {
    meta: Meta,
    io: IoBytes,
    sent_at: Option<Instant>,
}

/// A hop's result and its record's needs.
type Hop = (Result<HttpResponse, HttpError>, Option<Made>);

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
    /// The HTTP/3 alternatives origins named in `Alt-Svc`, when `versions` lists `h3`
    /// after another version.
    alt_svc: AltRoutes,
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
            alt_svc: Default::default(),
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

    /// Records a hop that ended under the VU's cached tag sets; nothing for one refused
    /// before it was made (a denial was recorded when refused).
    fn record(&mut self, made: &Option<Made>, result: Result<&HttpResponse, &HttpError>) {
        let Some(made) = made else {
            return;
        };
        let outcome = Outcome::Ended {
            meta: &made.meta,
            io: made.io,
            sent_at: made.sent_at,
            result,
        };
        record(&self.shared, Some(&mut self.tags), outcome);
    }

    /// Stores the response's cookies, unless the request left the jar out.
    fn keep_cookies(&mut self, req: &HttpRequest, response: &HttpResponse) {
        if !req.no_cookie_jar {
            self.jar.store_response(&req.url, &response.content.headers);
        }
    }

    /// Sends one request; `tags` are the VU's base tags (scenario, ...). Redirects are
    /// followed hop by hop (up to the request's limit, else the run's), each hop a
    /// request of its own, and the cookies each hop sets are stored before the next.
    pub async fn send(
        &mut self,
        req: HttpRequest,
        tags: &TagSet,
    ) -> Result<HttpResponse, HttpError> {
        let first = self.send_once(&req, tags).await;
        self.follow_through(Cow::Owned(req), first, tags).await
    }

    /// Sends a prepared request, as [`send`](Self::send) sends the request it was
    /// prepared from: the jar's cookies of the moment, redirects, every record.
    pub async fn send_prepared(
        &mut self,
        prepared: &PreparedRequest,
        tags: &TagSet,
    ) -> Result<HttpResponse, HttpError> {
        let first = match self.ready_prepared(prepared, tags) {
            Ok(p) => self.execute_one(p).await,
            Err(e) => (Err(e), None),
        };
        self.follow_through(Cow::Borrowed(&prepared.request), first, tags)
            .await
    }

    /// Records the first hop's outcome and follows its redirects, recording each hop;
    /// the response of the last, with its URL (moved out of the request when owned).
    async fn follow_through(
        &mut self,
        first_req: Cow<'_, HttpRequest>,
        first: Hop,
        tags: &TagSet,
    ) -> Result<HttpResponse, HttpError> {
        let limit = first_req.redirects.unwrap_or(self.shared.max_redirects);
        let mut hops = 0;
        // The hop in progress when it is not the first (the first is borrowed).
        let mut hop: Option<HttpRequest> = None;
        let (mut result, mut ended) = first;
        loop {
            let req = hop.as_ref().unwrap_or(&first_req);
            let mut response = match result {
                Ok(response) => response,
                Err(e) => {
                    self.record(&ended, Err(&e));
                    return Err(e);
                }
            };
            self.keep_cookies(req, &response);
            self.alt_svc
                .learn(&self.shared, &self.targets, &req.url, &response);
            match self.follow(req, &response, hops, limit, tags) {
                Ok(Some(next)) => {
                    self.record(&ended, Ok(&response));
                    hops += 1;
                    (result, ended) = self.send_once(&next, tags).await;
                    hop = Some(next);
                }
                Ok(None) => {
                    self.record(&ended, Ok(&response));
                    response.url = match (hop, first_req) {
                        (Some(last), _) => last.url,
                        (None, Cow::Owned(first)) => first.url,
                        (None, Cow::Borrowed(first)) => first.url.clone(),
                    };
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
        limit: u32,
        tags: &TagSet,
    ) -> Result<Option<HttpRequest>, HttpError> {
        let Some(next) = redirect::next_hop(req, response) else {
            return Ok(None);
        };
        if hops >= limit {
            // A limit of 0 means "do not follow", not a loop.
            if limit > 0 {
                self.shared
                    .redirect_limit_reached(&req.url, response.status, limit);
            }
            return Ok(None);
        }
        let next = next?;
        self.target(&next.url, tags)?;
        Ok(Some(next))
    }

    /// Sends one request without following redirects; the caller records it.
    async fn send_once(&mut self, req: &HttpRequest, tags: &TagSet) -> Hop {
        match self.prepare(req, tags) {
            Ok(p) => self.execute_one(p).await,
            Err(e) => (Err(e), None),
        }
    }

    /// Sends a request made ready, without following redirects; the caller records it.
    async fn execute_one(&mut self, prepared: Prepared) -> Hop {
        let conn = checkout(&mut self.idle, &prepared.pool_key);
        let meta = prepared.clone_meta();
        let deadline = self.deadline.at(Instant::now() + prepared.timeout);
        let done = execute(&self.shared, &meta, prepared, conn, deadline).await;
        self.finish(meta, done)
    }

    /// Pools the connection of a hop that ended, and keeps what its record needs.
    fn finish(&mut self, meta: Meta, done: Exchange) -> Hop {
        if let Some((key, conn)) = done.conn {
            checkin(&mut self.idle, key, conn);
        }
        let made = Made {
            meta,
            io: done.io,
            sent_at: done.sent_at,
        };
        (done.result, Some(made))
    }

    /// Sends requests in parallel, each on its own HTTP/1.1 connection, or as
    /// concurrent streams of one HTTP/2 connection per origin; results in order.
    /// At most `[http] batch` are in flight at once, and `batch_per_host` to one
    /// origin; the others wait their turn and reuse the connections freed.
    /// Redirects are then followed one request at a time.
    pub async fn send_batch(
        &mut self,
        reqs: Vec<HttpRequest>,
        tags: &TagSet,
    ) -> Vec<Result<HttpResponse, HttpError>> {
        let mut slots: Vec<Option<Hop>> = Vec::with_capacity(reqs.len());
        let mut ready = Vec::new();
        for (i, req) in reqs.iter().enumerate() {
            match self.prepare(req, tags) {
                Ok(p) => {
                    ready.push((i, p));
                    slots.push(None);
                }
                Err(e) => slots.push(Some((Err(e), None))),
            }
        }
        self.open_shared(&ready).await;
        // The pool is lent to the batch's requests while it runs: each takes a
        // connection when its turn comes and gives it back when done, so the requests
        // that wait for their host's turn reuse the connections of those before them,
        // as a browser's six connections per host carry a page's assets.
        let pool = Mutex::new(std::mem::take(&mut self.idle));
        let turns = BatchTurns::new(&self.shared.http, &ready);
        let shared = self.shared.clone();
        let futures = ready.into_iter().map(|(i, p)| {
            let (shared, pool, turns) = (&shared, &pool, &turns);
            async move {
                let _turn = turns.wait(&p.target.pool_key).await;
                let conn = checkout(&mut lock(pool), &p.pool_key);
                let meta = p.clone_meta();
                // The timeout runs from the request's turn, not from the batch's start.
                let deadline = pin!(tokio::time::sleep(p.timeout));
                let mut done = execute(shared, &meta, p, conn, deadline).await;
                if let Some((key, conn)) = done.conn.take() {
                    checkin(&mut lock(pool), key, conn);
                }
                (i, meta, done)
            }
        });
        let done = futures::future::join_all(futures).await;
        self.idle = pool.into_inner().unwrap_or_else(PoisonError::into_inner);
        for (i, meta, done) in done {
            slots[i] = Some(self.finish(meta, done));
        }
        let mut results = Vec::with_capacity(slots.len());
        // Then each request's redirects, one request at a time, by the same hops and
        // records as a single request's.
        for (slot, req) in slots.into_iter().zip(reqs) {
            let first = slot.expect("every slot filled");
            results.push(self.follow_through(Cow::Owned(req), first, tags).await);
        }
        results
    }

    /// The parsed, allowed target of `url`, from the cache after its first request.
    fn target(&mut self, url: &str, base_tags: &TagSet) -> Result<Arc<Target>, HttpError> {
        if let Some(target) = self.targets.get(url) {
            return Ok(target);
        }
        let origin = Origin::parse(url).map_err(|e| HttpError::invalid(e.to_string()))?;
        if origin.scheme != "http" && origin.scheme != "https" {
            return Err(HttpError::invalid(format!(
                "{url}: HTTP requests need an http:// or https:// URL"
            )));
        }
        if let Err(why) = self.shared.allowlist.check(&origin) {
            record(&self.shared, None, Outcome::Denied(base_tags));
            self.shared.warn_denied_once(&origin, "reach", &why);
            return Err(HttpError::denied(why.to_string()));
        }
        let target = Arc::new(Target::parse(url, origin)?);
        self.targets.insert(url, target.clone());
        Ok(target)
    }

    /// A request made ready to go on the wire: checked, parsed, with the jar's cookies.
    fn prepare(&mut self, req: &HttpRequest, base_tags: &TagSet) -> Result<Prepared, HttpError> {
        let template = self.template(req, base_tags)?;
        let tags = self.request_tags(base_tags, &template.method, req);
        self.ready(req, template, tags)
    }

    /// The tag set of `req` sent with `method` by a VU of tags `base_tags`, from the
    /// VU's cache, with its place there.
    fn request_tags(
        &mut self,
        base_tags: &TagSet,
        method: &http::Method,
        req: &HttpRequest,
    ) -> (Slot, TagSet) {
        self.tags
            .request(base_tags, method.as_str(), &req.url, &req.tags)
    }

    /// What every send of `req` shares: its allowed target, method and header fields
    /// (with `Host`, without the jar's cookies, which are the jar's of each send).
    fn template(&mut self, req: &HttpRequest, base_tags: &TagSet) -> Result<Template, HttpError> {
        let target = self.target(&req.url, base_tags)?;
        let method = if req.method.bytes().any(|b| b.is_ascii_lowercase()) {
            http::Method::from_bytes(req.method.to_ascii_uppercase().as_bytes())
        } else {
            http::Method::from_bytes(req.method.as_bytes())
        }
        .map_err(|_| HttpError::invalid(format!("invalid method {:?}", req.method)))?;
        let mut headers = http::HeaderMap::new();
        let (mut has_host, mut has_user_agent) = (false, false);
        for (name, value) in &req.headers {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| HttpError::invalid(format!("invalid header name {name:?}")))?;
            let value = http::HeaderValue::from_str(value).map_err(|_| {
                HttpError::invalid(format!(
                    "invalid value for header {name}: {value:?} (CR, LF and other control characters are not allowed)"
                ))
            })?;
            has_host |= name == http::header::HOST;
            has_user_agent |= name == http::header::USER_AGENT;
            headers
                .try_append(name, value)
                .map_err(|e| HttpError::invalid(e.to_string()))?;
        }
        if !has_host {
            headers
                .try_append(http::header::HOST, target.host_header.clone())
                .map_err(|e| HttpError::invalid(e.to_string()))?;
        }
        // The run's User-Agent (`[http] user_agent`), unless the request sets its own.
        if let (false, Some(agent)) = (has_user_agent, &self.shared.http.user_agent) {
            headers
                .try_append(http::header::USER_AGENT, agent.clone())
                .map_err(|e| HttpError::invalid(e.to_string()))?;
        }
        Ok(Template {
            target,
            method,
            headers,
        })
    }

    /// A prepared request's next send made ready: its template as it is, the jar's
    /// cookies of now, and its tag set (made again only if the VU's cache started
    /// over since it was prepared).
    fn ready_prepared(
        &mut self,
        prepared: &PreparedRequest,
        base_tags: &TagSet,
    ) -> Result<Prepared, HttpError> {
        let req = &prepared.request;
        let tags = match self.tags.current(prepared.tags.0, base_tags) {
            true => prepared.tags.clone(),
            false => self.request_tags(base_tags, &prepared.template.method, req),
        };
        self.ready(req, prepared.template.clone(), tags)
    }

    /// The request on the wire from its template: the body, the jar's cookies.
    fn ready(
        &mut self,
        req: &HttpRequest,
        template: Template,
        (slot, tags): (Slot, TagSet),
    ) -> Result<Prepared, HttpError> {
        let Template {
            target,
            method,
            mut headers,
        } = template;
        if !req.no_cookie_jar {
            if let Some(jar_cookies) = self.jar.header_for(&req.url) {
                with_jar_cookies(&mut headers, jar_cookies)?;
            }
        }
        // The request is built in place: a builder moves its parts (a few hundred
        // bytes) through every `header` call.
        let mut request = http::Request::new(Full::new(req.body.clone()));
        *request.method_mut() = method;
        *request.uri_mut() = target.path.clone();
        *request.headers_mut() = headers;
        let (route, pool_key) = self
            .alt_svc
            .route(&self.shared.http, &target, req.version)?;
        Ok(Prepared {
            target,
            route,
            pool_key,
            local_ip: self.local_ip,
            request,
            timeout: req.timeout.unwrap_or(self.shared.default_timeout),
            discard_body: req.discard_body,
            expected: req.expected_statuses.clone(),
            tags,
            slot,
        })
    }

    /// Checks `req` once for sending by handle ([`send_prepared`](Self::send_prepared)):
    /// an error here is the one its send would have met before sending (a denied
    /// target is counted as such).
    pub fn prepare_request(
        &mut self,
        request: HttpRequest,
        base_tags: &TagSet,
    ) -> Result<PreparedRequest, HttpError> {
        let template = self.template(&request, base_tags)?;
        check_version(&template.target, request.version)?;
        let tags = self.request_tags(base_tags, &template.method, &request);
        Ok(PreparedRequest {
            request,
            template,
            tags,
        })
    }

    /// Opens, before a batch goes out, the connection its requests to one origin
    /// will share if the origin speaks HTTP/2 (ALPN, or h2c): else each request would
    /// open its own, as none is pooled yet. Only for an origin with several requests in
    /// the batch and nothing pooled; one that answers with HTTP/1.1 keeps the
    /// connection for one of its requests. A failure here is left to the requests,
    /// which try again and report it.
    async fn open_shared(&mut self, ready: &[(usize, Prepared)]) {
        let (h2, h2c) = (self.shared.http.h2, self.shared.http.h2c);
        let may_multiplex = |p: &Prepared| match (&p.route, p.target.origin.scheme.as_str()) {
            (Route::H3(_), _) => true,
            (Route::Tcp(Some(version)), _) => version.multiplexed(),
            (_, "https") => h2,
            _ => h2c,
        };
        let mut opened: Vec<&PoolKey> = Vec::new();
        for (n, (_, p)) in ready.iter().enumerate() {
            let key = &p.pool_key;
            if !may_multiplex(p)
                || opened.contains(&key)
                || !ready[n + 1..].iter().any(|(_, q)| q.pool_key == *key)
                // A pooled connection says what the origin speaks: HTTP/2 is shared
                // as it is, and HTTP/1.1 needs no connection opened ahead.
                || self
                    .idle
                    .get_mut(key)
                    .is_some_and(|idle| idle.iter_mut().any(Connection::is_usable))
            {
                continue;
            }
            opened.push(key);
            let shared = self.shared.clone();
            let connecting = open(p, &shared);
            if let Ok(Ok(conn)) = tokio::time::timeout(p.timeout, connecting).await {
                checkin(&mut self.idle, key.clone(), conn);
            }
        }
    }
}

/// Adds the jar's cookies to a request: into the plugin's own `Cookie` field if it set
/// one (its cookies win over the jar's of the same name, as in k6), else as the field.
fn with_jar_cookies(headers: &mut http::HeaderMap, jar_cookies: String) -> Result<(), HttpError> {
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
        .map_err(|_| HttpError::invalid(format!("invalid Cookie value {value:?}")))?;
    headers
        .try_insert(http::header::COOKIE, value)
        .map_err(|e| HttpError::invalid(e.to_string()))?;
    Ok(())
}
