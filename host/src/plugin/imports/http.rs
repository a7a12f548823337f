//! `http`: converts between the WIT records and the host's HTTP client.

use crate::net::{HttpError, HttpRequest, HttpResponse};
use crate::plugin::bindings::loadtest::scenario::http as wit;
use crate::plugin::state::VuState;
use std::time::Duration;

fn to_host(req: wit::Request) -> HttpRequest {
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
    }
}

fn to_wit(result: Result<HttpResponse, HttpError>) -> Result<wit::Response, wit::HttpError> {
    let us = |d: Duration| d.as_micros() as u64;
    match result {
        Ok(r) => Ok(wit::Response {
            status: r.status,
            headers: r.headers,
            body: r.body,
            body_size: r.body_size,
            timings: wit::Timings {
                blocked_us: us(r.timings.blocked),
                connecting_us: us(r.timings.connecting),
                tls_handshaking_us: us(r.timings.tls_handshaking),
                sending_us: us(r.timings.sending),
                waiting_us: us(r.timings.waiting),
                receiving_us: us(r.timings.receiving),
                duration_us: us(r.timings.duration()),
            },
        }),
        Err(e) => Err(match e {
            HttpError::Denied(m) => wit::HttpError::Denied(m),
            HttpError::Invalid(m) => wit::HttpError::Invalid(m),
            HttpError::Connect(m) => wit::HttpError::Connect(m),
            HttpError::Timeout(m) => wit::HttpError::Timeout(m),
            HttpError::Tls(m) => wit::HttpError::Tls(m),
            HttpError::Protocol(m) => wit::HttpError::Protocol(m),
            HttpError::BodyTooLarge(n) => wit::HttpError::BodyTooLarge(n),
        }),
    }
}

impl wit::Host for VuState {
    async fn send(&mut self, req: wit::Request) -> Result<wit::Response, wit::HttpError> {
        let tags = self.identity.tags.clone();
        to_wit(self.http.send(to_host(req), &tags).await)
    }

    async fn send_batch(
        &mut self,
        reqs: Vec<wit::Request>,
    ) -> Vec<Result<wit::Response, wit::HttpError>> {
        let tags = self.identity.tags.clone();
        let reqs = reqs.into_iter().map(to_host).collect();
        self.http
            .send_batch(reqs, &tags)
            .await
            .into_iter()
            .map(to_wit)
            .collect()
    }
}
