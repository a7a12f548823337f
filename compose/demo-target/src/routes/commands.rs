//! `/commands` (users queue work and poll it) and `/admin/outbox` (the worker claims
//! queued work and reports results). The outbox sits under `/admin/` because it is the
//! stack's internal traffic: no faults, and counted apart from user requests.

use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, LOCATION};
use hyper::{Method, Request, StatusCode};
use serde::Deserialize;

use super::{auth, error, json, method_not_allowed, not_found, read_json, Resp};
use crate::state::AppState;

/// Commands a worker knows how to do (the gRPC face checks the same).
pub(crate) const KINDS: &[&str] = &["export"];

/// Longest a claim may wait for work.
const MAX_CLAIM_WAIT: Duration = Duration::from_secs(30);

#[derive(Deserialize)]
struct NewCommand {
    kind: String,
    group: u32,
}

/// `POST /commands` with `{"kind": "export", "group": G}`: 202 with the queued command
/// and `Location: /commands/{id}`.
pub async fn submit(state: &AppState, req: Request<Incoming>) -> Resp {
    if req.method() != Method::POST {
        return method_not_allowed("POST");
    }
    if auth::user(state, req.headers()).is_none() {
        return auth::unauthorized();
    }
    let new: NewCommand = match read_json(state, req).await {
        Ok(new) => new,
        Err(resp) => return resp,
    };
    if !KINDS.contains(&new.kind.as_str()) {
        return error(StatusCode::BAD_REQUEST, "kind must be \"export\"");
    }
    let command = state.commands.submit(&new.kind, new.group);
    let mut resp = json(StatusCode::ACCEPTED, &command);
    if let Ok(location) = HeaderValue::from_str(&format!("/commands/{}", command.id)) {
        resp.headers_mut().insert(LOCATION, location);
    }
    resp
}

/// `GET /commands/{id}`: the command and, once done, its result.
pub fn show(state: &AppState, req: &Request<Incoming>, id: u64) -> Resp {
    if req.method() != Method::GET {
        return method_not_allowed("GET");
    }
    if auth::user(state, req.headers()).is_none() {
        return auth::unauthorized();
    }
    match state.commands.get(id) {
        Some(command) => json(StatusCode::OK, &command),
        None => not_found(),
    }
}

/// `POST /admin/outbox/claim?max=N&wait_ms=MS`: up to N queued commands with the data
/// they need, waiting up to MS milliseconds for one (long poll); `[]` when none came.
pub async fn claim(state: &AppState, req: Request<Incoming>) -> Resp {
    if req.method() != Method::POST {
        return method_not_allowed("POST");
    }
    let query = req.uri().query().unwrap_or("");
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| v.parse::<u64>().ok())
    };
    let max = param("max").unwrap_or(16).clamp(1, 256) as usize;
    let wait = Duration::from_millis(param("wait_ms").unwrap_or(0)).min(MAX_CLAIM_WAIT);
    let jobs = state
        .commands
        .claim(max, wait, |group| state.notes.list(group))
        .await;
    json(StatusCode::OK, &jobs)
}

/// `POST /admin/outbox/{id}/done` with the result as JSON (`{"error": …}` marks it
/// failed): 200 with the command, 409 when it had finished already.
pub async fn done(state: &AppState, req: Request<Incoming>, id: u64) -> Resp {
    if req.method() != Method::POST {
        return method_not_allowed("POST");
    }
    let result: serde_json::Value = match read_json(state, req).await {
        Ok(result) => result,
        Err(resp) => return resp,
    };
    if state.commands.complete(id, result) {
        match state.commands.get(id) {
            Some(command) => json(StatusCode::OK, &command),
            None => not_found(),
        }
    } else if state.commands.get(id).is_some() {
        error(StatusCode::CONFLICT, "the command has finished already")
    } else {
        not_found()
    }
}
