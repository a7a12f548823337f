//! Sign-in: issuing bearer tokens and checking them on protected routes.

use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION, WWW_AUTHENTICATE};
use hyper::{HeaderMap, Method, Request, StatusCode};
use serde::Deserialize;

use super::{error, json, method_not_allowed, read_json, Resp};
use crate::state::AppState;

/// Longest user name accepted, so names cannot be used to bloat memory.
const MAX_USER_LEN: usize = 64;

#[derive(Deserialize)]
struct SignIn {
    user: String,
}

/// `POST /auth/token` with `{"user": NAME}`: answers `{"token": TOKEN}`.
/// There are no passwords; the point is a realistic token round trip.
pub async fn token(state: &AppState, req: Request<Incoming>) -> Resp {
    if req.method() != Method::POST {
        return method_not_allowed("POST");
    }
    let sign_in: SignIn = match read_json(state, req).await {
        Ok(sign_in) => sign_in,
        Err(resp) => return resp,
    };
    let user = sign_in.user.trim();
    if user.is_empty() || user.len() > MAX_USER_LEN {
        return error(StatusCode::BAD_REQUEST, "user must be 1 to 64 characters");
    }
    let token = state.tokens.issue(user);
    json(StatusCode::OK, &serde_json::json!({ "token": token }))
}

/// The user behind the request's `Authorization: Bearer` token, if it is known.
pub fn user(state: &AppState, headers: &HeaderMap) -> Option<String> {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|token| {
            let token = token.trim();
            // Sign-in tokens first, then the account API's access tokens (which expire).
            state
                .tokens
                .user_for(token)
                .or_else(|| state.accounts.user_for(token).ok())
        })
}

/// 401 for a request without a known token, naming the scheme it needs.
pub fn unauthorized() -> Resp {
    let mut resp = error(StatusCode::UNAUTHORIZED, "missing or unknown bearer token");
    resp.headers_mut()
        .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    resp
}
