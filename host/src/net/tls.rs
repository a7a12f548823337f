//! TLS for `https://` and `wss://` on rustls: the client configuration built from
//! `[tls]`, the handshake, the names of what was negotiated, and errors that say why a
//! handshake failed.
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
use super::http::HttpError;
use crate::config::tls::{TlsOptions, TlsVersion};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::collections::BTreeMap;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::client::TlsStream;

/// The ring provider, with the suites `[tls] tls_cipher_suites` keeps (all when empty).
fn provider(suites: &[String]) -> CryptoProvider {
    let mut provider = rustls::crypto::ring::default_provider();
    if !suites.is_empty() {
        provider
            .cipher_suites
            .retain(|s| suites.iter().any(|n| n == suite_name(s.suite())));
    }
    provider
}

/// k6's (Go's, IANA's) name of a cipher suite: rustls spells the TLS 1.3 ones `TLS13_`.
pub fn suite_name(suite: rustls::CipherSuite) -> &'static str {
    let name = suite.as_str().unwrap_or("unknown");
    match name.strip_prefix("TLS13_") {
        // The TLS 1.3 names are the same without the 13; keep a static str.
        Some(_) => TLS13_NAMES
            .iter()
            .find(|(r, _)| *r == name)
            .map_or(name, |(_, k)| k),
        None => name,
    }
}

const TLS13_NAMES: &[(&str, &str)] = &[
    ("TLS13_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"),
    ("TLS13_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384"),
    (
        "TLS13_CHACHA20_POLY1305_SHA256",
        "TLS_CHACHA20_POLY1305_SHA256",
    ),
];

/// The cipher suites `[tls] tls_cipher_suites` may name.
pub fn cipher_suite_names() -> Vec<&'static str> {
    rustls::crypto::ring::default_provider()
        .cipher_suites
        .iter()
        .map(|s| suite_name(s.suite()))
        .collect()
}

fn versions(options: &TlsOptions) -> Vec<&'static rustls::SupportedProtocolVersion> {
    let mut v = Vec::new();
    if options.min_version <= TlsVersion::Tls13 && options.max_version >= TlsVersion::Tls13 {
        v.push(&rustls::version::TLS13);
    }
    if options.min_version <= TlsVersion::Tls12 {
        v.push(&rustls::version::TLS12);
    }
    v
}

