//! The socket's life against real peers on 127.0.0.1: backpressure when the plugin
//! does not read, and the close a dropped socket sends.

use super::open::connect;
use super::*;
use crate::config::WebSocketOptions;
use crate::metrics::{builtin, Recorder, Registry, TagSet, Value};
use crate::net::{Allowlist, NetShared};
use futures::{SinkExt, StreamExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::Message;
use transport::Transport;

fn shared(options: WebSocketOptions) -> Arc<NetShared> {
    let recorder = Arc::new(Recorder::new(Arc::new(Registry::new())));
    Arc::new(
        NetShared::new(
            Allowlist::new(&[]).unwrap(),
            Duration::from_secs(10),
            1 << 20,
            recorder,
        )
        .with_websocket(options),
    )
}

/// A server accepting one socket and handing it to `behave`.
async fn server<F, Fut>(behave: F) -> String
where
    F: FnOnce(tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        behave(ws).await;
    });
    url
}

fn counter(shared: &NetShared, id: crate::metrics::MetricId) -> f64 {
    shared
        .recorder
        .drain()
        .iter()
        .filter(|((m, _), _)| *m == id)
        .map(|(_, v)| match v {
            Value::Counter(c) => *c,
            _ => 0.0,
        })
        .sum()
}

#[tokio::test]
async fn a_socket_nobody_reads_stops_reading_its_peer() {
    const MESSAGE: usize = 64 * 1024;
    const FLOOD: u64 = 2_000; // 125 MiB if nothing held the server back
    let sent = Arc::new(AtomicU64::new(0));
    let counted = sent.clone();
    let url = server(move |mut ws| async move {
        for _ in 0..FLOOD {
            if ws.send(Message::binary(vec![7u8; MESSAGE])).await.is_err() {
                return;
            }
            counted.fetch_add(1, Ordering::Relaxed);
        }
    })
    .await;
    let shared = shared(WebSocketOptions {
        ping_interval: None,
        recv_buffer: 4,
        ..WebSocketOptions::default()
    });
    let mut socket = connect(&shared, &url, &[], &[], &TagSet::empty())
        .await
        .unwrap();
    // Give the flood every chance to run while the plugin reads nothing.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stalled_at = sent.load(Ordering::Relaxed);
    // The host holds 4 messages; the rest is what TCP buffers take (a few MiB).
    assert!(
        stalled_at < 300,
        "the server could send {stalled_at} messages of 64 KiB to a socket nobody read"
    );
    // Reading releases the backpressure, and every message arrives whole and in order.
    for _ in 0..stalled_at + 10 {
        let message = socket.recv(Duration::from_secs(5)).await.unwrap();
        assert_eq!(
            message.map(|m| matches!(m, WsMessage::Binary(b) if b.len() == MESSAGE)),
            Some(true)
        );
    }
    assert!(sent.load(Ordering::Relaxed) > stalled_at);
    assert!(counter(&shared, builtin::WS_MSGS_RECEIVED) >= (stalled_at + 10) as f64);
}

#[tokio::test]
async fn the_buffer_is_bounded_in_bytes_whatever_the_message_count() {
    const MESSAGE: usize = 256 * 1024;
    let sent = Arc::new(AtomicU64::new(0));
    let counted = sent.clone();
    let url = server(move |mut ws| async move {
        let payload = bytes::Bytes::from(vec![7u8; MESSAGE]);
        while ws.send(Message::Binary(payload.clone())).await.is_ok() {
            counted.fetch_add(1, Ordering::Relaxed);
        }
    })
    .await;
    // Room for 10,000 messages (2.4 GiB of these), but only 1 MiB of bytes.
    let shared = shared(WebSocketOptions {
        recv_buffer: 10_000,
        recv_buffer_bytes: 1 << 20,
        max_message: 1 << 20,
        ..WebSocketOptions::default()
    });
    let mut socket = connect(&shared, &url, &[], &[], &TagSet::empty())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = socket.link.held_bytes();
    assert!(
        (1 << 20..(1 << 20) + MESSAGE).contains(&held),
        "the host holds {held} bytes for a socket with a 1 MiB budget"
    );
    let stalled_at = sent.load(Ordering::Relaxed);
    assert!(
        stalled_at < 100,
        "the server could send {stalled_at} messages of 256 KiB to a socket nobody read"
    );
    // Taking messages frees the budget and reading resumes.
    for _ in 0..stalled_at + 4 {
        let message = socket.recv(Duration::from_secs(5)).await.unwrap().unwrap();
        assert_eq!(message.len(), MESSAGE);
    }
    assert!(sent.load(Ordering::Relaxed) > stalled_at);
}

