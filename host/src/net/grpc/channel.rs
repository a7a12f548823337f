//! A channel: one target (`host:port`), its HTTP/2 connection of this VU (opened at
//! the first call, reopened when the peer closed it), and the descriptors its calls
//! use. The target is checked against the allowlist when the channel is made, before
//! any packet.

use super::body::{self, Response};
use super::descriptors;
use super::status::GrpcError;
use crate::metrics::TagSet;
use crate::net::allowlist::Origin;
use crate::net::connect::connect_tcp;
use crate::net::counting_io::{CountingIo, IoStats};
use crate::net::tls::Purpose;
use crate::net::tls_material::TlsMaterial;
use crate::net::types::IoBytes;
use crate::net::NetShared;
use bytes::Bytes;
use h2::client::SendRequest;
use prost_reflect::DescriptorPool;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Numbers the channels of the process, so a prepared call can tell the channel it was
/// made on from another that took its place in the VU's table.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// How to open a channel.
#[derive(Debug, Clone, Default)]
pub struct ChannelOptions {
    /// TLS with the run's `[tls]`; h2c when false.
    pub tls: bool,
    /// `.proto` files (name, source).
    pub protos: Vec<(String, String)>,
    /// Binary `FileDescriptorSet`s (protosets).
    pub descriptor_sets: Vec<Vec<u8>>,
    /// Ask the server's reflection service for services the protos lack.
    pub reflect: bool,
    /// Metadata sent with each reflection request.
    pub reflect_metadata: Vec<(String, String)>,
    /// The channel's own CAs and client certificate, over the run's `[tls]` (used
    /// when `tls` is on).
    pub tls_material: Option<TlsMaterial>,
    /// Time to connect; the run's default timeout when absent.
    pub connect_timeout: Option<Duration>,
}

/// A gRPC channel held by the host for a plugin.
pub struct Channel {
    /// This channel's number in the process (see [`NEXT_ID`]).
    pub(super) id: u64,
    pub(super) shared: Arc<NetShared>,
    pub(super) origin: Origin,
    /// `http://host:port` or `https://host:port`, the calls' URI prefix.
    base: String,
    local: Option<IpAddr>,
    pub(super) base_tags: TagSet,
    pub(super) pool: DescriptorPool,
    pub(super) reflect: bool,
    /// Metadata of the reflection requests.
    pub(super) reflect_metadata: Vec<(String, String)>,
    /// The TLS configuration of a channel with its own material; the run's otherwise.
    tls_config: Option<Arc<rustls::ClientConfig>>,
    connect_timeout: Duration,
    pub(super) conn: Option<Conn>,
}

/// An open HTTP/2 connection.
pub(super) struct Conn {
    sender: SendRequest<Bytes>,
    /// The task driving the connection; finished once the peer closed it.
    task: tokio::task::JoinHandle<()>,
    /// Bytes on the wire (TLS records included), shared by the connection's streams.
    pub(super) io: Arc<IoStats>,
}

impl Conn {
    /// The request half of the connection.
    pub(super) fn sender_mut(&mut self) -> &mut SendRequest<Bytes> {
        &mut self.sender
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // The connection closes with its channel, as hyper's did when its sender went.
        self.task.abort();
    }
}

