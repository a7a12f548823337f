//! Prepared unary calls (contract 0.3.6) and the answers of unary calls as the host
//! holds them. A [`Prepared`] call is what a call needs, made once: the method
//! resolved, the JSON request encoded to protobuf and framed, the request's URI and
//! header fields built and checked, the tag sets made. Every unary call runs from one
//! ([`Channel::invoke`] prepares one for a single use), so both kinds of call share one
//! path and one way of counting. A [`CallContent`] keeps the answer as it came
//! (protobuf bytes and header maps) until the plugin reads it.

use super::json::decode_json;
use super::status::{self, GrpcError};
use crate::metrics::TagSet;
use bytes::Bytes;
use http::HeaderMap;
use prost_reflect::MessageDescriptor;
use std::time::Duration;

/// A unary call ready to be made, on the channel it was prepared on.
#[derive(Debug)]
pub struct Prepared {
    /// The number of that channel ([`super::Channel`]'s `id`).
    pub(super) channel: u64,
    /// `package.Service/Method` as the plugin named it, for messages.
    pub(super) method: String,
    /// The type of the answer.
    pub(super) output: MessageDescriptor,
    /// `scheme://host:port/package.Service/Method`.
    pub(super) uri: http::Uri,
    /// gRPC's header fields, the deadline and the plugin's metadata.
    pub(super) headers: HeaderMap,
    /// The request message, encoded and framed.
    pub(super) payload: Bytes,
    /// The deadline, enforced by the host.
    pub(super) timeout: Option<Duration>,
    /// Codes other than OK that count as expected.
    pub(super) expected: Vec<u32>,
    /// The call's tags (the channel's, the plugin's, `method` and `name`).
    pub(super) tags: TagSet,
    /// `tags` with `status` 0, made at once for a call prepared to be made many times
    /// (an answered call is the common case and needs no new set then).
    pub(super) ok_tags: Option<TagSet>,
}

impl Prepared {
    /// `package.Service/Method` as the plugin named it.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Whether a call that ended with `code` passed.
    pub(super) fn expects(&self, code: u32) -> bool {
        code == status::code::OK || self.expected.contains(&code)
    }

    /// The tags of a call that ended with `code` (or failed with `error`).
    pub(super) fn tags_for(&self, code: u32, error: Option<&GrpcError>) -> TagSet {
        match (&self.ok_tags, error) {
            (Some(ok), None) if code == status::code::OK => ok.clone(),
            _ => {
                let code = code.to_string();
                let error = error.map(|e| ("error", e.kind()));
                self.tags
                    .with([("status", code.as_str())].into_iter().chain(error))
            }
        }
    }
}

/// What a unary call that passed (OK, or a status the call expects) answered.
#[derive(Debug)]
pub struct Answer {
    /// The gRPC status code.
    pub code: u32,
    /// `grpc-message`, percent-decoded.
    pub status_message: String,
    /// From sending the request to the end of the answer.
    pub duration: Duration,
    /// The message, headers and trailers.
    pub content: CallContent,
}

/// The message (protobuf, when OK), headers and trailers of an answer, converted
/// for the plugin only when it asks.
#[derive(Debug)]
pub struct CallContent {
    pub(super) message: Option<Bytes>,
    pub(super) output: MessageDescriptor,
    pub(super) headers: HeaderMap,
    pub(super) trailers: HeaderMap,
}

impl CallContent {
    /// The message as proto3 JSON; `None` when the status was not OK.
    pub fn message(&self) -> Result<Option<String>, GrpcError> {
        self.message
            .as_ref()
            .map(|bytes| decode_json(&self.output, bytes))
            .transpose()
    }

    /// The response's header fields, as name/value pairs.
    pub fn headers(&self) -> Vec<(String, String)> {
        status::pairs(&self.headers)
    }

    /// The trailers, as name/value pairs.
    pub fn trailers(&self) -> Vec<(String, String)> {
        status::pairs(&self.trailers)
    }
}

/// A `prepared-call` as the VU's resource table holds it: the call, and the table
/// handle of the channel it was prepared on (looked up at each `invoke`; the channel
/// checks by its number that it is still the same one).
#[derive(Debug, Clone)]
pub struct PreparedCall {
    /// The channel resource's handle (`Resource::rep`).
    pub channel_handle: u32,
    /// The call; shared, so an `invoke` takes it out of the table cheaply.
    pub call: std::sync::Arc<Prepared>,
}
