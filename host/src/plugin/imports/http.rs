//! `http`: converts between the WIT records and the host's HTTP client. A response's
//! header fields and body stay on the host side (the `response-content` resource in
//! the VU's table) until the plugin asks for them. Its imports, and the k6 layer's
//! `responses` and `content` (layer_responses.rs), see only [`HttpView`].

use crate::metrics::TagSet;
use crate::net::http::PreparedRequest;
use crate::net::types::HttpErrorKind;
use crate::net::{HttpError, HttpRequest, HttpResponse, Proto, ResponseContent};
use crate::plugin::bindings::loadtest::scenario::http as wit;
use crate::plugin::bindings::HttpFailure;
use crate::plugin::budget::CallBudget;
use crate::plugin::capabilities::{HtmlState, HttpState, LayerState};
use crate::plugin::send::{Batch, One, Prepared, SendParts, Sending};
use crate::plugin::state::{HostServices, VuState};
use std::pin::pin;
use std::time::Duration;
use wasmtime::component::{HasData, Resource, ResourceTable};

/// What the HTTP imports reach of a VU's store: the VU's client and what the plugin
/// holds of it, the k6 layer's response slots (counted under the same cap), the
/// resource table, the call's budget, the VU's tags, and the HTML state (the layer
/// parses a held response into a document without copying it out).
pub(crate) struct HttpView<'a> {
    /// The VU's client and the responses and prepared requests the plugin holds.
    pub(crate) http: &'a mut HttpState,
    /// The k6 layer's response slots and its last send's failures.
    pub(crate) layer: &'a mut LayerState,
    /// Parsed documents held (`responses.document-of`).
    pub(crate) html: &'a mut HtmlState,
    /// The VU's resource table.
    pub(crate) table: &'a mut ResourceTable,
    /// The call's budget: a send's wait gives the thread back, and is noted.
    pub(crate) budget: &'a mut CallBudget,
    /// The VU's tags, on every sample of its requests.
    pub(crate) vu_tags: &'a TagSet,
    /// The run's body limit and warnings (a body that does not decode).
    pub(crate) services: &'a HostServices,
}

/// The `HasData` of the HTTP interfaces: their imports see an [`HttpView`].
pub(crate) struct HasHttp;

impl HasData for HasHttp {
    type Data<'a> = HttpView<'a>;
}

impl VuState {
    /// What the HTTP imports see of the store.
    pub(crate) fn http_view(&mut self) -> HttpView<'_> {
        HttpView {
            http: &mut self.http,
            layer: &mut self.layer,
            html: &mut self.html,
            table: &mut self.table,
            budget: &mut self.budget,
            vu_tags: &self.identity.tags,
            services: &self.services,
        }
    }
}

/// Responses one VU may hold at once before requests are refused: a plugin that keeps
/// every response would otherwise grow the host's memory without bound, outside its
/// own `memory_mb`.
pub(crate) const MAX_LIVE_RESPONSES: u64 = 10_000;

/// Prepared requests one VU may hold at once, for the same reason: a plugin that
/// prepares a request per iteration and keeps them would grow the host's memory.
pub(crate) const MAX_PREPARED: u64 = 10_000;

/// The host's request for the WIT one.
pub(crate) fn to_host(req: wit::Request) -> HttpRequest {
    HttpRequest {
        method: req.method,
        url: req.url,
        headers: req.headers,
        body: req.body.map(bytes::Bytes::from).unwrap_or_default(),
        timeout: req
            .options
            .timeout_ms
            .map(|ms| Duration::from_millis(ms as u64)),
        tags: req.options.tags,
        discard_body: req.options.discard_body,
        expected_statuses: req
            .options
            .expected_statuses
            .map(|r| r.into_iter().map(|s| (s.min, s.max)).collect()),
        redirects: req.options.redirects,
        no_cookie_jar: req.options.no_cookie_jar,
        version: None,
    }
}

