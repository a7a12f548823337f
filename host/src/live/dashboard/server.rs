//! The dashboard's HTTP server (hyper, HTTP/1.1): `/` the page, `/events` the
//! server-sent events, `/metrics` OpenMetrics text, `/report.html` once the run wrote it.

use super::access::{Access, Verdict, MAX_CONNECTIONS};
use super::snapshot::Snapshot;
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::{Request, Response, StatusCode};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::sync::{Arc, RwLock};
use tokio::sync::watch;

/// The page, built into the binary.
pub(crate) const PAGE: &str = include_str!("page.html");

/// One published update: the event's bytes and whether it is the last.
#[derive(Clone)]
pub(crate) struct Update {
    /// `data: {...}\n\n`.
    pub event: Bytes,
    /// The run is over.
    pub done: bool,
}

/// What the server and the run share.
pub(crate) struct Shared {
    updates: watch::Sender<Update>,
    /// The newest `/metrics` text.
    pub metrics: RwLock<String>,
    /// report.html, once written.
    pub report: RwLock<Option<PathBuf>>,
    /// Pages connected to `/events` now.
    pub clients: AtomicUsize,
    /// Of those, the ones that were handed the last update.
    pub delivered: AtomicUsize,
    /// Every second of the run so far, for the charts of a page opened mid-run.
    pub history: RwLock<super::history::History>,
}

impl Shared {
    /// Nothing published yet but the title.
    pub(crate) fn new(title: &str) -> Shared {
        let first = serde_json::json!({ "title": title, "waiting": true });
        Shared {
            updates: watch::channel(Update {
                event: Bytes::from(format!("data: {first}\n\n")),
                done: false,
            })
            .0,
            metrics: RwLock::new("# EOF\n".into()),
            report: RwLock::new(None),
            clients: AtomicUsize::new(0),
            delivered: AtomicUsize::new(0),
            history: RwLock::new(Default::default()),
        }
    }

    /// Sends `snap` to every open page.
    pub(crate) fn publish(&self, snap: &Snapshot) {
        let json = serde_json::to_string(snap).unwrap_or_default();
        self.updates.send_replace(Update {
            event: Bytes::from(format!("data: {json}\n\n")),
            done: snap.done,
        });
    }
}

/// Accepts connections until aborted: at most [`MAX_CONNECTIONS`] at once, each
/// request head within `access.head_timeout`. Past the bound the oldest connection is
/// closed to make room (an event stream, as a rule: they are the ones that last), so
/// that 64 pages left open, or opened on purpose, cannot blank the dashboard for
/// everyone else; a page whose stream was closed reconnects by itself.
pub(crate) async fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>, access: Access) {
    let open: Arc<Mutex<VecDeque<(u64, tokio::task::AbortHandle)>>> = Arc::default();
    let mut next = 0u64;
    let access = Arc::new(access);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (shared, access, done) = (shared.clone(), access.clone(), open.clone());
        let id = next;
        next += 1;
        let (go, ready) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            if ready.await.is_err() {
                return;
            }
            let timeout = access.head_timeout;
            let service = hyper::service::service_fn(move |req| {
                let (shared, access) = (shared.clone(), access.clone());
                async move { Ok::<_, Infallible>(guarded(req, &shared, &access)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(timeout)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
            let mut open = done.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(at) = open.iter().position(|(i, _)| *i == id) {
                open.remove(at);
            }
        });
        {
            let mut held = open.lock().unwrap_or_else(|p| p.into_inner());
            if held.len() >= MAX_CONNECTIONS {
                if let Some((_, oldest)) = held.pop_front() {
                    oldest.abort();
                }
            }
            held.push_back((id, task.abort_handle()));
        }
        let _ = go.send(());
    }
}

/// [`route`] for a request that [`Access`] lets through.
fn guarded(
    req: Request<hyper::body::Incoming>,
    shared: &Arc<Shared>,
    access: &Access,
) -> Response<Body> {
    match access.judge(req.headers(), req.uri().query()) {
        Verdict::Serve => route(req, shared),
        Verdict::ServeAndRemember(cookie) => {
            let mut resp = route(req, shared);
            if let Ok(value) = hyper::header::HeaderValue::from_str(&cookie) {
                resp.headers_mut().insert(hyper::header::SET_COOKIE, value);
            }
            resp
        }
        Verdict::Refuse(status, why) => full(
            StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN),
            "text/plain; charset=utf-8",
            format!("{why}\n"),
        ),
    }
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("cache-control", "no-store")
        .body(Full::new(body.into()).boxed_unsync())
        .expect("static headers are valid")
}

