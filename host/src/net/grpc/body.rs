//! A call's bytes on its HTTP/2 stream, through h2 itself rather than hyper's client:
//! the VU's own task queues the request's HEADERS and its DATA on the stream, so the
//! connection writes both in one `writev` (hyper's client hands the body to a task of
//! its own that waits for flow-control capacity, which costs a second write, a task
//! and two wake-ups per call: bench/grpc/instructions measured 2 `writev` per unary
//! call through it, 1 through this). A stream's messages go through a small task
//! that waits for the peer's flow-control window before each write; the answer is
//! read as DATA and trailers.

use super::status::GrpcError;
use bytes::Bytes;
use h2::client::SendRequest;
use h2::{RecvStream, SendStream};
use std::future::poll_fn;
use tokio::sync::mpsc;

/// The answer's head and its body.
pub(super) type Response = http::Response<RecvStream>;

/// A part of an answer's body.
pub(super) enum Part {
    Data(Bytes),
    Trailers(http::HeaderMap),
}

/// Opens a stream for `request` on `sender` (waiting while the peer's limit of
/// concurrent streams is reached). With `message`, the request is that one message
/// and the stream is half-closed after it (a unary call); without, the caller sends.
pub(super) async fn open(
    sender: &mut SendRequest<Bytes>,
    request: http::Request<()>,
    message: Option<Bytes>,
) -> Result<(h2::client::ResponseFuture, SendStream<Bytes>), GrpcError> {
    poll_fn(|cx| sender.poll_ready(cx))
        .await
        .map_err(|e| GrpcError::Protocol(format!("connection closed: {}", describe(&e))))?;
    let (answer, mut send) = sender
        .send_request(request, false)
        .map_err(|e| GrpcError::Protocol(describe(&e)))?;
    if let Some(message) = message {
        // Queued now, beside the HEADERS: h2 sends it as the window allows (a unary
        // request is small; the stream's window is 64 KiB at least).
        send.send_data(message, true)
            .map_err(|e| GrpcError::Protocol(describe(&e)))?;
    }
    Ok((answer, send))
}

/// Waits for the answer's head.
pub(super) async fn head(answer: h2::client::ResponseFuture) -> Result<Response, GrpcError> {
    answer.await.map_err(|e| GrpcError::Protocol(describe(&e)))
}

/// Sends the messages the plugin's `send`s queue on `rx`, each when the peer's window
/// has room for it (in pieces when it is larger than the window), and half-closes
/// when `rx` is closed. Ends early when the stream is reset.
pub(super) async fn pipe(mut send: SendStream<Bytes>, mut rx: mpsc::Receiver<Bytes>) {
    while let Some(mut message) = rx.recv().await {
        while !message.is_empty() {
            send.reserve_capacity(message.len());
            let room = match poll_fn(|cx| send.poll_capacity(cx)).await {
                Some(Ok(n)) if n > 0 => n,
                Some(Ok(_)) => continue,
                _ => return,
            };
            let piece = message.split_to(room.min(message.len()));
            if send.send_data(piece, false).is_err() {
                return;
            }
        }
    }
    let _ = send.send_data(Bytes::new(), true);
}

/// The next DATA or trailers of `body`; `None` at its end. Received bytes are given
/// back to the flow-control window at once.
pub(super) async fn next_frame(body: &mut RecvStream) -> Result<Option<Part>, GrpcError> {
    if let Some(data) = body.data().await {
        let data = data.map_err(|e| GrpcError::Protocol(describe(&e)))?;
        let _ = body.flow_control().release_capacity(data.len());
        return Ok(Some(Part::Data(data)));
    }
    match body.trailers().await {
        Ok(t) => Ok(t.map(Part::Trailers)),
        Err(e) => Err(GrpcError::Protocol(describe(&e))),
    }
}

/// An error with its causes (h2's reason: `stream error received: ...`).
pub(super) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
