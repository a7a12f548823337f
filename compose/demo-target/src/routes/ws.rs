//! `GET /ws`: the live-updates WebSocket.
//!
//! The client signs in as for the API (`Authorization: Bearer TOKEN`, or `?token=TOKEN`
//! since browsers cannot set headers on a WebSocket), then sends
//! `{"subscribe": [groups]}` (or `{"unsubscribe": [...]}`) and receives one JSON
//! message per change of a note in a subscribed group:
//! `{"type": "note.created" | "note.updated", "group", "note", "at_ms"}` or
//! `{"type": "note.deleted", "group", "id", "at_ms"}`. Subscriptions are acknowledged
//! with `{"type": "subscribed", "groups": [...]}`; an application ping `{"ping": n}`
//! with `{"type": "pong", "ping": n}`.
//!
//! The server pings every `ws_ping_interval`, closes a socket silent for
//! `ws_idle_timeout` (1001), disconnects a client too slow to take its pushes (1008),
//! and refuses a user's socket beyond `ws_max_per_user` with 429.

use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use hyper::{HeaderMap, Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::time::{sleep_until, Instant};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::{empty, error, method_not_allowed, Resp};
use crate::live::{LiveHub, Registration, MAX_GROUPS_PER_SOCKET};
use crate::state::AppState;

/// Largest client message accepted; clients only send small subscription requests.
const MAX_CLIENT_MESSAGE: usize = 16 * 1024;

/// Longest a write to a client may take before the client counts as gone.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a closing socket waits for the client's close frame.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// What a client may send.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientMessage {
    #[serde(default)]
    subscribe: Vec<u32>,
    #[serde(default)]
    unsubscribe: Vec<u32>,
    /// An application ping, as apps send to keep a view alive through proxies;
    /// answered `{"type": "pong", "ping": n}`.
    #[serde(default)]
    ping: Option<u64>,
}

/// Handles the upgrade request and hands the socket to its own task.
pub fn upgrade(state: &AppState, req: Request<Incoming>) -> Resp {
    if req.method() != Method::GET {
        return method_not_allowed("GET");
    }
    let Some(key) = websocket_key(req.headers()) else {
        return error(
            StatusCode::UPGRADE_REQUIRED,
            "this endpoint speaks WebSocket only (Upgrade: websocket, Sec-WebSocket-Version: 13)",
        );
    };
    let Some(user) = user(state, &req) else {
        return super::auth::unauthorized();
    };
    let hub = Arc::clone(&state.live);
    let Some(seat) = hub.admit(&user) else {
        let message = format!(
            "user {user} already holds {} sockets, the most allowed",
            hub.config.max_per_user
        );
        return error(StatusCode::TOO_MANY_REQUESTS, &message);
    };
    // Registered now so the seat and the subscription exist from the 101 on.
    let registration = hub.register(seat);
    tokio::spawn(async move {
        // Fails only if the client went away before the upgrade completed.
        if let Ok(upgraded) = hyper::upgrade::on(req).await {
            let config = WebSocketConfig::default()
                .read_buffer_size(4096)
                .write_buffer_size(0)
                .max_message_size(Some(MAX_CLIENT_MESSAGE))
                .max_frame_size(Some(MAX_CLIENT_MESSAGE));
            let socket = WebSocketStream::from_raw_socket(
                TokioIo::new(upgraded),
                Role::Server,
                Some(config),
            )
            .await;
            serve(socket, hub, registration).await;
        }
    });
    let mut resp = empty(StatusCode::SWITCHING_PROTOCOLS);
    let headers = resp.headers_mut();
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        headers.insert(SEC_WEBSOCKET_ACCEPT, accept);
    }
    resp
}

/// The client's key, if this is a well-formed WebSocket upgrade request.
fn websocket_key(headers: &HeaderMap) -> Option<String> {
    let has_token = |name, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str().is_ok_and(|v| {
                v.split(',')
                    .any(|part| part.trim().eq_ignore_ascii_case(token))
            })
        })
    };
    let version_ok = headers
        .get("sec-websocket-version")
        .is_some_and(|v| v.as_bytes() == b"13");
    if !(has_token(CONNECTION, "upgrade") && has_token(UPGRADE, "websocket") && version_ok) {
        return None;
    }
    headers
        .get(SEC_WEBSOCKET_KEY)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The signed-in user, from the bearer header or the `token` query parameter.
fn user(state: &AppState, req: &Request<Incoming>) -> Option<String> {
    if let Some(user) = super::auth::user(state, req.headers()) {
        return Some(user);
    }
    let query = req.uri().query()?;
    let token = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))?;
    state.tokens.user_for(token)
}

