//! Raw TCP (plain or TLS) and UDP sockets held by the host (contract 0.3.7), for
//! protocols the contract does not name: Redis, PostgreSQL, MQTT, a custom one.
//!
//! [`TcpStream`] implements [`std::io::Read`] and [`std::io::Write`], so a sans-I/O
//! protocol crate (or `std::io::BufReader`, `std::io::BufWriter`) works over it
//! unchanged. Its own methods read the way protocols do, from a buffer the host keeps
//! for the socket: [`TcpStream::read_until`] a line, [`TcpStream::read_exact_vec`] a
//! length-prefixed payload, [`TcpStream::read_some`] whatever came, and
//! [`TcpStream::read_frame`] one whole message of a framing the host knows (a RESP
//! reply, a message with a length field) in one call.
//!
//! The host checks every connect against the run's allowlist by host and port before
//! any packet (allow `tcp://host:port` or `udp://host:port` under `[targets] allow`;
//! loopback is allowed without it), and records `socket_connects`,
//! `socket_connecting`, `socket_errors{error}`, `socket_connects_denied`,
//! `sockets_open`, `data_sent` and `data_received`. A socket may outlive an
//! iteration (keep it in a `thread_local!`) and is closed with its VU.
//!
//! ```no_run
//! use std::io::Write;
//! use loadtest::sockets::TcpStream;
//!
//! # fn f() -> Result<(), String> {
//! let mut redis = TcpStream::connect("127.0.0.1", 6379)?;
//! redis.write_all(b"PING\r\n").map_err(|e| e.to_string())?;
//! let line = redis.read_until(b"\r\n", 1024)?;
//! assert_eq!(line, b"+PONG\r\n");
//! # Ok(()) }
//! ```

use std::fmt;
use std::io;
use std::time::Duration;

use crate::bindings::loadtest::scenario::sockets as wit;
use crate::tags::owned;

/// How long a read or write waits when no timeout was set: 60 s, as the host's
/// default request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a socket call failed. Each kind is counted by the host in
/// `socket_errors{error}` (a denied connect in `socket_connects_denied`).
///
/// It converts into `String` (so `?` works in [`Scenario`](crate::Scenario)
/// functions) and into [`std::io::Error`] (so it passes through protocol crates; get it
/// back with [`SocketError::from_io`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketError {
    /// The host:port is not in the run's allowlist; nothing was sent to it.
    Denied(String),
    /// A bad argument, a closed socket, or a VU holding the most sockets it may.
    Invalid(String),
    /// The peer refused the connection (nothing listens on the port).
    Refused(String),
    /// The name did not resolve, the address is unreachable, or the connect timed out.
    Connect(String),
    /// The TLS handshake failed.
    Tls(String),
    /// Nothing, or not enough, arrived in time (what did arrive stays for the next
    /// read); or a write did not finish in time.
    Timeout(String),
    /// The peer closed the connection before the read got what it asked for.
    Closed(String),
    /// A read or write past the host's bound ([`max_read`], [`max_write`]), or a
    /// `read_until` that found no delimiter within its `max` bytes.
    TooLarge(String),
    /// The connection broke (reset, broken pipe).
    Io(String),
}

impl SocketError {
    fn from_wit(e: wit::SocketError) -> Self {
        match e {
            wit::SocketError::Denied(m) => Self::Denied(m),
            wit::SocketError::Invalid(m) => Self::Invalid(m),
            wit::SocketError::Refused(m) => Self::Refused(m),
            wit::SocketError::Connect(m) => Self::Connect(m),
            wit::SocketError::Tls(m) => Self::Tls(m),
            wit::SocketError::Timeout(m) => Self::Timeout(m),
            wit::SocketError::Closed(m) => Self::Closed(m),
            wit::SocketError::TooLarge(m) => Self::TooLarge(m),
            wit::SocketError::Io(m) => Self::Io(m),
        }
    }

    /// The kind's name, as the host tags `socket_errors` with it (`denied`,
    /// `refused`, `timeout`, `too_large`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Denied(_) => "denied",
            Self::Invalid(_) => "invalid",
            Self::Refused(_) => "refused",
            Self::Connect(_) => "connect",
            Self::Tls(_) => "tls",
            Self::Timeout(_) => "timeout",
            Self::Closed(_) => "closed",
            Self::TooLarge(_) => "too_large",
            Self::Io(_) => "io",
        }
    }

    /// The host's message.
    pub fn message(&self) -> &str {
        match self {
            Self::Denied(m)
            | Self::Invalid(m)
            | Self::Refused(m)
            | Self::Connect(m)
            | Self::Tls(m)
            | Self::Timeout(m)
            | Self::Closed(m)
            | Self::TooLarge(m)
            | Self::Io(m) => m,
        }
    }

    /// The socket error inside an [`io::Error`] made from one (as [`TcpStream`]'s
    /// `Read` and `Write` return them).
    pub fn from_io(e: &io::Error) -> Option<&SocketError> {
        e.get_ref()?.downcast_ref::<SocketError>()
    }
}