/// `req` as the host sends it over HTTP `version` (contract 0.3.4).
fn to_host_with(req: wit::Request, version: Option<wit::HttpVersion>) -> HttpRequest {
    HttpRequest {
        version: version.map(|v| match v {
            wit::HttpVersion::Http1 => Proto::Http1,
            wit::HttpVersion::Http2 => Proto::Http2,
            wit::HttpVersion::Http3 => Proto::Http3,
        }),
        ..to_host(req)
    }
}

/// A response's timings as the contract gives them, in whole microseconds (the
/// contract's `response` and the k6 layer's `timings-of` alike).
pub(crate) fn timings_to_wit(t: &crate::net::types::Timings) -> wit::Timings {
    let us = |d: Duration| d.as_micros() as u64;
    wit::Timings {
        blocked_us: us(t.blocked),
        connecting_us: us(t.connecting),
        tls_handshaking_us: us(t.tls_handshaking),
        sending_us: us(t.sending),
        waiting_us: us(t.waiting),
        receiving_us: us(t.receiving),
        duration_us: us(t.duration()),
    }
}

/// The WIT `http-error` of a host error: its case from the kind, its text from the
/// message (the contract's shape, unchanged since 0.1).
pub(crate) fn error_to_wit(e: HttpError) -> wit::HttpError {
    let kind = e.kind();
    let m = e.into_message();
    match kind {
        HttpErrorKind::Denied => wit::HttpError::Denied(m),
        HttpErrorKind::Invalid => wit::HttpError::Invalid(m),
        HttpErrorKind::Connect => wit::HttpError::Connect(m),
        HttpErrorKind::Timeout => wit::HttpError::Timeout(m),
        HttpErrorKind::Tls => wit::HttpError::Tls(m),
        HttpErrorKind::Protocol => wit::HttpError::Protocol(m),
        HttpErrorKind::BodyTooLarge(n) => wit::HttpError::BodyTooLarge(n),
    }
}

impl HttpView<'_> {
    /// Sends `what` if the VU has room for its responses, waiting within the call's
    /// budget (a wait is not CPU, so the epoch tick does not make the VU yield again):
    /// every HTTP send of the contract and of the k6 layer runs through here.
    pub(crate) async fn send_within_budget<S: Sending>(&mut self, what: S) -> S::Out {
        if let Err(e) = self.room_for_responses(what.responses()) {
            return what.refused(e);
        }
        let parts = SendParts {
            http: &mut self.http.client,
            table: self.table,
            tags: self.vu_tags,
        };
        let send = pin!(what.send(parts));
        self.budget.wait(send).await
    }

    /// Refuses `n` more requests when their responses would pass the VU's cap (the
    /// contract's `response-content` resources and the k6 layer's slots together).
    pub(crate) fn room_for_responses(&self, n: usize) -> Result<(), HttpError> {
        let held = self.http.live_responses + self.layer.responses.held() as u64;
        if held + n as u64 > MAX_LIVE_RESPONSES {
            return Err(HttpError::invalid(format!(
                "this VU holds {held} responses (the most is {MAX_LIVE_RESPONSES}); \
                 drop responses once read instead of keeping them"
            )));
        }
        Ok(())
    }

    /// The WIT response: status and timings by value, the rest in the resource table.
    fn response_to_wit(
        &mut self,
        result: Result<HttpResponse, HttpError>,
    ) -> Result<wit::Response, HttpError> {
        let r = result?;
        let content = self
            .table
            .push(r.content)
            .map_err(|e| HttpError::invalid(format!("cannot hold the response: {e}")))?;
        self.http.live_responses += 1;
        Ok(wit::Response {
            status: r.status,
            body_size: r.body_size,
            timings: timings_to_wit(&r.timings),
            content,
            url: r.url,
        })
    }
}

