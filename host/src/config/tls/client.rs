//! `[tls]` turned into a rustls client configuration: the crypto provider with the
//! suites kept, the versions, the trusted roots, the client certificate, and the
//! verifier. The run config is checked by building it (so a missing file or an
//! unknown suite stops the run before it starts); the connections (`net::tls`) use
//! the same builder, so what was checked is what connects.

use super::options::{TlsOptions, TlsVersion};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::Path;
use std::sync::Arc;

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
pub(crate) fn suite_name(suite: rustls::CipherSuite) -> &'static str {
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
pub(crate) fn cipher_suite_names() -> Vec<&'static str> {
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

/// What is wrong with a setting: the `[tls]` key, and what to fix.
pub(crate) type Problem = (&'static str, String);

fn read_certs(key: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, Problem> {
    let text =
        std::fs::read(path).map_err(|e| (key, format!("cannot read {}: {e}", path.display())))?;
    parse_certs(key, &path.display().to_string(), &text)
}

/// The certificates of PEM `text` (from `shown`, named in errors); at least one.
pub(crate) fn parse_certs(
    key: &'static str,
    shown: &str,
    text: &[u8],
) -> Result<Vec<CertificateDer<'static>>, Problem> {
    let certs = CertificateDer::pem_slice_iter(text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| (key, format!("{shown} is not valid PEM: {e}")))?;
    if certs.is_empty() {
        return Err((
            key,
            format!("{shown} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"),
        ));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, Problem> {
    let text = std::fs::read(path)
        .map_err(|e| ("client_key", format!("cannot read {}: {e}", path.display())))?;
    parse_key("client_key", &path.display().to_string(), &text)
}

/// The private key of PEM `text` (from `shown`, named in errors).
pub(crate) fn parse_key(
    key: &'static str,
    shown: &str,
    text: &[u8],
) -> Result<PrivateKeyDer<'static>, Problem> {
    PrivateKeyDer::from_pem_slice(text).map_err(|e| {
        let encrypted = String::from_utf8_lossy(text).contains("ENCRYPTED");
        let hint = if encrypted {
            " (it is encrypted: decrypt it first, e.g. openssl pkey -in key.pem -out plain.pem)"
        } else {
            ""
        };
        (
            key,
            format!("{shown} holds no PEM private key (PKCS#8, PKCS#1 or SEC1){hint}: {e}"),
        )
    })
}

/// A client certificate chain and its key.
pub(crate) type ClientAuth = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// What a run trusts: the roots (the system's and the files'), and the certificates
/// of `ca_file` and the stack's CA files themselves, which are also accepted as a
/// server's own certificate.
#[derive(Debug, Clone)]
pub(crate) struct Trust {
    /// Every trusted root.
    pub(crate) roots: RootCertStore,
    /// The certificates read from the files, as written.
    pub(crate) from_files: Vec<CertificateDer<'static>>,
    /// How many roots came from the system's store.
    pub(crate) system: usize,
}

/// Builds a client configuration from `options` over `trust`, offering `alpn`.
pub(crate) fn build(
    options: &TlsOptions,
    trust: Trust,
    alpn: &[&[u8]],
) -> Result<ClientConfig, Problem> {
    build_wrapped(options, trust, alpn, |v| v)
}

/// [`build`], with the certificate verifier passed through `wrap` first (QUIC keeps
/// a handle on it, to note why each connection's certificate was refused).
pub(crate) fn build_wrapped(
    options: &TlsOptions,
    trust: Trust,
    alpn: &[&[u8]],
    wrap: impl FnOnce(Arc<dyn ServerCertVerifier>) -> Arc<dyn ServerCertVerifier>,
) -> Result<ClientConfig, Problem> {
    build_with_auth(options, trust, alpn, wrap, None)
}

/// [`build_wrapped`], presenting `auth` instead of `[tls] client_cert` when given (a
/// connection's own client certificate, `net::tls_material`).
pub(crate) fn build_with_auth(
    options: &TlsOptions,
    trust: Trust,
    alpn: &[&[u8]],
    wrap: impl FnOnce(Arc<dyn ServerCertVerifier>) -> Arc<dyn ServerCertVerifier>,
    auth: Option<ClientAuth>,
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
    let verifier: Arc<dyn ServerCertVerifier> = if options.insecure_skip_verify {
        Arc::new(AcceptAny(provider))
    } else {
        Arc::new(TrustedAsIs::new(trust, provider.clone())?)
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(wrap(verifier));
    let auth = match (auth, &options.client_cert, &options.client_key) {
        (Some(auth), _, _) => Some(auth),
        (None, Some(cert), Some(key)) => Some((read_certs("client_cert", cert)?, read_key(key)?)),
        _ => None,
    };
    let mut config = match auth {
        Some((certs, key)) => builder.with_client_auth_cert(certs, key).map_err(|e| {
            (
                "client_key",
                format!("is not the key of client_cert, or not usable: {e}"),
            )
        })?,
        None => builder.with_no_client_auth(),
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

/// The roots to trust: `ca_file`, the stack's CAs and (with `system`) the system's
/// store.
pub(crate) fn roots_from(options: &TlsOptions, system: bool) -> Result<Trust, Problem> {
    let mut roots = RootCertStore::empty();
    let mut from_files = Vec::new();
    let files = options
        .ca_file
        .iter()
        .map(|p| ("ca_file", p))
        .chain(options.extra_ca_files.iter().map(|p| ("stack CA", p)));
    for (key, path) in files {
        for cert in read_certs(key, path)? {
            roots.add(cert.clone()).map_err(|e| {
                (
                    key,
                    format!(
                        "{} holds a certificate rustls cannot use as a root: {e}",
                        path.display()
                    ),
                )
            })?;
            from_files.push(cert);
        }
    }
    let mut system_count = 0;
    if system {
        let found = rustls_native_certs::load_native_certs();
        let (added, _ignored) = roots.add_parsable_certificates(found.certs);
        system_count = added;
    }
    Ok(Trust {
        roots,
        from_files,
        system: system_count,
    })
}

/// Checks `[tls]` as the config is read: files readable and of the right kind, the key
/// matching the certificate, the versions and suites compatible.
pub(crate) fn check(options: &TlsOptions) -> Result<(), Problem> {
    let trust = roots_from(options, false)?;
    if trust.roots.is_empty() {
        // The system's roots are read at the first connection, not here: without a
        // root a verifier cannot be made, and the rest is checked without one.
        let unverified = TlsOptions {
            insecure_skip_verify: true,
            ..options.clone()
        };
        return build(&unverified, trust, &[]).map(|_| ());
    }
    build(options, trust, &[]).map(|_| ())
}

/// rustls's WebPKI verifier, which also accepts a server certificate that is itself
/// one of the certificates of the CA files, as curl, Go and k6 do. `openssl req -x509`
/// makes a certificate with the CA flag set, and WebPKI refuses a CA certificate as a
/// server's own (`CaUsedAsEndEntity`) even when it is the trusted root: such a
/// certificate is accepted when its DER is exactly one of the trusted ones and it
/// names the server (its validity was checked before the CA flag). The handshake's
/// signature is still verified, so the server holds the certificate's key.
#[derive(Debug)]
struct TrustedAsIs {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    from_files: Vec<CertificateDer<'static>>,
}

impl TrustedAsIs {
    fn new(trust: Trust, provider: Arc<CryptoProvider>) -> Result<Self, Problem> {
        let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(trust.roots),
            provider,
        )
        .build()
        .map_err(|e| ("ca_file", format!("no usable trusted root: {e}")))?;
        Ok(Self {
            inner,
            from_files: trust.from_files,
        })
    }
}

/// Whether `e` is WebPKI's refusal of a CA certificate used as the server's own.
pub(crate) fn is_ca_used_as_end_entity(e: &rustls::Error) -> bool {
    match e {
        rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other)) => matches!(
            other.0.downcast_ref::<webpki::Error>(),
            Some(webpki::Error::CaUsedAsEndEntity)
        ),
        _ => false,
    }
}

impl ServerCertVerifier for TrustedAsIs {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verdict = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match verdict {
            Err(e)
                if is_ca_used_as_end_entity(&e)
                    && self
                        .from_files
                        .iter()
                        .any(|t| t.as_ref() == end_entity.as_ref()) =>
            {
                let cert = webpki::EndEntityCert::try_from(end_entity)
                    .map_err(|_| rustls::CertificateError::BadEncoding)?;
                cert.verify_is_valid_for_subject_name(server_name)
                    .map_err(|_| rustls::CertificateError::NotValidForName)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
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
}

/// `insecure_skip_verify`: any certificate is accepted, but the handshake's signatures
/// are still checked (so the connection is encrypted to whoever holds the key). The
/// cluster's connections use it too, where the token proof over the session shows who
/// the coordinator is.
#[derive(Debug)]
pub(crate) struct AcceptAny(pub(crate) Arc<CryptoProvider>);

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
