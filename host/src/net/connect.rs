//! Opens connections for the HTTP client: name resolution, TCP connect (timed), the
//! TLS handshake for https, then the HTTP/1.1 or HTTP/2 handshake, on a byte-counting
//! transport; or an HTTP/3 connection over QUIC (`super::h3`). Each is one
//! [`Connection`] to the pool and the exchange, whatever its protocol. HTTP/1.1 goes
//! over hyper's client or the lean one (`super::lean`), as `[http] client` says.

use super::address::{resolve, with_authority};
use super::allowlist::Origin;
use super::counting_io::{CountingIo, IoStats};
use super::lean::{LeanConn, LeanError, LeanIo};
use super::tls::Purpose;
use super::types::{ConnectTimings, HttpError, IoBytes, Proto};
use super::NetShared;
use crate::config::Http1Client;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpSocket, TcpStream};

/// The request half of an HTTP connection: HTTP/1.1 takes one request at a time,
/// HTTP/2 (by ALPN, or h2c with prior knowledge) multiplexes streams, and its sender
/// is cloned for each.
enum Sender {
    Http1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    /// HTTP/1.1 on the lean client: the connection itself, owned by the request that
    /// uses it (boxed: its buffers and state are a few hundred bytes).
    Lean(Box<LeanConn>),
    Http2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
    Http3(super::h3::H3Connection),
}

/// Why a request failed on a connection: hyper's error, classified by the exchange, or
/// an HTTP/3 failure already in words (quinn's and h3's errors are read where the
/// QUIC connection is known).
pub(crate) enum SendError {
    /// From hyper (HTTP/1.1, HTTP/2).
    Hyper(hyper::Error),
    /// From the lean HTTP/1.1 client.
    Lean(LeanError),
    /// Classified already.
    Classified(HttpError),
}

/// A response body as it arrives, over TCP (hyper) or a QUIC stream.
pub(crate) enum ResponseBody {
    /// HTTP/1.1 or HTTP/2.
    Hyper(Incoming),
    /// HTTP/3: the request's stream, and its connection to name a failure.
    Http3(Box<super::h3::Stream>, super::h3::H3Connection),
    /// The lean client's: the body is read from the connection itself
    /// ([`Connection::read_body`]).
    Lean,
}

impl ResponseBody {
    /// The next chunk of data; `None` at the end (trailers are skipped).
    pub(crate) async fn data(&mut self) -> Option<Result<Bytes, SendError>> {
        use http_body_util::BodyExt;
        match self {
            Self::Hyper(body) => loop {
                match body.frame().await? {
                    Ok(frame) => {
                        if let Ok(data) = frame.into_data() {
                            return Some(Ok(data));
                        }
                    }
                    Err(e) => return Some(Err(SendError::Hyper(e))),
                }
            },
            Self::Http3(stream, conn) => conn
                .data(stream)
                .await
                .map(|r| r.map_err(SendError::Classified)),
            Self::Lean => None,
        }
    }
}

/// An open connection owned by one VU (an HTTP/2 one is shared by the VU's concurrent
/// requests to its origin, each holding a clone).
pub(crate) struct Connection {
    sender: Sender,
    /// Bytes and write times of the transport.
    pub stats: Arc<IoStats>,
    /// The TLS failure that ended the connection, if it is TLS and one did.
    tls_failure: Option<super::tls::Failure>,
    /// The time it took to open, until the first request that uses it takes it.
    fresh: Option<ConnectTimings>,
}

impl Connection {
    /// Why the connection's TLS failed, if it did (a request that met the failure
    /// may have seen only the connection closing).
    pub(crate) fn tls_failure(&self) -> Option<&str> {
        self.tls_failure.as_ref()?.get().map(String::as_str)
    }

    /// Whether the connection can take another request (a lean one looks whether
    /// the server closed it meanwhile, hence `&mut`).
    pub(crate) fn is_usable(&mut self) -> bool {
        match &mut self.sender {
            Sender::Http1(s) => s.is_ready(),
            Sender::Lean(c) => c.is_usable(),
            Sender::Http2(s) => !s.is_closed(),
            Sender::Http3(c) => c.is_usable(),
        }
    }

