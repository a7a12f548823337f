//! The live-updates WebSocket (`GET /ws`) against a real `DemoServer` on 127.0.0.1,
//! with a tokio-tungstenite client.

use std::time::Duration;

use bytes::Bytes;
use demo_target::{DemoConfig, DemoServer};
use futures::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::WebSocketStream;

type Ws = WebSocketStream<TcpStream>;

struct Harness {
    server: DemoServer,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Harness {
    async fn start(config: DemoConfig) -> Harness {
        let server = DemoServer::start("127.0.0.1:0".parse().unwrap(), config)
            .await
            .unwrap();
        let client = Client::builder(TokioExecutor::new()).build_http();
        Harness { server, client }
    }

    /// Sends a request; returns the status, the `x-live-recipients` header and the body.
    async fn send(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: &str,
    ) -> (StatusCode, Option<u64>, Bytes) {
        let req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.server.base_url()))
            .header("authorization", format!("Bearer {token}"))
            .body(Full::new(Bytes::from(body.to_owned())))
            .unwrap();
        let resp = self.client.request(req).await.unwrap();
        let recipients = resp
            .headers()
            .get("x-live-recipients")
            .and_then(|v| v.to_str().ok()?.parse().ok());
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, recipients, body)
    }

    async fn token(&self, user: &str) -> String {
        let (status, _, body) = self
            .send(
                Method::POST,
                "/auth/token",
                "",
                &format!(r#"{{"user":"{user}"}}"#),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let body: Value = serde_json::from_slice(&body).unwrap();
        body["token"].as_str().unwrap().to_owned()
    }

    /// Opens `/ws` with `?token=`.
    async fn open(&self, token: &str) -> Result<Ws, tungstenite::Error> {
        let addr = self.server.addr();
        let tcp = TcpStream::connect(addr).await.unwrap();
        let url = format!("ws://{addr}/ws?token={token}");
        tokio_tungstenite::client_async(url, tcp)
            .await
            .map(|(ws, _)| ws)
    }

    async fn metric(&self, name: &str) -> u64 {
        let (_, _, body) = self.send(Method::GET, "/metrics", "", "").await;
        let text = String::from_utf8(body.to_vec()).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} not in /metrics:\n{text}"))
            .parse()
            .unwrap()
    }
}