impl Channel {
    /// A channel to `target` (`host:port`) for a VU with `base_tags`, leaving from
    /// `local` when given. Nothing is sent yet: see the module's doc. A channel without
    /// descriptors or reflection can still call the services the host carries
    /// (`grpc.health.v1.Health`); another method fails at the call, saying so.
    pub fn new(
        shared: Arc<NetShared>,
        target: &str,
        options: ChannelOptions,
        base_tags: &TagSet,
        local: Option<IpAddr>,
    ) -> Result<Self, GrpcError> {
        let origin = parse_target(target, options.tls)?;
        shared.allowlist.check(&origin).map_err(|why| {
            shared.warn_denied_once(&origin, "open a gRPC channel to", &why);
            GrpcError::Denied(why.to_string())
        })?;
        let pool = descriptors::build(&options.protos, &options.descriptor_sets)?;
        let tls_config = match &options.tls_material {
            Some(m) if options.tls && !m.is_empty() => Some(
                shared
                    .tls
                    .config_with(Purpose::Http2, m)
                    .map_err(|e| GrpcError::Invalid(format!("{target}: {e}")))?,
            ),
            _ => None,
        };
        let scheme = if options.tls { "https" } else { "http" };
        let connect_timeout = options.connect_timeout.unwrap_or(shared.default_timeout);
        Ok(Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            base: format!("{scheme}://{}", authority(&origin)),
            shared,
            origin,
            local,
            base_tags: base_tags.clone(),
            pool,
            reflect: options.reflect,
            reflect_metadata: options.reflect_metadata,
            tls_config,
            connect_timeout,
            conn: None,
        })
    }

    /// The methods known so far (from the protos and what reflection brought).
    pub fn methods(&self) -> Vec<String> {
        descriptors::methods(&self.pool)
    }

    /// Whether `method` streams from the client and from the server.
    pub async fn describe(&mut self, method: &str) -> Result<(bool, bool), GrpcError> {
        let m = self.method(method).await?;
        Ok((m.is_client_streaming(), m.is_server_streaming()))
    }

    /// The open connection, opening one if there is none or the last one closed.
    pub(super) async fn connection(&mut self) -> Result<&mut Conn, GrpcError> {
        let usable = self.conn.as_ref().is_some_and(|c| !c.task.is_finished());
        if !usable {
            self.conn = None;
            // Boxed: the connect and TLS futures are large, and a call's future would
            // carry their room (and be copied with it, several times per call, by the
            // async import's plumbing) though they run once per connection.
            let opened = tokio::time::timeout(
                self.connect_timeout,
                Box::pin(open(
                    &self.origin,
                    self.local,
                    &self.shared,
                    self.tls_config.clone(),
                )),
            )
            .await
            .map_err(|_| {
                GrpcError::Connect(format!(
                    "{}: no connection within {}",
                    self.origin,
                    crate::config::format_duration(self.connect_timeout)
                ))
            })??;
            self.conn = Some(opened);
        }
        Ok(self.conn.as_mut().expect("opened above"))
    }

    /// Starts a call of `path` (`/package.Service/Method`) whose request is the one
    /// framed `message`: sends it and waits for the response head. The deadline, when
    /// given, is sent as `grpc-timeout`; the caller enforces it.
    pub(super) async fn start(
        &mut self,
        path: &str,
        metadata: &[(String, String)],
        timeout: Option<Duration>,
        message: Bytes,
    ) -> Result<Response, GrpcError> {
        let (uri, headers) = self.head(path, metadata, timeout)?;
        self.send(request_of(&uri, headers), message).await
    }

    /// Sends `request` with its one framed `message` on the connection (opening one
    /// when needed) and waits for the response head.
    pub(super) async fn send(
        &mut self,
        request: http::Request<()>,
        message: Bytes,
    ) -> Result<Response, GrpcError> {
        let conn = self.connection().await?;
        let (answer, _send) = body::open(&mut conn.sender, request, Some(message)).await?;
        body::head(answer).await
    }

    /// A request's URI and header fields: `:path`, gRPC's content type, `te: trailers`,
    /// the deadline and the plugin's metadata.
    pub(super) fn head(
        &self,
        path: &str,
        metadata: &[(String, String)],
        timeout: Option<Duration>,
    ) -> Result<(http::Uri, http::HeaderMap), GrpcError> {
        use http::header::{HeaderValue, CONTENT_TYPE, TE, USER_AGENT};
        let uri = http::Uri::try_from(format!("{}{path}", self.base))
            .map_err(|e| GrpcError::Invalid(format!("{}{path}: {e}", self.base)))?;
        let mut headers = http::HeaderMap::with_capacity(4 + metadata.len());
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        headers.insert(TE, HeaderValue::from_static("trailers"));
        headers.insert(
            USER_AGENT,
            HeaderValue::from_static(concat!("loadtest-host/", env!("CARGO_PKG_VERSION"))),
        );
        if let Some(t) = timeout {
            // At most 8 digits (the spec); milliseconds cover 27 hours.
            let value = format!("{}m", t.as_millis().min(99_999_999));
            headers.insert(
                "grpc-timeout",
                HeaderValue::from_str(&value).expect("digits and m"),
            );
        }
        for (name, value) in metadata {
            let lower = name.to_ascii_lowercase();
            if lower.starts_with(':')
                || lower.starts_with("grpc-")
                || lower == "te"
                || lower == "content-type"
            {
                return Err(GrpcError::Invalid(format!(
                    "metadata {name:?} is reserved for gRPC itself; use another name"
                )));
            }
            let name = http::HeaderName::from_bytes(lower.as_bytes())
                .map_err(|_| GrpcError::Invalid(format!("invalid metadata name {name:?}")))?;
            let value = HeaderValue::from_str(value).map_err(|_| {
                GrpcError::Invalid(format!(
                    "invalid value for metadata {name}: {value:?} (CR, LF and other control \
                     characters are not allowed; base64 binary values under a -bin name)"
                ))
            })?;
            headers.append(name, value);
        }
        Ok((uri, headers))
    }

    /// Bytes sent and received on the connection since the last call (all of its
    /// streams' share: the totals stay exact when streams overlap).
    pub(super) fn io_delta(&self) -> IoBytes {
        self.conn
            .as_ref()
            .map_or(IoBytes::default(), |c| c.io.take_unaccounted())
    }
}

/// An HTTP/2 POST of `uri` with `headers` (the body goes on the stream).
pub(super) fn request_of(uri: &http::Uri, headers: http::HeaderMap) -> http::Request<()> {
    let mut request = http::Request::new(());
    *request.method_mut() = http::Method::POST;
    *request.uri_mut() = uri.clone();
    *request.version_mut() = http::Version::HTTP_2;
    *request.headers_mut() = headers;
    request
}

