//! TLS for `https://` and `wss://` on rustls: the client configurations (built from
//! `[tls]` by `config::tls::client`, once per purpose), the handshake, the names of
//! what was negotiated, and errors that say why a handshake failed.
//!
//! Crypto provider: `ring`. It builds from C and assembly with the compiler alone,
//! while aws-lc-rs needs cmake and a few more minutes of every clean build (CI
//! included); both offer the suites and key exchanges a load test needs. The provider
//! is named explicitly, never taken from the process default, so a dependency that
//! enables the other one cannot make the builder ambiguous.
//!
//! Trusted roots: the system's store (rustls-native-certs reads `/etc/ssl/certs` and
//! its kin), not a bundled copy of Mozilla's (webpki-roots): a system under test often
//! sits behind a company CA that its machines trust and no public list has. `[tls]
//! ca_file` adds to them. Roots are loaded once, at the first TLS connection, so runs
//! that speak plain http never read them.
//!
//! Session resumption is off: each new connection pays a full handshake, as a new
//! client would (and as k6's does), instead of every VU resuming one another's
//! sessions.

use super::allowlist::Origin;
use super::tls_material::TlsMaterial;
use super::types::HttpError;
use crate::config::tls::client::{build, roots_from, suite_name};
use crate::config::tls::{TlsOptions, TlsVersion};
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::client::TlsStream;

/// Why the run's TLS client configuration could not be built; every TLS connection
/// of the run then fails with this as its `tls` error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SetupError {
    /// A `[tls]` option names a file that cannot be read or used.
    #[error("[tls] {key}: {message}")]
    Option {
        /// The option.
        key: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// Certificates are verified but nothing is trusted.
    #[error(
        "no trusted root certificates: the system store is empty ({system} found) and \
         [tls] ca_file is not set; install ca-certificates or set ca_file"
    )]
    NoRoots {
        /// How many roots the system store gave.
        system: usize,
    },
    /// HTTP/3 asked for while `[tls]` stops at TLS 1.2.
    #[error(
        "HTTP/3 runs on TLS 1.3 only (QUIC builds on it), and [tls] \
         tls_version allows only TLS 1.2; allow 1.3 there or leave \"h3\" out of \
         [http] versions"
    )]
    QuicNeedsTls13,
}

impl From<crate::config::tls::client::Problem> for SetupError {
    fn from((key, message): crate::config::tls::client::Problem) -> Self {
        Self::Option { key, message }
    }
}

impl From<SetupError> for HttpError {
    fn from(e: SetupError) -> Self {
        HttpError::tls(e.to_string())
    }
}

/// What a TLS connection is for: its ALPN offer differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 preferred, HTTP/1.1 accepted.
    Http2OrHttp1,
    /// HTTP/2 only.
    Http2,
    /// A WebSocket (HTTP/1.1 upgrade, no ALPN).
    WebSocket,
}

