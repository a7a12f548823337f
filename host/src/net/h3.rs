//! HTTP/3: a VU's QUIC connection to an origin (quinn), HTTP/3 requests on it (h3 over
//! h3-quinn), and QUIC's failures in words. A leaf of `net`: the TLS settings come
//! from the run's [`TlsClient`](super::tls::TlsClient) (same roots, client
//! certificate, suites, `insecure_skip_verify`; TLS 1.3 and ALPN `h3` by the
//! protocol), the allowlist was passed before a connection is asked for, and the
//! request's timing and metrics are the HTTP client's, as for TCP.
//!
//! One UDP socket (a quinn endpoint) per connection, as TCP has one per connection: the
//! VU's source address (`[http] local_ips`) is bound, and each endpoint's driver is a
//! task of its own, so the VUs' QUIC work spreads over the runtime's threads.
//!
//! Timing: QUIC merges the transport and TLS handshakes into one round trip, so the
//! split is by what is known when. `connecting` runs until the server's first flight
//! has been read (its Initial and Handshake packets: the round trip plus the server's
//! work, the analogue of TCP's connect); `tls_handshaking` from there until the
//! handshake completes and HTTP/3 is set up (the certificate checks, the client's
//! Finished, the control streams), which on loopback is the larger share.

use super::address::{resolve, with_authority};
use super::allowlist::Origin;
use super::counting_io::IoStats;
use super::types::{ConnectTimings, HttpError};
use super::NetShared;
use bytes::{Buf, Bytes};
use http_body_util::{BodyExt, Full};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The request half of an HTTP/3 connection; cloned for each concurrent request.
type Sender = ::h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// One request's stream: the response head and body are read from it.
pub(crate) type Stream = ::h3::client::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// A VU's HTTP/3 connection to one origin. Cloned handles share it (HTTP/3 streams are
/// concurrent); the connection closes when the last handle goes.
#[derive(Clone)]
pub(crate) struct H3Connection {
    sender: Sender,
    quic: quinn::Connection,
    /// Keeps the connection's UDP socket and its driver alive.
    _endpoint: quinn::Endpoint,
    /// `https://host:port` of the origin, for messages.
    origin: Arc<str>,
}

impl H3Connection {
    /// Whether the connection can take another request.
    pub(crate) fn is_usable(&self) -> bool {
        self.quic.close_reason().is_none()
    }

    /// Brings `stats` up to the connection's UDP byte counts (QUIC headers, TLS and
    /// retransmissions included: the wire, as TCP's counts are).
    pub(crate) fn observe(&self, stats: &IoStats) {
        let s = self.quic.stats();
        stats.observe(s.udp_tx.bytes, s.udp_rx.bytes);
    }

    /// Sends a request on a new stream, its body, then waits for the response head.
    /// The request's `Host` becomes its `:authority`, as for HTTP/2.
    pub(crate) async fn send(
        &mut self,
        request: http::Request<Full<Bytes>>,
        absolute: &http::Uri,
        stats: &IoStats,
    ) -> Result<(http::response::Parts, Stream), HttpError> {
        let (mut parts, body) = request.into_parts();
        parts.uri = match parts.headers.remove(http::header::HOST) {
            Some(host)
                if Some(host.as_bytes()) != absolute.authority().map(|a| a.as_str().as_bytes()) =>
            {
                with_authority(absolute, &host)
            }
            _ => absolute.clone(),
        };
        parts.version = http::Version::HTTP_3;
        // `Full` is one chunk already in memory: collecting it moves the `Bytes` out.
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(never) => match never {},
        };
        let mut stream = self
            .sender
            .send_request(http::Request::from_parts(parts, ()))
            .await
            .map_err(|e| self.stream_error(&e))?;
        if !body.is_empty() {
            stream
                .send_data(body)
                .await
                .map_err(|e| self.stream_error(&e))?;
        }
        stream.finish().await.map_err(|e| self.stream_error(&e))?;
        stats.note_write();
        let response = stream
            .recv_response()
            .await
            .map_err(|e| self.stream_error(&e))?;
        Ok((response.into_parts().0, stream))
    }

    /// The next chunk of a response body; `None` at its end.
    pub(crate) async fn data(&self, stream: &mut Stream) -> Option<Result<Bytes, HttpError>> {
        match stream.recv_data().await {
            Ok(Some(mut buf)) => Some(Ok(buf.copy_to_bytes(buf.remaining()))),
            Ok(None) => None,
            Err(e) => Some(Err(self.stream_error(&e))),
        }
    }

    /// A request's failure in words: the connection's end when it ended (with its
    /// code), else what happened to the stream.
    fn stream_error(&self, e: &::h3::error::StreamError) -> HttpError {
        if let Some(closed) = self.quic.close_reason() {
            return connection_error(&self.origin, &closed, None);
        }
        stream_error(&self.origin, e)
    }
}

