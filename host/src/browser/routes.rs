//! k6's `page.route(url, handler)`: a page's requests handed to the script, which
//! aborts, continues (perhaps changed) or fulfills each.
//!
//! The allowlist's gate ([`super::allow::Gate`]) pauses every request; one the run
//! does not allow is failed there and never reaches the script. While a page routes,
//! the gate queues its allowed requests here instead of continuing them. The script
//! runs on the VU's one thread, which is inside a host call while the page loads, so
//! a call that waits on the page ([`Router::run`]) returns early when a request is
//! queued (the error [`ROUTED`]), is kept, and goes on when the script has answered
//! and calls `resume`. A continued request to a new URL is checked again: one to an
//! origin the run does not allow is failed and counted as denied, never sent.

use super::cdp::Connection;
use super::BrowserError;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use tokio::sync::Notify;

/// The message of a call that returned because routed requests wait for the script.
pub(crate) const ROUTED: &str = "routed-requests-wait";

/// Requests kept for the script per page; past it, a request goes on unrouted.
const MAX_WAITING: usize = 256;

/// A call on the page, kept while the script answers routed requests.
pub(crate) type Op = Pin<Box<dyn Future<Output = Result<Value, BrowserError>> + Send>>;

/// Calls kept at once (a route handler may call the page, whose call may be kept too).
const MAX_KEPT: usize = 8;

#[derive(Default)]
struct Waiting {
    /// Requests not yet handed to the script.
    queued: VecDeque<Value>,
    /// Requests handed over and not yet answered: id → URL.
    open: HashMap<String, String>,
}

/// One page's routed requests.
#[derive(Default)]
pub(crate) struct Router {
    on: AtomicBool,
    waiting: Mutex<Waiting>,
    changed: Notify,
    kept: Mutex<Vec<Op>>,
}

fn header_list(v: Option<&Value>) -> Value {
    let mut out = Vec::new();
    if let Some(Value::Object(h)) = v {
        for (k, v) in h {
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            out.push(json!({ "name": k, "value": text }));
        }
    }
    Value::Array(out)
}

/// k6's (Playwright's) abort codes as the protocol's error reasons.
fn error_reason(code: &str) -> Result<&'static str, BrowserError> {
    Ok(match code {
        "" | "failed" => "Failed",
        "aborted" => "Aborted",
        "accessdenied" => "AccessDenied",
        "addressunreachable" => "AddressUnreachable",
        "blockedbyclient" => "BlockedByClient",
        "blockedbyresponse" => "BlockedByResponse",
        "connectionaborted" => "ConnectionAborted",
        "connectionclosed" => "ConnectionClosed",
        "connectionfailed" => "ConnectionFailed",
        "connectionrefused" => "ConnectionRefused",
        "connectionreset" => "ConnectionReset",
        "internetdisconnected" => "InternetDisconnected",
        "namenotresolved" => "NameNotResolved",
        "timedout" => "TimedOut",
        other => {
            return Err(BrowserError::Invalid(format!(
                "route.abort({other:?}): write failed, aborted, accessdenied, \
                 addressunreachable, blockedbyclient, blockedbyresponse, connectionaborted, \
                 connectionclosed, connectionfailed, connectionrefused, connectionreset, \
                 internetdisconnected, namenotresolved or timedout"
            )))
        }
    })
}

