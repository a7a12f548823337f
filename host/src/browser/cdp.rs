//! The DevTools protocol over the browser's pipes (JSON messages separated by NUL
//! bytes) or, for a remote browser, a WebSocket (a message per frame): commands
//! answered by id, events routed by session (the browser's own events have none).
//! A small typed layer over tokio and serde_json instead of a client crate
//! (see the module doc of [`super`] for the choice and its figures).
//!
//! One reader task splits the stream and routes each message: a reply to the command
//! waiting for it, an event to its session's sink, called inline (sinks only update
//! state and wake waiters, so the reader never blocks). One writer task writes the
//! commands in order. Messages are bounded ([`MAX_MESSAGE`]): a page cannot grow the
//! host without bound through what the browser reports of it.

use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// The largest message read (a full-page screenshot in base64 is the largest expected).
pub(crate) const MAX_MESSAGE: usize = 64 << 20;

/// Why a command failed.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum CdpError {
    /// The browser answered with an error.
    #[error("{method}: {message}")]
    Protocol {
        /// The command.
        method: String,
        /// The browser's message.
        message: String,
    },
    /// The browser is gone (it exited or crashed, or the pipe broke).
    #[error("the browser closed its DevTools connection ({0})")]
    Closed(String),
    /// A reply that does not have the shape expected.
    #[error("{method}: unexpected reply: {why}")]
    Shape {
        /// The command.
        method: String,
        /// What did not fit.
        why: String,
    },
}

/// An event: its method and parameters.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    /// `Domain.event`.
    pub(crate) method: String,
    /// Its parameters.
    pub(crate) params: Value,
}

/// Who receives a session's (or the browser's) events; called on the reader task.
pub(crate) type Sink = Arc<dyn Fn(&Connection, Event) + Send + Sync>;

type Pending = oneshot::Sender<Result<Value, CdpError>>;

struct Shared {
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, (String, Pending)>>,
    sessions: Mutex<HashMap<String, Sink>>,
    browser_sink: Mutex<Option<Sink>>,
    closed: AtomicBool,
    why_closed: Mutex<String>,
}

/// A connection to one browser; cheap to clone.
#[derive(Clone)]
pub(crate) struct Connection {
    shared: Arc<Shared>,
    writer: mpsc::UnboundedSender<Vec<u8>>,
}

/// Removes a command's pending entry when its caller stops waiting (a timeout).
struct Forget<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(&self.shared.pending).remove(&self.id);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Connection {
    /// A connection whose commands go to the returned queue (a writer task takes them).
    fn new() -> (Connection, mpsc::UnboundedReceiver<Vec<u8>>) {
        let shared = Arc::new(Shared {
            next_id: AtomicU64::new(1),
            pending: Mutex::default(),
            sessions: Mutex::default(),
            browser_sink: Mutex::default(),
            closed: AtomicBool::new(false),
            why_closed: Mutex::default(),
        });
        let (writer, queue) = mpsc::unbounded_channel::<Vec<u8>>();
        (Connection { shared, writer }, queue)
    }

    /// Starts the reader and writer tasks over the browser's pipes.
    pub(crate) fn start(commands: OwnedFd, replies: OwnedFd) -> std::io::Result<Connection> {
        let mut tx = tokio::net::unix::pipe::Sender::from_owned_fd(commands)?;
        let mut rx = tokio::net::unix::pipe::Receiver::from_owned_fd(replies)?;
        let (conn, mut queue) = Connection::new();
        tokio::spawn(async move {
            while let Some(mut message) = queue.recv().await {
                // On the pipe, each message ends with a NUL byte.
                message.push(0);
                if tx.write_all(&message).await.is_err() {
                    break;
                }
            }
        });
        let reader = conn.clone();
        tokio::spawn(async move {
            let why = reader.read_loop(&mut rx).await;
            reader.close(why);
        });
        Ok(conn)
    }

    /// Starts the reader and writer tasks over a DevTools WebSocket (a remote browser,
    /// `K6_BROWSER_WS_URL`): one message per text frame.
    pub(crate) fn over_websocket<S>(ws: tokio_tungstenite::WebSocketStream<S>) -> Connection
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        use futures::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        let (mut tx, mut rx) = ws.split();
        let (conn, mut queue) = Connection::new();
        tokio::spawn(async move {
            while let Some(message) = queue.recv().await {
                let text = String::from_utf8(message).expect("serde_json writes UTF-8");
                if tx.send(Message::text(text)).await.is_err() {
                    break;
                }
            }
            let _ = tx.close().await;
        });
        let reader = conn.clone();
        tokio::spawn(async move {
            let why = loop {
                match rx.next().await {
                    Some(Ok(Message::Text(t))) => reader.dispatch(t.as_bytes()),
                    Some(Ok(Message::Binary(b))) => reader.dispatch(&b),
                    Some(Ok(Message::Close(_))) | None => {
                        break "the browser closed the WebSocket".to_owned()
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => break format!("reading its WebSocket: {e}"),
                }
            };
            reader.close(why);
        });
        conn
    }

