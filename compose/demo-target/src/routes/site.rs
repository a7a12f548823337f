//! The app shell (`GET /app`), its assets (`GET /assets/{name}`) and the small API its
//! script calls: `GET /api/config`, `GET /api/me`, `GET /inbox`.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use hyper::{Method, Request, Response, StatusCode};

use super::{auth, empty, json, method_not_allowed, not_found, Resp};
use crate::site::{self, SHELL};
use crate::state::AppState;

/// Whether the request's `If-None-Match` names `etag` (weak comparison).
fn fresh<B>(req: &Request<B>, etag: &str) -> bool {
    req.headers()
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|c| c.trim() == "*" || c.trim().trim_start_matches("W/") == etag)
}

fn body(bytes: Bytes, content_type: &'static str) -> Resp {
    let mut resp = Response::new(Full::new(bytes));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// `GET /app`: the page, revalidated on every visit (`no-cache`), as an app shell is.
pub fn shell<B>(state: &AppState, req: &Request<B>) -> Resp {
    if req.method() != Method::GET {
        return method_not_allowed("GET");
    }
    let (page, etag) = &*SHELL;
    let mut resp = if fresh(req, etag) {
        empty(StatusCode::NOT_MODIFIED)
    } else {
        state.site.shells.inc();
        body(page.clone(), "text/html; charset=utf-8")
    };
    if let Ok(value) = HeaderValue::from_str(etag) {
        resp.headers_mut().insert(ETAG, value);
    }
    resp.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// `GET /assets/{name}`: content-hashed, so cached for a year and never revalidated.
pub fn asset<B>(state: &AppState, req: &Request<B>, name: &str) -> Resp {
    if req.method() != Method::GET {
        return method_not_allowed("GET");
    }
    let Some(asset) = site::asset(name) else {
        return not_found();
    };
    let mut resp = if fresh(req, &asset.etag) {
        state.site.not_modified.inc();
        empty(StatusCode::NOT_MODIFIED)
    } else {
        state.site.assets.inc();
        state.site.asset_bytes.add(asset.body.len() as u64);
        body(asset.body.clone(), asset.content_type)
    };
    if let Ok(value) = HeaderValue::from_str(&asset.etag) {
        resp.headers_mut().insert(ETAG, value);
    }
    resp.headers_mut().insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    resp
}

/// `GET /api/config`: what the app needs to start, no sign-in needed.
pub fn config<B>(state: &AppState, req: &Request<B>) -> Resp {
    if req.method() != Method::GET {
        return method_not_allowed("GET");
    }
    state.site.configs.inc();
    let (small, large) = state.seeded_groups;
    json(
        StatusCode::OK,
        &serde_json::json!({
            "groups": (1..=small).collect::<Vec<_>>(),
            "large_groups": (small + 1..=small + large).collect::<Vec<_>>(),
            "live": "/ws",
            "inbox_poll_s": 30,
        }),
    )
}

/// `GET /api/me`: the signed-in user.
pub fn me<B>(state: &AppState, req: &Request<B>) -> Resp {
    if req.method() != Method::GET {
        return method_not_allowed("GET");
    }
    let Some(user) = auth::user(state, req.headers()) else {
        return auth::unauthorized();
    };
    state.site.me.inc();
    json(StatusCode::OK, &serde_json::json!({ "user": user }))
}

/// `GET /inbox`: the signed-in user's unread notifications (the app polls it).
pub fn inbox<B>(state: &AppState, req: &Request<B>) -> Resp {
    if req.method() != Method::GET {
        return method_not_allowed("GET");
    }
    let Some(user) = auth::user(state, req.headers()) else {
        return auth::unauthorized();
    };
    let polls = state.site.inbox_polls.get();
    state.site.inbox_polls.inc();
    // A slowly changing count: nothing here is stored, the poll is the load.
    json(
        StatusCode::OK,
        &serde_json::json!({ "user": user, "unread": polls % 7, "items": [] }),
    )
}

/// Appends the counters of the page, the accounts and the notes API to `/metrics`.
pub fn render_metrics(state: &AppState, out: &mut String) {
    state.site.render(out);
    state.accounts.render(out);
    state.notes.counters.render(out);
}