impl Router {
    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the page routes its requests to the script.
    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Ordering::SeqCst)
    }

    /// Routes (or stops routing) from now on; requests already queued stay for the
    /// script. Stopping drops the calls kept for `resume` (they hold the page: kept,
    /// they would keep it alive).
    pub(crate) fn set_on(&self, on: bool) {
        self.on.store(on, Ordering::SeqCst);
        if !on {
            self.kept.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
    }

    /// Takes a paused request (`Fetch.requestPaused`'s params) for the script; `false`
    /// when the page does not route or too many wait (the gate then continues it).
    pub(crate) fn offer(&self, p: &Value) -> bool {
        if !self.is_on() {
            return false;
        }
        let mut w = self.lock();
        if w.queued.len() + w.open.len() >= MAX_WAITING {
            return false;
        }
        let Some(id) = p.get("requestId").and_then(Value::as_str) else {
            return false;
        };
        let request = p.get("request").cloned().unwrap_or(Value::Null);
        let url = request.get("url").and_then(Value::as_str).unwrap_or("");
        w.queued.push_back(json!({
            "id": id,
            "url": url,
            "method": request.get("method").and_then(Value::as_str).unwrap_or("GET"),
            "headers": request.get("headers").cloned().unwrap_or(json!({})),
            "postData": request.get("postData").and_then(Value::as_str),
            "resourceType": p.get("resourceType").and_then(Value::as_str).unwrap_or("Other"),
        }));
        drop(w);
        self.changed.notify_waiters();
        true
    }

    /// The requests queued for the script, as a JSON array; each is open until answered.
    pub(crate) fn take(&self) -> String {
        let mut w = self.lock();
        let list: Vec<Value> = w.queued.drain(..).collect();
        for r in &list {
            let id = r["id"].as_str().unwrap_or("").to_owned();
            let url = r["url"].as_str().unwrap_or("").to_owned();
            w.open.insert(id, url);
        }
        Value::Array(list).to_string()
    }

    /// Waits until a request is queued for the script.
    async fn queued(&self) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self.lock().queued.is_empty() {
                return;
            }
            notified.await;
        }
    }

    /// Answers open request `id` (`abort`, `continue` or `fulfill` with `options`) on
    /// the browser's connection. A continue to a new URL asks `denied(url)` first
    /// (the allowlist's gate: true when the run does not allow it, counted there):
    /// then the request fails instead.
    pub(crate) fn answer(
        &self,
        conn: &Connection,
        denied: &dyn Fn(&str) -> bool,
        id: &str,
        how: &str,
        options: &Value,
    ) -> Result<(), BrowserError> {
        let params = match how {
            "abort" => {
                let code = options
                    .get("errorCode")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                (
                    "Fetch.failRequest",
                    json!({ "requestId": id, "errorReason": error_reason(code)? }),
                )
            }
            "continue" => {
                let mut p = json!({ "requestId": id });
                if let Some(url) = options.get("url").and_then(Value::as_str) {
                    if denied(url) {
                        self.close(id)?;
                        conn.send(
                            None,
                            "Fetch.failRequest",
                            json!({ "requestId": id, "errorReason": "BlockedByClient" }),
                        );
                        return Ok(());
                    }
                    p["url"] = json!(url);
                }
                if let Some(m) = options.get("method").and_then(Value::as_str) {
                    p["method"] = json!(m);
                }
                if let Some(h) = options.get("headers").filter(|h| h.is_object()) {
                    p["headers"] = header_list(Some(h));
                }
                if let Some(body) = options.get("postData").and_then(Value::as_str) {
                    use base64::Engine;
                    p["postData"] = json!(base64::engine::general_purpose::STANDARD.encode(body));
                }
                ("Fetch.continueRequest", p)
            }
            "fulfill" => {
                use base64::Engine;
                let status = options.get("status").and_then(Value::as_u64).unwrap_or(200);
                if !(100..=599).contains(&status) {
                    return Err(BrowserError::Invalid(format!(
                        "route.fulfill: status {status} is not an HTTP status (100 to 599)"
                    )));
                }
                let mut headers = header_list(options.get("headers"));
                if let Some(ct) = options.get("contentType").and_then(Value::as_str) {
                    if let Value::Array(list) = &mut headers {
                        list.retain(|h| {
                            !h["name"]
                                .as_str()
                                .unwrap_or("")
                                .eq_ignore_ascii_case("content-type")
                        });
                        list.push(json!({ "name": "Content-Type", "value": ct }));
                    }
                }
                let body = options.get("body").and_then(Value::as_str).unwrap_or("");
                (
                    "Fetch.fulfillRequest",
                    json!({ "requestId": id, "responseCode": status, "responseHeaders": headers,
                            "body": base64::engine::general_purpose::STANDARD.encode(body) }),
                )
            }
            other => {
                return Err(BrowserError::Invalid(format!(
                    "route answer {other:?}: write abort, continue or fulfill"
                )))
            }
        };
        self.close(id)?;
        conn.send(None, params.0, params.1);
        Ok(())
    }

    fn close(&self, id: &str) -> Result<(), BrowserError> {
        self.lock().open.remove(id).map(|_| ()).ok_or_else(|| {
            BrowserError::Invalid(format!(
                "route {id:?} was answered already (or is not this page's)"
            ))
        })
    }

    /// Continues what the script left unanswered (the page is closing or stops
    /// routing), so no request of it stays paused.
    pub(crate) fn release(&self, conn: &Connection) {
        let mut w = self.lock();
        let w = &mut *w;
        let ids: Vec<String> = w
            .queued
            .drain(..)
            .filter_map(|r| r["id"].as_str().map(str::to_owned))
            .chain(w.open.drain().map(|(id, _)| id))
            .collect();
        for id in ids {
            conn.send(None, "Fetch.continueRequest", json!({ "requestId": id }));
        }
    }

    /// Runs `op` until it ends, or until a request is queued for the script while
    /// the page routes: then `op` is kept for [`Router::resume`] and the error is
    /// [`ROUTED`].
    pub(crate) async fn run(&self, mut op: Op) -> Result<Value, BrowserError> {
        if !self.is_on() {
            return op.await;
        }
        tokio::select! {
            biased;
            r = &mut op => r,
            () = self.queued() => {
                let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
                if kept.len() >= MAX_KEPT {
                    return Err(BrowserError::Invalid(format!(
                        "{MAX_KEPT} page calls wait for route handlers already: a handler \
                         that calls the page must not wait for routed requests itself"
                    )));
                }
                kept.push(op);
                Err(BrowserError::Script(ROUTED.into()))
            }
        }
    }

    /// Goes on with the last kept call.
    pub(crate) async fn resume(&self) -> Result<Value, BrowserError> {
        let op = self
            .kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .ok_or_else(|| BrowserError::Invalid("no page call waits for route handlers".into()))?;
        self.run(op).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paused(id: &str) -> Value {
        json!({ "requestId": id, "resourceType": "Fetch",
                "request": { "url": format!("http://a/{id}"), "method": "GET", "headers": {} } })
    }

    #[test]
    fn only_a_routing_page_takes_requests_and_no_more_than_it_keeps() {
        let r = Router::default();
        assert!(!r.offer(&paused("0")), "not routing: the gate continues it");
        r.set_on(true);
        for i in 0..MAX_WAITING {
            assert!(r.offer(&paused(&i.to_string())));
        }
        assert!(!r.offer(&paused("x")), "past the bound it goes on unrouted");
        let taken: Vec<Value> = serde_json::from_str(&r.take()).unwrap();
        assert_eq!(taken.len(), MAX_WAITING);
        assert_eq!(taken[1]["url"], "http://a/1");
        assert_eq!(taken[1]["resourceType"], "Fetch");
        // Each is open until answered once.
        assert!(r.close("1").is_ok());
        assert!(r.close("1").is_err());
        assert!(r.close("nope").is_err());
    }

    #[test]
    fn abort_codes_are_k6s() {
        assert_eq!(error_reason("").unwrap(), "Failed");
        assert_eq!(error_reason("timedout").unwrap(), "TimedOut");
        let e = error_reason("bogus").unwrap_err().to_string();
        assert!(e.contains("connectionrefused"), "{e}");
    }

    #[tokio::test]
    async fn a_kept_call_is_resumed_and_dropped_when_routing_stops() {
        let r = Router::default();
        r.set_on(true);
        r.offer(&paused("1"));
        let slow: Op = Box::pin(async {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            Ok(json!(7))
        });
        let e = r.run(slow).await.unwrap_err().to_string();
        assert_eq!(e, ROUTED);
        r.take();
        assert_eq!(r.resume().await.unwrap(), json!(7));
        r.offer(&paused("2"));
        let never: Op = Box::pin(std::future::pending());
        assert!(r.run(never).await.is_err());
        r.set_on(false);
        assert!(r.resume().await.is_err(), "stopping drops what was kept");
    }
}
