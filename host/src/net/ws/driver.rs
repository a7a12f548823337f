//! The task that owns one socket: it reads frames into the plugin's bounded inbox
//! (and stops reading while the inbox is full or holds its byte budget), answers the
//! peer's pings, sends the host's own pings and times their pongs, writes what the
//! plugin sends, and ends the session when the peer closes, the connection breaks, a
//! pong is overdue, or the plugin lets go of the socket.
//!
//! The rare paths (a command, a close, an answer to a ping) are boxed futures awaited
//! where they happen, so the task's own state, kept for every idle socket, holds only
//! what waiting needs.

use super::link::{Asked, Command, Link};
use super::message::{format_size, WsError, WsMessage};
use super::session::Ending;
use super::transport::Stream;
use futures::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as TError, Message};

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
pub(super) async fn run(mut ws: Stream, link: Arc<Link>, timing: Timing) {
    let mut pings = timing.ping_interval.map(|every| {
        let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval
    });
    let mut pending_ping: Option<PendingPing> = None;
    let mut ping_count: u64 = 0;
    let session = &link.session;
    // The wait for the plugin, kept across turns and made again only once it fired: a
    // new one per turn (per message read) would enter and leave the waiters' list.
    let mut woken = std::pin::pin!(link.task_woken());
    let ending = loop {
        match link.asked() {
            Asked::Nothing => {}
            Asked::Dropped => {
                Box::pin(going_away(&mut ws)).await;
                break Ending::Dropped;
            }
            Asked::Commands(commands) => {
                match Box::pin(carry_out(&mut ws, &link, commands, timing.write_timeout)).await {
                    Some(ending) => break ending,
                    None => continue,
                }
            }
        }
        // Read only with room in the inbox: the backpressure on the peer.
        let reading = link.may_read();
        tokio::select! {
            () = woken.as_mut() => woken.set(link.task_woken()),
            frame = ws.next(), if reading => match frame {
                // Counted when the plugin takes them (`Link::take`), not here.
                Some(Ok(Message::Text(text))) => {
                    link.deliver(WsMessage::Text(text.as_str().to_owned()));
                }
                Some(Ok(Message::Binary(data))) => {
                    link.deliver(WsMessage::Binary(data.to_vec()));
                }
                Some(Ok(Message::Ping(_))) => {
                    // tungstenite queued the pong; write it now rather than on the next read.
                    if let Err(e) = Box::pin(flush(&mut ws, timing.write_timeout)).await {
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
                    let _ = Box::pin(flush(&mut ws, CLOSE_GRACE)).await;
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
                let ping = Message::Ping(payload.to_vec().into());
                if let Err(e) = Box::pin(write(&mut ws, ping, every)).await {
                    break Ending::Failed(e);
                }
                pending_ping = Some(PendingPing { payload, sent });
            }
        }
    };
    // Record the ending (and the error the plugin will be told) before the plugin
    // learns that the socket ended, so a `recv` that finds it ended finds the reason.
    session.finish(ending);
    link.end();
}

/// Carries out the plugin's commands in order; the ending if one ended the socket.
async fn carry_out(
    ws: &mut Stream,
    link: &Link,
    commands: std::collections::VecDeque<Command>,
    write_timeout: Duration,
) -> Option<Ending> {
    for command in commands {
        match command {
            Command::Send(message, reply) => {
                let written = write(ws, message, write_timeout).await;
                if written.is_ok() {
                    link.session.sent();
                }
                let failed = written.as_ref().err().cloned();
                let _ = reply.send(written);
                if let Some(error) = failed {
                    return Some(Ending::Failed(error));
                }
            }
            Command::Close(code, reason, reply) => {
                let frame = CloseFrame {
                    code: CloseCode::from(code),
                    reason: reason.clone().into(),
                };
                let _ = reply.send(close(ws, frame).await);
                return Some(Ending::ClosedByPlugin(code, reason));
            }
        }
    }
    None
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