    async fn read_loop(&self, rx: &mut tokio::net::unix::pipe::Receiver) -> String {
        let mut buf: Vec<u8> = Vec::with_capacity(64 << 10);
        let mut chunk = vec![0u8; 64 << 10];
        loop {
            let n = match rx.read(&mut chunk).await {
                Ok(0) => return "the browser exited".into(),
                Ok(n) => n,
                Err(e) => return format!("reading its pipe: {e}"),
            };
            let mut start = 0;
            for (i, b) in chunk[..n].iter().enumerate() {
                if *b == 0 {
                    buf.extend_from_slice(&chunk[start..i]);
                    self.dispatch(&buf);
                    buf.clear();
                    start = i + 1;
                }
            }
            buf.extend_from_slice(&chunk[start..n]);
            if buf.len() > MAX_MESSAGE {
                return format!("a message exceeded {} MiB", MAX_MESSAGE >> 20);
            }
        }
    }

    fn dispatch(&self, raw: &[u8]) {
        let Ok(mut message) = serde_json::from_slice::<Value>(raw) else {
            return;
        };
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            let Some((method, reply)) = lock(&self.shared.pending).remove(&id) else {
                return;
            };
            let result = match message.get_mut("error") {
                Some(e) => Err(CdpError::Protocol {
                    method,
                    message: crate::bounded::cut(
                        e.get("message").and_then(Value::as_str).unwrap_or("error"),
                        crate::bounded::MESSAGE_BYTES,
                    )
                    .into_owned(),
                }),
                None => Ok(message
                    .get_mut("result")
                    .map(Value::take)
                    .unwrap_or(Value::Null)),
            };
            let _ = reply.send(result);
            return;
        }
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return;
        };
        let event = Event {
            method: method.to_owned(),
            params: message
                .get_mut("params")
                .map(Value::take)
                .unwrap_or(Value::Null),
        };
        let sink = match message.get("sessionId").and_then(Value::as_str) {
            Some(session) => lock(&self.shared.sessions).get(session).cloned(),
            None => lock(&self.shared.browser_sink).clone(),
        };
        if let Some(sink) = sink {
            sink(self, event);
        }
    }

    fn close(&self, why: String) {
        *lock(&self.shared.why_closed) = why.clone();
        self.shared.closed.store(true, Ordering::SeqCst);
        let pending: Vec<_> = lock(&self.shared.pending).drain().collect();
        for (_, (_, reply)) in pending {
            let _ = reply.send(Err(CdpError::Closed(why.clone())));
        }
        // Sinks may hold the connection (a clone): dropping them breaks the cycle.
        lock(&self.shared.sessions).clear();
        lock(&self.shared.browser_sink).take();
    }

    /// Whether the browser is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    fn closed_error(&self) -> CdpError {
        CdpError::Closed(lock(&self.shared.why_closed).clone())
    }

    /// Sends a command without waiting for its reply (answers to paused requests,
    /// which the reader sends itself and must not wait on).
    pub(crate) fn send(&self, session: Option<&str>, method: &str, params: Value) {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let _ = self.writer.send(frame(id, session, method, params));
    }

    /// Sends a command and waits for its result.
    pub(crate) async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, CdpError> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id, (method.to_owned(), tx));
        let _forget = Forget {
            shared: &self.shared,
            id,
        };
        // Closed between the check and the insert: close() may have drained already.
        if self.is_closed() {
            return Err(self.closed_error());
        }
        if self
            .writer
            .send(frame(id, session, method, params))
            .is_err()
        {
            return Err(self.closed_error());
        }
        match rx.await {
            Ok(result) => result,
            Err(_) => Err(self.closed_error()),
        }
    }

    /// [`Connection::call`], its result read as `T`.
    pub(crate) async fn call_as<T: DeserializeOwned>(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<T, CdpError> {
        let value = self.call(session, method, params).await?;
        serde_json::from_value(value).map_err(|e| CdpError::Shape {
            method: method.to_owned(),
            why: e.to_string(),
        })
    }

    /// Routes the browser's own events (those of no session) to `sink`.
    pub(crate) fn on_browser_events(&self, sink: Sink) {
        *lock(&self.shared.browser_sink) = Some(sink);
    }

    /// Routes `session`'s events to `sink` until [`Connection::forget_session`].
    pub(crate) fn on_session_events(&self, session: &str, sink: Sink) {
        if !self.is_closed() {
            lock(&self.shared.sessions).insert(session.to_owned(), sink);
        }
    }

    /// Stops routing `session`'s events.
    pub(crate) fn forget_session(&self, session: &str) {
        lock(&self.shared.sessions).remove(session);
    }
}

fn frame(id: u64, session: Option<&str>, method: &str, params: Value) -> Vec<u8> {
    let message = match session {
        Some(s) => json!({ "id": id, "method": method, "params": params, "sessionId": s }),
        None => json!({ "id": id, "method": method, "params": params }),
    };
    serde_json::to_vec(&message).expect("a JSON value serialises")
}
