//! The coordinator's connections: it takes them (a bounded number at once in the
//! handshake), admits a worker once the TLS handshake, its hello and the proofs both
//! ways are done, then carries its messages both ways and notices its silence.
//!
//! Before a peer has proved itself it is nobody: a flood of idle connections must not
//! lock real workers out, nor write the coordinator's log. When the handshake slots
//! are full the oldest connection still in it is closed to make room (an idle one is
//! the oldest; a real worker proves itself in milliseconds); what such peers cause is
//! logged a few lines a second at most, with a count of the lines left out
//! ([`Throttled`]); a
//! worker's name is escaped and cut before any line quotes it; and a wrong proof is
//! answered only after a wait that doubles with each wrong proof from that address
//! (to [`MAX_PROOF_WAIT`]), so a guesser gets a few tries a second, not hundreds.

use super::hub::Hub;
use crate::distributed::protocol::{self, CoordMsg, FrameError, Join, WorkerHello, WorkerMsg};
use crate::distributed::trust::{self, Role};
use crate::distributed::{HEARTBEAT, LOSS_AFTER, PREPARE_TIMEOUT};
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A worker's connection: TLS over TCP.
type Conn = tokio_rustls::server::TlsStream<TcpStream>;

/// Time a connection has for the TLS handshake and the proofs.
const ADMIT_WITHIN: Duration = Duration::from_secs(10);

/// Connections that may be in the handshake or the proofs at once: past it the oldest
/// is closed, so that a flood of them holds a bounded amount of memory and a real
/// worker still gets a slot.
const MAX_ADMITTING: usize = 64;

/// Bytes of a worker's name a log line quotes.
const NAME_BYTES: usize = 64;

/// The longest wait before a wrong proof is answered.
const MAX_PROOF_WAIT: Duration = Duration::from_secs(5);

/// Addresses whose wrong proofs are remembered (the oldest is forgotten past it).
const MAX_GUESSERS: usize = 1024;

/// The connections still in the handshake, oldest first, each with its task's handle.
#[derive(Default)]
struct Admitting {
    slots: Mutex<VecDeque<(u64, tokio::task::AbortHandle)>>,
    next: AtomicU64,
}

impl Admitting {
    /// Takes a slot for the task `abort` stops; the oldest is closed first when all are
    /// taken (said, throttled). Its number, to give it back.
    fn take(&self, abort: tokio::task::AbortHandle) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if slots.len() >= MAX_ADMITTING {
            if let Some((_, oldest)) = slots.pop_front() {
                oldest.abort();
                UNPROVEN.line(format_args!(
                    "coordinator: closed the oldest of {MAX_ADMITTING} connections still \
                     proving themselves, to make room for a new one"
                ));
            }
        }
        slots.push_back((id, abort));
        id
    }

    /// Gives slot `id` back; whether it was still held (not taken by a newer one).
    fn give_back(&self, id: u64) -> bool {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        match slots.iter().position(|(i, _)| *i == id) {
            Some(at) => {
                slots.remove(at);
                true
            }
            None => false,
        }
    }
}

/// Log lines of one kind, at most [`LINES_PER_SECOND`] a second; the next printed
/// after some were left out says how many.
pub(super) struct Throttled {
    /// The start of the current second, and the lines printed in it.
    window: Mutex<Option<(Instant, u32)>>,
    left_out: AtomicU64,
}

/// Lines a [`Throttled`] prints in one second: a few refusals at once (two workers
/// with the wrong token) are each named; a flood costs a few lines a second.
const LINES_PER_SECOND: u32 = 5;

impl Throttled {
    const fn new() -> Self {
        Self {
            window: Mutex::new(None),
            left_out: AtomicU64::new(0),
        }
    }

