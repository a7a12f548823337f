//! The one way a plugin's HTTP send runs: room for its responses under the VU's cap,
//! the VU's tags, and the wait counted against the call's budget. The contract's
//! `send`, `send-batch` and `prepared-request.send` and the k6 layer's `send`,
//! `send-prepared` and `send-batch` differ only in what they send and in how the
//! response reaches the plugin, so each names a [`Sending`] and calls
//! `HttpView::send_within_budget` (imports/http.rs).

use crate::metrics::TagSet;
use crate::net::http::PreparedRequest;
use crate::net::{HttpClient, HttpError, HttpRequest, HttpResponse};
use std::future::Future;
use wasmtime::component::{Resource, ResourceTable};

/// What a send may use of the VU while it waits: its client, its resource table (where
/// prepared requests are) and its tags.
pub(crate) struct SendParts<'a> {
    /// The VU's client.
    pub(crate) http: &'a mut HttpClient,
    /// The VU's resource table.
    pub(crate) table: &'a ResourceTable,
    /// The VU's tags, added to every sample of the send.
    pub(crate) tags: &'a TagSet,
}

/// One kind of send: how many responses it may hold, what it returns when there is no
/// room for them, and the send itself.
pub(crate) trait Sending: Send {
    /// What the send gives: one response or failure, or one per request.
    type Out: Send;
    /// Responses the send may hold at once.
    fn responses(&self) -> usize;
    /// What the send gives when the VU has no room for its responses.
    fn refused(self, e: HttpError) -> Self::Out;
    /// The send, over the VU's parts.
    fn send<'a>(self, parts: SendParts<'a>) -> impl Future<Output = Self::Out> + Send + 'a;
}

/// One request.
pub(crate) struct One(pub(crate) HttpRequest);

impl Sending for One {
    type Out = Result<HttpResponse, HttpError>;
    fn responses(&self) -> usize {
        1
    }
    fn refused(self, e: HttpError) -> Self::Out {
        Err(e)
    }
    fn send<'a>(self, p: SendParts<'a>) -> impl Future<Output = Self::Out> + Send + 'a {
        p.http.send(self.0, p.tags)
    }
}

/// A prepared request, by its handle in the VU's table.
pub(crate) struct Prepared(Resource<PreparedRequest>);

impl Prepared {
    /// The send of the prepared request `handle` names (borrowed: the plugin keeps it).
    pub(crate) fn of(handle: &Resource<PreparedRequest>) -> Self {
        Prepared(Resource::new_borrow(handle.rep()))
    }
}

impl Sending for Prepared {
    type Out = Result<HttpResponse, HttpError>;
    fn responses(&self) -> usize {
        1
    }
    fn refused(self, e: HttpError) -> Self::Out {
        Err(e)
    }
    fn send<'a>(self, p: SendParts<'a>) -> impl Future<Output = Self::Out> + Send + 'a {
        // Looked up before the future: the table is not `Sync`, so the future holds
        // the request, not the table.
        let SendParts { http, table, tags } = p;
        let prepared = table
            .get(&self.0)
            .map_err(|e| HttpError::invalid(format!("no such prepared request: {e}")));
        async move {
            // Boxed: wasmtime's generated wrapper moves the host function's future
            // (the whole send, over a kilobyte) when it starts it; a box moves a pointer.
            Box::pin(http.send_prepared(prepared?, tags)).await
        }
    }
}

/// Requests sent at once (`send-batch`): one response or failure each, in order.
pub(crate) struct Batch(pub(crate) Vec<HttpRequest>);

impl Sending for Batch {
    type Out = Vec<Result<HttpResponse, HttpError>>;
    fn responses(&self) -> usize {
        self.0.len()
    }
    fn refused(self, e: HttpError) -> Self::Out {
        self.0.iter().map(|_| Err(e.clone())).collect()
    }
    fn send<'a>(self, p: SendParts<'a>) -> impl Future<Output = Self::Out> + Send + 'a {
        p.http.send_batch(self.0, p.tags)
    }
}
