//! Opens connections for the HTTP client: name resolution, TCP connect (timed), and the
//! TLS handshake for https, then the HTTP handshake, on a byte-counting transport.

use super::allowlist::Origin;
use super::counting_io::{CountingIo, IoStats};
use super::http::HttpError;
use super::tls::Purpose;
use super::NetShared;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpSocket, TcpStream};

/// Time spent opening a connection.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectTimings {
    /// TCP connect.
    pub connecting: Duration,
    /// TLS handshake.
    pub tls_handshaking: Duration,
}

/// The request half of an HTTP connection; an HTTP/2 variant joins it with TLS (ALPN).
enum Sender {
    Http1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
}

/// An open connection owned by one VU.
pub struct Connection {
    sender: Sender,
    /// Bytes and write times of the transport.
    pub stats: Arc<IoStats>,
    /// The TLS failure that ended the connection, if it is TLS and one did.
    tls_failure: Option<super::tls::Failure>,
}

impl Connection {
    /// Why the connection's TLS failed, if it did (a request that met the failure
    /// may have seen only the connection closing).
    pub fn tls_failure(&self) -> Option<&str> {
        self.tls_failure.as_ref()?.get().map(String::as_str)
    }

    /// Whether the connection can take another request.
    pub fn is_usable(&self) -> bool {
        match &self.sender {
            Sender::Http1(s) => s.is_ready(),
        }
    }

    /// Sends a request and waits for the response head.
    pub async fn send(
        &mut self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<http::Response<Incoming>, hyper::Error> {
        match &mut self.sender {
            Sender::Http1(s) => {
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
pub async fn connect_tcp(origin: &Origin, local: Option<IpAddr>) -> Result<TcpStream, HttpError> {
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
                return Err(HttpError::Connect(format!(
                    "cannot connect to {origin}: {e}: {}",
                    super::descriptors::advice()
                )));
            }
            Err(e) => last_error = Some(format!("{addr}: {e}")),
        }
    }
    Err(HttpError::Connect(format!(
        "cannot connect to {origin}: {}",
        last_error.unwrap_or_else(|| "no address".into())
    )))
}

/// Connects to `addr` from the source address `ip` (any free port).
async fn connect_from(ip: IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
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
/// the TLS handshake (timed apart), then HTTP, accepting responses of up to
/// `[http] max_headers` header fields. Byte counts are of the wire, TLS
/// records included, as k6 counts them.
pub async fn connect(
    origin: &Origin,
    local: Option<IpAddr>,
    shared: &NetShared,
) -> Result<(Connection, ConnectTimings), HttpError> {
    let start = Instant::now();
    let stream = connect_tcp(origin, local).await?;
    let connecting = start.elapsed();
    let (io, stats) = CountingIo::new(stream);
    let mut timings = ConnectTimings {
        connecting,
        tls_handshaking: Duration::ZERO,
    };
    let mut tls_failure = None;
    let sender = if origin.scheme == "https" {
        let tls_start = Instant::now();
        let (stream, _negotiated) = shared.tls.handshake(origin, io, Purpose::Http1).await?;
        timings.tls_handshaking = tls_start.elapsed();
        let (stream, failure) = super::tls::Watched::new(stream);
        tls_failure = Some(failure);
        http1(origin, stream, shared.http.max_headers).await?
    } else {
        http1(origin, io, shared.http.max_headers).await?
    };
    Ok((
        Connection {
            sender,
            stats,
            tls_failure,
        },
        timings,
    ))
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
        .map_err(|e| HttpError::Connect(format!("{origin}: handshake failed: {e}")))?;
    tokio::spawn(async move {
        // The connection ends when its VU drops the sender or the peer closes it;
        // errors surface on the request that was using it.
        let _ = conn.await;
    });
    Ok(Sender::Http1(sender))
}

/// The addresses of `origin`'s host (an IP address is used as it is).
async fn resolve(origin: &Origin) -> Result<Vec<SocketAddr>, HttpError> {
    if let Ok(ip) = origin.host.parse::<std::net::IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, origin.port)]);
    }
    // RFC 6761: these names never resolve, so no resolver is asked.
    if origin.host == "invalid" || origin.host.ends_with(".invalid") {
        return Err(HttpError::Connect(format!(
            "cannot resolve {}: names under .invalid never resolve",
            origin.host
        )));
    }
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((origin.host.as_str(), origin.port))
        .await
        .map_err(|e| HttpError::Connect(format!("cannot resolve {}: {e}", origin.host)))?
        .collect();
    if addrs.is_empty() {
        return Err(HttpError::Connect(format!(
            "cannot resolve {}: no addresses",
            origin.host
        )));
    }
    Ok(addrs)
}
