//! A lean HTTP/1.1 client connection on httparse, for plain and TLS HTTP/1.1
//! (`[http] client = "lean"`). hyper's client runs each connection as a task of its
//! own that the request talks to through a channel: a wake-up and a task switch each
//! way, and about 2.4 µs of user time a request. Here the request's own future
//! writes the request and reads the response on the socket it owns, with one buffer
//! each way kept for the connection's life.
//!
//! Everything a server or a plugin can observe is hyper 1.x's: the bytes of the
//! request (`write`), which responses are accepted, how their bodies are delimited
//! and when the connection stays open (`head`, `chunked`), and errors of the same
//! kinds at the same moments; `net::lean::tests` checks it against hyper. HTTP/2, h2c
//! and HTTP/3 stay on hyper and h3; WebSockets have their own client.

mod chunked;
mod error;
mod head;
mod io;
#[cfg(test)]
mod tests;
mod write;

pub(crate) use error::LeanError;
pub(crate) use io::LeanIo;

use bytes::{Buf, Bytes, BytesMut};
use chunked::{Chunked, Step};
use head::{Framing, MAX_HEAD};
use http_body_util::Full;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use write::BodyCoding;

/// The first read's size, as hyper's (`INIT_BUFFER_SIZE`).
const INIT_READ: usize = 8192;
/// The largest read: reads that fill their room double the next one up to this.
const MAX_READ: usize = 256 * 1024;

/// The rest of a response body still to read.
enum Body {
    /// Read (or none).
    Done,
    /// So many bytes.
    Length(u64),
    /// Chunked.
    Chunked(Box<Chunked>),
    /// Until the server closes.
    Close,
}

/// One HTTP/1.1 connection: its transport, the read buffer (whatever arrived past a
/// response stays in it), the write buffer, and whether it can take another request.
pub(crate) struct LeanConn {
    io: LeanIo,
    read: BytesMut,
    next_read: usize,
    write: Vec<u8>,
    indices: Vec<[(usize, usize); 2]>,
    max_headers: usize,
    body: Body,
    /// No request or response asked to close so far.
    keep_alive: bool,
    /// The last response was HTTP/1.0: hyper then writes HTTP/1.0 with keep-alive.
    http10: bool,
    /// Failed, closed, or left in the middle of a response: no more requests.
    broken: bool,
    /// The TLS close was sent.
    closed: bool,
}

impl LeanConn {
    /// A connection over `io` accepting up to `max_headers` header fields a response.
    pub(crate) fn new(io: LeanIo, max_headers: usize) -> Self {
        Self {
            io,
            read: BytesMut::new(),
            next_read: INIT_READ,
            write: Vec::new(),
            indices: Vec::new(),
            max_headers,
            body: Body::Done,
            keep_alive: true,
            http10: false,
            broken: false,
            closed: false,
        }
    }

    /// Whether the connection can take another request: the last response was read
    /// whole, nothing asked to close, and the server has neither closed it nor sent
    /// anything unasked since. hyper's connection task notices such a close or data
    /// while idle and ends; here a read that cannot block looks, when the pool hands
    /// the connection out. Usually no system call is made: the last read drained the
    /// socket and tokio already knows it is not readable.
    pub(crate) fn is_usable(&mut self) -> bool {
        if self.broken || !self.keep_alive || !matches!(self.body, Body::Done) {
            return false;
        }
        if !self.read.is_empty() {
            self.broken = true;
            return false;
        }
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut byte = [0u8; 1];
        let mut probe = tokio::io::ReadBuf::new(&mut byte);
        match std::pin::Pin::new(&mut self.io).poll_read(&mut cx, &mut probe) {
            Poll::Pending => true,
            _ => {
                // End of file, an error, or a byte nobody asked for.
                self.broken = true;
                false
            }
        }
    }

