//! `GET /groups/{group}/search?q=TERM&limit=N`: notes of a group whose title or body
//! contains TERM (ASCII case-insensitive), the first N (20 by default, at most 100)
//! and the total; a scan of the group, so its cost grows with the group's size.

use hyper::{Method, Request, StatusCode};

use super::{auth, error, json, method_not_allowed, query, Resp};
use crate::state::AppState;

/// Most results returned in one answer.
const MAX_LIMIT: usize = 100;

/// Answers one search.
pub fn search<B>(state: &AppState, req: &Request<B>, group: u32) -> Resp {
    if req.method() != Method::GET {
        return method_not_allowed("GET");
    }
    if auth::user(state, req.headers()).is_none() {
        return auth::unauthorized();
    }
    let term = query(req, "q").unwrap_or_default();
    if term.trim().is_empty() || term.len() > 100 {
        return error(StatusCode::BAD_REQUEST, "q must be 1 to 100 characters");
    }
    let limit = match query(req, "limit").map(|l| l.parse::<usize>()) {
        None => 20,
        Some(Ok(l)) if (1..=MAX_LIMIT).contains(&l) => l,
        Some(_) => return error(StatusCode::BAD_REQUEST, "limit must be 1 to 100"),
    };
    let (total, notes, scanned) = state.notes.search(group, term.trim(), limit);
    let c = &state.notes.counters;
    c.searches.inc();
    c.search_hits.add(total as u64);
    c.search_scanned.add(scanned as u64);
    json(
        StatusCode::OK,
        &serde_json::json!({ "group": group, "q": term, "total": total, "notes": notes }),
    )
}
