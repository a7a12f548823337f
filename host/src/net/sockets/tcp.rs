//! A plugin's TCP connection, plain or TLS: opened after the allowlist, counted on
//! the wire, read through a buffer the host keeps (at most `MAX_READ` bytes), so a
//! protocol can read a line and then exactly n bytes without losing what came after.

use super::account::{connect_failed, Account};
use super::error::{SocketError, SocketErrorKind};
use super::frame::{Frame, Framed};
use super::limits::{MAX_READ, MAX_WRITE};
use super::target;
use crate::metrics::TagSet;
use crate::net::allowlist::Origin;
use crate::net::counting_io::{CountingIo, IoStats};
use crate::net::plain_or_tls::PlainOrTls;
use crate::net::tls::Purpose;
use crate::net::NetShared;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The stream under a socket.
type Stream = PlainOrTls<tokio_rustls::client::TlsStream<CountingIo<TcpStream>>>;

/// Bytes asked of the kernel at a time.
const CHUNK: usize = 16 * 1024;

/// A read buffer larger than this is given back once it is empty, so an idle socket
/// does not keep the memory of its largest read.
const KEEP: usize = 64 * 1024;

/// How a TCP socket is opened.
pub(crate) struct TcpOptions {
    /// TLS over it, with this server name (SNI) when given, else the host.
    pub tls: Option<Option<String>>,
    /// The longest the connect with its handshake may take.
    pub timeout: Duration,
    /// The source address (`[http] local_ips`: the VU's).
    pub local: Option<IpAddr>,
}

/// An open TCP socket (public: the contract's `tcp-socket` resource is this type).
pub struct TcpConn {
    /// `None` once closed.
    stream: Option<Stream>,
    /// Read and not yet returned: `buf[start..]`.
    buf: Vec<u8>,
    start: usize,
    /// The peer closed its side.
    eof: bool,
    name: String,
    account: Account,
}

/// Opens a TCP socket to `host:port`, its metrics tagged `tags`; a failure is
/// counted (a denied connect in `socket_connects_denied`).
pub(crate) async fn connect(
    shared: &Arc<NetShared>,
    host: &str,
    port: u16,
    options: TcpOptions,
    tags: TagSet,
) -> Result<TcpConn, SocketError> {
    // The transport's counts, once it exists: a failed handshake moved bytes too.
    let stats = std::sync::OnceLock::new();
    let opened = open(shared, host, port, options, tags.clone(), &stats).await;
    if let Err(e) = &opened {
        connect_failed(shared, &tags, e, stats.get().map(|s: &Arc<IoStats>| &**s));
    }
    opened
}

async fn open(
    shared: &Arc<NetShared>,
    host: &str,
    port: u16,
    options: TcpOptions,
    tags: TagSet,
    stats_out: &std::sync::OnceLock<Arc<IoStats>>,
) -> Result<TcpConn, SocketError> {
    let target = target::check(shared, "tcp", host, port)?;
    let name = target.name.clone();
    let started = Instant::now();
    let timeout = options.timeout;
    let opening = async {
        let tcp = dial(&target, options.local).await?;
        let (io, stats) = CountingIo::new(tcp);
        let _ = stats_out.set(stats.clone());
        let stream = match options.tls {
            None => PlainOrTls::Plain(io),
            Some(server_name) => {
                let sni = Origin {
                    host: server_name.unwrap_or_else(|| target.origin.host.clone()),
                    ..target.origin.clone()
                };
                let (tls, _) = shared
                    .tls
                    .handshake(&sni, io, Purpose::WebSocket)
                    .await
                    .map_err(|e| SocketError::new(SocketErrorKind::Tls, e.message()))?;
                PlainOrTls::Tls(Box::new(tls))
            }
        };
        Ok::<_, SocketError>((stream, stats))
    };
    let (stream, stats) = tokio::time::timeout(timeout, opening).await.map_err(|_| {
        SocketError::new(
            SocketErrorKind::Connect,
            format!(
                "{name}: no connection within {}",
                crate::config::format_duration(timeout)
            ),
        )
    })??;
    Ok(TcpConn {
        stream: Some(stream),
        buf: Vec::new(),
        start: 0,
        eof: false,
        account: Account::open(shared, tags, stats, started.elapsed()),
        name,
    })
}

