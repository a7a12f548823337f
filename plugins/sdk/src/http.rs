//! HTTP requests, sent by the host's connection pools.
//!
//! Build a request with [`get`], [`post`], [`put`], [`delete`], [`patch`], [`head`]
//! or [`request`], refine it with the [`RequestBuilder`] methods and
//! [`send`](RequestBuilder::send) it; [`batch`] sends several in parallel. The host
//! records `http_reqs`, `http_req_duration` and the other built-in metrics for every
//! request, tagged with `name`, `method`, `status` and the request's own tags.
//!
//! ```no_run
//! use loadtest::http;
//! # #[derive(serde::Deserialize)]
//! # struct Note { id: u64 }
//! # fn f(base: &str, id: u64, token: String) -> Result<(), String> {
//!
//! let res = http::get(&format!("{base}/notes/{id}"))
//!     .bearer(&token)
//!     .name("/notes/{id}")
//!     .send()?;                       // HttpError -> String
//! let note: Note = res.json()?;
//! # Ok(()) }
//! ```
//!
//! A request fails with an [`HttpError`] only when no response came back (denied by
//! the allowlist, connection refused, timeout, ...); any status, 500 included, is a
//! [`Response`]. Which statuses count as failed in `http_req_failed` is set with
//! [`RequestBuilder::expect_status`] (200–399 by default).
//!
//! A request sent again and again (the same URL, headers and tags) can be handed to
//! the host once with [`RequestBuilder::prepare`] and sent by handle
//! ([`PreparedRequest::send`]): the host then skips copying and checking it per send.
//!
//! Bodies: [`RequestBuilder::json`], [`RequestBuilder::form`] (form-encoded, as an HTML
//! form posts) and [`RequestBuilder::multipart`] (with file parts, see [`Multipart`]);
//! [`RequestBuilder::query`] appends percent-encoded query parameters to the URL.
//!
//! Cookies and redirects work as in a browser (and k6): the host keeps a cookie jar per
//! VU (see [`crate::cookies`]) and follows up to 10 redirects (`[http] max_redirects`);
//! each hop is a request of its own in the metrics. [`RequestBuilder::redirects`] sets
//! the limit of one request (`0` returns a 3xx itself, with its `Set-Cookie`), and
//! [`Response::url`] tells where the response finally came from.
//!
//! ```no_run
//! use loadtest::http;
//! # fn f(base: &str) -> Result<(), String> {
//! let res = http::post(format!("{base}/survey/login"))
//!     .form(&[("user", "ann"), ("password", "secret")])
//!     .redirects(0)                   // see the 302 and its Set-Cookie
//!     .send()?;
//! assert_eq!(res.status(), 302);
//! let page = http::get(format!("{base}/survey")).query(&[("page", "1")]).send()?;
//! # Ok(()) }
//! ```

use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt;
use std::ops::{Bound, Range, RangeBounds, RangeFrom, RangeInclusive, RangeTo, RangeToInclusive};
use std::rc::Rc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::bindings::loadtest::scenario::http as wit;
use crate::tags::{self, Pairs};

/// Starts a request with any method (`"GET"`, `"PATCH"`, ...; upper-cased on send)
/// to an absolute `http://` or `https://` URL.
pub fn request(method: impl Into<String>, url: impl Into<String>) -> RequestBuilder {
    RequestBuilder {
        method: method.into(),
        url: url.into(),
        headers: Vec::new(),
        body: None,
        timeout_ms: None,
        tags: Vec::new(),
        discard_body: false,
        expected: None,
        redirects: None,
        no_cookie_jar: false,
        version: None,
        error: None,
    }
}

/// Starts a `GET` request.
pub fn get(url: impl Into<String>) -> RequestBuilder {
    request("GET", url)
}

/// Starts a `POST` request.
pub fn post(url: impl Into<String>) -> RequestBuilder {
    request("POST", url)
}

/// Starts a `PUT` request.
pub fn put(url: impl Into<String>) -> RequestBuilder {
    request("PUT", url)
}

/// Starts a `PATCH` request.
pub fn patch(url: impl Into<String>) -> RequestBuilder {
    request("PATCH", url)
}

/// Starts a `DELETE` request.
pub fn delete(url: impl Into<String>) -> RequestBuilder {
    request("DELETE", url)
}