impl fmt::Display for SocketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "socket {}: {}", self.kind(), self.message())
    }
}

impl std::error::Error for SocketError {}

impl From<SocketError> for String {
    fn from(e: SocketError) -> String {
        e.to_string()
    }
}

impl From<SocketError> for io::Error {
    fn from(e: SocketError) -> io::Error {
        let kind = match &e {
            SocketError::Denied(_) => io::ErrorKind::PermissionDenied,
            SocketError::Invalid(_) => io::ErrorKind::InvalidInput,
            SocketError::Refused(_) => io::ErrorKind::ConnectionRefused,
            SocketError::Connect(_) => io::ErrorKind::NotConnected,
            SocketError::Tls(_) => io::ErrorKind::InvalidData,
            SocketError::Timeout(_) => io::ErrorKind::TimedOut,
            SocketError::Closed(_) => io::ErrorKind::UnexpectedEof,
            SocketError::TooLarge(_) => io::ErrorKind::OutOfMemory,
            SocketError::Io(_) => io::ErrorKind::ConnectionReset,
        };
        io::Error::new(kind, e)
    }
}

/// The most one read returns or waits for, and the most the host buffers for one TCP
/// socket, in bytes.
pub fn max_read() -> u32 {
    // Asked once: a host constant, and a protocol passes it with every framed read.
    static MAX_READ: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *MAX_READ.get_or_init(wit::max_read)
}

/// The most one write takes, in bytes ([`std::io::Write::write`] takes at most this
/// much at a time).
pub fn max_write() -> u32 {
    // Asked once: a host constant, and `Write::write` needs it on every call.
    static MAX_WRITE: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *MAX_WRITE.get_or_init(wit::max_write)
}

/// The most sockets (TCP and UDP) one VU holds at once.
pub fn max_sockets() -> u32 {
    wit::max_sockets()
}

fn millis(d: Duration) -> u32 {
    d.as_millis().min(u128::from(u32::MAX)) as u32
}

/// Where one message ends, for [`TcpStream::read_frame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One RESP value (Redis; RESP2 and RESP3), however deeply nested.
    Resp,
    /// A big-endian length field of `size` bytes (1, 2, 4 or 8) at `offset`; the message
    /// is the field's value plus `adjust` bytes long. PostgreSQL's messages: offset 1,
    /// size 4, adjust 1 (the type byte the length leaves out).
    LengthField {
        /// Where the field starts in the message.
        offset: u32,
        /// Its width in bytes.
        size: u8,
        /// Added to the value for the message's whole length.
        adjust: i64,
    },
}

/// How a [`TcpStream`] is opened: [`TcpStream::options`], then [`Connect::connect`].
#[derive(Debug, Clone)]
pub struct Connect {
    host: String,
    port: u16,
    tls: Option<Option<String>>,
    timeout: Option<Duration>,
    tags: Vec<(String, String)>,
}

impl Connect {
    /// TLS over the connection, with the run's `[tls]` settings; the host name is sent
    /// as SNI and checked in the certificate.
    pub fn tls(mut self) -> Self {
        self.tls = Some(self.tls.flatten());
        self
    }

    /// TLS with `name` as SNI and as the name checked in the certificate (connecting
    /// to an address whose certificate names a host).
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.tls = Some(Some(name.into()));
        self
    }

    /// The longest the connect with its handshake may take (the run's default request
    /// timeout otherwise).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// A tag of the socket's metrics (`name` replaces the default `host:port`).
    pub fn tag(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.tags.push((key.into(), value.into()));
        self
    }

    /// Opens the connection.
    pub fn connect(self) -> Result<TcpStream, SocketError> {
        let options = wit::ConnectOptions {
            tls: self.tls.map(|server_name| wit::TlsOptions { server_name }),
            timeout_ms: self.timeout.map(millis),
            tags: self.tags,
        };
        let inner = wit::TcpSocket::connect(&self.host, self.port, &options)
            .map_err(SocketError::from_wit)?;
        Ok(TcpStream {
            inner,
            read_timeout: DEFAULT_TIMEOUT,
            write_timeout: DEFAULT_TIMEOUT,
        })
    }
}

/// A TCP connection held by the host, plain or TLS.
///
/// Reads wait at most the read timeout ([`TcpStream::set_read_timeout`], 60 s by
/// default) and writes the write timeout. `Read::read` returns `Ok(0)` at the end of
/// the stream, as `std::net::TcpStream` does.
#[derive(Debug)]
pub struct TcpStream {
    inner: wit::TcpSocket,
    read_timeout: Duration,
    write_timeout: Duration,
}

impl TcpStream {
    /// Opens a plain TCP connection to `host:port`.
    pub fn connect(host: &str, port: u16) -> Result<TcpStream, SocketError> {
        Self::options(host, port).connect()
    }