#[tokio::test]
async fn a_message_past_max_message_ends_the_socket_from_its_header() {
    let url = server(move |mut ws| async move {
        let _ = ws.send(Message::text("small")).await;
        // 16 MiB announced: the host must refuse it from the frame header.
        let _ = ws.send(Message::binary(vec![1u8; 16 << 20])).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    })
    .await;
    let shared = shared(WebSocketOptions::default());
    let mut socket = connect(&shared, &url, &[], &[], &TagSet::empty())
        .await
        .unwrap();
    assert_eq!(
        socket.recv(Duration::from_secs(5)).await,
        Ok(Some(WsMessage::Text("small".into())))
    );
    let err = socket.recv(Duration::from_secs(5)).await.unwrap_err();
    let WsError::Protocol(text) = &err else {
        panic!("{err:?}")
    };
    assert!(
        text.contains("16 MiB") && text.contains("[websocket] max_message = 1 MiB"),
        "{text}"
    );
    let errors = shared
        .recorder
        .drain()
        .iter()
        .filter(|((m, tags), _)| *m == builtin::WS_ERRORS && tags.get("error") == Some("protocol"))
        .count();
    assert_eq!(errors, 1);
}

#[tokio::test]
async fn a_send_past_max_message_is_refused_and_the_socket_stays_usable() {
    let (tx, rx) = oneshot::channel::<Vec<usize>>();
    let url = server(move |mut ws| async move {
        let mut sizes = Vec::new();
        while let Some(Ok(m)) = ws.next().await {
            if m.is_close() {
                break;
            }
            sizes.push(m.len());
        }
        let _ = tx.send(sizes);
    })
    .await;
    let shared = shared(WebSocketOptions {
        max_message: 1 << 20,
        ..WebSocketOptions::default()
    });
    let mut socket = connect(&shared, &url, &[], &[], &TagSet::empty())
        .await
        .unwrap();
    let err = socket
        .send_binary(vec![0u8; (1 << 20) + 1])
        .await
        .unwrap_err();
    let WsError::Invalid(text) = &err else {
        panic!("{err:?}")
    };
    assert!(text.contains("[websocket] max_message = 1 MiB"), "{text}");
    let err = socket.send_text("x".repeat(2 << 20)).await.unwrap_err();
    assert!(matches!(err, WsError::Invalid(_)), "{err:?}");
    // What fits still goes, and only it reached the peer.
    socket.send_binary(vec![0u8; 1 << 20]).await.unwrap();
    // The peer stops at the close frame without answering it: how the close ends is
    // not what is tested.
    let _ = socket.close(1000, String::new()).await;
    let sizes = tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(sizes, [1 << 20]);
}

#[tokio::test]
async fn a_dropped_socket_says_going_away_and_ends_its_session() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let url = server(move |mut ws| async move {
        let mut close = None;
        while let Some(Ok(message)) = ws.next().await {
            if let Message::Close(frame) = message {
                close = frame.map(|f| (u16::from(f.code), f.reason.to_string()));
                break;
            }
        }
        let _ = tx.send(close);
    })
    .await;
    let shared = shared(WebSocketOptions::default());
    let socket = connect(&shared, &url, &[], &[], &TagSet::empty())
        .await
        .unwrap();
    assert_eq!(shared.ws_open.load(Ordering::Relaxed), 1);
    drop(socket);
    // The session ends for the metrics at once; the close goes out in the background.
    assert_eq!(shared.ws_open.load(Ordering::Relaxed), 0);
    let close = tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(close, Some((1001, "VU finished".to_string())));
}