fn route(req: Request<hyper::body::Incoming>, shared: &Arc<Shared>) -> Response<Body> {
    match req.uri().path() {
        "/" | "/index.html" => full(StatusCode::OK, "text/html; charset=utf-8", PAGE),
        "/events" => events(shared),
        "/metrics" => {
            let text = shared.metrics.read().map(|m| m.clone()).unwrap_or_default();
            full(
                StatusCode::OK,
                super::super::openmetrics::CONTENT_TYPE,
                text,
            )
        }
        "/report.html" => {
            let path = shared.report.read().ok().and_then(|r| r.clone());
            match path.map(std::fs::read) {
                Some(Ok(bytes)) => full(StatusCode::OK, "text/html; charset=utf-8", bytes),
                _ => full(
                    StatusCode::NOT_FOUND,
                    "text/plain; charset=utf-8",
                    "report.html is written when the run ends\n",
                ),
            }
        }
        _ => full(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found\n",
        ),
    }
}

/// Counts a page while its event stream lives.
struct Client(Arc<Shared>);

impl Drop for Client {
    fn drop(&mut self) {
        self.0.clients.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The event stream: the newest update at once, then each new one; it ends after the
/// last.
fn events(shared: &Arc<Shared>) -> Response<Body> {
    shared.clients.fetch_add(1, Ordering::SeqCst);
    let client = Client(shared.clone());
    let mut rx = shared.updates.subscribe();
    rx.mark_changed();
    // The run from its start first (a page opened mid-run draws it all), then the
    // newest update and each one after it.
    let history = shared.history.read().map(|h| h.event()).unwrap_or_default();
    let stream =
        futures::stream::unfold((rx, client, false), |(mut rx, client, ended)| async move {
            if ended || rx.changed().await.is_err() {
                return None;
            }
            let update = rx.borrow_and_update().clone();
            if update.done {
                client.0.delivered.fetch_add(1, Ordering::SeqCst);
            }
            Some((update.event, (rx, client, update.done)))
        });
    let stream = futures::stream::once(async move { history })
        .chain(stream)
        .map(|b| Ok::<_, Infallible>(Frame::data(b)));
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-store")
        .body(StreamBody::new(stream).boxed_unsync())
        .expect("static headers are valid")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn start(head_timeout: Duration) -> std::net::SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let bound = listener.local_addr().unwrap();
        let mut access = Access::for_address(bound);
        access.head_timeout = head_timeout;
        tokio::spawn(serve(listener, Arc::new(Shared::new("t")), access));
        bound
    }

    /// Sends `head` and reads until the server closes (at most 5 s).
    async fn exchange(addr: std::net::SocketAddr, head: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(head.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    #[tokio::test]
    async fn a_foreign_host_is_refused_and_a_loopback_one_served() {
        let addr = start(Duration::from_secs(5)).await;
        let port = addr.port();
        let ok = exchange(
            addr,
            &format!(
                "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
            ),
        )
        .await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        let rebound = exchange(
            addr,
            &format!(
                "GET /metrics HTTP/1.1\r\nHost: evil.example:{port}\r\nConnection: close\r\n\r\n"
            ),
        )
        .await;
        assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
        assert!(rebound.contains("DNS rebinding"), "{rebound}");
    }

    #[tokio::test]
    async fn slow_heads_time_out_and_connections_are_capped() {
        let addr = start(Duration::from_millis(500)).await;
        // A head that never ends is dropped after the timeout.
        let started = std::time::Instant::now();
        let slow = exchange(addr, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n").await;
        let took = started.elapsed();
        assert!(took < Duration::from_secs(3), "open for {took:?}: {slow}");
        // Every slot taken by idle connections: the next one is served, and the oldest
        // idle one closed to make room.
        let mut idle = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let port = addr.port();
        let ok = exchange(
            addr,
            &format!(
                "GET /metrics HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n"
            ),
        )
        .await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        let mut buf = [0u8; 16];
        let n = tokio::time::timeout(Duration::from_millis(400), idle[0].read(&mut buf))
            .await
            .expect("the oldest was closed at once")
            .unwrap_or(0);
        assert_eq!(n, 0);
    }

    #[tokio::test]
    async fn open_event_streams_do_not_blank_the_dashboard_for_a_new_page() {
        let addr = start(Duration::from_secs(5)).await;
        let port = addr.port();
        // 64 pages (or a script) holding /events open: every slot.
        let mut streams = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(
                format!("GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes(),
            )
            .await
            .unwrap();
            streams.push(s);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        // A new page is still served, at once.
        let page = tokio::time::timeout(
            Duration::from_secs(3),
            exchange(
                addr,
                &format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"),
            ),
        )
        .await
        .expect("served within 3 s");
        assert!(page.starts_with("HTTP/1.1 200"), "{page:.200}");
    }
}
