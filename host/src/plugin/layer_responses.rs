//! The k6 layer's `responses` interface (`host/src/author/js/layer.wit`): sends that
//! return one number, with the response held in the VU's [`ResponseSlots`] and read
//! part by part. What is sent, recorded and counted is what the contract's `send`,
//! `prepared-request.send` and `send-batch` do (the same client calls); only the way
//! the response reaches the plugin differs.
//!
//! [`ResponseSlots`]: super::response_slots::ResponseSlots

use super::imports::html::HtmlView;
use super::imports::http::{error_to_wit, timings_to_wit, to_host, HttpView};
use super::layer::bindings::loadtest::k6_layer::{content, responses};
use super::layer::text_as_k6_reads_it;
use super::send::{Batch, One, Prepared};
use crate::html::Document;
use crate::net::http::PreparedRequest;
use crate::net::types::ResponseContent;
use crate::net::{HttpError, HttpResponse};
use crate::plugin::bindings::loadtest::scenario::http as wit;
use crate::plugin::bindings::loadtest::scenario::types::Headers;
use wasmtime::component::Resource;

/// The bit of a send's number that says it failed.
const FAILED: u32 = 1 << 31;
/// The bit that says the response's URL is not the request's.
const MOVED: u32 = 1 << 10;
/// Where the slot number starts in a send's number.
const SLOT_SHIFT: u32 = 11;

impl content::Host for HttpView<'_> {
    fn text(&mut self, content: Resource<ResponseContent>) -> wasmtime::Result<String> {
        Ok(text_as_k6_reads_it(&self.table.get(&content)?.body))
    }
}

impl HttpView<'_> {
    /// Starts a send call: frees what an earlier guest call left unkept and forgets
    /// the last call's failures.
    fn start_layer_send(&mut self) {
        self.layer.responses.start(self.budget.call_number());
        self.layer.errors.clear();
    }

    /// The number a send returns for `result`: the response held in a slot, or the
    /// failure kept for `error`.
    fn hold(&mut self, result: Result<HttpResponse, HttpError>, asked: &str) -> u32 {
        match result {
            Ok(mut r) => {
                self.decode_body(&mut r);
                // A status is three digits; the field has ten bits.
                let status = u32::from(r.status).min(MOVED - 1);
                let moved = if r.url == asked { 0 } else { MOVED };
                let slot = self.layer.responses.insert(r);
                status | moved | (slot << SLOT_SHIFT)
            }
            Err(e) => {
                self.layer.errors.push(e);
                FAILED | (self.layer.errors.len() as u32 - 1)
            }
        }
    }

    /// Decodes the body by its `Content-Encoding`, as k6 does before the script reads
    /// it; a body that does not decode stays as it came, with a warning (k6 fails
    /// the request instead: the status and timings are kept here).
    fn decode_body(&mut self, r: &mut HttpResponse) {
        let Some(encoding) = r.content.header("content-encoding") else {
            return;
        };
        match crate::net::encoding::decode(&encoding, &r.content.body, self.services.net.max_body) {
            Ok(Some(body)) => r.content.body = body,
            Ok(None) => {}
            Err(e) => self.services.warn_once(
                "content-encoding",
                &format!("{}: {e}; the body is kept as it came", r.url),
            ),
        }
    }

    /// The response in `slot`, or a trap: the layer asked for a slot it let go.
    fn slot(&self, slot: u32) -> wasmtime::Result<&HttpResponse> {
        self.layer.responses.get(slot).ok_or_else(|| {
            wasmtime::format_err!("the k6 layer read response slot {slot}, which it does not hold")
        })
    }
}

impl responses::Host for HttpView<'_> {
    async fn send(&mut self, req: wit::Request) -> u32 {
        self.start_layer_send();
        let req = to_host(req);
        let asked = req.url.clone();
        let result = self.send_within_budget(One(req)).await;
        self.hold(result, &asked)
    }

    async fn send_prepared(&mut self, prepared: Resource<PreparedRequest>) -> u32 {
        self.start_layer_send();
        // The URL asked for, to tell a moved response (none when the handle is not
        // held: the send then fails saying so).
        let asked = match self.table.get(&prepared) {
            Ok(p) => p.url().to_string(),
            Err(_) => String::new(),
        };
        let result = self.send_within_budget(Prepared::of(&prepared)).await;
        self.hold(result, &asked)
    }

    async fn send_batch(&mut self, reqs: Vec<wit::Request>) -> Vec<u32> {
        self.start_layer_send();
        let reqs: Vec<_> = reqs.into_iter().map(to_host).collect();
        let asked: Vec<String> = reqs.iter().map(|r| r.url.clone()).collect();
        let results = self.send_within_budget(Batch(reqs)).await;
        results
            .into_iter()
            .zip(&asked)
            .map(|(r, url)| self.hold(r, url))
            .collect()
    }

    fn error(&mut self, n: u32) -> wasmtime::Result<Result<(), wit::HttpError>> {
        match self.layer.errors.get(n as usize) {
            Some(e) => Ok(Err(error_to_wit(e.clone()))),
            None => wasmtime::bail!("the k6 layer read failure {n} of a send that had none"),
        }
    }

    fn timings_of(&mut self, slot: u32) -> wasmtime::Result<Vec<f64>> {
        let t = timings_to_wit(&self.slot(slot)?.timings);
        // Microseconds to milliseconds as the layer divided them (`us / 1000` of the
        // same f64), so a script reads the same numbers.
        Ok([
            t.blocked_us,
            t.connecting_us,
            t.tls_handshaking_us,
            t.sending_us,
            t.waiting_us,
            t.receiving_us,
            t.duration_us,
        ]
        .map(|us| us as f64 / 1000.0)
        .to_vec())
    }

    fn url_of(&mut self, slot: u32) -> wasmtime::Result<String> {
        Ok(self.slot(slot)?.url.clone())
    }

    fn headers_of(&mut self, slot: u32) -> wasmtime::Result<Headers> {
        Ok(self.slot(slot)?.content.fields())
    }

    fn body_of(&mut self, slot: u32) -> wasmtime::Result<Vec<u8>> {
        Ok(self.slot(slot)?.content.body.clone())
    }

    fn text_of(&mut self, slot: u32) -> wasmtime::Result<String> {
        Ok(text_as_k6_reads_it(&self.slot(slot)?.content.body))
    }

    fn document_of(&mut self, slot: u32) -> wasmtime::Result<Resource<Document>> {
        let doc = Document::parse_bytes(&self.slot(slot)?.content.body);
        let mut html = HtmlView {
            html: &mut *self.html,
            table: &mut *self.table,
        };
        html.hold_document(doc)
    }

    fn keep(&mut self, slot: u32) -> wasmtime::Result<()> {
        if !self.layer.responses.keep(slot) {
            wasmtime::bail!("the k6 layer kept response slot {slot}, which it does not hold");
        }
        Ok(())
    }

    fn release(&mut self, slot: u32) -> wasmtime::Result<()> {
        if !self.layer.responses.release(slot) {
            wasmtime::bail!("the k6 layer released response slot {slot}, which it does not hold");
        }
        Ok(())
    }
}
