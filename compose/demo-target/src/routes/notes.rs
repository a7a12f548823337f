//! Notes CRUD within a group (listings paged with `?limit=N&after=ID`); every route needs a bearer token. Every change is pushed
//! to the group's live subscribers (`GET /ws`), and the response's
//! `X-Live-Recipients` header says to how many sockets.

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Method, Request, StatusCode};
use serde::Deserialize;

use super::{auth, empty, error, json, method_not_allowed, not_found, query, read_json, Resp};
use crate::live::Change;
use crate::state::AppState;
use crate::store::{NoteUpdate, UpdateError};

/// Longest title accepted.
const MAX_TITLE_LEN: usize = 200;

#[derive(Deserialize)]
struct NewNote {
    title: String,
    #[serde(default)]
    body: String,
}

#[derive(Deserialize)]
struct ChangedNote {
    title: Option<String>,
    body: Option<String>,
    /// Optimistic concurrency: when given, a stale version gets 409.
    version: Option<u64>,
}

/// The header that tells a writer how many live sockets its change was pushed to.
const LIVE_RECIPIENTS: &str = "x-live-recipients";

/// Pushes `change` to the group's subscribers and says how many there were.
fn published(state: &AppState, mut resp: Resp, change: Change<'_>) -> Resp {
    let recipients = state.live.publish(change);
    resp.headers_mut()
        .insert(LIVE_RECIPIENTS, HeaderValue::from(recipients));
    resp
}

fn valid_title(title: &str) -> bool {
    !title.trim().is_empty() && title.len() <= MAX_TITLE_LEN
}

/// `/groups/{group}/notes`: `GET` lists, `POST` creates.
pub async fn collection(state: &AppState, req: Request<Incoming>, group: u32) -> Resp {
    let method = req.method().clone();
    if method != Method::GET && method != Method::POST {
        return method_not_allowed("GET, POST");
    }
    if auth::user(state, req.headers()).is_none() {
        return auth::unauthorized();
    }
    if method == Method::GET {
        return list(state, &req, group);
    }
    let new: NewNote = match read_json(state, req).await {
        Ok(new) => new,
        Err(resp) => return resp,
    };
    if !valid_title(&new.title) {
        return error(StatusCode::BAD_REQUEST, "title must be 1 to 200 characters");
    }
    let note = state.notes.create(group, new.title, new.body);
    state.notes.counters.created.inc();
    published(
        state,
        json(StatusCode::CREATED, &note),
        Change::Created(&note),
    )
}

/// A listing: the whole group, or with `?limit=N` (and `after=ID`) one page of it in
/// id order, for groups too large to send whole.
fn list(state: &AppState, req: &Request<Incoming>, group: u32) -> Resp {
    let number = |name| query(req, name).map(|v| v.parse::<u64>());
    match (number("limit"), number("after")) {
        (None, None) => json(StatusCode::OK, &state.notes.list(group)),
        (Some(Ok(limit)), after) if (1..=1000).contains(&limit) => match after {
            None => json(StatusCode::OK, &state.notes.page(group, 0, limit as usize)),
            Some(Ok(after)) => json(
                StatusCode::OK,
                &state.notes.page(group, after, limit as usize),
            ),
            Some(Err(_)) => error(StatusCode::BAD_REQUEST, "after must be a note id"),
        },
        _ => error(
            StatusCode::BAD_REQUEST,
            "limit must be 1 to 1000 (and after a note id)",
        ),
    }
}

/// `/groups/{group}/notes/{id}`: `GET` reads, `PUT` updates, `DELETE` removes.
pub async fn item(state: &AppState, req: Request<Incoming>, group: u32, id: u64) -> Resp {
    let method = req.method().clone();
    if method != Method::GET && method != Method::PUT && method != Method::DELETE {
        return method_not_allowed("GET, PUT, DELETE");
    }
    if auth::user(state, req.headers()).is_none() {
        return auth::unauthorized();
    }
    if method == Method::GET {
        return match state.notes.get(group, id) {
            Some(note) => json(StatusCode::OK, &note),
            None => not_found(),
        };
    }
    if method == Method::DELETE {
        return if state.notes.delete(group, id) {
            state.notes.counters.deleted.inc();
            published(
                state,
                empty(StatusCode::NO_CONTENT),
                Change::Deleted { group, id },
            )
        } else {
            not_found()
        };
    }
    let change: ChangedNote = match read_json(state, req).await {
        Ok(change) => change,
        Err(resp) => return resp,
    };
    if change.title.as_deref().is_some_and(|t| !valid_title(t)) {
        return error(StatusCode::BAD_REQUEST, "title must be 1 to 200 characters");
    }
    let update = NoteUpdate {
        title: change.title,
        body: change.body,
        expected_version: change.version,
    };
    match state.notes.update(group, id, update) {
        Ok(note) => {
            state.notes.counters.updated.inc();
            published(state, json(StatusCode::OK, &note), Change::Updated(&note))
        }
        Err(UpdateError::NotFound) => not_found(),
        Err(UpdateError::Conflict(current)) => json(StatusCode::CONFLICT, &current),
    }
}
