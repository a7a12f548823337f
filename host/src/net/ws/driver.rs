//! The task that owns one socket: it reads frames into the plugin's bounded channel
//! (and stops reading while that channel is full or holds its byte budget), answers the peer's pings, sends the
//! host's own pings and times their pongs, writes what the plugin sends, and ends the
//! session when the peer closes, the connection breaks, a pong is overdue, or the
//! plugin lets go of the socket.

use super::held::Held;
use super::message::{format_size, WsError, WsMessage};
use super::session::{Ending, Session};
use super::transport::Stream;
use futures::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as TError, Message};

/// What the plugin asks the socket's task to do.
pub(super) enum Command {
    /// Write a message; the reply says whether it was written.
    Send(tokio_tungstenite::tungstenite::Message, Reply),
    /// Close with this code and reason, wait (briefly) for the peer's close.
    Close(u16, String, Reply),
}

/// Where the task answers a command.
pub(super) type Reply = oneshot::Sender<Result<(), WsError>>;

/// How long a closing socket waits for the peer's close frame before dropping the
/// connection.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Timers of a socket.
pub(super) struct Timing {
    /// How often to ping the peer; `None` for never.
    pub ping_interval: Option<Duration>,
    /// Longest a write may take (a peer that stops reading fills the TCP window).
    pub write_timeout: Duration,
}

/// A ping sent and not yet answered.
struct PendingPing {
    payload: [u8; 8],
    sent: Instant,
}

/// Runs a socket until it ends; see the module documentation.
pub(super) async fn run(
    mut ws: Stream,
    mut commands: mpsc::Receiver<Command>,
    incoming: mpsc::Sender<WsMessage>,
    held: Arc<Held>,
    session: Arc<Session>,
    timing: Timing,
) {
    let mut pings = timing.ping_interval.map(|every| {
        let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval
    });
    let mut pending_ping: Option<PendingPing> = None;
    let mut ping_count: u64 = 0;
    // Room for one message in the plugin's channel; the stream is read only while we
    // hold it, which is the backpressure.
    let mut room = None;
    let ending = loop {
        // Read only with a slot in the channel and the held bytes under budget.
        let reading = room.is_some() && held.has_room();
        tokio::select! {
            command = commands.recv() => match command {
                Some(Command::Send(message, reply)) => {
                    let written = write(&mut ws, message, timing.write_timeout).await;
                    if written.is_ok() {
                        session.sent();
                    }
                    let failed = written.as_ref().err().cloned();
                    let _ = reply.send(written);
                    if let Some(error) = failed {
                        break Ending::Failed(error);
                    }
                }
                Some(Command::Close(code, reason, reply)) => {
                    let frame = CloseFrame { code: CloseCode::from(code), reason: reason.clone().into() };
                    let _ = reply.send(close(&mut ws, frame).await);
                    break Ending::ClosedByPlugin(code, reason);
                }
                None => {
                    going_away(&mut ws).await;
                    break Ending::Dropped;
                }
            },
            reserved = incoming.reserve(), if room.is_none() => match reserved {
                Ok(permit) => room = Some(permit),
                Err(_) => {
                    going_away(&mut ws).await;
                    break Ending::Dropped;
                }
            },
            _ = held.freed(), if room.is_some() && !reading => {}
            frame = ws.next(), if reading => match frame {
                Some(Ok(Message::Text(text))) => {
                    session.received();
                    if let Some(permit) = room.take() {
                        held.add(text.len());
                        permit.send(WsMessage::Text(text.as_str().to_owned()));
                    }
                }
                Some(Ok(Message::Binary(data))) => {
                    session.received();
                    if let Some(permit) = room.take() {
                        held.add(data.len());
                        permit.send(WsMessage::Binary(data.to_vec()));
                    }
                }
                Some(Ok(Message::Ping(_))) => {
                    // tungstenite queued the pong; write it now rather than on the next read.
                    if let Err(e) = flush(&mut ws, timing.write_timeout).await {
                        break Ending::Failed(e);
                    }
                }
                Some(Ok(Message::Pong(payload))) => {
                    if pending_ping.as_ref().is_some_and(|p| payload[..] == p.payload) {
                        let ping = pending_ping.take().expect("just checked");
                        session.ping_answered(ping.sent.elapsed());
                    }
                }
                Some(Ok(Message::Close(frame))) => {
                    // tungstenite queued our reply to the close; send it, briefly.
                    let _ = flush(&mut ws, CLOSE_GRACE).await;
                    let (code, reason) = match frame {
                        Some(f) => (u16::from(f.code), f.reason.as_str().to_owned()),
                        None => (1005, "no status code".to_owned()),
                    };
                    break Ending::Failed(WsError::Closed(code, reason));
                }
                Some(Ok(Message::Frame(_))) => {}
                Some(Err(e)) => break Ending::Failed(describe(e)),
                None => break Ending::Failed(WsError::Protocol(
                    "the connection ended without a close frame".into(),
                )),
            },
            _ = tick(&mut pings), if pings.is_some() => {
                let every = timing.ping_interval.unwrap_or_default();
                if pending_ping.is_some() {
                    // A peer we are not reading (the plugin is behind) cannot be blamed
                    // for a pong we have not read; only a reading socket times out.
                    if reading {
                        break Ending::PingTimeout(WsError::Protocol(format!(
                            "no pong within {}; the peer stopped answering",
                            crate::config::format_duration(every)
                        )));
                    }
                    continue;
                }
                ping_count += 1;
                let payload = ping_count.to_be_bytes();
                let sent = Instant::now();
                if let Err(e) = write(&mut ws, Message::Ping(payload.to_vec().into()), every).await {
                    break Ending::Failed(e);
                }
                pending_ping = Some(PendingPing { payload, sent });
            }
        }
    };
    drop(room);
    // Record the ending (and the error the plugin will be told) before the channel
    // closes, so a `recv` that finds it closed also finds the reason.
    session.finish(ending);
    drop(incoming);
}

