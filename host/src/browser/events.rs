//! A page's events as k6's `page.on('console' | 'request' | 'response')` hands them to
//! the script: the host keeps them (only the kinds the script listens to) in a bounded
//! queue, and the script's side takes them after each call to the page and runs its
//! handlers on the VU's own JavaScript. A page that logs or loads without end cannot
//! grow the host: past [`MAX_QUEUED`] events the oldest are dropped (and counted, so
//! the script is told), and past [`MAX_QUEUED_BYTES`] of them too.

use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Events kept per page between two takes.
pub(crate) const MAX_QUEUED: usize = 1024;
/// The most their JSON may weigh together.
const MAX_QUEUED_BYTES: usize = 4 << 20;
/// Requests remembered per page for their responses (method, headers, type).
const MAX_REMEMBERED: usize = 256;
/// Headers kept per request or response, and the bytes of each value.
const MAX_HEADERS: usize = 64;
const HEADER_BYTES: usize = 512;
/// Console arguments kept per message.
const MAX_ARGS: usize = 32;

/// Which kinds the script listens to.
#[derive(Default, Clone, Copy)]
struct Listening {
    console: bool,
    request: bool,
    response: bool,
}

#[derive(Default)]
struct Queue {
    listening: Listening,
    events: VecDeque<(Value, usize)>,
    bytes: usize,
    dropped: u64,
    requests: HashMap<String, Value>,
}

/// One page's events waiting for the script.
#[derive(Default)]
pub(crate) struct Events {
    queue: Mutex<Queue>,
}

fn cut(s: &str) -> String {
    crate::bounded::cut(s, crate::bounded::MESSAGE_BYTES).into_owned()
}

/// A header object of the protocol (`{name: value}`), its values as strings and
/// names as the page sent them.
fn headers(v: Option<&Value>) -> Value {
    let mut out = Map::new();
    if let Some(Value::Object(h)) = v {
        for (k, v) in h.iter().take(MAX_HEADERS) {
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            out.insert(
                crate::bounded::cut(k, HEADER_BYTES).into_owned(),
                Value::String(crate::bounded::cut(&text, HEADER_BYTES).into_owned()),
            );
        }
    }
    Value::Object(out)
}

/// The protocol's resource type, as k6 1.1.0 gives it (`Document`, `Script`, `Fetch`,
/// `Other`: not Playwright's lower case; checked side by side).
fn resource_type(p: &Value) -> String {
    p.get("type")
        .and_then(Value::as_str)
        .unwrap_or("Other")
        .to_owned()
}

/// A console argument (the protocol's `RemoteObject`) as the script reads it: its
/// value when it has one, else its description.
fn console_arg(o: &Value) -> (Value, String) {
    let text = match o.get("value") {
        Some(Value::String(s)) => cut(s),
        Some(v) => cut(&v.to_string()),
        None => cut(o
            .get("unserializableValue")
            .or_else(|| o.get("description"))
            .and_then(Value::as_str)
            .unwrap_or_else(|| o.get("type").and_then(Value::as_str).unwrap_or(""))),
    };
    let value = match o.get("value") {
        Some(Value::String(_)) | None => Value::String(text.clone()),
        Some(v) => v.clone(),
    };
    (value, text)
}

impl Events {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps the kinds in `kinds` (`console`, `request`, `response`) from now on; other
    /// names are refused, naming them.
    pub(crate) fn listen(&self, kinds: &[String]) -> Result<(), String> {
        let mut l = Listening::default();
        for k in kinds {
            match k.as_str() {
                "console" => l.console = true,
                "request" => l.request = true,
                "response" => l.response = true,
                other => {
                    return Err(format!(
                        "page event {other:?}: write console, request, response or metric"
                    ))
                }
            }
        }
        self.lock().listening = l;
        Ok(())
    }

    /// Queues `event`, the oldest dropped when the queue is full.
    fn push(q: &mut Queue, event: Value) {
        let size = event.to_string().len();
        while q.events.len() >= MAX_QUEUED
            || (q.bytes + size > MAX_QUEUED_BYTES && !q.events.is_empty())
        {
            if let Some((_, n)) = q.events.pop_front() {
                q.bytes -= n;
            }
            q.dropped += 1;
        }
        q.bytes += size;
        q.events.push_back((event, size));
    }