#[tokio::test]
async fn host_pings_are_timed_and_the_plugin_close_is_acknowledged() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let url = server(move |mut ws| async move {
        // A well-behaved peer: reading answers pings and the close.
        let mut close = None;
        while let Some(Ok(message)) = ws.next().await {
            if let Message::Close(frame) = message {
                close = frame.map(|f| u16::from(f.code));
            }
        }
        let _ = tx.send(close);
    })
    .await;
    let shared = shared(WebSocketOptions {
        ping_interval: Some(Duration::from_millis(50)),
        recv_buffer: 4,
        ..WebSocketOptions::default()
    });
    let tags = [("name".to_string(), "probe".to_string())];
    let mut socket = connect(&shared, &url, &[], &tags, &TagSet::empty())
        .await
        .unwrap();
    assert_eq!(socket.recv(Duration::from_millis(300)).await, Ok(None));
    socket.close(1000, "done".into()).await.unwrap();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), rx)
            .await
            .unwrap()
            .unwrap(),
        Some(1000)
    );
    // After the close the plugin is told the socket is closed, not left waiting.
    assert_eq!(
        socket.recv(Duration::from_secs(1)).await,
        Err(WsError::Closed(1000, "done".into()))
    );
    let totals = shared.recorder.drain();
    let pings = totals
        .iter()
        .filter(|((m, tags), _)| *m == builtin::WS_PING && tags.get("name") == Some("probe"))
        .map(|(_, v)| match v {
            Value::Trend(h) => h.len(),
            _ => 0,
        })
        .sum::<u64>();
    assert!(
        pings >= 2,
        "{pings} pings answered in 300 ms at a 50 ms interval"
    );
    assert!(socket.close(1000, String::new()).await.is_err());
    assert!(matches!(
        socket.close(1006, String::new()).await,
        Err(WsError::Invalid(_))
    ));
}

/// Every idle socket keeps its task's state and its link for as long as it is open,
/// so both are bounded here: the task's rare paths (commands, closes, pings) are boxed
/// futures, and the link replaced two channels (see `link`).
#[tokio::test]
async fn an_idle_socket_keeps_a_small_task_and_link() {
    let url = server(|mut ws| async move { while let Some(Ok(_)) = ws.next().await {} }).await;
    let shared = shared(WebSocketOptions::default());
    let addr = url.trim_start_matches("ws://").trim_end_matches('/');
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (io, stats) = crate::net::counting_io::CountingIo::new(tcp);
    let (stream, _) = tokio_tungstenite::client_async(url.as_str(), Transport::Plain(io))
        .await
        .unwrap();
    let stream_bytes = std::mem::size_of_val(&stream);
    let session = session::Session::open(shared.clone(), TagSet::empty(), Instant::now(), stats);
    let link = Arc::new(link::Link::new(session, 64, 1 << 20));
    let task = driver::run(
        stream,
        link.clone(),
        driver::Timing {
            ping_interval: Some(Duration::from_secs(20)),
            write_timeout: Duration::from_secs(10),
        },
    );
    let task_bytes = std::mem::size_of_val(&task);
    let link_bytes = std::mem::size_of::<link::Link>();
    eprintln!(
        "task state {task_bytes} B (of which the stream {stream_bytes} B), link {link_bytes} B"
    );
    // The stream is most of the task; what waiting adds stays under 1 KiB.
    assert!(
        task_bytes < stream_bytes + 1024,
        "an idle socket's task keeps {task_bytes} bytes ({stream_bytes} of them the stream)"
    );
    assert!(link_bytes < 512, "the link is {link_bytes} bytes");
}