async fn tick(pings: &mut Option<tokio::time::Interval>) {
    match pings {
        Some(interval) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}

async fn write(ws: &mut Stream, message: Message, limit: Duration) -> Result<(), WsError> {
    match tokio::time::timeout(limit, ws.send(message)).await {
        Ok(result) => result.map_err(describe),
        Err(_) => Err(WsError::Protocol(format!(
            "a write did not complete within {}; the peer stopped reading",
            crate::config::format_duration(limit)
        ))),
    }
}

async fn flush(ws: &mut Stream, limit: Duration) -> Result<(), WsError> {
    match tokio::time::timeout(limit, ws.flush()).await {
        Ok(result) => result.map_err(describe),
        Err(_) => Err(WsError::Protocol(format!(
            "a write did not complete within {}; the peer stopped reading",
            crate::config::format_duration(limit)
        ))),
    }
}

/// Sends a close frame and waits, up to [`CLOSE_GRACE`], for the peer's answer,
/// discarding any message still on the way.
async fn close(ws: &mut Stream, frame: CloseFrame) -> Result<(), WsError> {
    let handshake = async {
        ws.send(Message::Close(Some(frame)))
            .await
            .map_err(describe)?;
        while let Some(next) = ws.next().await {
            match next {
                Ok(Message::Close(_)) | Err(TError::ConnectionClosed) => break,
                Ok(_) => {}
                Err(e) => return Err(describe(e)),
            }
        }
        Ok(())
    };
    match tokio::time::timeout(CLOSE_GRACE, handshake).await {
        Ok(result) => result,
        // The close frame went out; a peer that does not answer it is its problem.
        Err(_) => Ok(()),
    }
}

/// Closes with 1001 "going away", as a browser does when the page goes.
async fn going_away(ws: &mut Stream) {
    let frame = CloseFrame {
        code: CloseCode::Away,
        reason: "VU finished".into(),
    };
    let _ = close(ws, frame).await;
}

fn describe(e: TError) -> WsError {
    match e {
        TError::ConnectionClosed | TError::AlreadyClosed => {
            WsError::Protocol("the connection is closed".into())
        }
        TError::Io(io) => WsError::Protocol(format!("connection broken: {io}")),
        TError::Protocol(p) => WsError::Protocol(p.to_string()),
        TError::Capacity(CapacityError::MessageTooLong { size, max_size }) => {
            WsError::Protocol(format!(
                "the peer sent a message of {} (or a frame announcing it), larger than \
                 [websocket] max_message = {}; raise max_message to receive it",
                format_size(size),
                format_size(max_size)
            ))
        }
        TError::Capacity(c) => WsError::Protocol(format!("message too large: {c}")),
        other => WsError::Protocol(other.to_string()),
    }
}