    /// Its protocol.
    pub(crate) fn proto(&self) -> Proto {
        match &self.sender {
            Sender::Http1(_) | Sender::Lean(_) => Proto::Http1,
            Sender::Http2(_) => Proto::Http2,
            Sender::Http3(_) => Proto::Http3,
        }
    }

    /// Another handle on an HTTP/2 connection (its streams are concurrent); `None` for
    /// HTTP/1.1, which a request holds alone. The first handle takes the opening time.
    pub(crate) fn share(&mut self) -> Option<Connection> {
        let sender = match &self.sender {
            Sender::Http1(_) | Sender::Lean(_) => return None,
            Sender::Http2(s) => Sender::Http2(s.clone()),
            Sender::Http3(c) => Sender::Http3(c.clone()),
        };
        Some(Connection {
            sender,
            stats: self.stats.clone(),
            tls_failure: self.tls_failure.clone(),
            fresh: self.fresh.take(),
        })
    }

    /// The opening time, if no request took it yet.
    pub(crate) fn take_fresh(&mut self) -> Option<ConnectTimings> {
        self.fresh.take()
    }

    /// Where a request's byte counts start.
    pub(crate) fn io_mark(&self) -> IoBytes {
        if let Sender::Http3(c) = &self.sender {
            c.observe(&self.stats);
        }
        IoBytes {
            sent: self.stats.sent(),
            received: self.stats.received(),
        }
    }

    /// The bytes of the request that started at `mark`. On HTTP/2 the streams that
    /// share the connection take turns at the counts instead, so concurrent streams
    /// do not each count the others' bytes: the totals stay exact.
    pub(crate) fn io_since(&self, mark: IoBytes) -> IoBytes {
        match &self.sender {
            Sender::Http1(_) | Sender::Lean(_) => IoBytes {
                sent: self.stats.sent() - mark.sent,
                received: self.stats.received() - mark.received,
            },
            Sender::Http2(_) => self.stats.take_unaccounted(),
            Sender::Http3(c) => {
                c.observe(&self.stats);
                self.stats.take_unaccounted()
            }
        }
    }

    /// Sends a request and waits for the response head. HTTP/2 and HTTP/3 need the
    /// absolute URI (its `:scheme` and `:authority`); HTTP/1.1 sends the path alone.
    pub(crate) async fn send(
        &mut self,
        request: http::Request<Full<Bytes>>,
        absolute: &http::Uri,
    ) -> Result<(http::response::Parts, ResponseBody), SendError> {
        if let Sender::Http3(c) = &mut self.sender {
            let (head, stream) = c
                .send(request, absolute, &self.stats)
                .await
                .map_err(SendError::Classified)?;
            return Ok((head, ResponseBody::Http3(Box::new(stream), c.clone())));
        }
        if let Sender::Lean(c) = &mut self.sender {
            let head = c.send(request).await.map_err(SendError::Lean)?;
            return Ok((head, ResponseBody::Lean));
        }
        let response = self
            .send_tcp(request, absolute)
            .await
            .map_err(SendError::Hyper)?;
        let (head, body) = response.into_parts();
        Ok((head, ResponseBody::Hyper(body)))
    }

    /// Reads the body of the response [`send`](Self::send) returned, handing its data
    /// to `sink`, which answers false to stop (the body cap); trailers are skipped.
    pub(crate) async fn read_body(
        &mut self,
        body: &mut ResponseBody,
        sink: &mut (dyn FnMut(&[u8]) -> bool + Send),
    ) -> Result<(), SendError> {
        if let ResponseBody::Lean = body {
            if let Sender::Lean(c) = &mut self.sender {
                return c.read_body(sink).await.map_err(SendError::Lean);
            }
        }
        while let Some(data) = body.data().await {
            if !sink(&data?[..]) {
                break;
            }
        }
        Ok(())
    }