/// Starts a `HEAD` request.
pub fn head(url: impl Into<String>) -> RequestBuilder {
    request("HEAD", url)
}

/// Sends several requests in parallel, as a browser loads a page's files, and waits
/// for all of them. The results are in the order of `requests`.
pub fn batch(requests: Vec<RequestBuilder>) -> Vec<Result<Response, HttpError>> {
    // Requests that failed to build (a `json` body that did not serialize) are not
    // sent; their error takes their place in the results.
    let mut slots: Vec<Option<HttpError>> = Vec::with_capacity(requests.len());
    let mut to_send = Vec::with_capacity(requests.len());
    let mut versions = Vec::with_capacity(requests.len());
    for builder in requests {
        let version = builder.version.map(Version::to_wit);
        match builder.into_wit() {
            Ok(req) => {
                slots.push(None);
                to_send.push(req);
                versions.push(version);
            }
            Err(e) => slots.push(Some(e)),
        }
    }
    // The 0.3.4 function only when a request asks for a version: the batch then
    // carries each request's choice.
    let sent = if versions.iter().any(Option::is_some) {
        let with: Vec<_> = to_send.into_iter().zip(versions).collect();
        wit::send_batch_with_versions(&with)
    } else {
        wit::send_batch(&to_send)
    };
    let mut sent = sent.into_iter();
    slots
        .into_iter()
        .map(|slot| match slot {
            Some(e) => Err(e),
            None => match sent.next() {
                Some(result) => result.map(Response::from_wit),
                None => Err(HttpError::Protocol(
                    "the host returned fewer batch results than requests".to_owned(),
                )),
            },
        })
        .collect()
}

/// A request being built; send it with [`send`](RequestBuilder::send).
///
/// Every method takes and returns the builder, so calls chain.
#[derive(Debug, Clone)]
#[must_use = "a request does nothing until it is sent"]
pub struct RequestBuilder {
    method: String,
    url: String,
    headers: Pairs,
    body: Option<Vec<u8>>,
    timeout_ms: Option<u32>,
    tags: Pairs,
    discard_body: bool,
    expected: Option<Vec<wit::StatusRange>>,
    redirects: Option<u32>,
    no_cookie_jar: bool,
    /// The HTTP version asked for; the run's `[http] versions` choose when `None`.
    version: Option<Version>,
    /// An error met while building (a body that did not serialize), reported on send.
    error: Option<String>,
}

/// The HTTP version of one request, for [`RequestBuilder::version`] (contract 0.3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// HTTP/1.1 over TCP (TLS offering only `http/1.1` by ALPN for `https://`).
    Http1,
    /// HTTP/2 over TCP: by ALPN for `https://`, with prior knowledge (h2c) for `http://`.
    Http2,
    /// HTTP/3 over QUIC; `https://` only.
    Http3,
}

impl Version {
    fn to_wit(self) -> wit::HttpVersion {
        match self {
            Version::Http1 => wit::HttpVersion::Http1,
            Version::Http2 => wit::HttpVersion::Http2,
            Version::Http3 => wit::HttpVersion::Http3,
        }
    }
}

impl RequestBuilder {
    /// Adds a header field. Names are case-insensitive; adding a name twice sends
    /// both fields. A value with CR or LF is refused by the host.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets `Authorization: Bearer <token>`, replacing an earlier `Authorization`.
    pub fn bearer(mut self, token: impl AsRef<str>) -> Self {
        tags::set(
            &mut self.headers,
            "Authorization".to_owned(),
            format!("Bearer {}", token.as_ref()),
            true,
        );
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// Sets the body to `value` as JSON and `Content-Type: application/json`.
    /// A value that cannot be serialized makes [`send`](RequestBuilder::send) fail
    /// with [`HttpError::Invalid`].
    pub fn json<T: Serialize + ?Sized>(mut self, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(bytes) => self.body = Some(bytes),
            Err(e) => self.error = Some(format!("cannot serialize the JSON body: {e}")),
        }
        tags::set(
            &mut self.headers,
            "Content-Type".to_owned(),
            "application/json".to_owned(),
            true,
        );
        self
    }