/// The TCP connection to the first of the target's addresses that accepts it, Nagle
/// off (a protocol's small requests go out at once).
async fn dial(target: &target::Target, local: Option<IpAddr>) -> Result<TcpStream, SocketError> {
    let mut last = None;
    for addr in target::resolve(target).await? {
        let attempt = match local {
            None => TcpStream::connect(addr).await,
            Some(ip) if ip.is_ipv4() != addr.is_ipv4() => continue,
            Some(ip) => crate::net::connect::connect_from(ip, addr).await,
        };
        match attempt {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) if crate::net::descriptors::check(&e) => {
                return Err(SocketError::new(
                    SocketErrorKind::Connect,
                    format!(
                        "{}: {e}: {}",
                        target.name,
                        crate::net::descriptors::advice()
                    ),
                ));
            }
            Err(e) => last = Some(SocketError::io(&format!("{} ({addr})", target.name), &e)),
        }
    }
    Err(last.unwrap_or_else(|| {
        SocketError::new(
            SocketErrorKind::Connect,
            format!("{}: no address of the source address's family", target.name),
        )
    }))
}

impl TcpConn {
    /// Writes all of `data` within `timeout`.
    pub(crate) async fn write(
        &mut self,
        data: &[u8],
        timeout: Duration,
    ) -> Result<(), SocketError> {
        let r = self.write_inner(data, timeout).await;
        self.settle(r)
    }

    /// Between 1 and `max` bytes, waiting up to `timeout` for the first; empty at
    /// the end of the stream.
    pub(crate) async fn read(
        &mut self,
        max: u32,
        timeout: Duration,
    ) -> Result<Vec<u8>, SocketError> {
        let r = self.read_inner(max, timeout).await;
        self.settle(r)
    }

    /// Exactly `n` bytes within `timeout`.
    pub(crate) async fn read_exact(
        &mut self,
        n: u32,
        timeout: Duration,
    ) -> Result<Vec<u8>, SocketError> {
        let r = self.read_exact_inner(n, timeout).await;
        self.settle(r)
    }

    /// The bytes up to and including `delimiter`, at most `max`, within `timeout`.
    pub(crate) async fn read_until(
        &mut self,
        delimiter: &[u8],
        max: u32,
        timeout: Duration,
    ) -> Result<Vec<u8>, SocketError> {
        let r = self.read_until_inner(delimiter, max, timeout).await;
        self.settle(r)
    }

    /// One whole message, its end found by `frame` in the buffered bytes (at most
    /// `max` of them), within `timeout`; `then` reads it in place (nothing copied out).
    /// `frame` tells where the first whole message in the buffered bytes ends, or
    /// how long it is at least when more must arrive ([`Frame`]).
    pub(crate) async fn read_frame<T>(
        &mut self,
        frame: impl Fn(&[u8]) -> Framed + Sync,
        max: u32,
        timeout: Duration,
        then: impl FnOnce(&[u8]) -> T,
    ) -> Result<T, SocketError> {
        let r = self.read_frame_inner(&frame, max, timeout).await;
        let r = r.map(|n| {
            let out = then(&self.buf[self.start..self.start + n]);
            self.consume(n);
            out
        });
        self.settle(r)
    }

    /// Ends the write side (FIN; over TLS, close_notify first).
    pub(crate) async fn shutdown_write(&mut self, timeout: Duration) -> Result<(), SocketError> {
        let name = self.name.clone();
        let r = match self.stream.as_mut() {
            None => Err(self.closed_error()),
            Some(stream) => match tokio::time::timeout(timeout, stream.shutdown()).await {
                Err(_) => Err(timed_out(&name, "the half-close", timeout)),
                Ok(r) => r.map_err(|e| SocketError::io(&name, &e)),
            },
        };
        self.settle(r)
    }

    /// Closes the connection (its metrics are final when the socket is dropped).
    pub(crate) fn close(&mut self) {
        self.stream = None;
        self.buf = Vec::new();
        self.start = 0;
        self.account.flush();
    }

