//! A page's own requests as k6's browser metrics: `browser_http_req_duration` (from
//! the request leaving to its last byte), `browser_http_req_failed` (a status of 400
//! or more, or no response), `browser_data_sent` and `browser_data_received` (bytes on
//! the wire as the browser counts them), tagged `url`, `method`, `status` and
//! `resource_type`, from the page's `Network` events.

use super::tagging::MetricNames;
use crate::metrics::{builtin, Recorder, TagSet};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Requests in flight kept per page; past it, new ones are not measured (a page that
/// starts thousands of requests and finishes none cannot grow the host).
const MAX_IN_FLIGHT: usize = 4096;

struct InFlight {
    url: String,
    method: String,
    resource_type: String,
    started: f64,
    status: Option<u16>,
}

/// One page's requests in flight.
pub(crate) struct Traffic {
    tags: TagSet,
    names: Arc<MetricNames>,
    in_flight: Mutex<HashMap<String, InFlight>>,
}

fn text(p: &Value, pointer: &str) -> String {
    p.pointer(pointer)
        .and_then(Value::as_str)
        .map(|s| crate::bounded::cut(s, crate::bounded::TAG_BYTES).into_owned())
        .unwrap_or_default()
}

impl Traffic {
    /// The requests of a page whose metrics carry `tags`, their URLs grouped by
    /// `names`.
    pub(crate) fn new(tags: TagSet, names: Arc<MetricNames>) -> Traffic {
        Traffic {
            tags,
            names,
            in_flight: Mutex::default(),
        }
    }

    /// Takes one `Network.*` event.
    pub(crate) fn on_event(&self, recorder: &Recorder, method: &str, p: &Value) {
        let id = p.get("requestId").and_then(Value::as_str).unwrap_or("");
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        match method {
            "Network.requestWillBeSent" => {
                let url = text(p, "/request/url");
                if url.starts_with("data:") || url.starts_with("blob:") {
                    return;
                }
                // A redirect reuses the id: the hop that ended is measured as its own.
                if let Some(prev) = in_flight.remove(id) {
                    let status = p
                        .pointer("/redirectResponse/status")
                        .and_then(Value::as_u64)
                        .map(|s| s as u16);
                    let ts = p
                        .get("timestamp")
                        .and_then(Value::as_f64)
                        .unwrap_or(prev.started);
                    self.finish(recorder, prev, status, ts, None);
                }
                if in_flight.len() >= MAX_IN_FLIGHT {
                    return;
                }
                let sent = p
                    .pointer("/request/headers")
                    .map_or(0, |h| h.to_string().len())
                    + url.len()
                    + p.pointer("/request/postData")
                        .and_then(Value::as_str)
                        .map_or(0, str::len);
                recorder.count(builtin::BROWSER_DATA_SENT, &self.tags, sent as f64);
                in_flight.insert(
                    id.to_owned(),
                    InFlight {
                        url,
                        method: text(p, "/request/method"),
                        resource_type: text(p, "/type"),
                        started: p.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0),
                        status: None,
                    },
                );
            }
            "Network.responseReceived" => {
                if let Some(r) = in_flight.get_mut(id) {
                    r.status = p
                        .pointer("/response/status")
                        .and_then(Value::as_u64)
                        .map(|s| s as u16);
                }
            }
            "Network.loadingFinished" => {
                if let Some(r) = in_flight.remove(id) {
                    let ts = p
                        .get("timestamp")
                        .and_then(Value::as_f64)
                        .unwrap_or(r.started);
                    let bytes = p.get("encodedDataLength").and_then(Value::as_f64);
                    let status = r.status;
                    self.finish(recorder, r, status, ts, bytes);
                }
            }
            "Network.loadingFailed" => {
                if let Some(r) = in_flight.remove(id) {
                    let ts = p
                        .get("timestamp")
                        .and_then(Value::as_f64)
                        .unwrap_or(r.started);
                    self.finish(recorder, r, None, ts, None);
                }
            }
            _ => {}
        }
    }

    fn finish(
        &self,
        recorder: &Recorder,
        r: InFlight,
        status: Option<u16>,
        ended: f64,
        received: Option<f64>,
    ) {
        let status_text = status.map_or("0".to_owned(), |s| s.to_string());
        let grouped = self.names.name_of(&r.url, Some(&r.method));
        let url = grouped.as_deref().unwrap_or(&r.url);
        let tags = self.tags.with([
            ("url", url),
            ("name", url),
            ("method", r.method.as_str()),
            ("status", status_text.as_str()),
            ("resource_type", r.resource_type.as_str()),
        ]);
        let failed = status.is_none_or(|s| s >= 400);
        recorder.with_shard(|s| {
            // The protocol's timestamps are seconds.
            let us = ((ended - r.started).max(0.0) * 1e6).round() as u64;
            s.trend(builtin::BROWSER_HTTP_REQ_DURATION, &tags, us);
            s.rate(builtin::BROWSER_HTTP_REQ_FAILED, &tags, failed);
            if let Some(bytes) = received {
                s.count(builtin::BROWSER_DATA_RECEIVED, &self.tags, bytes.max(0.0));
            }
        });
    }
}
