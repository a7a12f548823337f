//! `POST /invoke`: a function call behind an API key (`X-Api-Key`), shed with 503 and
//! `Retry-After` when every slot is busy (see [`crate::invoke`]).

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::{Method, Request, StatusCode};

use super::{error, json, method_not_allowed, Resp};
use crate::state::AppState;

/// `POST /invoke`: 200 with the size of the payload after the work; 401 without the
/// key, 503 with `Retry-After: 1` when shed.
pub async fn invoke(state: &AppState, req: Request<Incoming>) -> Resp {
    if req.method() != Method::POST {
        return method_not_allowed("POST");
    }
    let key = req.headers().get("x-api-key").and_then(|v| v.to_str().ok());
    if !state.invoker.authorize(key) {
        let mut resp = error(StatusCode::UNAUTHORIZED, "missing or wrong X-Api-Key");
        resp.headers_mut()
            .insert(WWW_AUTHENTICATE, HeaderValue::from_static("ApiKey"));
        return resp;
    }
    let Some(slot) = state.invoker.admit() else {
        let mut resp = error(StatusCode::SERVICE_UNAVAILABLE, "all instances busy");
        // A slot frees within one work time; a second is a fair first wait.
        resp.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
        return resp;
    };
    let bytes = match Limited::new(req.into_body(), state.max_body_bytes)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes().len(),
        Err(_) => return error(StatusCode::PAYLOAD_TOO_LARGE, "request body too large"),
    };
    state.invoker.work(slot).await;
    json(
        StatusCode::OK,
        &serde_json::json!({ "ok": true, "payload_bytes": bytes }),
    )
}