/// An answer's head must be HTTP 200 with a gRPC content type.
pub(super) fn check_head(head: &http::response::Parts) -> Result<(), GrpcError> {
    if head.status != http::StatusCode::OK {
        return Err(GrpcError::Protocol(format!(
            "the server answered HTTP {} instead of a gRPC response; is this a gRPC port?",
            head.status
        )));
    }
    let ct = head
        .headers
        .get("content-type")
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if !ct.starts_with(b"application/grpc") {
        return Err(GrpcError::Protocol(format!(
            "the answer's content type is {:?}, not application/grpc; is this a gRPC port?",
            String::from_utf8_lossy(ct)
        )));
    }
    Ok(())
}

/// `host:port` (or `[v6]:port`) → an `http`/`https` origin. A port is required: gRPC
/// has no default one.
fn parse_target(target: &str, tls: bool) -> Result<Origin, GrpcError> {
    let invalid = |why: &str| {
        GrpcError::Invalid(format!(
            "gRPC target {target:?}: {why}; write host:port (for example 127.0.0.1:50051)"
        ))
    };
    if target.contains("://") || target.contains('/') {
        return Err(invalid("a target is not a URL"));
    }
    let (_, port) = target.rsplit_once(':').ok_or_else(|| invalid("no port"))?;
    if port.parse::<u16>().is_err() {
        return Err(invalid("the port is not a number up to 65535"));
    }
    let scheme = if tls { "https" } else { "http" };
    Origin::parse(&format!("{scheme}://{target}")).map_err(|e| invalid(&e.to_string()))
}

/// `host:port` as an authority (IPv6 in brackets).
fn authority(origin: &Origin) -> String {
    if origin.host.contains(':') {
        format!("[{}]:{}", origin.host, origin.port)
    } else {
        format!("{}:{}", origin.host, origin.port)
    }
}

/// Opens the connection: TCP (from `local`), TLS offering only `h2` by ALPN when the
/// channel is TLS (with `config`, the channel's own, else the run's), then the HTTP/2
/// handshake; its task is spawned.
async fn open(
    origin: &Origin,
    local: Option<IpAddr>,
    shared: &NetShared,
    config: Option<Arc<rustls::ClientConfig>>,
) -> Result<Conn, GrpcError> {
    let tcp = connect_tcp(origin, local)
        .await
        .map_err(GrpcError::from_http)?;
    let (io, stats) = CountingIo::new(tcp);
    let sender = if origin.scheme == "https" {
        let shaken = match config {
            Some(config) => shared.tls.handshake_using(config, origin, io).await,
            None => shared.tls.handshake(origin, io, Purpose::Http2).await,
        };
        let (tls, negotiated) = shaken.map_err(GrpcError::from_http)?;
        if !negotiated.h2 {
            return Err(GrpcError::Tls(format!(
                "{origin}: the server did not choose HTTP/2 by ALPN; is this a gRPC port?"
            )));
        }
        handshake(origin, tls).await?
    } else {
        handshake(origin, io).await?
    };
    let (sender, task) = sender;
    Ok(Conn {
        sender,
        task,
        io: stats,
    })
}

/// The HTTP/2 handshake on `io`, with hyper's client settings (windows of 2 MiB per
/// stream and 5 MiB per connection, 16 KiB frames and header lists, no server push);
/// the connection's task is spawned.
async fn handshake<IO>(
    origin: &Origin,
    io: IO,
) -> Result<(SendRequest<Bytes>, tokio::task::JoinHandle<()>), GrpcError>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = h2::client::Builder::new()
        .initial_window_size(2 * 1024 * 1024)
        .initial_connection_window_size(5 * 1024 * 1024)
        .max_frame_size(16 * 1024)
        .max_header_list_size(16 * 1024)
        .max_send_buffer_size(1024 * 1024)
        .enable_push(false)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(|e| GrpcError::Connect(format!("{origin}: HTTP/2 handshake failed: {e}")))?;
    let task = tokio::spawn(async move {
        // Ends when the channel drops the connection or the peer closes it; errors
        // surface on the calls that were using it.
        let _ = conn.await;
    });
    Ok((sender, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_host_and_port() {
        let o = parse_target("127.0.0.1:50051", false).unwrap();
        assert_eq!((o.scheme.as_str(), o.port), ("http", 50051));
        assert_eq!(parse_target("api.test:443", true).unwrap().scheme, "https");
        assert_eq!(
            authority(&parse_target("[::1]:9", false).unwrap()),
            "[::1]:9"
        );
        for bad in ["127.0.0.1", "http://127.0.0.1:1", "h:99999", "h:1/x"] {
            let err = parse_target(bad, false).unwrap_err().to_string();
            assert!(err.contains("host:port"), "{bad}: {err}");
        }
    }
}