/// `ws_msgs_received` counts what the plugin took, as k6 counts what its event loop
/// handed to the script: messages still waiting in the host when the plugin lets go of
/// the socket (a script's close timer ran before them) were never received by it, so
/// a script that counts every message it gets counts exactly `ws_msgs_received`.
#[tokio::test]
async fn messages_left_waiting_at_the_close_are_not_counted_as_received() {
    let url = server(|mut ws| async move {
        for n in 0..5 {
            if ws.send(Message::text(format!("push {n}"))).await.is_err() {
                return;
            }
        }
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
    let shared = shared(WebSocketOptions {
        ping_interval: None,
        ..WebSocketOptions::default()
    });
    let mut socket = connect(&shared, &url, &[], &[], &TagSet::empty())
        .await
        .unwrap();
    for n in 0..2 {
        let message = socket.recv_text(Duration::from_secs(5)).await;
        assert_eq!(message.as_deref(), Some(format!("push {n}").as_str()));
    }
    // The other three reach the host's inbox; the plugin never takes them.
    let started = Instant::now();
    while socket.link.held_bytes() < 3 * "push n".len() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the pushes never arrived"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(socket);
    assert_eq!(counter(&shared, builtin::WS_MSGS_RECEIVED), 2.0);
}

/// Each receive waits for its own timeout: a shorter one after a longer one, one after
/// a message ended the wait early, one after a timeout, a longer one after a shorter
/// one a message ended; a message already waiting is taken at once.
#[tokio::test]
async fn every_receive_waits_its_own_timeout() {
    let (push, pushed) = tokio::sync::mpsc::unbounded_channel::<()>();
    let url = server(|mut ws| async move {
        let mut pushed = pushed;
        while pushed.recv().await.is_some() {
            if ws.send(Message::text("late")).await.is_err() {
                return;
            }
        }
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
    let shared = shared(WebSocketOptions {
        ping_interval: None,
        ..WebSocketOptions::default()
    });
    let mut socket = connect(&shared, &url, &[], &[], &TagSet::empty())
        .await
        .unwrap();
    let timed = |elapsed: Duration, wanted: u64| {
        let wanted = Duration::from_millis(wanted);
        assert!(
            elapsed >= wanted && elapsed < wanted + Duration::from_millis(150),
            "a receive of {wanted:?} gave up after {elapsed:?}"
        );
    };
    // Nothing comes: the wait times out.
    let t = Instant::now();
    assert_eq!(socket.recv_text(Duration::from_millis(200)).await, None);
    timed(t.elapsed(), 200);
    // A shorter wait after it.
    let t = Instant::now();
    assert_eq!(socket.recv(Duration::from_millis(50)).await, Ok(None));
    timed(t.elapsed(), 50);
    // A message ends a long wait (2 s) early ...
    push.send(()).unwrap();
    let t = Instant::now();
    assert_eq!(
        socket.recv_text(Duration::from_secs(2)).await.as_deref(),
        Some("late")
    );
    assert!(t.elapsed() < Duration::from_secs(1));
    // ... and a shorter wait after it waits its own time.
    let t = Instant::now();
    assert_eq!(socket.recv_text(Duration::from_millis(100)).await, None);
    timed(t.elapsed(), 100);
    // A message waiting is taken at once, whatever the timeout.
    push.send(()).unwrap();
    while socket.link.held_bytes() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        socket.recv(Duration::ZERO).await,
        Ok(Some(WsMessage::Text("late".into())))
    );
    // A longer wait after a shorter one that a message ended waits its own time.
    push.send(()).unwrap();
    assert_eq!(
        socket
            .recv_text(Duration::from_millis(100))
            .await
            .as_deref(),
        Some("late")
    );
    let t = Instant::now();
    assert_eq!(socket.recv_text(Duration::from_millis(400)).await, None);
    timed(t.elapsed(), 400);
    assert_eq!(counter(&shared, builtin::WS_MSGS_RECEIVED), 3.0);
}