    /// Prints `text` unless this second's lines were printed already.
    pub(super) fn line(&self, text: impl std::fmt::Display) {
        let mut window = self.window.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let (start, printed) = match *window {
            Some((start, n)) if now.duration_since(start) < Duration::from_secs(1) => (start, n),
            _ => (now, 0),
        };
        if printed >= LINES_PER_SECOND {
            self.left_out.fetch_add(1, Ordering::Relaxed);
            return;
        }
        *window = Some((start, printed + 1));
        let left_out = self.left_out.swap(0, Ordering::Relaxed);
        if left_out > 0 {
            crate::stderr::line(format_args!(
                "{text} ({left_out} more such lines were left out: at most \
                 {LINES_PER_SECOND} a second)"
            ));
        } else {
            crate::stderr::line(text);
        }
    }
}

/// What peers that have not proved themselves cause: dropped, refused, closed.
static UNPROVEN: Throttled = Throttled::new();

/// A peer's name as a log line quotes it: escaped (no terminal controls, no line
/// breaks: a name cannot forge a line) and cut.
pub(super) fn shown_name(name: &str) -> String {
    crate::bounded::cut(&crate::stderr::escape_controls(name, false), NAME_BYTES).into_owned()
}

/// Wrong proofs by address: how many, and when the last came.
#[derive(Default)]
struct Guessers(Mutex<HashMap<IpAddr, (u32, Instant)>>);

impl Guessers {
    /// The wait before answering a wrong proof from `ip`, which is counted: 100 ms,
    /// doubling with each wrong proof in the last minute, at most [`MAX_PROOF_WAIT`].
    fn wrong(&self, ip: IpAddr) -> Duration {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if map.len() >= MAX_GUESSERS && !map.contains_key(&ip) {
            if let Some(oldest) = map.iter().min_by_key(|(_, (_, t))| *t).map(|(k, _)| *k) {
                map.remove(&oldest);
            }
        }
        let entry = map.entry(ip).or_insert((0, now));
        if now.duration_since(entry.1) > Duration::from_secs(60) {
            entry.0 = 0;
        }
        entry.0 = entry.0.saturating_add(1);
        entry.1 = now;
        let wait = Duration::from_millis(100).saturating_mul(1u32 << (entry.0.min(16) - 1));
        wait.min(MAX_PROOF_WAIT)
    }
}

