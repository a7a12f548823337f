//! The plugin's handle on a socket: sends and receives go through the socket's task
//! ([`driver`](super::driver)), and dropping the handle ends the session.

use super::link::{Command, Link, Reply, Taken, TakenText};
use super::message::{format_size, WsError, WsMessage};
use super::session;
use std::future::Future;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};

/// An open WebSocket held by the host for a plugin.
pub struct Socket {
    /// Shared with the socket's task: its inbox, commands and session.
    pub(super) link: Arc<Link>,
    /// `[websocket] max_message`, for sends too: a message waits in the host (encoded,
    /// then in the write buffer) outside the plugin's memory cap.
    pub(super) max_message: usize,
}

impl Socket {
    /// Sends a text message.
    pub async fn send_text(&mut self, text: String) -> Result<(), WsError> {
        self.check_size(text.len())?;
        let message = tokio_tungstenite::tungstenite::Message::Text(text.into());
        self.request(|reply| Command::Send(message, reply)).await
    }

    /// Sends a binary message.
    pub async fn send_binary(&mut self, data: Vec<u8>) -> Result<(), WsError> {
        self.check_size(data.len())?;
        let message = tokio_tungstenite::tungstenite::Message::Binary(data.into());
        self.request(|reply| Command::Send(message, reply)).await
    }

    fn check_size(&self, len: usize) -> Result<(), WsError> {
        if len > self.max_message {
            // Refused before it leaves, the socket still open: counted as the socket's
            // error (`ws_errors{error:too_large}`), as a run's errors must all show.
            self.link.session.refused("too_large");
            return Err(WsError::Invalid(format!(
                "a message of {} is larger than [websocket] max_message = {}; raise \
                 max_message to send it",
                format_size(len),
                format_size(self.max_message)
            )));
        }
        Ok(())
    }

    /// The next message, waiting up to `timeout` (`Duration::ZERO`: only what has
    /// already arrived); `None` when nothing came in time. Messages that arrived before
    /// the socket ended are delivered first, then the reason it ended.
    pub async fn recv(&mut self, timeout: Duration) -> Result<Option<WsMessage>, WsError> {
        let found = self.wait_for(timeout, |link, waker| match link.take(waker) {
            Taken::Message(message) => Some(Ok(Some(message))),
            // Only `take_text` skips; `take` wants every message.
            Taken::Ended | Taken::Skipped => Some(Err(link.session.end_error())),
            Taken::Empty => None,
        });
        found.await.unwrap_or(Ok(None))
    }

    /// The next message if it is text, waiting up to `timeout` as [`Socket::recv`];
    /// `None` also when the next message is binary or the socket ended, which are
    /// left for [`Socket::recv`] (the k6 layer's receive, `k6-layer/sockets`).
    pub async fn recv_text(&mut self, timeout: Duration) -> Option<String> {
        let found = self.wait_for(timeout, |link, waker| match link.take_text(waker) {
            TakenText::Text(text) => Some(Some(text)),
            TakenText::Other => Some(None),
            TakenText::Empty => None,
        });
        found.await.flatten()
    }

    /// Asks `look` until it finds something (`Some`), waiting for the socket's task to
    /// deliver between two looks, up to `timeout` (`Duration::ZERO`: one look); `None`
    /// when nothing was found in time. `look` is given the waker to leave with the link
    /// when it finds nothing (none for a single look). A message already there costs
    /// no clock read and no timer.
    async fn wait_for<T>(
        &self,
        timeout: Duration,
        mut look: impl FnMut(&Link, Option<&Waker>) -> Option<T>,
    ) -> Option<T> {
        let link: &Link = &self.link;
        // The wait's timer, on the stack and armed at the first look that finds
        // nothing. (A timer kept per socket and moved to each deadline was tried:
        // results/js.md, branch sock53; it did not read fewer instructions.)
        let mut timer = std::pin::pin!(None::<Sleep>);
        std::future::poll_fn(|cx| {
            let waker = (!timeout.is_zero()).then(|| cx.waker());
            // Woken by a message or the end; a wake-up may be stale, so look again.
            if let Some(found) = look(link, waker) {
                return Poll::Ready(Some(found));
            }
            if timeout.is_zero() {
                return Poll::Ready(None);
            }
            if timer.is_none() {
                timer.set(Some(tokio::time::sleep_until(Instant::now() + timeout)));
            }
            let sleep = timer.as_mut().as_pin_mut().expect("armed above");
            if sleep.poll(cx).is_ready() {
                link.forget_plugin();
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await
    }

    /// Closes the socket with `code` and `reason` and waits briefly for the peer's
    /// close frame. Closing an already ended socket reports why it ended.
    pub async fn close(&mut self, code: u16, reason: String) -> Result<(), WsError> {
        let allowed =
            tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::from(code)
                .is_allowed();
        if !allowed || code < 1000 {
            return Err(WsError::Invalid(format!(
                "close code {code} may not be sent; use 1000 (normal) or 3000-4999"
            )));
        }
        if reason.len() > 123 {
            return Err(WsError::Invalid(
                "a close reason may be at most 123 bytes".into(),
            ));
        }
        self.request(|reply| Command::Close(code, reason, reply))
            .await
    }

    async fn request(&mut self, command: impl FnOnce(Reply) -> Command) -> Result<(), WsError> {
        let (reply, answer) = oneshot::channel();
        if self.link.ask(command(reply)).is_err() {
            return Err(self.link.session.end_error());
        }
        match answer.await {
            Ok(result) => result,
            // The task ended with the command unanswered.
            Err(_) => Err(self.link.session.end_error()),
        }
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // The session ends for the metrics now, when its VU lets go of it; the task
        // still says goodbye to the peer in the background.
        self.link.session.finish(session::Ending::Dropped);
        self.link.drop_socket();
    }
}