/// Why the server ends a socket.
enum Ending {
    /// The client closed it, or the connection broke.
    ClientGone,
    /// Nothing arrived for the idle timeout.
    Idle,
    /// Its push queue overflowed.
    TooSlow,
    /// The server is stopping.
    Shutdown,
}

/// Serves one socket until it ends.
async fn serve(mut socket: Socket, hub: Arc<LiveHub>, mut registration: Registration) {
    let config = hub.config.clone();
    let mut stopping = hub.stopping();
    let mut pings =
        tokio::time::interval_at(Instant::now() + config.ping_interval, config.ping_interval);
    pings.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_heard = Instant::now();
    let ending = loop {
        tokio::select! {
            frame = socket.next() => {
                last_heard = Instant::now();
                match frame {
                    Some(Ok(Message::Text(text))) => {
                        let reply = handle_client_message(&hub, registration.id, text.as_str());
                        if send(&mut socket, Message::text(reply)).await.is_err() {
                            break Ending::ClientGone;
                        }
                    }
                    Some(Ok(Message::Ping(_))) => {
                        // Answer now rather than on the next read.
                        if flush(&mut socket).await.is_err() {
                            break Ending::ClientGone;
                        }
                    }
                    Some(Ok(Message::Close(_))) => {
                        let _ = tokio::time::timeout(CLOSE_GRACE, socket.flush()).await;
                        break Ending::ClientGone;
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break Ending::ClientGone,
                }
            }
            push = registration.pushes.recv() => match push {
                Some(text) => {
                    if send(&mut socket, Message::Text(text)).await.is_err() {
                        break Ending::ClientGone;
                    }
                }
                None => break Ending::TooSlow,
            },
            _ = pings.tick() => {
                if send(&mut socket, Message::Ping(Default::default())).await.is_err() {
                    break Ending::ClientGone;
                }
            }
            () = sleep_until(last_heard + config.idle_timeout) => break Ending::Idle,
            () = stopped(&mut stopping) => break Ending::Shutdown,
        }
    };
    let (code, reason) = match ending {
        Ending::ClientGone => return,
        Ending::Idle => {
            hub.counters
                .idle_closes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            (CloseCode::Away, "idle: nothing received for too long")
        }
        Ending::TooSlow => (CloseCode::Policy, "too slow: push queue overflowed"),
        Ending::Shutdown => (CloseCode::Away, "server shutting down"),
    };
    drop(registration);
    let frame = CloseFrame {
        code,
        reason: reason.into(),
    };
    let goodbye = async {
        socket.send(Message::Close(Some(frame))).await?;
        while let Some(next) = socket.next().await {
            if matches!(next?, Message::Close(_)) {
                break;
            }
        }
        Ok::<(), tokio_tungstenite::tungstenite::Error>(())
    };
    let _ = tokio::time::timeout(CLOSE_GRACE, goodbye).await;
}

/// Resolves when the server is stopping (or gone).
async fn stopped(stopping: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}

/// Applies a client message and returns the reply to send.
fn handle_client_message(hub: &LiveHub, id: u64, text: &str) -> String {
    let message: ClientMessage = match serde_json::from_str(text) {
        Ok(m) => m,
        Err(e) => {
            return serde_json::json!({
                "type": "error",
                "error": format!("expected {{\"subscribe\": [groups]}} or {{\"unsubscribe\": [groups]}}: {e}"),
            })
            .to_string()
        }
    };
    if let Some(n) = message.ping {
        hub.counters
            .app_pings
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return serde_json::json!({ "type": "pong", "ping": n }).to_string();
    }
    if message.subscribe.len() > MAX_GROUPS_PER_SOCKET {
        return serde_json::json!({
            "type": "error",
            "error": format!("at most {MAX_GROUPS_PER_SOCKET} groups per socket"),
        })
        .to_string();
    }
    hub.unsubscribe(id, &message.unsubscribe);
    if !message.subscribe.is_empty() {
        hub.subscribe(id, &message.subscribe);
    }
    serde_json::json!({
        "type": "subscribed",
        "groups": message.subscribe,
        "unsubscribed": message.unsubscribe,
    })
    .to_string()
}

async fn send(socket: &mut Socket, message: Message) -> Result<(), ()> {
    match tokio::time::timeout(WRITE_TIMEOUT, socket.send(message)).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}

async fn flush(socket: &mut Socket) -> Result<(), ()> {
    match tokio::time::timeout(WRITE_TIMEOUT, socket.flush()).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}