    /// Sets the body to `fields` form-encoded (`a=1&b=x+y`, as an HTML form posts it)
    /// and `Content-Type: application/x-www-form-urlencoded`.
    pub fn form<K: AsRef<str>, V: AsRef<str>>(mut self, fields: &[(K, V)]) -> Self {
        let mut encoder = form_urlencoded::Serializer::new(String::new());
        for (k, v) in fields {
            encoder.append_pair(k.as_ref(), v.as_ref());
        }
        self.body = Some(encoder.finish().into_bytes());
        tags::set(
            &mut self.headers,
            "Content-Type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
            true,
        );
        self
    }

    /// Sets the body to a `multipart/form-data` form (fields and files) and its
    /// `Content-Type` with the form's boundary.
    pub fn multipart(mut self, form: Multipart) -> Self {
        let (content_type, body) = form.finish();
        self.body = Some(body);
        tags::set(
            &mut self.headers,
            "Content-Type".to_owned(),
            content_type,
            true,
        );
        self
    }

    /// Appends query parameters to the URL, percent-encoded (a space becomes `+`, as
    /// browsers encode forms sent with GET), after any query the URL already has and
    /// before its `#fragment`.
    pub fn query<K: AsRef<str>, V: AsRef<str>>(mut self, params: &[(K, V)]) -> Self {
        if params.is_empty() {
            return self;
        }
        let (base, fragment) = match self.url.find('#') {
            Some(i) => (self.url[..i].to_owned(), self.url[i..].to_owned()),
            None => (std::mem::take(&mut self.url), String::new()),
        };
        let mut encoder = form_urlencoded::Serializer::new(String::new());
        for (k, v) in params {
            encoder.append_pair(k.as_ref(), v.as_ref());
        }
        let separator = match base.find('?') {
            None => "?",
            Some(i) if i + 1 == base.len() || base.ends_with('&') => "",
            Some(_) => "&",
        };
        self.url = format!("{base}{separator}{}{fragment}", encoder.finish());
        self
    }

    /// Follows at most `n` redirects for this request (the run's `[http]
    /// max_redirects`, 10 by default, otherwise). With `0` a 3xx is returned as it
    /// is, with its headers: how a scenario sees the `Set-Cookie` and `Location` of a
    /// login's 302.
    pub fn redirects(mut self, n: u32) -> Self {
        self.redirects = Some(n);
        self
    }

    /// Leaves the VU's cookie jar out of this request: no cookie from the jar is sent
    /// and the response's `Set-Cookie` fields are not stored (a `Cookie` header set
    /// with [`header`](RequestBuilder::header) is still sent).
    pub fn no_cookie_jar(mut self) -> Self {
        self.no_cookie_jar = true;
        self
    }

    /// Sends this request over HTTP `version` whatever the run's `[http] versions`
    /// prefer (redirects included), and never over another: a version the origin
    /// cannot speak fails the request. HTTP/3 needs an `https://` URL
    /// ([`HttpError::Invalid`] otherwise, with nothing sent) and goes to the origin's
    /// own port over UDP (or to the alternative its `Alt-Svc` named, once the VU
    /// learnt one); HTTP/2 asked of a server whose ALPN answer is HTTP/1.1 is
    /// [`HttpError::Protocol`]. The `proto` tag of the request's metrics says which
    /// version answered. Needs a host of contract 0.3.4.
    ///
    /// ```no_run
    /// use loadtest::http::{self, Version};
    /// # fn f(base: &str) -> Result<(), String> {
    /// let res = http::get(format!("{base}/health")).version(Version::Http3).send()?;
    /// # Ok(()) }
    /// ```
    pub fn version(mut self, version: Version) -> Self {
        self.version = Some(version);
        self
    }

    /// Adds a tag to this request's metric samples, replacing an earlier tag of the
    /// same key.
    pub fn tag(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        tags::set(&mut self.tags, key.into(), value.into(), false);
        self
    }

    /// Sets the `name` tag, which groups URLs in the metrics: `.name("/notes/{id}")`
    /// makes every note one line of the summary instead of one per id. Without it the
    /// host uses the URL.
    pub fn name(self, name: impl Into<String>) -> Self {
        self.tag("name", name)
    }

