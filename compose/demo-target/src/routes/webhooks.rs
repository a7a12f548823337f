//! `/events` (queue an event for webhook delivery, see the pending count) and
//! `/admin/webhooks/receive` (the receiver the outbox delivers to; under `/admin/` as
//! the stack's internal traffic: no faults or rate limits).

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, RETRY_AFTER};
use hyper::{Method, Request, StatusCode};

use super::{error, json, method_not_allowed, Resp};
use crate::state::AppState;

/// `POST /events` with a JSON body: 202 `{"id", "pending"}`; `GET /events`: the
/// outbox's counts `{"pending", "submitted", "delivered", "received"}`.
pub async fn events(state: &AppState, req: Request<Incoming>) -> Resp {
    match *req.method() {
        Method::GET => json(
            StatusCode::OK,
            &serde_json::json!({
                "pending": state.outbox.pending(),
                "submitted": state.outbox.submitted(),
                "delivered": state.outbox.delivered(),
                "received": state.outbox.received(),
            }),
        ),
        Method::POST => {
            let body = match Limited::new(req.into_body(), state.max_body_bytes)
                .collect()
                .await
            {
                Ok(body) => body.to_bytes(),
                Err(_) => return error(StatusCode::PAYLOAD_TOO_LARGE, "request body too large"),
            };
            if serde_json::from_slice::<serde_json::Value>(&body).is_err() {
                return error(StatusCode::BAD_REQUEST, "the event must be a JSON document");
            }
            match state.outbox.submit(body) {
                Some(id) => json(
                    StatusCode::ACCEPTED,
                    &serde_json::json!({ "id": id, "pending": state.outbox.pending() }),
                ),
                None => {
                    let mut resp = error(StatusCode::SERVICE_UNAVAILABLE, "outbox full");
                    resp.headers_mut()
                        .insert(RETRY_AFTER, HeaderValue::from_static("5"));
                    resp
                }
            }
        }
        _ => method_not_allowed("GET, POST"),
    }
}

/// `POST /admin/webhooks/receive`: 204 when `X-Webhook-Signature` is the body's
/// HMAC-SHA256 under the demo's secret, 401 otherwise.
pub async fn receive(state: &AppState, req: Request<Incoming>) -> Resp {
    if req.method() != Method::POST {
        return method_not_allowed("POST");
    }
    let signature = req
        .headers()
        .get("x-webhook-signature")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match Limited::new(req.into_body(), state.max_body_bytes)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => return error(StatusCode::PAYLOAD_TOO_LARGE, "request body too large"),
    };
    if state.outbox.verify(&body, signature.as_deref()) {
        super::empty(StatusCode::NO_CONTENT)
    } else {
        error(StatusCode::UNAUTHORIZED, "bad webhook signature")
    }
}