impl HttpView<'_> {
    /// `send` and `send-with-version`.
    async fn send_one(&mut self, req: HttpRequest) -> Result<wit::Response, HttpError> {
        let result = self.send_within_budget(One(req)).await;
        self.response_to_wit(result)
    }

    /// `send-batch` and `send-batch-with-versions`.
    async fn send_many(
        &mut self,
        reqs: Vec<HttpRequest>,
    ) -> Vec<Result<wit::Response, wit::HttpError>> {
        let results = self.send_within_budget(Batch(reqs)).await;
        results
            .into_iter()
            .map(|r| self.response_to_wit(r).map_err(error_to_wit))
            .collect()
    }

    /// `prepare` and `prepare-with-version`.
    fn prepare_one(&mut self, req: HttpRequest) -> Result<Resource<PreparedRequest>, HttpFailure> {
        if self.http.live_prepared >= MAX_PREPARED {
            return Err(HttpError::invalid(format!(
                "this VU holds {} prepared requests (the most is {MAX_PREPARED}); \
                 prepare a request once and send it many times, or drop the ones done with",
                self.http.live_prepared
            ))
            .into());
        }
        let prepared = self.http.client.prepare_request(req, self.vu_tags)?;
        // The table refusing an entry is the host's failure, not the request's: a trap.
        let handle = self.table.push(prepared).map_err(HttpFailure::trap)?;
        self.http.live_prepared += 1;
        Ok(handle)
    }
}

impl wit::Host for HttpView<'_> {
    fn convert_http_error(&mut self, err: HttpFailure) -> wasmtime::Result<wit::HttpError> {
        // A trap stays a trap; a host error becomes its WIT case.
        Ok(error_to_wit(err.downcast()?))
    }

    async fn send(&mut self, req: wit::Request) -> Result<wit::Response, HttpFailure> {
        Ok(self.send_one(to_host(req)).await?)
    }

    async fn send_with_version(
        &mut self,
        req: wit::Request,
        version: wit::HttpVersion,
    ) -> Result<wit::Response, HttpFailure> {
        Ok(self.send_one(to_host_with(req, Some(version))).await?)
    }

    fn prepare(&mut self, req: wit::Request) -> Result<Resource<PreparedRequest>, HttpFailure> {
        self.prepare_one(to_host(req))
    }

    fn prepare_with_version(
        &mut self,
        req: wit::Request,
        version: wit::HttpVersion,
    ) -> Result<Resource<PreparedRequest>, HttpFailure> {
        self.prepare_one(to_host_with(req, Some(version)))
    }

    async fn send_batch(
        &mut self,
        reqs: Vec<wit::Request>,
    ) -> Vec<Result<wit::Response, wit::HttpError>> {
        self.send_many(reqs.into_iter().map(to_host).collect())
            .await
    }

    async fn send_batch_with_versions(
        &mut self,
        reqs: Vec<(wit::Request, Option<wit::HttpVersion>)>,
    ) -> Vec<Result<wit::Response, wit::HttpError>> {
        let reqs = reqs
            .into_iter()
            .map(|(req, version)| to_host_with(req, version))
            .collect();
        self.send_many(reqs).await
    }
}

impl wit::HostResponseContent for HttpView<'_> {
    fn header(
        &mut self,
        content: Resource<ResponseContent>,
        name: String,
    ) -> wasmtime::Result<Option<String>> {
        Ok(self.table.get(&content)?.header(&name))
    }

    fn headers(
        &mut self,
        content: Resource<ResponseContent>,
    ) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(self.table.get(&content)?.fields())
    }

    fn body(&mut self, content: Resource<ResponseContent>) -> wasmtime::Result<Vec<u8>> {
        Ok(self.table.get(&content)?.body.clone())
    }

    fn drop(&mut self, content: Resource<ResponseContent>) -> wasmtime::Result<()> {
        self.table.delete(content)?;
        self.http.live_responses = self.http.live_responses.saturating_sub(1);
        Ok(())
    }
}

impl wit::HostPreparedRequest for HttpView<'_> {
    async fn send(
        &mut self,
        prepared: Resource<PreparedRequest>,
    ) -> Result<wit::Response, HttpFailure> {
        let result = self.send_within_budget(Prepared::of(&prepared)).await;
        Ok(self.response_to_wit(result)?)
    }

    fn drop(&mut self, prepared: Resource<PreparedRequest>) -> wasmtime::Result<()> {
        self.table.delete(prepared)?;
        self.http.live_prepared = self.http.live_prepared.saturating_sub(1);
        Ok(())
    }
}
