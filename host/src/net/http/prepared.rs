//! A request the plugin prepared once and sends by handle (WIT `prepared-request`,
//! 0.3.1): its target (parsed and allowed), method, header fields and tag set are made
//! when it is prepared, so a send skips lifting the request's strings out of the
//! plugin, the URL and allowlist lookups, the header map build from strings and the
//! tag-set lookup. What may change between sends is applied at each send, as for any
//! request: the VU's cookie jar, redirects (each hop checked against the allowlist),
//! the timeout's deadline and every metric.

use super::{HttpRequest, Template};
use crate::metrics::TagSet;
use crate::net::request_tags::Slot;

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