    /// Options for a connection to `host:port` (TLS, timeout, tags).
    pub fn options(host: &str, port: u16) -> Connect {
        Connect {
            host: host.to_string(),
            port,
            tls: None,
            timeout: None,
            tags: Vec::new(),
        }
    }

    /// Sets how long a read waits.
    pub fn set_read_timeout(&mut self, timeout: Duration) {
        self.read_timeout = timeout;
    }

    /// Sets how long a write may take.
    pub fn set_write_timeout(&mut self, timeout: Duration) {
        self.write_timeout = timeout;
    }

    /// Writes all of `data` (at most [`max_write`] bytes).
    pub fn send(&self, data: &[u8]) -> Result<(), SocketError> {
        self.inner
            .write(data, millis(self.write_timeout))
            .map_err(SocketError::from_wit)
    }

    /// Between 1 and `max` bytes, waiting for the first; empty at the end of the stream.
    pub fn read_some(&self, max: usize) -> Result<Vec<u8>, SocketError> {
        let max = max.min(u32::MAX as usize) as u32;
        self.inner
            .read(max, millis(self.read_timeout))
            .map_err(SocketError::from_wit)
    }

    /// Exactly `n` bytes (at most [`max_read`]).
    pub fn read_exact_vec(&self, n: usize) -> Result<Vec<u8>, SocketError> {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.inner
            .read_exact(n, millis(self.read_timeout))
            .map_err(SocketError::from_wit)
    }

    /// The bytes up to and including the first `delimiter`, at most `max` of them
    /// (fails with [`SocketError::TooLarge`] when the delimiter is not within them).
    pub fn read_until(&self, delimiter: &[u8], max: usize) -> Result<Vec<u8>, SocketError> {
        let max = u32::try_from(max).unwrap_or(u32::MAX);
        self.inner
            .read_until(delimiter, max, millis(self.read_timeout))
            .map_err(SocketError::from_wit)
    }

    /// One whole message as `framing` delimits it, at most `max` bytes (contract
    /// 0.3.9): a RESP reply in one call, where [`TcpStream::read_until`] and then
    /// [`TcpStream::read_exact_vec`] take two or more. Bytes that cannot be the
    /// framing's fail with [`SocketError::Invalid`] and stay unread.
    pub fn read_frame(&self, framing: Framing, max: usize) -> Result<Vec<u8>, SocketError> {
        let max = u32::try_from(max).unwrap_or(u32::MAX);
        let framing = match framing {
            Framing::Resp => wit::Framing::Resp,
            Framing::LengthField {
                offset,
                size,
                adjust,
            } => wit::Framing::LengthField(wit::LengthField {
                offset,
                size,
                adjust,
            }),
        };
        self.inner
            .read_frame(framing, max, millis(self.read_timeout))
            .map_err(SocketError::from_wit)
    }

    /// Ends the write side (the peer reads the end of the stream); reads go on.
    pub fn shutdown_write(&self) -> Result<(), SocketError> {
        self.inner.shutdown_write().map_err(SocketError::from_wit)
    }

    /// Closes the connection; later calls fail with [`SocketError::Invalid`]. Dropping
    /// the stream closes it too.
    pub fn close(&self) {
        self.inner.close()
    }
}

impl io::Read for TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let data = self.read_some(buf.len())?;
        buf[..data.len()].copy_from_slice(&data);
        Ok(data.len())
    }
}

impl io::Write for TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(max_write() as usize);
        self.send(&buf[..n])?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        // Every write is on the wire when it returns.
        Ok(())
    }
}

/// A UDP socket exchanging datagrams with one peer.
#[derive(Debug)]
pub struct UdpSocket {
    inner: wit::UdpSocket,
}

impl UdpSocket {
    /// Binds a free local port and connects it to `host:port` (no packet is sent).
    pub fn connect(host: &str, port: u16) -> Result<UdpSocket, SocketError> {
        Self::connect_tagged(host, port, &[])
    }

    /// The same, with tags on the socket's metrics.
    pub fn connect_tagged(
        host: &str,
        port: u16,
        tags: &[(&str, &str)],
    ) -> Result<UdpSocket, SocketError> {
        let inner =
            wit::UdpSocket::connect(host, port, &owned(tags)).map_err(SocketError::from_wit)?;
        Ok(UdpSocket { inner })
    }

    /// Sends one datagram (at most 65,507 bytes).
    pub fn send(&self, data: &[u8]) -> Result<(), SocketError> {
        self.inner.send(data).map_err(SocketError::from_wit)
    }

    /// The next datagram from the peer, waiting up to `timeout`.
    pub fn recv(&self, timeout: Duration) -> Result<Vec<u8>, SocketError> {
        self.inner
            .recv(millis(timeout))
            .map_err(SocketError::from_wit)
    }
}