    /// Sets the timeout for the whole request (the host's default is 60 s).
    /// Rounded up to whole milliseconds; saturates at about 49 days.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        let ms = timeout.as_nanos().div_ceil(1_000_000);
        self.timeout_ms = Some(u32::try_from(ms).unwrap_or(u32::MAX));
        self
    }

    /// Counts the response body's bytes without copying them into the plugin:
    /// [`Response::body`] is then empty and [`Response::body_size`] still tells the size.
    pub fn discard_body(mut self) -> Self {
        self.discard_body = true;
        self
    }

    /// Sets which statuses count as expected (`http_req_failed` = false). The first
    /// call replaces the default 200–399, later calls add more: `.expect_status(200..=299)`,
    /// `.expect_status(404)`, `.expect_status(500..)`.
    pub fn expect_status(mut self, statuses: impl ExpectedStatus) -> Self {
        let range = statuses.status_range();
        self.expected.get_or_insert_with(Vec::new).push(range);
        self
    }

    /// Sends the request and waits for the response.
    pub fn send(self) -> Result<Response, HttpError> {
        let version = self.version;
        let req = self.into_wit()?;
        match version {
            None => wit::send(&req),
            Some(v) => wit::send_with_version(&req, v.to_wit()),
        }
        .map(Response::from_wit)
    }

    /// Hands the request to the host once, to [`send`](PreparedRequest::send) by
    /// handle as often as wanted: a scenario that repeats the same request saves the
    /// host copying, parsing and checking it on every send. Fails as `send` would
    /// before sending anything: a target outside the allowlist is
    /// [`HttpError::Denied`] (and counted as a denied request), a malformed URL,
    /// method or header [`HttpError::Invalid`].
    ///
    /// ```no_run
    /// use loadtest::http;
    /// # fn f(base: &str) -> Result<(), String> {
    /// let home = http::get(format!("{base}/")).name("/").prepare()?;
    /// for _ in 0..3 {
    ///     let res = home.send()?;
    ///     loadtest::check("status is 200", res.status() == 200);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn prepare(self) -> Result<PreparedRequest, HttpError> {
        let version = self.version;
        let req = self.into_wit()?;
        match version {
            None => wit::prepare(&req),
            Some(v) => wit::prepare_with_version(&req, v.to_wit()),
        }
        .map(|inner| PreparedRequest { inner })
    }

    pub(crate) fn into_wit(self) -> Result<wit::Request, HttpError> {
        if let Some(e) = self.error {
            return Err(HttpError::Invalid(e));
        }
        let mut method = self.method;
        // In place: a copy upper-cased was an allocation on every send.
        method.make_ascii_uppercase();
        Ok(wit::Request {
            method,
            url: self.url,
            headers: self.headers,
            body: self.body,
            options: wit::RequestOptions {
                timeout_ms: self.timeout_ms,
                tags: self.tags,
                discard_body: self.discard_body,
                expected_statuses: self.expected,
                redirects: self.redirects,
                no_cookie_jar: self.no_cookie_jar,
            },
        })
    }

    /// `METHOD NAME` (the `name` tag, else the URL), for error messages of helpers.
    pub(crate) fn label(&self) -> String {
        let name = self.tags.iter().find(|(k, _)| k == "name");
        let name = name.map_or(self.url.as_str(), |(_, v)| v.as_str());
        format!("{} {name}", self.method.to_ascii_uppercase())
    }
}

/// A request held by the host, made by [`RequestBuilder::prepare`]: each
/// [`send`](PreparedRequest::send) is what sending the builder would be (the same
/// metrics, tags and timings; the VU's cookie jar as it is at that send; redirects
/// followed), without the host copying and checking the request again. Dropping it
/// frees it on the host.
#[derive(Debug)]
pub struct PreparedRequest {
    inner: wit::PreparedRequest,
}

impl PreparedRequest {
    /// Sends the request and waits for the response.
    pub fn send(&self) -> Result<Response, HttpError> {
        self.inner.send().map(Response::from_wit)
    }
}

/// Statuses accepted by [`RequestBuilder::expect_status`]: one status (`404`) or a
/// range of them (`200..300`, `200..=299`, `500..`, `..400`, `..=399`).
pub trait ExpectedStatus {
    /// The inclusive range of statuses this stands for.
    fn status_range(self) -> wit::StatusRange;
}

impl ExpectedStatus for u16 {
    fn status_range(self) -> wit::StatusRange {
        wit::StatusRange {
            min: self,
            max: self,
        }
    }
}