impl Purpose {
    fn alpn(self) -> &'static [&'static [u8]] {
        match self {
            Self::Http1 => &[b"http/1.1"],
            Self::Http2OrHttp1 => &[b"h2", b"http/1.1"],
            Self::Http2 => &[b"h2"],
            Self::WebSocket => &[],
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A finished handshake: what was negotiated.
#[derive(Debug, Clone, Copy)]
pub struct Negotiated {
    /// `tls1.2` or `tls1.3`.
    pub version: &'static str,
    /// k6's name of the cipher suite.
    pub cipher_suite: &'static str,
    /// Whether the server chose HTTP/2 by ALPN.
    pub h2: bool,
}

/// The run's TLS client: its configurations, built at the first TLS connection, and
/// what its handshakes negotiated.
pub struct TlsClient {
    options: TlsOptions,
    configs: OnceLock<Result<[Arc<ClientConfig>; 4], SetupError>>,
    /// QUIC's: TLS 1.3 only, ALPN `h3`; built at the first HTTP/3 connection, so a run
    /// that allows only TLS 1.2 fails there, with a reason, and nowhere else.
    quic: OnceLock<Result<QuicTls, SetupError>>,
    negotiated: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    /// Configurations of connections that bring their own material (gRPC's `tls`).
    materials: super::tls_material::Cache,
}

impl Default for TlsClient {
    fn default() -> Self {
        Self::new(TlsOptions::default())
    }
}

impl TlsClient {
    /// A client for the run's `[tls]`.
    pub fn new(options: TlsOptions) -> Self {
        Self {
            options,
            configs: OnceLock::new(),
            quic: OnceLock::new(),
            negotiated: Mutex::new(BTreeMap::new()),
            materials: Default::default(),
        }
    }

    /// The options it was made from.
    pub fn options(&self) -> &TlsOptions {
        &self.options
    }

    fn config(&self, purpose: Purpose) -> Result<Arc<ClientConfig>, HttpError> {
        let configs = self.configs.get_or_init(|| {
            let load = !self.options.insecure_skip_verify;
            let trust = roots_from(&self.options, load)?;
            if load && trust.roots.is_empty() {
                return Err(SetupError::NoRoots {
                    system: trust.system,
                });
            }
            let make = |p: Purpose| -> Result<_, SetupError> {
                Ok(Arc::new(build(&self.options, trust.clone(), p.alpn())?))
            };
            Ok([
                make(Purpose::Http1)?,
                make(Purpose::Http2OrHttp1)?,
                make(Purpose::Http2)?,
                make(Purpose::WebSocket)?,
            ])
        });
        match configs {
            Ok(c) => Ok(c[purpose.index()].clone()),
            Err(e) => Err(e.clone().into()),
        }
    }

    /// The rustls configuration of HTTP/3 connections (TLS 1.3, ALPN `h3`) and its
    /// certificate verifier, built from `[tls]` at the first call: the same roots, client
    /// certificate, suites and `insecure_skip_verify` as TCP's.
    pub(crate) fn quic_config(&self) -> Result<QuicTls, HttpError> {
        let made = self.quic.get_or_init(|| {
            if self.options.max_version < TlsVersion::Tls13 {
                return Err(SetupError::QuicNeedsTls13);
            }
            let mut options = self.options.clone();
            options.min_version = TlsVersion::Tls13;
            let load = !options.insecure_skip_verify;
            let trust = roots_from(&options, load)?;
            let mut verifier = None;
            let config =
                crate::config::tls::client::build_wrapped(&options, trust, &[b"h3"], |v| {
                    verifier = Some(v.clone());
                    v
                })?;
            Ok(QuicTls {
                config: Arc::new(config),
                verifier: verifier.expect("build_wrapped calls wrap"),
            })
        });
        made.clone().map_err(HttpError::from)
    }

    /// Counts a handshake made elsewhere (QUIC's, inside quinn) under `version` and
    /// `cipher_suite`.
    pub(crate) fn count_handshake(&self, version: &'static str, cipher_suite: &'static str) {
        *self
            .negotiated
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((version, cipher_suite))
            .or_default() += 1;
    }

    /// The configuration of a connection for `purpose` that brings its own `material`
    /// (CAs, client certificate) over the run's `[tls]`; built once per material. An
    /// error says which part of the material to fix.
    pub(crate) fn config_with(
        &self,
        purpose: Purpose,
        material: &TlsMaterial,
    ) -> Result<Arc<ClientConfig>, super::tls_material::MaterialError> {
        self.materials.get(&self.options, material, purpose.alpn())
    }

    /// Runs the client handshake over `io` for `origin`'s host (sent as SNI when it
    /// is a name) and counts what it negotiated.
    pub async fn handshake<IO>(
        &self,
        origin: &Origin,
        io: IO,
        purpose: Purpose,
    ) -> Result<(TlsStream<IO>, Negotiated), HttpError>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let config = self.config(purpose)?;
        self.handshake_using(config, origin, io).await
    }

    /// [`Self::handshake`] with `config` (from [`Self::config_with`]).
    pub async fn handshake_using<IO>(
        &self,
        config: Arc<ClientConfig>,
        origin: &Origin,
        io: IO,
    ) -> Result<(TlsStream<IO>, Negotiated), HttpError>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let host = origin.host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string()).map_err(|_| {
            HttpError::tls(format!("{origin}: {host:?} is not a valid TLS server name"))
        })?;
        let stream = tokio_rustls::TlsConnector::from(config)
            .connect(name, io)
            .await
            .map_err(|e| HttpError::tls(format!("{origin}: {}", describe_io(&e))))?;
        let (_, conn) = stream.get_ref();
        let version = match conn.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => TlsVersion::Tls13.name(),
            Some(rustls::ProtocolVersion::TLSv1_2) => TlsVersion::Tls12.name(),
            _ => "unknown",
        };
        let cipher_suite = conn
            .negotiated_cipher_suite()
            .map_or("unknown", |s| suite_name(s.suite()));
        let h2 = conn.alpn_protocol() == Some(b"h2");
        *self
            .negotiated
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((version, cipher_suite))
            .or_default() += 1;
        Ok((
            stream,
            Negotiated {
                version,
                cipher_suite,
                h2,
            },
        ))
    }

    /// Handshakes by version and by cipher suite, for the summary; `None` if there was
    /// no TLS connection.
    pub fn summary(&self) -> Option<TlsSummary> {
        let negotiated = self.negotiated.lock().unwrap_or_else(|p| p.into_inner());
        if negotiated.is_empty() {
            return None;
        }
        let mut s = TlsSummary::default();
        for ((version, suite), n) in negotiated.iter() {
            s.handshakes += n;
            *s.versions.entry(version.to_string()).or_default() += n;
            *s.cipher_suites.entry(suite.to_string()).or_default() += n;
        }
        Some(s)
    }

    /// The summary's warning when certificates are not verified.
    pub fn warnings(&self) -> Vec<String> {
        if self.options.insecure_skip_verify {
            vec![
                "[tls] insecure_skip_verify is on: server certificates were not verified, \
                  so the run could have talked to anyone"
                    .into(),
            ]
        } else {
            Vec::new()
        }
    }
}