/// What happened to a request's stream, when the connection lives on.
fn stream_error(origin: &str, e: &::h3::error::StreamError) -> HttpError {
    use ::h3::error::StreamError as S;
    HttpError::protocol(match e {
        S::RemoteTerminate { code, .. } => format!(
            "{origin}: HTTP/3 stream reset by the server with code {code} ({:#x})",
            code.value()
        ),
        S::RemoteClosing { .. } => format!(
            "{origin}: the server is closing the HTTP/3 connection (GOAWAY) and takes no new \
             request on it"
        ),
        S::HeaderTooBig {
            actual_size,
            max_size,
            ..
        } => format!(
            "{origin}: request header fields of {actual_size} bytes exceed the server's limit \
             of {max_size} (its SETTINGS_MAX_FIELD_SECTION_SIZE)"
        ),
        other => format!("{origin}: HTTP/3 stream failed: {other}"),
    })
}

/// Why a QUIC connection ended, in words; `refused` is why this client refused the
/// server's certificate, if it did.
fn connection_error(origin: &str, e: &quinn::ConnectionError, refused: Option<&str>) -> HttpError {
    use quinn::ConnectionError as C;
    match e {
        C::TimedOut => HttpError::connect(format!(
            "{origin}: QUIC connect timeout: no answer over UDP (is an HTTP/3 server \
             listening on this UDP port? firewalls often drop UDP)"
        )),
        C::TransportError(t) => match (crypto_alert(t.code), refused) {
            (Some(_), Some(why)) => {
                HttpError::tls(format!("{origin}: QUIC handshake failed: {why}"))
            }
            (Some(_), None) => HttpError::tls(format!("{origin}: QUIC handshake failed: {t}")),
            (None, _) => HttpError::protocol(format!("{origin}: QUIC transport error: {t}")),
        },
        C::ConnectionClosed(close) => match crypto_alert(close.error_code) {
            Some(alert) => HttpError::tls(format!(
                "{origin}: QUIC handshake failed: {}",
                alert_words(alert)
            )),
            None => HttpError::protocol(format!(
                "{origin}: the server closed the QUIC connection with code {} ({:#x}){}",
                close.error_code,
                u64::from(close.error_code),
                reason_words(&close.reason)
            )),
        },
        C::ApplicationClosed(close) => {
            let code = ::h3::error::Code::from(close.error_code.into_inner());
            HttpError::protocol(format!(
                "{origin}: the server closed the HTTP/3 connection with code {code} ({:#x}){}",
                code.value(),
                reason_words(&close.reason)
            ))
        }
        C::Reset => HttpError::protocol(format!(
            "{origin}: the server reset the QUIC connection (a stateless reset: it no \
             longer knows the connection, after a restart?)"
        )),
        C::VersionMismatch => HttpError::connect(format!(
            "{origin}: the server speaks no QUIC version this client does (QUIC v1)"
        )),
        other => HttpError::protocol(format!("{origin}: QUIC connection failed: {other}")),
    }
}

/// The TLS alert a QUIC error code carries (0x100 + alert), if it is one.
fn crypto_alert(code: quinn::TransportErrorCode) -> Option<u8> {
    let code = u64::from(code);
    (0x100..=0x1ff)
        .contains(&code)
        .then_some((code - 0x100) as u8)
}

/// A TLS alert the server sent during the QUIC handshake, in words.
fn alert_words(alert: u8) -> String {
    let alert = rustls::AlertDescription::from(alert);
    if alert == rustls::AlertDescription::NoApplicationProtocol {
        return "the server does not speak HTTP/3 (it refused ALPN \"h3\"); leave \"h3\" out \
                of [http] versions for it"
            .into();
    }
    super::tls::describe(&rustls::Error::AlertReceived(alert))
}

fn reason_words(reason: &[u8]) -> String {
    match String::from_utf8_lossy(reason).trim() {
        "" => String::new(),
        text => format!(": {text}"),
    }
}