/// Converts any range of `u16` into an inclusive [`wit::StatusRange`].
fn inclusive(range: impl RangeBounds<u16>) -> wit::StatusRange {
    let min = match range.start_bound() {
        Bound::Included(&n) => n,
        Bound::Excluded(&n) => n.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let max = match range.end_bound() {
        Bound::Included(&n) => n,
        Bound::Excluded(&n) => n.saturating_sub(1),
        Bound::Unbounded => u16::MAX,
    };
    wit::StatusRange { min, max }
}

macro_rules! expected_status_for_ranges {
    ($($range:ty),*) => {$(
        impl ExpectedStatus for $range {
            fn status_range(self) -> wit::StatusRange {
                inclusive(self)
            }
        }
    )*};
}
expected_status_for_ranges!(
    Range<u16>,
    RangeInclusive<u16>,
    RangeFrom<u16>,
    RangeTo<u16>,
    RangeToInclusive<u16>
);

/// A response: status, headers, body and timings.
///
/// The header fields and body stay on the host until first read: a scenario that
/// checks only the status pays for no copies. Each is fetched once and kept.
#[derive(Debug, Clone)]
pub struct Response {
    status: u16,
    url: String,
    body_size: u64,
    timings: wit::Timings,
    /// The host's copy of the headers and body; `None` only in unit tests.
    content: Option<Rc<wit::ResponseContent>>,
    headers: OnceCell<Vec<(String, String)>>,
    body: OnceCell<Vec<u8>>,
    /// The body parsed as HTML by the host, once asked for.
    html: Rc<OnceCell<crate::html::Document>>,
}

impl Response {
    fn from_wit(inner: wit::Response) -> Self {
        Response {
            status: inner.status,
            url: inner.url,
            body_size: inner.body_size,
            timings: inner.timings,
            content: Some(Rc::new(inner.content)),
            headers: OnceCell::new(),
            body: OnceCell::new(),
            html: Rc::default(),
        }
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The URL this response came from: after redirects, the last hop's.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The first header field called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers()
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// All header fields (names in lower case), grouped by name in the order received.
    pub fn headers(&self) -> &[(String, String)] {
        self.headers
            .get_or_init(|| self.content.as_ref().map_or_else(Vec::new, |c| c.headers()))
    }

    /// The body; empty when the request set [`discard_body`](RequestBuilder::discard_body).
    pub fn body(&self) -> &[u8] {
        self.body
            .get_or_init(|| self.content.as_ref().map_or_else(Vec::new, |c| c.body()))
    }

    /// The body, taken out of the response.
    pub fn into_body(self) -> Vec<u8> {
        match self.body.into_inner() {
            Some(body) => body,
            None => self.content.map_or_else(Vec::new, |c| c.body()),
        }
    }

    /// The body's size in bytes as received, also when it was discarded.
    pub fn body_size(&self) -> u64 {
        self.body_size
    }

    /// The body as text; invalid UTF-8 is replaced by U+FFFD.
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(self.body())
    }

    /// The body parsed as JSON into `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_slice(self.body()).map_err(|e| {
            format!(
                "response (status {}) is not the expected JSON: {e}",
                self.status
            )
        })
    }

    /// The body parsed as an HTML page by the host (once; no copy of the body into
    /// the plugin), for CSS selectors, forms and links (see [`crate::html`]).
    pub fn html(&self) -> &crate::html::Document {
        self.html.get_or_init(|| match &self.content {
            Some(content) => crate::html::Document::from_content(content, &self.url),
            None => crate::html::Document::parse(&self.text()).with_url(&self.url),
        })
    }

    /// The form of this page matching `css`, to fill in and submit as a browser
    /// would (hidden inputs such as a CSRF field kept; see [`crate::html::Form`]).
    pub fn form(&self, css: &str) -> Result<crate::html::Form<'_>, String> {
        self.html().form(css)
    }

    /// A GET of the link matching `css` on this page, as a click would send it.
    pub fn link(&self, css: &str) -> Result<RequestBuilder, String> {
        self.html().link(css)
    }

    /// How long each phase of the request took.
    pub fn timings(&self) -> Timings {
        let t = &self.timings;
        Timings {
            blocked: Duration::from_micros(t.blocked_us),
            connecting: Duration::from_micros(t.connecting_us),
            tls_handshaking: Duration::from_micros(t.tls_handshaking_us),
            sending: Duration::from_micros(t.sending_us),
            waiting: Duration::from_micros(t.waiting_us),
            receiving: Duration::from_micros(t.receiving_us),
            duration: Duration::from_micros(t.duration_us),
        }
    }
}