    /// [`send`](Self::send) over hyper.
    async fn send_tcp(
        &mut self,
        mut request: http::Request<Full<Bytes>>,
        absolute: &http::Uri,
    ) -> Result<http::Response<Incoming>, hyper::Error> {
        match &mut self.sender {
            Sender::Http3(_) | Sender::Lean(_) => unreachable!("sent by `send`"),
            Sender::Http1(s) => {
                s.ready().await?;
                s.send_request(request).await
            }
            Sender::Http2(s) => {
                // `Host` is HTTP/1.1's: HTTP/2 carries it as `:authority`. A plugin's own
                // `Host` (virtual hosting) becomes the authority.
                *request.uri_mut() = match request.headers_mut().remove(http::header::HOST) {
                    Some(host)
                        if Some(host.as_bytes())
                            != absolute.authority().map(|a| a.as_str().as_bytes()) =>
                    {
                        with_authority(absolute, &host)
                    }
                    _ => absolute.clone(),
                };
                *request.version_mut() = http::Version::HTTP_2;
                s.ready().await?;
                s.send_request(request).await
            }
        }
    }
}

/// Resolves `origin` and opens a TCP connection to the first address that answers,
/// with Nagle's algorithm off (latency matters more than packet count here). With
/// `local`, the connection leaves from that source address (`[http] local_ips`);
/// addresses of the other family are skipped.
pub(crate) async fn connect_tcp(
    origin: &Origin,
    local: Option<IpAddr>,
) -> Result<TcpStream, HttpError> {
    let addrs = resolve(origin).await?;
    let mut last_error = None;
    for addr in addrs {
        let attempt = match local {
            None => TcpStream::connect(addr).await,
            Some(ip) if ip.is_ipv4() != addr.is_ipv4() => {
                last_error = Some(format!("{addr}: not reachable from source address {ip}"));
                continue;
            }
            Some(ip) => connect_from(ip, addr).await,
        };
        match attempt {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) if super::descriptors::check(&e) => {
                return Err(HttpError::connect(format!(
                    "cannot connect to {origin}: {e}: {}",
                    super::descriptors::advice()
                )));
            }
            Err(e) => last_error = Some(format!("{addr}: {e}")),
        }
    }
    Err(HttpError::connect(format!(
        "cannot connect to {origin}: {}",
        last_error.unwrap_or_else(|| "no address".into())
    )))
}

/// Connects to `addr` from the source address `ip` (any free port); raw sockets
/// (`super::sockets`) leave from a VU's address this way too.
pub(crate) async fn connect_from(ip: IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = if ip.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.bind(SocketAddr::new(ip, 0)).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot bind source address {ip} ([http] local_ips): {e}"),
        )
    })?;
    socket.connect(addr).await
}