    /// Writes `request` and reads its response head, skipping informational ones.
    /// The body is then read with [`read_body`](Self::read_body).
    pub(crate) async fn send(
        &mut self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<http::response::Parts, LeanError> {
        let sent = self.send_inner(request).await;
        if sent.is_err() {
            self.close();
        }
        sent
    }

    /// [`send`](Self::send) until it fails or returns.
    async fn send_inner(
        &mut self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<http::response::Parts, LeanError> {
        // Until the response is read whole, the connection counts as broken.
        self.broken = true;
        let (mut parts, body) = request.into_parts();
        let body = full_bytes(body);
        self.write.clear();
        let encoded = write::encode_head(
            &parts.method,
            &parts.uri,
            &mut parts.headers,
            &body,
            self.http10,
            &mut self.write,
        );
        if encoded.close {
            self.keep_alive = false;
        }
        let (rest, tail) = write::body_parts(&encoded.coding, &body, &mut self.write);
        self.write_request(&rest, tail)
            .await
            .map_err(|e| LeanError::io("connection error", e))?;
        if let BodyCoding::Length(n) = encoded.coding {
            if n > body.len() as u64 {
                return Err(LeanError::short_body(n - body.len() as u64));
            }
        }
        let mut headers = std::mem::take(&mut parts.headers);
        headers.clear();
        let head = loop {
            if let Some(head) = head::parse(
                &mut self.read,
                &parts.method,
                self.max_headers,
                &mut self.indices,
                &mut headers,
            )? {
                break head;
            }
            if self.read.len() >= MAX_HEAD {
                return Err(LeanError::too_large());
            }
            if self
                .fill(INIT_READ)
                .await
                .map_err(|e| LeanError::io("connection error", e))?
                == 0
            {
                return Err(LeanError::incomplete());
            }
        };
        self.keep_alive &= head.keep_alive;
        // hyper hands an upgraded connection over as it is, without closing it: so
        // no TLS close either, now or when it is dropped.
        self.closed |= head.upgrade;
        self.http10 = head.parts.version == http::Version::HTTP_10;
        self.body = match head.framing {
            Framing::Empty => Body::Done,
            Framing::Length(n) => Body::Length(n),
            Framing::Chunked => Body::Chunked(Box::new(Chunked::new(self.max_headers))),
            Framing::Close => {
                self.keep_alive = false;
                Body::Close
            }
        };
        self.settle();
        Ok(head.parts)
    }

    /// Reads the response body, handing its data to `sink` as it arrives; `sink`
    /// answers false to stop reading (the body cap), which leaves the connection
    /// unusable, as does any error.
    pub(crate) async fn read_body(
        &mut self,
        sink: &mut (dyn FnMut(&[u8]) -> bool + Send),
    ) -> Result<(), LeanError> {
        let read = self.read_body_inner(sink).await;
        if read.is_err() {
            self.close();
        }
        read
    }

    /// [`read_body`](Self::read_body) until it fails or returns.
    async fn read_body_inner(
        &mut self,
        sink: &mut (dyn FnMut(&[u8]) -> bool + Send),
    ) -> Result<(), LeanError> {
        loop {
            match &mut self.body {
                Body::Done => {
                    self.settle();
                    return Ok(());
                }
                Body::Length(remaining) => {
                    if !self.read.is_empty() {
                        let n = (*remaining).min(self.read.len() as u64) as usize;
                        *remaining -= n as u64;
                        if *remaining == 0 {
                            self.body = Body::Done;
                        }
                        let go_on = sink(&self.read[..n]);
                        self.read.advance(n);
                        if !go_on {
                            return Ok(());
                        }
                        continue;
                    }
                    let want = (*remaining).min(MAX_READ as u64) as usize;
                    if self
                        .fill(want)
                        .await
                        .map_err(|e| LeanError::io("error reading a body from connection", e))?
                        == 0
                    {
                        return Err(LeanError::body("end of file before message length reached"));
                    }
                }
                Body::Chunked(chunked) => {
                    match chunked.decode(&mut self.read, sink) {
                        Ok(Step::Done) => self.body = Body::Done,
                        Ok(Step::Stopped) => return Ok(()),
                        Err(why) => return Err(LeanError::body(why)),
                        Ok(Step::More) => {
                            let why = chunked.eof_message();
                            if self.fill(INIT_READ).await.map_err(|e| {
                                LeanError::io("error reading a body from connection", e)
                            })? == 0
                            {
                                return Err(LeanError::body(why));
                            }
                        }
                    }
                }
                Body::Close => {
                    if !self.read.is_empty() {
                        let go_on = sink(&self.read);
                        self.read.clear();
                        if !go_on {
                            return Ok(());
                        }
                    }
                    if self
                        .fill(INIT_READ)
                        .await
                        .map_err(|e| LeanError::io("error reading a body from connection", e))?
                        == 0
                    {
                        self.body = Body::Done;
                    }
                }
            }
        }
    }

    /// After a response is read whole: the connection serves on if nothing asked to
    /// close it.
    fn settle(&mut self) {
        if matches!(self.body, Body::Done) {
            self.broken = !self.keep_alive;
            if self.broken {
                self.close();
            }
        }
    }

    /// Ends the connection as hyper's task does once it will carry no more requests:
    /// over TLS the close alert (close_notify) goes out at once, so that it is counted
    /// in the bytes of the request that ended it, as hyper's is. It is queued and
    /// written if the socket takes it now, without waiting (an idle socket always has
    /// room for its 24 bytes); a failed socket takes nothing.
    fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        if let LeanIo::Tls(stream) = &mut self.io {
            stream.get_mut().get_mut().1.send_close_notify();
            let mut cx = Context::from_waker(std::task::Waker::noop());
            let _ = std::pin::Pin::new(&mut **stream).poll_flush(&mut cx);
        }
    }

    /// Writes the request: the head (with a small body) from the write buffer, then
    /// a large body from its own buffer, then the chunked coding's end; flushed (TLS
    /// holds records until then).
    async fn write_request(&mut self, rest: &Bytes, tail: &[u8]) -> std::io::Result<()> {
        if rest.is_empty() {
            self.io.write_all(&self.write).await?;
        } else {
            let mut head = &self.write[..];
            let mut body = &rest[..];
            while !head.is_empty() {
                let slices = [std::io::IoSlice::new(head), std::io::IoSlice::new(body)];
                let n = self.io.write_vectored(&slices).await?;
                if n == 0 {
                    return Err(std::io::ErrorKind::WriteZero.into());
                }
                let from_head = n.min(head.len());
                head = &head[from_head..];
                body = &body[n - from_head..];
            }
            self.io.write_all(body).await?;
            self.io.write_all(tail).await?;
        }
        self.io.flush().await
    }

    /// Reads once into the read buffer, with room for `want` bytes at least (and
    /// more after reads that filled their room); 0 at the end of the stream.
    async fn fill(&mut self, want: usize) -> std::io::Result<usize> {
        let room = want.max(self.next_read).min(MAX_READ);
        self.read.reserve(room);
        let before = self.read.capacity() - self.read.len();
        let n = self.io.read_buf(&mut self.read).await?;
        if n == before && self.next_read < MAX_READ {
            self.next_read *= 2;
        }
        Ok(n)
    }
}

impl Drop for LeanConn {
    /// hyper's connection task shuts its transport down when the connection ends,
    /// which over TLS sends the close alert before the FIN: so does this.
    fn drop(&mut self) {
        self.close();
    }
}

/// The bytes of a `Full` body: it yields them in one frame, at once.
fn full_bytes(body: Full<Bytes>) -> Bytes {
    use futures::FutureExt;
    use http_body_util::BodyExt;
    let mut body = body;
    match body.frame().now_or_never() {
        Some(Some(Ok(frame))) => frame.into_data().unwrap_or_default(),
        _ => Bytes::new(),
    }
}
