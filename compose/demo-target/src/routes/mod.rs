//! Routing from method and path to a handler, and the helpers handlers share.

mod accounts;
mod admin;
pub(crate) mod auth;
pub(crate) mod commands;
mod invoke;
mod notes;
mod search;
mod site;
mod static_files;
mod survey;
mod webhooks;
mod ws;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::state::AppState;

/// The response type of every handler: bodies are small and built in one piece.
pub type Resp = Response<Full<Bytes>>;

/// Routes one request. Path segments are split on `/`, ignoring empty ones.
pub async fn dispatch(state: &AppState, req: Request<Incoming>) -> Resp {
    let path = req.uri().path().to_owned();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        [] => static_files::serve(&req, "index.html"),
        ["static", name] => static_files::serve(&req, name),
        ["health"] => match *req.method() {
            Method::GET => json(StatusCode::OK, &serde_json::json!({ "status": "ok" })),
            _ => method_not_allowed("GET"),
        },
        ["metrics"] => match *req.method() {
            Method::GET => {
                let mut text = state.metrics.render(state.notes.count());
                text.push_str(&crate::metrics::render_gauge(
                    "demo_commands_queued",
                    "Commands waiting in the outbox for a worker.",
                    state.commands.queued(),
                ));
                text.push_str(&crate::metrics::render_gauge(
                    "demo_capacity_waiting",
                    "Requests waiting for a worker of the capacity limit.",
                    state.faults.waiting(),
                ));
                state.live.counters.render(&mut text);
                site::render_metrics(state, &mut text);
                render_parts(state, &mut text);
                state.timings.render(&mut text);
                let mut resp = Response::new(Full::new(Bytes::from(text)));
                resp.headers_mut().insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                );
                resp
            }
            _ => method_not_allowed("GET"),
        },
        ["auth", "token"] => auth::token(state, req).await,
        // The first visit, accounts and search (issue 19, seeds a).
        ["app"] => site::shell(state, &req),
        ["assets", name] => site::asset(state, &req, name),
        ["api", "config"] => site::config(state, &req),
        ["api", "me"] => site::me(state, &req),
        ["inbox"] => site::inbox(state, &req),
        ["accounts"] => accounts::sign_up(state, req).await,
        ["accounts", "me"] => accounts::delete(state, &req),
        ["auth", "refresh"] => accounts::refresh(state, req).await,
        ["groups", group, "search"] => match group.parse() {
            Ok(group) => search::search(state, &req, group),
            Err(_) => not_found(),
        },
        ["survey", ..] | ["cookies", ..] => survey::dispatch(state, req, &segments).await,
        ["ws"] => ws::upgrade(state, req),
        ["admin", "faults"] => admin::faults(state, req).await,
        ["admin", "hold"] => admin::hold(state, &req),
        ["admin", "outbox", "claim"] => commands::claim(state, req).await,
        ["admin", "outbox", id, "done"] => match id.parse() {
            Ok(id) => commands::done(state, req, id).await,
            Err(_) => not_found(),
        },
        ["invoke"] => invoke::invoke(state, req).await,
        ["events"] => webhooks::events(state, req).await,
        ["admin", "webhooks", "receive"] => webhooks::receive(state, req).await,
        ["commands"] => commands::submit(state, req).await,
        ["commands", id] => match id.parse() {
            Ok(id) => commands::show(state, &req, id),
            Err(_) => not_found(),
        },
        ["groups", group, "notes"] => match group.parse() {
            Ok(group) => notes::collection(state, req, group).await,
            Err(_) => not_found(),
        },
        ["groups", group, "notes", id] => match (group.parse(), id.parse()) {
            (Ok(group), Ok(id)) => notes::item(state, req, group, id).await,
            _ => not_found(),
        },
        _ => not_found(),
    }
}

/// The first value of query parameter `name`, percent-decoded.
pub fn query<B>(req: &Request<B>, name: &str) -> Option<String> {
    form_urlencoded::parse(req.uri().query()?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The counters of the scenario parts (commands, rate limit, invoke, outbox, survey)
/// in the Prometheus text format.
pub fn render_parts(state: &AppState, text: &mut String) {
    state.commands.render(text);
    state.clients.render(text);
    state.invoker.render(text);
    state.outbox.render(text);
    state.survey.counts().render(text);
    state.grpc.render(text);
}

/// A JSON response with the given status.
pub fn json<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Resp {
    // Serialising our own plain structs cannot fail; an empty body beats a panic.
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// A response with no body, for 204 and 304.
pub fn empty(status: StatusCode) -> Resp {
    let mut resp = Response::new(Full::default());
    *resp.status_mut() = status;
    resp
}

/// A JSON error response: `{"error": message}`.
pub fn error(status: StatusCode, message: &str) -> Resp {
    json(status, &serde_json::json!({ "error": message }))
}

/// 404 for a path that names nothing.
pub fn not_found() -> Resp {
    error(StatusCode::NOT_FOUND, "not found")
}

/// 405 with the `Allow` header listing what the path does accept.
pub fn method_not_allowed(allow: &'static str) -> Resp {
    let mut resp = error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
    resp.headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    resp
}

/// Reads the whole body (up to the configured limit) and parses it as JSON,
/// or returns the 400/413 response to send instead.
pub async fn read_json<T: DeserializeOwned>(
    state: &AppState,
    req: Request<Incoming>,
) -> Result<T, Resp> {
    let body = Limited::new(req.into_body(), state.max_body_bytes);
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<LengthLimitError>() => {
            return Err(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request body too large",
            ));
        }
        Err(_) => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "could not read request body",
            ))
        }
    };
    serde_json::from_slice(&bytes)
        .map_err(|e| error(StatusCode::BAD_REQUEST, &format!("invalid JSON body: {e}")))
}
