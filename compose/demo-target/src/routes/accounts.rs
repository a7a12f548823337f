//! Accounts of the REST API: `POST /accounts` signs up, `DELETE /accounts/me` deletes
//! the signed-in account, `POST /auth/refresh` trades a refresh token for a new pair.

use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use serde::Deserialize;

use super::{auth, empty, error, json, method_not_allowed, read_json, Resp};
use crate::accounts::{SignUpError, Tokens};
use crate::state::AppState;

/// Longest user name accepted.
const MAX_USER_LEN: usize = 64;

#[derive(Deserialize)]
struct SignUp {
    user: String,
}

#[derive(Deserialize)]
struct Refresh {
    refresh_token: String,
}

/// A token pair as JSON; `expires_in` in seconds, as OAuth 2.0 writes it.
fn tokens(status: StatusCode, tokens: &Tokens) -> Resp {
    json(
        status,
        &serde_json::json!({
            "access_token": tokens.access,
            "refresh_token": tokens.refresh,
            "expires_in": tokens.expires_in.as_secs_f64(),
        }),
    )
}

/// `POST /accounts` with `{"user": NAME}`: 201 with the first token pair, 409 if taken.
pub async fn sign_up(state: &AppState, req: Request<Incoming>) -> Resp {
    if req.method() != Method::POST {
        return method_not_allowed("POST");
    }
    let sign_up: SignUp = match read_json(state, req).await {
        Ok(s) => s,
        Err(resp) => return resp,
    };
    let user = sign_up.user.trim();
    if user.is_empty() || user.len() > MAX_USER_LEN {
        return error(StatusCode::BAD_REQUEST, "user must be 1 to 64 characters");
    }
    match state.accounts.sign_up(user) {
        Ok(t) => tokens(StatusCode::CREATED, &t),
        Err(SignUpError::Exists) => error(StatusCode::CONFLICT, "that user name is taken"),
        Err(SignUpError::Full) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many accounts; delete some first",
        ),
    }
}

/// `DELETE /accounts/me`: deletes the account of the bearer access token (204).
pub fn delete<B>(state: &AppState, req: &Request<B>) -> Resp {
    if req.method() != Method::DELETE {
        return method_not_allowed("DELETE");
    }
    match auth::user(state, req.headers()) {
        Some(user) if state.accounts.delete(&user) => empty(StatusCode::NO_CONTENT),
        // A sign-in token (POST /auth/token) names a user without an account.
        Some(_) => error(StatusCode::NOT_FOUND, "no account for this user"),
        None => auth::unauthorized(),
    }
}

/// `POST /auth/refresh` with `{"refresh_token": T}`: a new pair (200); the old refresh
/// token is spent, so a replay gets 401.
pub async fn refresh(state: &AppState, req: Request<Incoming>) -> Resp {
    if req.method() != Method::POST {
        return method_not_allowed("POST");
    }
    let body: Refresh = match read_json(state, req).await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    match state.accounts.refresh(body.refresh_token.trim()) {
        Some(t) => tokens(StatusCode::OK, &t),
        None => error(
            StatusCode::UNAUTHORIZED,
            "unknown or already used refresh token",
        ),
    }
}
