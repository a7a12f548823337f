//! The request body of a call: one framed message for a unary call (or a reflection
//! request), or a channel the plugin's `send`s feed for a stream; dropping the
//! channel's sender ends the body, which half-closes the stream (END_STREAM).

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// A call's request body.
pub(crate) enum GrpcBody {
    /// One message, sent whole.
    Once(Option<Bytes>),
    /// Messages as the plugin sends them.
    Stream(mpsc::Receiver<Bytes>),
}

impl Body for GrpcBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Self::Once(message) => Poll::Ready(message.take().map(|m| Ok(Frame::data(m)))),
            Self::Stream(rx) => rx.poll_recv(cx).map(|m| m.map(|m| Ok(Frame::data(m)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Self::Once(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Once(Some(m)) => SizeHint::with_exact(m.len() as u64),
            Self::Once(None) => SizeHint::with_exact(0),
            Self::Stream(_) => SizeHint::default(),
        }
    }
}