/// Opens an HTTP/3 connection for `origin` (its host is the TLS server name) to the
/// UDP endpoint `to` (the origin itself, or its Alt-Svc alternative), from `local`
/// when given. The caller has checked both against the allowlist: nothing is sent
/// before this is called.
pub(crate) async fn connect(
    origin: &Origin,
    to: &Origin,
    local: Option<IpAddr>,
    shared: &NetShared,
) -> Result<(H3Connection, ConnectTimings), HttpError> {
    let start = Instant::now();
    let name = origin.to_string();
    let tls = shared.tls.quic_config()?;
    let addrs = resolve(to).await?;
    let addr = match local {
        None => addrs[0],
        Some(ip) => *addrs
            .iter()
            .find(|a| a.is_ipv4() == ip.is_ipv4())
            .ok_or_else(|| {
                HttpError::connect(format!(
                    "cannot connect to {to}: no address reachable from source address {ip}"
                ))
            })?,
    };
    let bind = match (local, addr) {
        (Some(ip), _) => SocketAddr::new(ip, 0),
        (None, SocketAddr::V4(_)) => SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0),
        (None, SocketAddr::V6(_)) => SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0),
    };
    let endpoint = quinn::Endpoint::client(bind).map_err(|e| {
        HttpError::connect(match local {
            Some(ip) => format!("cannot bind source address {ip} ([http] local_ips): {e}"),
            None => format!("cannot open a UDP socket for {to}: {e}"),
        })
    })?;
    // Each connection's verifier notes why it refused the server's certificate: quinn
    // passes on only the alert, and the reason is what tells the user what to fix.
    let refused = Arc::new(OnceLock::new());
    let mut config = (*tls.config).clone();
    config
        .dangerous()
        .set_certificate_verifier(Arc::new(Noting {
            inner: tls.verifier.clone(),
            refused: refused.clone(),
        }));
    let quic =
        quinn::crypto::rustls::QuicClientConfig::try_from(Arc::new(config)).map_err(|_| {
            HttpError::tls(
                "HTTP/3 needs the TLS_AES_128_GCM_SHA256 suite (QUIC's first packets use it); \
             add it to [tls] tls_cipher_suites",
            )
        })?;
    let host = origin.host.trim_start_matches('[').trim_end_matches(']');
    let mut connecting = endpoint
        .connect_with(quinn::ClientConfig::new(Arc::new(quic)), addr, host)
        .map_err(|e| HttpError::connect(format!("{name}: cannot start QUIC: {e}")))?;
    let fail =
        |e: quinn::ConnectionError| connection_error(&name, &e, refused.get().map(String::as_str));
    connecting.handshake_data().await.map_err(fail)?;
    let first_flight = Instant::now();
    let quic = connecting.await.map_err(fail)?;
    let (mut driver, sender) = ::h3::client::new(h3_quinn::Connection::new(quic.clone()))
        .await
        .map_err(|e| HttpError::protocol(format!("{name}: HTTP/3 setup failed: {e}")))?;
    let timings = ConnectTimings {
        connecting: first_flight.duration_since(start),
        tls_handshaking: first_flight.elapsed(),
    };
    tokio::spawn(async move {
        // Reads the server's control stream until the connection ends; the end
        // surfaces on the requests that were using it.
        let _ = driver.wait_idle().await;
    });
    shared
        .tls
        .count_handshake(crate::config::tls::TlsVersion::Tls13.name(), QUIC_SUITE);
    Ok((
        H3Connection {
            sender,
            quic,
            _endpoint: endpoint,
            origin: name.into(),
        },
        timings,
    ))
}

/// The cipher suite a QUIC handshake is counted under: quinn does not say which one
/// was negotiated.
pub(crate) const QUIC_SUITE: &str = "unreported by QUIC";

/// A certificate verifier that notes its refusal in words before passing it on.
#[derive(Debug)]
struct Noting {
    inner: Arc<dyn ServerCertVerifier>,
    refused: Arc<OnceLock<String>>,
}

impl ServerCertVerifier for Noting {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .inspect_err(|e| {
                let _ = self.refused.set(super::tls::describe(e));
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }

    fn root_hint_subjects(&self) -> Option<&[rustls::DistinguishedName]> {
        self.inner.root_hint_subjects()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quic_failures_are_classified_with_their_codes() {
        let origin = "https://127.0.0.1:4433";
        let timeout = connection_error(origin, &quinn::ConnectionError::TimedOut, None);
        assert_eq!(timeout.kind().tag(), "connect");
        assert!(
            timeout.to_string().contains("QUIC connect timeout"),
            "{timeout}"
        );

        let app = quinn::ConnectionError::ApplicationClosed(quinn::ApplicationClose {
            error_code: quinn::VarInt::from_u32(0x10c),
            reason: Bytes::from_static(b"going away"),
        });
        let closed = connection_error(origin, &app, None);
        assert_eq!(closed.kind().tag(), "protocol");
        assert!(
            closed
                .to_string()
                .contains("H3_REQUEST_CANCELLED (0x10c): going away"),
            "{closed}"
        );

        let alert = quinn::ConnectionError::ConnectionClosed(quinn::ConnectionClose {
            error_code: quinn::TransportErrorCode::crypto(120),
            frame_type: None,
            reason: Bytes::new(),
        });
        let no_h3 = connection_error(origin, &alert, None);
        assert_eq!(no_h3.kind().tag(), "tls");
        assert!(no_h3.to_string().contains("refused ALPN \"h3\""), "{no_h3}");
    }
}
