//! The dashboard's HTTP server (hyper, HTTP/1.1): `/` the page, `/events` the
//! server-sent events, `/metrics` OpenMetrics text, `/report.html` once the run wrote it.

use super::snapshot::Snapshot;
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// Accepts connections until aborted.
pub(crate) async fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(route(req, &shared)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
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