/// Takes connections: each one shakes hands, proves itself, and is taken or refused.
pub(super) async fn accept_loop(listener: TcpListener, hub: Arc<Hub>) {
    let admitting = Arc::new(Admitting::default());
    let guessers = Arc::new(Guessers::default());
    loop {
        match listener.accept().await {
            Ok((stream, address)) => {
                let (hub, admitting_, guessers) =
                    (hub.clone(), admitting.clone(), guessers.clone());
                let (slot_tx, slot_rx) = tokio::sync::oneshot::channel();
                let task = tokio::spawn(async move {
                    let Ok(slot) = slot_rx.await else { return };
                    serve(stream, address, hub, &admitting_, slot, &guessers).await;
                });
                let slot = admitting.take(task.abort_handle());
                let _ = slot_tx.send(slot);
            }
            Err(e) => {
                crate::stderr::warn(format_args!("coordinator: accept failed: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// One worker's connection from its hello to its end.
async fn serve(
    stream: TcpStream,
    address: SocketAddr,
    hub: Arc<Hub>,
    admitting: &Admitting,
    slot: u64,
    guessers: &Guessers,
) {
    let _ = stream.set_nodelay(true);
    let admitted = tokio::time::timeout(ADMIT_WITHIN, admit(stream, address, &hub, guessers)).await;
    if !admitting.give_back(slot) {
        // Closed to make room: this task is being stopped.
        return;
    }
    let (mut conn, hello, join) = match admitted {
        Ok(Some(admitted)) => admitted,
        Ok(None) => return,
        Err(_) => {
            return UNPROVEN.line(format_args!(
            "coordinator: dropped a connection from {address}: it did not prove itself within {}s",
            ADMIT_WITHIN.as_secs()
        ))
        }
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let id = match hub.join(&hello, &join, address, tx.clone()) {
        Ok(id) => id,
        Err(why) => {
            crate::stderr::line(format_args!(
                "coordinator: refused worker {} ({address}): {why}",
                hello.name
            ));
            let _ = protocol::write(&mut conn, &CoordMsg::Refused(why.to_string())).await;
            return;
        }
    };
    let welcome = CoordMsg::Welcome {
        magic: protocol::MAGIC,
        protocol: protocol::PROTOCOL_VERSION,
        host_version: env!("CARGO_PKG_VERSION").into(),
    };
    if protocol::write(&mut conn, &welcome).await.is_err() {
        hub.lose(id, "the connection closed at the hello");
        return;
    }
    let claim = join
        .index
        .map(|i| format!(" for index {i}"))
        .unwrap_or_default();
    crate::stderr::line(format_args!(
        "coordinator: worker {} ({address}) joined{claim}",
        hello.name
    ));
    hub.changed.notify_waiters();
    let (reader, writer) = tokio::io::split(conn);
    tokio::spawn(write_loop(writer, rx));
    read_loop(reader, id, hub).await;
}

/// The TLS handshake, the hello, and the proofs both ways; then the worker's join.
/// `None` when the connection is refused or dropped (said on stderr).
async fn admit(
    stream: TcpStream,
    address: SocketAddr,
    hub: &Hub,
    guessers: &Guessers,
) -> Option<(Conn, WorkerHello, Join)> {
    let mut conn = match hub.tls.accept(stream).await {
        Ok(conn) => conn,
        Err(e) => {
            drop_garbage(address, &format!("no TLS handshake: {e}"));
            return None;
        }
    };
    let body = read_small(&mut conn, address).await?;
    // The head first: a hello of another protocol version has other fields after it,
    // and that worker is told why, not dropped as garbage.
    let Ok(protocol::HelloHead::Hello {
        magic,
        protocol: version,
        name,
        ..
    }) = protocol::decode(&body)
    else {
        drop_garbage(address, "it did not begin with a hello");
        return None;
    };
    if magic != protocol::MAGIC {
        drop_garbage(address, "its hello has the wrong magic bytes");
        return None;
    }
    if version != protocol::PROTOCOL_VERSION {
        let why = format!(
            "protocol version {version} is not the coordinator's {}: run the same host binary on every machine",
            protocol::PROTOCOL_VERSION
        );
        refuse(&mut conn, &name, address, why).await;
        return None;
    }
    let mut hello = match protocol::decode::<WorkerMsg>(&body) {
        Ok(WorkerMsg::Hello(hello)) => hello,
        Ok(other) => {
            drop_garbage(address, &format!("it began with {other:?}, not a hello"));
            return None;
        }
        Err(e) => {
            drop_garbage(address, &e.to_string());
            return None;
        }
    };
    // Every line from here on quotes the name: escaped and cut once.
    hello.name = shown_name(&hello.name);
    let nonce = trust::nonce();
    let challenge = CoordMsg::Challenge {
        magic: protocol::MAGIC,
        protocol: protocol::PROTOCOL_VERSION,
        nonce,
    };
    protocol::write(&mut conn, &challenge).await.ok()?;
    let proof = match protocol::decode::<WorkerMsg>(&read_small(&mut conn, address).await?) {
        Ok(WorkerMsg::Proof(proof)) => proof,
        _ => {
            let why =
                "it did not answer the challenge with a proof of the cluster token".to_string();
            refuse(&mut conn, &hello.name, address, why).await;
            return None;
        }
    };
    let exporter = match trust::exporter(conn.get_ref().1) {
        Ok(e) => e,
        Err(e) => {
            drop_garbage(address, &format!("{e:#}"));
            return None;
        }
    };
    if !hub
        .token
        .verify(Role::Worker, &exporter, &hello.nonce, &nonce, &proof)
    {
        let why = if hub.token.is_set() {
            format!(
                "it did not prove it holds the cluster token: give it the coordinator's token ({} or --token-file)",
                trust::TOKEN_ENV
            )
        } else {
            format!(
                "its proof is of a cluster token and this coordinator has none: give both sides the same {} or --token-file, or neither (loopback only)",
                trust::TOKEN_ENV
            )
        };
        // A guesser waits longer with each wrong proof: its tries become a few a second.
        tokio::time::sleep(guessers.wrong(address.ip())).await;
        refuse(&mut conn, &hello.name, address, why).await;
        return None;
    }
    let ours = hub
        .token
        .proof(Role::Coordinator, &exporter, &hello.nonce, &nonce);
    protocol::write(&mut conn, &CoordMsg::Proof(ours))
        .await
        .ok()?;
    match protocol::decode::<WorkerMsg>(&read_small(&mut conn, address).await?) {
        Ok(WorkerMsg::Join(join)) => Some((conn, hello, join)),
        Ok(other) => {
            drop_garbage(
                address,
                &format!("it sent {other:?} where its join was due"),
            );
            None
        }
        Err(e) => {
            drop_garbage(address, &e.to_string());
            None
        }
    }
}

/// Reads a frame of at most [`protocol::MAX_HELLO_FRAME`] bytes (before the proofs);
/// `None` if the connection closed or sent more.
async fn read_small(conn: &mut Conn, address: SocketAddr) -> Option<Vec<u8>> {
    match protocol::read_frame(conn, protocol::MAX_HELLO_FRAME).await {
        Ok(body) => Some(body),
        Err(FrameError::Io(_)) => None,
        Err(e) => {
            drop_garbage(address, &e.to_string());
            None
        }
    }
}

/// Refuses a connection with the reason, on stderr (throttled, the name escaped and
/// cut) and to the peer.
async fn refuse(conn: &mut Conn, name: &str, address: SocketAddr, why: String) {
    UNPROVEN.line(format_args!(
        "coordinator: refused worker {} ({address}): {why}",
        shown_name(name)
    ));
    let _ = protocol::write(conn, &CoordMsg::Refused(why)).await;
    let _ = tokio::io::AsyncWriteExt::shutdown(conn).await;
}

fn drop_garbage(address: SocketAddr, why: &str) {
    UNPROVEN.line(format_args!(
        "coordinator: dropped a connection from {address}: it sent garbage ({})",
        crate::stderr::escape_controls(why, false)
    ));
}

async fn write_loop(mut writer: WriteHalf<Conn>, mut rx: mpsc::UnboundedReceiver<CoordMsg>) {
    while let Some(msg) = rx.recv().await {
        if protocol::write(&mut writer, &msg).await.is_err() {
            break;
        }
    }
}

/// Reads a worker's messages until it finishes or is lost.
async fn read_loop(mut reader: ReadHalf<Conn>, id: u64, hub: Arc<Hub>) {
    loop {
        let started = hub.lock().t0.is_some();
        let within = if started { LOSS_AFTER } else { PREPARE_TIMEOUT };
        let read = tokio::time::timeout(
            within,
            protocol::read::<_, WorkerMsg>(&mut reader, protocol::MAX_WORKER_FRAME),
        )
        .await;
        let msg = match read {
            Ok(Ok(msg)) => msg,
            Ok(Err(FrameError::Io(e))) => {
                return hub.lose(id, &format!("its connection closed ({e})"));
            }
            Ok(Err(e)) => return hub.lose(id, &format!("it sent garbage ({e})")),
            Err(_) => {
                return hub.lose(
                    id,
                    &format!(
                        "silent for {:.1}s (killed or cut off)",
                        within.as_secs_f64()
                    ),
                )
            }
        };
        let last = matches!(msg, WorkerMsg::Final(_));
        if let Err(why) = hub.on_message(id, msg) {
            return hub.lose(id, &why.to_string());
        }
        if last {
            return;
        }
    }
}

/// Tells every worker that is not done that the coordinator lives.
pub(super) async fn heartbeats(hub: Arc<Hub>) {
    let mut every = tokio::time::interval(HEARTBEAT);
    loop {
        every.tick().await;
        hub.broadcast(CoordMsg::Heartbeat);
    }
}