/// QUIC's rustls configuration and the verifier inside it.
#[derive(Clone)]
pub(crate) struct QuicTls {
    /// TLS 1.3 only, ALPN `h3`, the run's roots and client certificate.
    pub config: Arc<ClientConfig>,
    /// The certificate verifier `config` holds, to wrap per connection.
    pub verifier: Arc<dyn rustls::client::danger::ServerCertVerifier>,
}

/// TLS handshakes of a run, as k6's `tls_version` tag counts them.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct TlsSummary {
    /// Handshakes completed.
    pub handshakes: u64,
    /// By version (`tls1.2`, `tls1.3`).
    pub versions: BTreeMap<String, u64>,
    /// By cipher suite (k6's names).
    pub cipher_suites: BTreeMap<String, u64>,
}

/// Why a TLS operation failed, from the I/O error tokio-rustls returns.
fn describe_io(e: &std::io::Error) -> String {
    if let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return describe(tls);
    }
    match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            "the server closed the connection during the TLS handshake (does it speak TLS on \
             this port?)"
                .into()
        }
        _ => format!("TLS handshake failed: {e}"),
    }
}

/// The cause of a rustls error in words: what is wrong, then what to do. rustls's own
/// text (`invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))`) is kept
/// only where it adds a detail (a date, the names presented).
pub(crate) fn describe(e: &rustls::Error) -> String {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    match e {
        E::InvalidCertificate(c) => match c {
            C::UnknownIssuer => format!(
                "bad certificate: not signed by a trusted authority (self-signed, or its CA is \
                 not in the system's roots); trust it by putting the CA's certificate (or the \
                 server's own) in [tls] ca_file: {e}"
            ),
            C::BadSignature => format!(
                "bad certificate: its signature does not verify with the key of the trusted \
                 authority it names (forged, or signed by another CA of the same name); put \
                 the CA that really signed it in [tls] ca_file: {e}"
            ),
            C::Expired | C::ExpiredContext { .. } => format!(
                "certificate expired: renew the server's certificate (or check this machine's \
                 clock): {e}"
            ),
            C::NotValidYet | C::NotValidYetContext { .. } => format!(
                "certificate not yet valid: check the clocks of this machine and the server, \
                 or reissue the certificate: {e}"
            ),
            C::NotValidForName | C::NotValidForNameContext { .. } => format!(
                "certificate name mismatch: the certificate does not name the host of the \
                 URL; use a URL with a name it has, or reissue it with this name in its \
                 subjectAltName: {e}"
            ),
            C::Revoked => "certificate revoked by its authority: the server needs a new one".into(),
            #[allow(deprecated)]
            C::UnsupportedSignatureAlgorithm
            | C::UnsupportedSignatureAlgorithmContext { .. }
            | C::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => format!(
                "bad certificate: it is signed with an algorithm this client does not accept \
                 (RSA with SHA-1 or MD5, or an unusual curve); reissue it with SHA-256 or \
                 better: {e}"
            ),
            C::InvalidPurpose | C::InvalidPurposeContext { .. } => format!(
                "bad certificate: it is not issued for servers (its extended key usage lacks \
                 serverAuth); reissue it for server authentication: {e}"
            ),
            C::UnhandledCriticalExtension => "bad certificate: it has a critical extension \
                this client does not know; reissue it without"
                .into(),
            C::BadEncoding => "bad certificate: the server sent a certificate that is not \
                valid DER; check the server's certificate file"
                .into(),
            C::Other(_) if crate::config::tls::client::is_ca_used_as_end_entity(e) => {
                "bad certificate: the server's certificate is a CA certificate (its CA flag is \
                 set, as `openssl req -x509` makes by default) and it is not itself in [tls] \
                 ca_file; put this very certificate in ca_file to trust it, or make the \
                 server's certificate without the CA flag (-addext \
                 basicConstraints=critical,CA:FALSE)"
                    .into()
            }
            C::Other(other) => format!(
                "bad certificate: {} ({other:?}); check the server's certificate, or trust it \
                 with [tls] ca_file",
                webpki_words(other)
            ),
            _ => format!(
                "bad certificate ({c:?}); check the server's certificate, or trust its CA with \
                 [tls] ca_file"
            ),
        },
        E::AlertReceived(
            alert @ (A::CertificateRequired
            | A::BadCertificate
            | A::UnknownCA
            | A::CertificateUnknown
            | A::UnsupportedCertificate
            | A::CertificateRevoked
            | A::CertificateExpired
            | A::AccessDenied
            // What a server sends when the client certificate's signature fails.
            | A::DecryptError),
        ) => format!(
            "the server refused the client certificate (alert {alert:?}); check [tls] \
             client_cert and client_key"
        ),
        E::InvalidMessage(_) => format!(
            "the server does not speak TLS (its answer is not a TLS record; is it plain \
             http:// on this port?): {e}"
        ),
        E::PeerIncompatible(_) | E::AlertReceived(A::HandshakeFailure | A::ProtocolVersion) => {
            format!(
                "no common TLS version or cipher suite with the server; widen [tls] \
                 tls_version or tls_cipher_suites, or check what the server offers: {e}"
            )
        }
        E::NoCertificatesPresented => "the server sent no certificate; check its TLS \
            configuration"
            .into(),
        E::AlertReceived(alert) => format!(
            "the server ended the handshake with the alert {alert:?}; its log says why (a \
             name it does not serve, a version or suite it refuses)"
        ),
        _ => format!(
            "TLS failed: {e}; check that the URL's port serves TLS, and [tls] in the run \
             config"
        ),
    }
}