/// The next text message as JSON, skipping pings; panics after 5 s.
async fn next_json(ws: &mut Ws) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("a message within 5 s")
            .expect("the socket is open")
            .expect("no protocol error");
        if let Message::Text(text) = message {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

async fn subscribe(ws: &mut Ws, groups: &str) {
    ws.send(Message::text(format!(r#"{{"subscribe": {groups}}}"#)))
        .await
        .unwrap();
    let ack = next_json(ws).await;
    assert_eq!(ack["type"], "subscribed", "{ack}");
}

/// Reads until the server's close frame; returns its code.
async fn close_code(ws: &mut Ws) -> Option<u16> {
    loop {
        match tokio::time::timeout(Duration::from_secs(15), ws.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => return frame.map(|f| u16::from(f.code)),
            Ok(Some(Ok(_))) => {}
            _ => return None,
        }
    }
}

#[tokio::test]
async fn changes_are_pushed_to_the_groups_subscribers_and_writers_learn_how_many() {
    let h = Harness::start(DemoConfig::default()).await;
    let token = h.token("ann").await;
    let mut five = h.open(&token).await.unwrap();
    let mut six = h.open(&token).await.unwrap();
    subscribe(&mut five, "[5]").await;
    subscribe(&mut six, "[6]").await;

    let (status, recipients, body) = h
        .send(
            Method::POST,
            "/groups/5/notes",
            &token,
            r#"{"title":"live"}"#,
        )
        .await;
    assert_eq!((status, recipients), (StatusCode::CREATED, Some(1)));
    let id = serde_json::from_slice::<Value>(&body).unwrap()["id"].clone();
    let created = next_json(&mut five).await;
    assert_eq!(created["type"], "note.created");
    assert_eq!(
        (created["group"].clone(), created["note"]["id"].clone()),
        (5.into(), id.clone())
    );
    assert!(created["at_ms"].as_u64().unwrap() > 0);

    let path = format!("/groups/5/notes/{id}");
    let (_, recipients, _) = h.send(Method::PUT, &path, &token, r#"{"body":"x"}"#).await;
    assert_eq!(recipients, Some(1));
    let updated = next_json(&mut five).await;
    assert_eq!(
        (updated["type"].clone(), updated["note"]["version"].clone()),
        ("note.updated".into(), 2.into())
    );
    let (status, recipients, _) = h.send(Method::DELETE, &path, &token, "").await;
    assert_eq!((status, recipients), (StatusCode::NO_CONTENT, Some(1)));
    let deleted = next_json(&mut five).await;
    assert_eq!(
        (deleted["type"].clone(), deleted["id"].clone()),
        ("note.deleted".into(), id)
    );

    // Group 6 heard nothing of group 5: its next message is its own group's change.
    let (_, recipients, _) = h
        .send(
            Method::POST,
            "/groups/6/notes",
            &token,
            r#"{"title":"six"}"#,
        )
        .await;
    assert_eq!(recipients, Some(1));
    assert_eq!(next_json(&mut six).await["group"], 6);
    assert_eq!(h.metric("demo_ws_open").await, 2);
    assert_eq!(h.metric("demo_ws_pushes_total").await, 4);

    // Bad client messages get an error reply, and the socket stays usable.
    five.send(Message::text("{\"subscribe\": \"all\"}"))
        .await
        .unwrap();
    assert_eq!(next_json(&mut five).await["type"], "error");

    // Shutdown says goodbye to every socket.
    let reader = tokio::spawn(async move { close_code(&mut five).await });
    h.server.shutdown().await;
    assert_eq!(reader.await.unwrap(), Some(1001));
}

#[tokio::test]
async fn the_socket_needs_a_token_and_a_user_holds_a_bounded_number() {
    let h = Harness::start(DemoConfig {
        ws_max_per_user: 3,
        ..DemoConfig::default()
    })
    .await;
    match h.open("nope").await {
        Err(tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 401),
        other => panic!("expected 401, got {other:?}"),
    }
    let token = h.token("bob").await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(h.open(&token).await.unwrap());
    }
    match h.open(&token).await {
        Err(tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 429),
        other => panic!("expected 429, got {other:?}"),
    }
    // Another user is not affected.
    let other = h.token("cat").await;
    assert!(h.open(&other).await.is_ok());
    assert_eq!(h.metric("demo_ws_refused_total").await, 1);
    // Closing one frees a seat once the server has seen the close.
    let mut first = held.remove(0);
    first.close(None).await.unwrap();
    while first.next().await.is_some() {}
    let mut reopened = None;
    for _ in 0..100 {
        if let Ok(ws) = h.open(&token).await {
            reopened = Some(ws);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(reopened.is_some(), "the seat was never freed");
}

#[tokio::test]
async fn silent_sockets_are_pinged_then_closed() {
    let h = Harness::start(DemoConfig {
        ws_ping_interval: Duration::from_millis(100),
        ws_idle_timeout: Duration::from_secs(1),
        ..DemoConfig::default()
    })
    .await;
    let token = h.token("dan").await;

    // A client that reads answers the pings, so it is never idle.
    let mut lively = h.open(&token).await.unwrap();
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let reader = tokio::spawn(async move {
        let mut pings = 0u32;
        loop {
            tokio::select! {
                message = lively.next() => match message {
                    Some(Ok(Message::Ping(_))) => pings += 1,
                    Some(Ok(_)) => {}
                    other => panic!("the lively socket ended: {other:?}"),
                },
                _ = &mut stopped => return (pings, lively),
            }
        }
    });

    // A client that reads nothing sends no pongs: it is closed for silence (1001).
    let mut silent = h.open(&token).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(close_code(&mut silent).await, Some(1001));
    assert_eq!(h.metric("demo_ws_idle_closes_total").await, 1);

    // The lively socket was never cut, though it lived past the idle timeout.
    stop.send(()).unwrap();
    let (pings, mut lively) = reader.await.unwrap();
    assert!(pings >= 10, "{pings} pings");
    lively
        .send(Message::text("{\"subscribe\": [3]}"))
        .await
        .unwrap();
    assert_eq!(next_json(&mut lively).await["type"], "subscribed");
}

#[tokio::test]
async fn a_subscriber_that_does_not_take_its_pushes_is_cut_off() {
    let h = Harness::start(DemoConfig {
        ws_queue: 2,
        ..DemoConfig::default()
    })
    .await;
    let token = h.token("eve").await;
    // It never reads: once TCP buffers are full its queue overflows (1008), and the
    // server does not buffer for it without bound.
    let mut slow = h.open(&token).await.unwrap();
    subscribe(&mut slow, "[2]").await;
    let body = format!(r#"{{"title":"big","body":"{}"}}"#, "x".repeat(60_000));
    let mut writes = 0;
    while h.metric("demo_ws_slow_disconnects_total").await == 0 {
        writes += 1;
        assert!(writes <= 2_000, "never disconnected the slow client");
        let (status, _, _) = h.send(Method::POST, "/groups/2/notes", &token, &body).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    assert_eq!(close_code(&mut slow).await, Some(1008));
    assert_eq!(h.metric("demo_ws_open").await, 0);
}
