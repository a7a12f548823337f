//! A request made ready to go on the wire, and what its record keeps of it.
//!
//! A request the plugin prepared once and sends by handle (WIT `prepared-request`,
//! 0.3.1) keeps its [`Template`]: its target (parsed and allowed), method, header
//! fields and tag set are made when it is prepared, so a send skips lifting the
//! request's strings out of the plugin, the URL and allowlist lookups, the header map
//! build from strings and the tag-set lookup. What may change between sends is applied
//! at each send, as for any request: the VU's cookie jar, redirects (each hop checked
//! against the allowlist), the timeout's deadline and every metric.

use super::route::Route;
use crate::metrics::TagSet;
use crate::net::request_tags::Slot;
use crate::net::targets::{PoolKey, Target};
use crate::net::types::HttpRequest;
use bytes::Bytes;
use http_body_util::Full;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// A prepared request, held in the VU's resource table.
pub struct PreparedRequest {
    /// The request as the plugin gave it: its URL, options and tags, for each send,
    /// its redirects and its cookies.
    pub(super) request: HttpRequest,
    /// Target, method and header fields, cloned for each send (hyper takes them).
    pub(super) template: Template,
    /// The request's tag set and its place in the VU's cache, as made when prepared.
    pub(super) tags: (Slot, TagSet),
}

impl PreparedRequest {
    /// The URL it was prepared with (a response from elsewhere was redirected).
    pub(crate) fn url(&self) -> &str {
        &self.request.url
    }
}

/// What every send of one request shares, made once by the client's `template`.
#[derive(Clone)]
pub(super) struct Template {
    pub(super) target: Arc<Target>,
    pub(super) method: http::Method,
    /// The request's own header fields and `Host`; not the jar's cookies.
    pub(super) headers: http::HeaderMap,
}

/// A request checked and ready to go on the wire.
pub(super) struct Prepared {
    pub(super) target: Arc<Target>,
    /// Over TCP, or HTTP/3 to which UDP endpoint.
    pub(super) route: Route,
    /// Where its connection is pooled: the target's, or its HTTP/3 endpoint's.
    pub(super) pool_key: PoolKey,
    pub(super) local_ip: Option<IpAddr>,
    pub(super) request: http::Request<Full<Bytes>>,
    pub(super) timeout: Duration,
    pub(super) discard_body: bool,
    pub(super) expected: Option<Vec<(u16, u16)>>,
    pub(super) tags: TagSet,
    pub(super) slot: Slot,
}

/// What is needed to record a request after it is consumed.
pub(super) struct Meta {
    pub(super) tags: TagSet,
    pub(super) slot: Slot,
    pub(super) expected: Option<Vec<(u16, u16)>>,
}

impl Prepared {
    /// What its record needs, kept apart because the exchange consumes the request.
    pub(super) fn clone_meta(&self) -> Meta {
        Meta {
            tags: self.tags.clone(),
            slot: self.slot,
            expected: self.expected.clone(),
        }
    }
}