/// A certificate refusal of WebPKI's that rustls passes on as `Other`, in words.
fn webpki_words(other: &rustls::OtherError) -> &'static str {
    match other.0.downcast_ref::<webpki::Error>() {
        Some(webpki::Error::EndEntityUsedAsCa) => {
            "a certificate of the chain that signs another is not a CA certificate"
        }
        Some(webpki::Error::PathLenConstraintViolated) => {
            "the chain is longer than its CA allows (pathLenConstraint)"
        }
        Some(webpki::Error::NameConstraintViolation) => {
            "the certificate's names are outside what its CA may sign (name constraints)"
        }
        Some(
            webpki::Error::MaximumPathDepthExceeded | webpki::Error::MaximumPathBuildCallsExceeded,
        ) => "the chain of certificates is too long to check",
        _ => "WebPKI refused it",
    }
}

/// The rustls error in an error's source chain, if any (a client certificate refused
/// under TLS 1.3 surfaces only at the first read, inside a hyper error).
pub(crate) fn find<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if let Some(tls) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                return Some(tls);
            }
        }
        current = err.source();
    }
    None
}

/// The first TLS failure of a connection, in words (see [`describe`]).
pub(crate) type Failure = Arc<OnceLock<String>>;

/// A TLS stream that notes its first TLS error before passing it on. hyper's connection
/// task meets an error such as a refused client certificate (an alert after the
/// handshake) and ends; the request waiting on it sees only a closed channel. The note
/// lets that request name the cause. Only the error path does any work.
pub(crate) struct Watched<IO> {
    inner: IO,
    failure: Failure,
}

impl<IO> Watched<IO> {
    /// Wraps `inner`; its failure, once there is one, is readable from the second half.
    pub(crate) fn new(inner: IO) -> (Self, Failure) {
        let failure = Failure::default();
        (
            Self {
                inner,
                failure: failure.clone(),
            },
            failure,
        )
    }

    /// The stream inside (to send a TLS close as a connection is dropped).
    pub(crate) fn get_mut(&mut self) -> &mut IO {
        &mut self.inner
    }

    fn note<T>(&self, poll: Poll<std::io::Result<T>>) -> Poll<std::io::Result<T>> {
        if let Poll::Ready(Err(e)) = &poll {
            if let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                let _ = self.failure.set(describe(tls));
            }
        }
        poll
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for Watched<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        self.note(poll)
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Watched<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note(poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.note(poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.note(poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.note(poll)
    }
}