    /// Counts the call's bytes, and its failure if it failed.
    fn settle<T>(&self, r: Result<T, SocketError>) -> Result<T, SocketError> {
        match &r {
            Ok(_) => self.account.flush(),
            Err(e) => self.account.failed(e),
        }
        r
    }

    fn closed_error(&self) -> SocketError {
        SocketError::invalid(format!("{}: the socket was closed", self.name))
    }

    async fn write_inner(&mut self, data: &[u8], timeout: Duration) -> Result<(), SocketError> {
        if data.len() > MAX_WRITE as usize {
            return Err(SocketError::new(
                SocketErrorKind::TooLarge,
                format!(
                    "{}: a write takes at most {MAX_WRITE} bytes; it was {}: split it",
                    self.name,
                    data.len()
                ),
            ));
        }
        let name = self.name.clone();
        let Some(stream) = self.stream.as_mut() else {
            return Err(self.closed_error());
        };
        let write = async {
            stream.write_all(data).await?;
            stream.flush().await
        };
        match tokio::time::timeout(timeout, write).await {
            Err(_) => Err(timed_out(&name, "the write", timeout)),
            Ok(r) => r.map_err(|e| SocketError::io(&name, &e)),
        }
    }

    fn available(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Hands out the next `n` buffered bytes.
    fn take(&mut self, n: usize) -> Vec<u8> {
        let out = self.buf[self.start..self.start + n].to_vec();
        self.consume(n);
        out
    }

    /// Drops the next `n` buffered bytes (handed out already).
    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
            if self.buf.capacity() > KEEP {
                self.buf = Vec::new();
            }
        }
    }

    /// Reads more from the connection into the buffer before `deadline`; false at
    /// the end of the stream. The buffer never holds more than `MAX_READ` bytes.
    async fn fill(
        &mut self,
        deadline: tokio::time::Instant,
        timeout: Duration,
        what: &str,
    ) -> Result<bool, SocketError> {
        if self.eof {
            return Ok(false);
        }
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        // A chunk, or as much as is held already when that is more: a large message
        // arrives in few reads, and a framer that looks at the buffer from its start
        // after each read looks at each byte a bounded number of times.
        let room = (MAX_READ as usize)
            .saturating_sub(self.buf.len())
            .min(CHUNK.max(self.buf.len()));
        debug_assert!(room > 0, "callers stop before the buffer is full");
        let name = self.name.clone();
        let Some(stream) = self.stream.as_mut() else {
            return Err(SocketError::invalid(format!(
                "{name}: the socket was closed"
            )));
        };
        // Into the buffer's spare room, not zero-filled first; at most `room` bytes.
        self.buf.reserve(room);
        let mut limited = bytes::BufMut::limit(&mut self.buf, room);
        let read = tokio::time::timeout_at(deadline, stream.read_buf(&mut limited)).await;
        let n = match read {
            Err(_) => return Err(timed_out(&name, what, timeout)),
            Ok(Err(e)) => return Err(SocketError::io(&name, &e)),
            Ok(Ok(n)) => n,
        };
        if n == 0 {
            self.eof = true;
        }
        Ok(n > 0)
    }

    async fn read_inner(&mut self, max: u32, timeout: Duration) -> Result<Vec<u8>, SocketError> {
        if max == 0 {
            return Err(SocketError::invalid(format!(
                "{}: a read of at most 0 bytes",
                self.name
            )));
        }
        self.open_check()?;
        let deadline = tokio::time::Instant::now() + timeout;
        if self.available() == 0 {
            self.fill(deadline, timeout, "a read").await?;
        }
        let n = self.available().min(max as usize);
        Ok(self.take(n))
    }

    async fn read_exact_inner(
        &mut self,
        n: u32,
        timeout: Duration,
    ) -> Result<Vec<u8>, SocketError> {
        if n > MAX_READ {
            return Err(SocketError::new(
                SocketErrorKind::TooLarge,
                format!(
                    "{}: a read of exactly {n} bytes asks for more than the host holds for a socket ({MAX_READ}): read it in parts",
                    self.name
                ),
            ));
        }
        self.open_check()?;
        let deadline = tokio::time::Instant::now() + timeout;
        while self.available() < n as usize {
            if !self
                .fill(deadline, timeout, "a read of exactly n bytes")
                .await?
            {
                return Err(SocketError::new(
                    SocketErrorKind::Closed,
                    format!(
                        "{}: the peer closed the connection after {} of the {n} bytes asked for",
                        self.name,
                        self.available()
                    ),
                ));
            }
        }
        Ok(self.take(n as usize))
    }

    async fn read_until_inner(
        &mut self,
        delimiter: &[u8],
        max: u32,
        timeout: Duration,
    ) -> Result<Vec<u8>, SocketError> {
        if delimiter.is_empty() {
            return Err(SocketError::invalid(format!(
                "{}: read-until needs a delimiter",
                self.name
            )));
        }
        if max > MAX_READ {
            return Err(SocketError::new(
                SocketErrorKind::TooLarge,
                format!(
                    "{}: read-until of up to {max} bytes passes what the host holds for a socket ({MAX_READ})",
                    self.name
                ),
            ));
        }
        self.open_check()?;
        let max = max as usize;
        let deadline = tokio::time::Instant::now() + timeout;
        // Where the search resumes: bytes before it were searched already.
        let mut searched: usize = 0;
        loop {
            let window = &self.buf[self.start..self.start + self.available().min(max)];
            let from = searched.saturating_sub(delimiter.len() - 1);
            if let Some(at) = find(&window[from..], delimiter) {
                return Ok(self.take(from + at + delimiter.len()));
            }
            searched = window.len();
            if searched >= max {
                return Err(SocketError::new(
                    SocketErrorKind::TooLarge,
                    format!(
                        "{}: no delimiter {:?} within {max} bytes",
                        self.name,
                        String::from_utf8_lossy(delimiter)
                    ),
                ));
            }
            if !self
                .fill(deadline, timeout, "a read up to a delimiter")
                .await?
            {
                return Err(SocketError::new(
                    SocketErrorKind::Closed,
                    format!(
                        "{}: the peer closed the connection after {} bytes without the delimiter",
                        self.name,
                        self.available()
                    ),
                ));
            }
        }
    }

    async fn read_frame_inner(
        &mut self,
        frame: &(dyn Fn(&[u8]) -> Framed + Sync),
        max: u32,
        timeout: Duration,
    ) -> Result<usize, SocketError> {
        if max > MAX_READ {
            return Err(SocketError::new(
                SocketErrorKind::TooLarge,
                format!(
                    "{}: a message of up to {max} bytes passes what the host holds for a socket ({MAX_READ})",
                    self.name
                ),
            ));
        }
        self.open_check()?;
        let max = max as usize;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let window = &self.buf[self.start..];
            let held = window.len();
            match frame(window) {
                Ok(Frame::Whole(n)) if n <= max => return Ok(n),
                Ok(Frame::Whole(n) | Frame::AtLeast(n)) if n > max => {
                    return Err(SocketError::new(
                        SocketErrorKind::TooLarge,
                        format!(
                            "{}: a message of {}{n} bytes, more than the {max} a read takes",
                            self.name,
                            if n > held { "at least " } else { "" }
                        ),
                    ))
                }
                Ok(_) => {}
                Err(what) => {
                    return Err(SocketError::invalid(format!(
                        "{}: the peer's bytes are not the protocol's: {what}",
                        self.name
                    )))
                }
            }
            if !self
                .fill(deadline, timeout, "a read of one message")
                .await?
            {
                return Err(SocketError::new(
                    SocketErrorKind::Closed,
                    format!(
                        "{}: the peer closed the connection after {held} bytes of a message",
                        self.name
                    ),
                ));
            }
        }
    }

    fn open_check(&self) -> Result<(), SocketError> {
        match self.stream {
            Some(_) => Ok(()),
            None => Err(self.closed_error()),
        }
    }
}

/// The first place of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() == 1 {
        return hay.iter().position(|b| *b == needle[0]);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

fn timed_out(name: &str, what: &str, timeout: Duration) -> SocketError {
    SocketError::new(
        SocketErrorKind::Timeout,
        format!(
            "{name}: {what} did not finish within {}",
            crate::config::format_duration(timeout)
        ),
    )
}