/// A `multipart/form-data` body: text fields and files, in order, for
/// [`RequestBuilder::multipart`].
///
/// ```no_run
/// use loadtest::http::{self, Multipart};
/// # fn f(base: &str) -> Result<(), String> {
/// let form = Multipart::new()
///     .text("title", "report")
///     .file("upload", "report.csv", "text/csv", b"a,b\n1,2\n".to_vec());
/// http::post(format!("{base}/upload")).multipart(form).send()?;
/// # Ok(()) }
/// ```
///
/// Written here rather than taken from a crate: the format is a few lines
/// (RFC 7578), and the crates that build it bring an async stack a plugin has no use for.
#[derive(Debug, Clone, Default)]
pub struct Multipart {
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
struct Part {
    name: String,
    file: Option<(String, String)>,
    data: Vec<u8>,
}

impl Multipart {
    /// An empty form.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a text field.
    pub fn text(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.parts.push(Part {
            name: name.into(),
            file: None,
            data: value.into().into_bytes(),
        });
        self
    }

    /// Adds a file: its field name, file name, content type and bytes.
    pub fn file(
        mut self,
        name: impl Into<String>,
        filename: impl Into<String>,
        content_type: impl Into<String>,
        data: impl Into<Vec<u8>>,
    ) -> Self {
        self.parts.push(Part {
            name: name.into(),
            file: Some((filename.into(), content_type.into())),
            data: data.into(),
        });
        self
    }

    /// The `Content-Type` value and the body. The boundary is chosen so that it
    /// occurs in no part.
    fn finish(self) -> (String, Vec<u8>) {
        let mut boundary = String::from("----loadtest-boundary");
        let mut n = 0u32;
        while self
            .parts
            .iter()
            .any(|p| contains(&p.data, boundary.as_bytes()))
        {
            n += 1;
            boundary = format!("----loadtest-boundary-{n:x}");
        }
        let mut body = Vec::new();
        for part in &self.parts {
            body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
            let name = quote(&part.name);
            match &part.file {
                None => body.extend_from_slice(
                    format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
                ),
                Some((filename, content_type)) => body.extend_from_slice(
                    format!(
                        "Content-Disposition: form-data; name=\"{name}\"; filename=\"{}\"\r\n\
                         Content-Type: {content_type}\r\n\r\n",
                        quote(filename)
                    )
                    .as_bytes(),
                ),
            }
            body.extend_from_slice(&part.data);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        (format!("multipart/form-data; boundary={boundary}"), body)
    }
}

/// Escapes a name for a quoted `Content-Disposition` parameter as browsers do
/// (the WHATWG HTML form encoding: `"` → `%22`, CR and LF → `%0D`, `%0A`).
fn quote(name: &str) -> String {
    name.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Phases of a request, with the meanings k6 gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    /// Waiting for a free connection from the pool.
    pub blocked: Duration,
    /// Establishing the TCP connection (zero when reused).
    pub connecting: Duration,
    /// The TLS handshake (zero for plain HTTP or when reused).
    pub tls_handshaking: Duration,
    /// Writing the request.
    pub sending: Duration,
    /// Time to first byte after the request was sent.
    pub waiting: Duration,
    /// Reading the response body.
    pub receiving: Duration,
    /// sending + waiting + receiving: k6's `http_req_duration`.
    pub duration: Duration,
}

/// Why a request got no response.
///
/// This is the WIT `http-error` itself: the bindings are generated with this type in
/// its place (`with` in `bindings`), so its cases are the contract's, one for one.
/// It converts into `String`, so `?` works in [`Scenario`](crate::Scenario) functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The target is not in the run's allowlist; nothing was sent.
    Denied(String),
    /// A malformed URL, method, header or body.
    Invalid(String),
    /// The connection could not be established (refused, reset, name not resolved).
    Connect(String),
    /// The request timed out.
    Timeout(String),
    /// The TLS handshake failed.
    Tls(String),
    /// The peer broke the protocol or reset the connection mid-response.
    Protocol(String),
    /// The response body exceeded the host's cap, in bytes.
    BodyTooLarge(u64),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Denied(m) => write!(f, "request denied: {m}"),
            HttpError::Invalid(m) => write!(f, "invalid request: {m}"),
            HttpError::Connect(m) => write!(f, "connection failed: {m}"),
            HttpError::Timeout(m) => write!(f, "request timed out: {m}"),
            HttpError::Tls(m) => write!(f, "TLS handshake failed: {m}"),
            HttpError::Protocol(m) => write!(f, "protocol error: {m}"),
            HttpError::BodyTooLarge(cap) => {
                write!(
                    f,
                    "response body larger than the host's cap of {cap} bytes; raise [limits] max_body_mb to accept it"
                )
            }
        }
    }
}