/// Opens a connection to `origin`, from `local` when given: TCP, then for `https://`
/// the TLS handshake (timed apart, ALPN offering what `[http] versions` allows), then
/// HTTP/2 if the server chose it (or h2c is on for `http://`), else HTTP/1.1 accepting
/// responses of up to `[http] max_headers` header fields. With `version` (a request's
/// own choice, HTTP/1.1 or HTTP/2), only that version is offered and spoken, whatever
/// `versions` says, and a server that will not speak it fails the connection. Byte
/// counts are of the wire, TLS records included, as k6 counts them.
pub(crate) async fn connect(
    origin: &Origin,
    version: Option<Proto>,
    local: Option<IpAddr>,
    shared: &NetShared,
) -> Result<Connection, HttpError> {
    let start = Instant::now();
    let stream = connect_tcp(origin, local).await?;
    let connecting = start.elapsed();
    let (io, stats) = CountingIo::new(stream);
    let mut timings = ConnectTimings {
        connecting,
        tls_handshaking: Duration::ZERO,
    };
    let options = &shared.http;
    let mut tls_failure = None;
    let sender = if origin.scheme == "https" {
        let purpose = match (version, options.h2, options.http1) {
            (Some(Proto::Http2), _, _) => Purpose::Http2,
            (Some(_), _, _) => Purpose::Http1,
            (None, true, true) => Purpose::Http2OrHttp1,
            (None, true, false) => Purpose::Http2,
            _ => Purpose::Http1,
        };
        let tls_start = Instant::now();
        let (stream, negotiated) = shared.tls.handshake(origin, io, purpose).await?;
        timings.tls_handshaking = tls_start.elapsed();
        let (stream, failure) = super::tls::Watched::new(stream);
        tls_failure = Some(failure);
        if negotiated.h2 {
            http2(origin, stream).await?
        } else if purpose == Purpose::Http2 {
            let why = match version {
                Some(_) => "and the request asked for HTTP/2 only (its version option)",
                None => "and [http] versions leaves out \"http/1.1\"",
            };
            return Err(HttpError::protocol(format!(
                "{origin}: the server does not offer HTTP/2 by ALPN, {why}"
            )));
        } else if options.client == Http1Client::Lean {
            lean(LeanIo::Tls(Box::new(stream)), options.max_headers)
        } else {
            http1(origin, stream, options.max_headers).await?
        }
    } else if version.map_or(options.h2c, |v| v == Proto::Http2) {
        http2(origin, io).await?
    } else if options.client == Http1Client::Lean {
        lean(LeanIo::Plain(io), options.max_headers)
    } else {
        http1(origin, io, options.max_headers).await?
    };
    let proto = match sender {
        Sender::Http1(_) | Sender::Lean(_) => Proto::Http1,
        _ => Proto::Http2,
    };
    shared.connections.opened(proto, origin.scheme == "https");
    Ok(Connection {
        sender,
        stats,
        tls_failure,
        fresh: Some(timings),
    })
}

/// Opens an HTTP/3 connection for `origin` to the UDP endpoint `to` (the origin, or
/// its Alt-Svc alternative), from `local` when given (see `super::h3::connect`).
pub(crate) async fn connect_h3(
    origin: &Origin,
    to: &Origin,
    local: Option<IpAddr>,
    shared: &NetShared,
) -> Result<Connection, HttpError> {
    let (conn, timings) = super::h3::connect(origin, to, local, shared).await?;
    shared.connections.opened(Proto::Http3, true);
    let stats = Arc::new(IoStats::default());
    conn.observe(&stats);
    Ok(Connection {
        sender: Sender::Http3(conn),
        stats,
        tls_failure: None,
        fresh: Some(timings),
    })
}

/// An HTTP/1.1 connection on the lean client: nothing is spawned and nothing is
/// sent until the first request.
fn lean(io: LeanIo, max_headers: usize) -> Sender {
    Sender::Lean(Box::new(LeanConn::new(io, max_headers)))
}

/// The HTTP/1.1 handshake over `io`; the connection's task is spawned. Generic, so
/// plain and TLS transports each get their own code and no dynamic dispatch.
async fn http1<IO>(origin: &Origin, io: IO, max_headers: usize) -> Result<Sender, HttpError>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = hyper::client::conn::http1::Builder::new();
    // Only a limit other than hyper's default is set: setting any moves hyper's
    // header parse buffer from the stack to the heap for every response.
    if max_headers != crate::config::http::DEFAULT_MAX_HEADERS {
        builder.max_headers(max_headers);
    }
    let (sender, conn) = builder
        .handshake(TokioIo::new(io))
        .await
        .map_err(|e| HttpError::connect(format!("{origin}: handshake failed: {e}")))?;
    tokio::spawn(async move {
        // The connection ends when its VU drops the sender or the peer closes it;
        // errors surface on the request that was using it.
        let _ = conn.await;
    });
    Ok(Sender::Http1(sender))
}

/// The HTTP/2 handshake (client preface and settings) over `io`; the connection's task
/// is spawned, and hyper spawns one more per stream on tokio.
async fn http2<IO>(origin: &Origin, io: IO) -> Result<Sender, HttpError>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(io))
        .await
        .map_err(|e| HttpError::connect(format!("{origin}: HTTP/2 handshake failed: {e}")))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(Sender::Http2(sender))
}
