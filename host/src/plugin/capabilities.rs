//! A VU's state per capability: what the imports of one area keep between calls, one
//! struct each, held side by side in [`VuState`](super::state::VuState). The state of
//! a new capability (browser, raw sockets) is a struct here (or in its own file) and
//! one field of `VuState`; the imports of an area read their own struct, so adding one
//! touches no other area's code. What lives in the resource table (sockets, gRPC
//! streams, response contents) is counted here, not held.

use super::layer_series::Series;
use super::response_slots::ResponseSlots;
use crate::metrics::tag_cache::TagCache;
use crate::net::{HttpClient, HttpError};
use crate::thresholds::declared::Declared;

/// The `http` and `cookies` imports' state: the VU's own client (connections, cookie
/// jar) and how many of the table's response contents and prepared requests the
/// plugin holds.
pub struct HttpState {
    /// This VU's own connections and cookie jar.
    pub client: HttpClient,
    /// HTTP responses the plugin holds (`response-content` resources not yet dropped).
    pub live_responses: u64,
    /// Prepared requests the plugin holds (`prepared-request` resources not yet dropped).
    pub live_prepared: u64,
}

impl HttpState {
    /// A VU's HTTP state over its client, holding nothing yet.
    pub(crate) fn new(client: HttpClient) -> Self {
        Self {
            client,
            live_responses: 0,
            live_prepared: 0,
        }
    }
}

/// The `html` import's state.
#[derive(Debug, Default)]
pub struct HtmlState {
    /// Parsed HTML documents the plugin holds (`html.document` resources not yet dropped).
    pub live_documents: u64,
}

/// The `metrics` import's state (and the k6 layer's checks and samples, which record
/// through the same tag sets).
#[derive(Default)]
pub struct MetricsState {
    /// Tag sets of this VU's checks and custom metrics, made once each.
    pub tag_cache: TagCache,
    /// What the plugin declared it may record (`metrics.declare`, called from
    /// `describe`); `None` until it declares anything.
    pub declared: Option<Declared>,
    /// The checks the k6 layer registered (`checks.register`): name and tags by number.
    pub checks: Vec<(String, Vec<(String, String)>)>,
    /// Numbered custom-metric series (`metrics.register`, the k6 layer's
    /// `samples.register`).
    pub(crate) series: Vec<Series>,
}

/// The k6 layer's own imports' state (`host/src/author/js/layer.wit`): what it holds
/// by number.
#[derive(Default)]
pub struct LayerState {
    /// HTTP responses the k6 layer holds by number (`k6-layer/responses`).
    pub responses: ResponseSlots,
    /// The failures of the k6 layer's last send call, numbered as it returned them.
    pub errors: Vec<HttpError>,
}