    /// Takes one protocol event of the page.
    pub(crate) fn on_event(&self, method: &str, p: &Value) {
        let mut q = self.lock();
        let l = q.listening;
        if !(l.console || l.request || l.response) {
            return;
        }
        let str_of = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
        match method {
            "Runtime.consoleAPICalled" if l.console => {
                // The protocol's names, as k6 gives them (`log`, `warning`, `error`).
                let kind = str_of("type");
                let mut args = Vec::new();
                let mut texts = Vec::new();
                if let Some(Value::Array(list)) = p.get("args") {
                    for o in list.iter().take(MAX_ARGS) {
                        let (v, t) = console_arg(o);
                        args.push(v);
                        texts.push(t);
                    }
                }
                let text = cut(&texts.join(" "));
                Self::push(
                    &mut q,
                    json!({ "event": "console", "type": kind, "text": text, "args": args }),
                );
            }
            "Network.requestWillBeSent" => {
                let id = str_of("requestId").to_owned();
                let request = p.get("request").cloned().unwrap_or(Value::Null);
                let url = request.get("url").and_then(Value::as_str).unwrap_or("");
                if url.starts_with("data:") {
                    return;
                }
                let r = json!({
                    "url": cut(url),
                    "method": request.get("method").and_then(Value::as_str).unwrap_or("GET"),
                    "headers": headers(request.get("headers")),
                    "postData": request.get("postData").and_then(Value::as_str).map(cut),
                    "resourceType": resource_type(p),
                    "isNavigationRequest": str_of("loaderId") == id && str_of("type") == "Document",
                    "frameId": str_of("frameId"),
                });
                if l.response {
                    if q.requests.len() >= MAX_REMEMBERED {
                        q.requests.clear();
                    }
                    q.requests.insert(id, r.clone());
                }
                if l.request {
                    let mut e = r;
                    e["event"] = json!("request");
                    Self::push(&mut q, e);
                }
            }
            "Network.responseReceived" if l.response => {
                let id = str_of("requestId");
                let response = p.get("response").cloned().unwrap_or(Value::Null);
                let request = q.requests.remove(id).unwrap_or(Value::Null);
                let e = json!({
                    "event": "response",
                    "url": cut(response.get("url").and_then(Value::as_str).unwrap_or("")),
                    "status": response.get("status").and_then(Value::as_u64).unwrap_or(0),
                    "statusText": cut(response.get("statusText").and_then(Value::as_str).unwrap_or("")),
                    "headers": headers(response.get("headers")),
                    "fromCache": response.get("fromDiskCache").and_then(Value::as_bool).unwrap_or(false),
                    "remoteAddress": {
                        "ip_address": response.get("remoteIPAddress").and_then(Value::as_str).unwrap_or(""),
                        "port": response.get("remotePort").and_then(Value::as_u64).unwrap_or(0),
                    },
                    "request": request,
                });
                Self::push(&mut q, e);
            }
            _ => {}
        }
    }

    /// Takes the events kept so far: `{events: [...], dropped: N}` as JSON text.
    pub(crate) fn take(&self) -> String {
        let mut q = self.lock();
        let events: Vec<Value> = q.events.drain(..).map(|(e, _)| e).collect();
        q.bytes = 0;
        let dropped = std::mem::take(&mut q.dropped);
        json!({ "events": events, "dropped": dropped }).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_kinds_listened_to_are_kept_and_the_queue_is_bounded() {
        let e = Events::default();
        let log = json!({ "type": "log", "args": [{ "type": "string", "value": "hi" }, { "type": "number", "value": 3 }] });
        e.on_event("Runtime.consoleAPICalled", &log);
        assert_eq!(e.take(), json!({ "events": [], "dropped": 0 }).to_string());
        assert!(e.listen(&["console".into(), "dialog".into()]).is_err());
        e.listen(&["console".into()]).unwrap();
        e.on_event("Runtime.consoleAPICalled", &log);
        let taken: Value = serde_json::from_str(&e.take()).unwrap();
        assert_eq!(taken["events"][0]["text"], "hi 3");
        assert_eq!(taken["events"][0]["args"], json!(["hi", 3]));
        for _ in 0..MAX_QUEUED + 5 {
            e.on_event("Runtime.consoleAPICalled", &log);
        }
        let taken: Value = serde_json::from_str(&e.take()).unwrap();
        assert_eq!(taken["events"].as_array().unwrap().len(), MAX_QUEUED);
        assert_eq!(taken["dropped"], 5);
    }

    #[test]
    fn the_queue_is_bounded_in_bytes_too() {
        let e = Events::default();
        e.listen(&["console".into()]).unwrap();
        let big =
            json!({ "type": "log", "args": [{ "type": "string", "value": "x".repeat(9000) }] });
        for _ in 0..1000 {
            e.on_event("Runtime.consoleAPICalled", &big);
        }
        let text = e.take();
        let taken: Value = serde_json::from_str(&text).unwrap();
        assert!(text.len() <= MAX_QUEUED_BYTES + 1024, "{}", text.len());
        assert!(taken["dropped"].as_u64().unwrap() > 0);
        assert_eq!(
            taken["events"].as_array().unwrap().len() as u64 + taken["dropped"].as_u64().unwrap(),
            1000
        );
    }

    #[test]
    fn a_response_carries_its_request() {
        let e = Events::default();
        e.listen(&["response".into()]).unwrap();
        e.on_event(
            "Network.requestWillBeSent",
            &json!({ "requestId": "7", "loaderId": "L", "type": "Fetch",
                     "request": { "url": "http://a/x", "method": "POST", "headers": { "A": "1" } } }),
        );
        e.on_event(
            "Network.responseReceived",
            &json!({ "requestId": "7", "response": { "url": "http://a/x", "status": 201, "headers": {} } }),
        );
        let taken: Value = serde_json::from_str(&e.take()).unwrap();
        let r = &taken["events"][0];
        assert_eq!(r["status"], 201);
        assert_eq!(r["request"]["method"], "POST");
        assert_eq!(r["request"]["resourceType"], "Fetch");
    }
}