/// A config problem: the `[tls]` key to fix and why.
type Problem = (&'static str, String);

fn read_certs(key: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, Problem> {
    let text =
        std::fs::read(path).map_err(|e| (key, format!("cannot read {}: {e}", path.display())))?;
    let certs = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| (key, format!("{} is not valid PEM: {e}", path.display())))?;
    if certs.is_empty() {
        return Err((
            key,
            format!(
                "{} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                path.display()
            ),
        ));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, Problem> {
    let text = std::fs::read(path)
        .map_err(|e| ("client_key", format!("cannot read {}: {e}", path.display())))?;
    PrivateKeyDer::from_pem_slice(&text).map_err(|e| {
        (
            "client_key",
            format!(
                "{} holds no PEM private key (PKCS#8, PKCS#1 or SEC1): {e}",
                path.display()
            ),
        )
    })
}

/// Builds a client configuration from `options` over `roots`, offering `alpn`.
fn build(
    options: &TlsOptions,
    roots: RootCertStore,
    alpn: &[&[u8]],
) -> Result<ClientConfig, Problem> {
    let provider = Arc::new(provider(&options.cipher_suites));
    let wanted = versions(options);
    if !options.cipher_suites.is_empty()
        && !provider
            .cipher_suites
            .iter()
            .any(|s| wanted.iter().any(|v| v.version == s.version().version))
    {
        let range = if options.min_version == options.max_version {
            format!("a {} suite", version_label(options.min_version))
        } else {
            "a suite of the versions allowed".to_string()
        };
        return Err((
            "tls_cipher_suites",
            format!("none of them is {range} (tls_version); name one, or widen tls_version"),
        ));
    }
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&wanted)
        .map_err(|e| ("tls_version", e.to_string()))?;
    let builder = if options.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
    } else {
        builder.with_root_certificates(roots)
    };
    let mut config = match (&options.client_cert, &options.client_key) {
        (Some(cert), Some(key)) => builder
            .with_client_auth_cert(read_certs("client_cert", cert)?, read_key(key)?)
            .map_err(|e| {
                (
                    "client_key",
                    format!("is not the key of client_cert, or not usable: {e}"),
                )
            })?,
        _ => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config.resumption = rustls::client::Resumption::disabled();
    Ok(config)
}

fn version_label(v: TlsVersion) -> &'static str {
    match v {
        TlsVersion::Tls12 => "TLS 1.2",
        TlsVersion::Tls13 => "TLS 1.3",
    }
}

fn roots_from(ca_file: Option<&Path>, system: bool) -> Result<(RootCertStore, usize), Problem> {
    let mut roots = RootCertStore::empty();
    if let Some(path) = ca_file {
        for cert in read_certs("ca_file", path)? {
            roots.add(cert).map_err(|e| {
                (
                    "ca_file",
                    format!(
                        "{} holds a certificate rustls cannot use as a root: {e}",
                        path.display()
                    ),
                )
            })?;
        }
    }
    let mut system_count = 0;
    if system {
        let found = rustls_native_certs::load_native_certs();
        let (added, _ignored) = roots.add_parsable_certificates(found.certs);
        system_count = added;
    }
    Ok((roots, system_count))
}

/// Checks `[tls]` as the config is read: files readable and of the right kind, the key
/// matching the certificate, the versions and suites compatible.
pub fn check(options: &TlsOptions) -> Result<(), Problem> {
    let (roots, _) = roots_from(options.ca_file.as_deref(), false)?;
    build(options, roots, &[]).map(|_| ())
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
    configs: OnceLock<Result<[Arc<ClientConfig>; 4], String>>,
    negotiated: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
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
            negotiated: Mutex::new(BTreeMap::new()),
        }
    }

    /// The options it was made from.
    pub fn options(&self) -> &TlsOptions {
        &self.options
    }

    fn config(&self, purpose: Purpose) -> Result<Arc<ClientConfig>, HttpError> {
        let configs = self.configs.get_or_init(|| {
            let load = !self.options.insecure_skip_verify;
            let (roots, system) = roots_from(self.options.ca_file.as_deref(), load)
                .map_err(|(k, m)| format!("[tls] {k}: {m}"))?;
            if load && roots.is_empty() {
                return Err(format!(
                    "no trusted root certificates: the system store is empty ({system} found) and \
                     [tls] ca_file is not set; install ca-certificates or set ca_file"
                ));
            }
            let make = |p: Purpose| {
                build(&self.options, roots.clone(), p.alpn())
                    .map(Arc::new)
                    .map_err(|(k, m)| format!("[tls] {k}: {m}"))
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
            Err(e) => Err(HttpError::Tls(e.clone())),
        }
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
        let host = origin.host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string()).map_err(|_| {
            HttpError::Tls(format!("{origin}: {host:?} is not a valid TLS server name"))
        })?;
        let stream = tokio_rustls::TlsConnector::from(config)
            .connect(name, io)
            .await
            .map_err(|e| HttpError::Tls(format!("{origin}: {}", describe_io(&e))))?;
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

/// The cause of a rustls error in words that say what to fix.
pub fn describe(e: &rustls::Error) -> String {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    match e {
        E::InvalidCertificate(c) => match c {
            C::UnknownIssuer => format!(
                "bad certificate: not signed by a trusted authority (self-signed, or its CA is \
                 not in the system's roots; trust it with [tls] ca_file): {e}"
            ),
            C::BadSignature => format!(
                "bad certificate: its signature does not verify with the key of the trusted \
                 authority it names (forged, or signed by another CA of the same name): {e}"
            ),
            C::Expired | C::ExpiredContext { .. } => format!("certificate expired: {e}"),
            C::NotValidYet | C::NotValidYetContext { .. } => {
                format!("certificate not yet valid: {e}")
            }
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                format!("certificate name mismatch: {e}")
            }
            _ => format!("bad certificate: {e}"),
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
            format!("no common TLS version or cipher suite with the server ([tls] tls_version, tls_cipher_suites): {e}")
        }
        _ => format!("TLS failed: {e}"),
    }
}

/// The rustls error in an error's source chain, if any (a client certificate refused
/// under TLS 1.3 surfaces only at the first read, inside a hyper error).
pub fn find<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
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
pub type Failure = Arc<OnceLock<String>>;

/// A TLS stream that notes its first TLS error before passing it on. hyper's connection
/// task meets an error such as a refused client certificate (an alert after the
/// handshake) and ends; the request waiting on it sees only a closed channel. The note
/// lets that request name the cause. Only the error path does any work.
pub struct Watched<IO> {
    inner: IO,
    failure: Failure,
}

impl<IO> Watched<IO> {
    /// Wraps `inner`; its failure, once there is one, is readable from the second half.
    pub fn new(inner: IO) -> (Self, Failure) {
        let failure = Failure::default();
        (
            Self {
                inner,
                failure: failure.clone(),
            },
            failure,
        )
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

/// `insecure_skip_verify`: any certificate is accepted, but the handshake's signatures
/// are still checked (so the connection is encrypted to whoever holds the key).
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_have_k6_names() {
        let names = cipher_suite_names();
        assert!(names.contains(&"TLS_AES_128_GCM_SHA256"), "{names:?}");
        assert!(
            names.contains(&"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
            "{names:?}"
        );
        assert!(!names.iter().any(|n| n.starts_with("TLS13_")), "{names:?}");
    }

    #[test]
    fn versions_follow_the_range() {
        let mut o = TlsOptions::default();
        assert_eq!(versions(&o).len(), 2);
        o.min_version = TlsVersion::Tls13;
        assert_eq!(versions(&o), [&rustls::version::TLS13]);
        o.min_version = TlsVersion::Tls12;
        o.max_version = TlsVersion::Tls12;
        assert_eq!(versions(&o), [&rustls::version::TLS12]);
    }
}