impl std::error::Error for HttpError {}

impl From<HttpError> for String {
    fn from(e: HttpError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(r: wit::StatusRange) -> (u16, u16) {
        (r.min, r.max)
    }

    #[test]
    fn expected_statuses_are_inclusive_ranges() {
        assert_eq!(range(404.status_range()), (404, 404));
        assert_eq!(range((200..300).status_range()), (200, 299));
        assert_eq!(range((200..=299).status_range()), (200, 299));
        assert_eq!(range((500..).status_range()), (500, u16::MAX));
        assert_eq!(range((..400).status_range()), (0, 399));
        assert_eq!(range((..=399).status_range()), (0, 399));
    }

    #[test]
    fn builder_fills_the_wit_request() {
        let req = request("patch", "http://127.0.0.1/x")
            .header("X-A", "1")
            .bearer("old")
            .bearer("t0k")
            .json(&serde_json::json!({ "a": 1 }))
            .header("content-type", "text/plain")
            .name("/x")
            .tag("group", "3")
            .tag("name", "/y")
            .timeout(Duration::from_micros(1500))
            .discard_body()
            .expect_status(200..=299)
            .expect_status(404)
            .into_wit()
            .unwrap();
        assert_eq!(req.method, "PATCH");
        assert_eq!(
            req.headers,
            vec![
                ("X-A".to_owned(), "1".to_owned()),
                ("Authorization".to_owned(), "Bearer t0k".to_owned()),
                ("Content-Type".to_owned(), "application/json".to_owned()),
                ("content-type".to_owned(), "text/plain".to_owned()),
            ]
        );
        assert_eq!(req.body.as_deref(), Some(&br#"{"a":1}"#[..]));
        assert_eq!(
            req.options.tags,
            vec![
                ("name".to_owned(), "/y".to_owned()),
                ("group".to_owned(), "3".to_owned()),
            ]
        );
        assert_eq!(req.options.timeout_ms, Some(2));
        assert!(req.options.discard_body);
        let expected: Vec<_> = req
            .options
            .expected_statuses
            .unwrap()
            .into_iter()
            .map(range)
            .collect();
        assert_eq!(expected, vec![(200, 299), (404, 404)]);
    }

    #[test]
    fn defaults_leave_options_to_the_host() {
        let req = get("http://127.0.0.1/").into_wit().unwrap();
        assert_eq!(req.method, "GET");
        assert!(req.headers.is_empty() && req.body.is_none());
        assert!(req.options.timeout_ms.is_none() && req.options.expected_statuses.is_none());
        assert!(!req.options.discard_body && req.options.tags.is_empty());
    }

    #[test]
    fn unserializable_json_body_is_an_invalid_request() {
        let mut bad = std::collections::HashMap::new();
        bad.insert((1, 2), 3); // JSON object keys must be strings
        let err = post("http://127.0.0.1/").json(&bad).into_wit().unwrap_err();
        assert!(matches!(err, HttpError::Invalid(_)), "{err:?}");
        assert!(String::from(err).starts_with("invalid request: cannot serialize"));
    }

    #[test]
    fn response_helpers() {
        let res = Response {
            status: 201,
            url: "http://127.0.0.1/x".to_owned(),
            body_size: 8,
            timings: wit::Timings {
                blocked_us: 1,
                connecting_us: 2,
                tls_handshaking_us: 3,
                sending_us: 4,
                waiting_us: 5,
                receiving_us: 6,
                duration_us: 15,
            },
            content: None,
            headers: OnceCell::from(vec![(
                "content-type".to_owned(),
                "application/json".to_owned(),
            )]),
            body: OnceCell::from(br#"{"id":7}"#.to_vec()),
            html: Rc::default(),
        };
        assert!(res.is_success());
        assert_eq!(res.header("content-type"), Some("application/json"));
        assert_eq!(res.header("etag"), None);
        assert_eq!(res.text(), r#"{"id":7}"#);
        let v: serde_json::Value = res.json().unwrap();
        assert_eq!(v["id"], 7);
        assert!(res.json::<Vec<u8>>().unwrap_err().contains("status 201"));
        assert_eq!(res.timings().duration, Duration::from_micros(15));
        assert_eq!(res.timings().tls_handshaking, Duration::from_micros(3));
    }

    #[test]
    fn forms_are_encoded_as_browsers_do() {
        let req = post("http://127.0.0.1/login")
            .form(&[("user", "ann lee"), ("pass", "a&b=c/é")])
            .into_wit()
            .unwrap();
        assert_eq!(
            req.body.as_deref(),
            Some(&b"user=ann+lee&pass=a%26b%3Dc%2F%C3%A9"[..])
        );
        assert_eq!(
            req.headers,
            vec![(
                "Content-Type".to_owned(),
                "application/x-www-form-urlencoded".to_owned()
            )]
        );
    }

    #[test]
    fn query_parameters_are_appended_and_encoded() {
        let url = |b: RequestBuilder| b.into_wit().unwrap().url;
        assert_eq!(
            url(get("http://h/s").query(&[("q", "a b&c"), ("n", "1")])),
            "http://h/s?q=a+b%26c&n=1"
        );
        assert_eq!(
            url(get("http://h/s?x=1#top").query(&[("y", "é")])),
            "http://h/s?x=1&y=%C3%A9#top"
        );
        assert_eq!(
            url(get("http://h/s?").query(&[("y", "2")])),
            "http://h/s?y=2"
        );
        let none: &[(&str, &str)] = &[];
        assert_eq!(url(get("http://h/s").query(none)), "http://h/s");
    }

    #[test]
    fn multipart_has_fields_files_and_a_safe_boundary() {
        let form = Multipart::new().text("title", "a \"report\"").file(
            "upload",
            "r.csv",
            "text/csv",
            b"----loadtest-boundary".to_vec(),
        );
        let req = post("http://h/u").multipart(form).into_wit().unwrap();
        let content_type = &req.headers[0].1;
        let boundary = content_type
            .strip_prefix("multipart/form-data; boundary=")
            .unwrap();
        assert_eq!(boundary, "----loadtest-boundary-1");
        let body = String::from_utf8(req.body.unwrap()).unwrap();
        assert_eq!(
            body,
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\n\
                 a \"report\"\r\n--{boundary}\r\nContent-Disposition: form-data; \
                 name=\"upload\"; filename=\"r.csv\"\r\nContent-Type: text/csv\r\n\r\n\
                 ----loadtest-boundary\r\n--{boundary}--\r\n"
            )
        );
    }

    #[test]
    fn redirects_and_jar_opt_out_reach_the_host() {
        let req = get("http://h/")
            .redirects(0)
            .no_cookie_jar()
            .into_wit()
            .unwrap();
        assert_eq!(req.options.redirects, Some(0));
        assert!(req.options.no_cookie_jar);
        let req = get("http://h/").into_wit().unwrap();
        assert_eq!(req.options.redirects, None);
        assert!(!req.options.no_cookie_jar);
    }

    #[test]
    fn a_version_is_kept_for_the_send() {
        let req = get("https://h/").version(Version::Http3);
        assert_eq!(req.version, Some(Version::Http3));
        assert_eq!(Version::Http2.to_wit(), wit::HttpVersion::Http2);
        assert_eq!(get("https://h/").version, None);
    }

    #[test]
    fn errors_read_well() {
        assert_eq!(
            HttpError::Connect("connection refused".into()).to_string(),
            "connection failed: connection refused"
        );
        assert_eq!(
            HttpError::BodyTooLarge(1024).to_string(),
            "response body larger than the host's cap of 1024 bytes; raise [limits] max_body_mb to accept it"
        );
    }

    #[test]
    fn the_wit_error_is_the_sdks_own_type() {
        // The bindings hand back this very type (bindgen's `with`; they define no
        // `HttpError` of their own): no second definition to keep in step, and the
        // SDK's wording when shown.
        let _send: fn(&wit::Request) -> Result<wit::Response, HttpError> = wit::send;
        let e = HttpError::Denied("http://x:80 is not allowed".into());
        assert_eq!(e.to_string(), "request denied: http://x:80 is not allowed");
        assert_eq!(
            String::from(e),
            "request denied: http://x:80 is not allowed"
        );
    }
}
