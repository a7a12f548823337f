//! TLS for the demo target (`--tls`): a certificate authority and a server certificate
//! made with rcgen at start, so nothing secret ships with the project. The CA is
//! written out (`--tls-ca-out`) for clients to trust; ALPN offers `h2` and `http/1.1`.
//!
//! rustls uses the `ring` provider: it builds with the C compiler alone, while
//! aws-lc-rs needs cmake and adds minutes to a clean build.

use std::sync::Arc;

use anyhow::Context as _;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A generated CA and the server certificate it signed.
pub struct DemoTls {
    /// The CA certificate, PEM: what a client trusts.
    pub ca_pem: String,
    /// The server's chain (leaf, then CA) and key.
    chain: Vec<CertificateDer<'static>>,
    key: PrivatePkcs8KeyDer<'static>,
}

impl DemoTls {
    /// A fresh CA and a server certificate for `names` (DNS names or IP addresses),
    /// valid from a day ago for a year.
    pub fn generate(names: &[&str]) -> anyhow::Result<DemoTls> {
        let ca_key = KeyPair::generate().context("generating the CA key")?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "demo-target test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let leaf_key = KeyPair::generate().context("generating the server key")?;
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut leaf_params = CertificateParams::new(names)?;
        leaf_params
            .distinguished_name
            .push(DnType::CommonName, "demo-target");
        let leaf = leaf_params.signed_by(&leaf_key, &issuer)?;
        Ok(DemoTls {
            ca_pem: ca_cert.pem(),
            chain: vec![leaf.der().clone(), ca_cert.der().clone()],
            key: PrivatePkcs8KeyDer::from(leaf_key.serialize_der()),
        })
    }

    /// A rustls server configuration offering `h2` and `http/1.1` by ALPN.
    pub fn server_config(&self) -> anyhow::Result<Arc<rustls::ServerConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                self.chain.clone(),
                PrivateKeyDer::Pkcs8(self.key.clone_key()),
            )
            .context("the generated server certificate was refused")?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// The QUIC server configuration of `--h3-listen`: the same certificate, TLS 1.3
    /// (QUIC's only version) and ALPN `h3`.
    pub fn quic_server_config(&self) -> anyhow::Result<quinn::ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_no_client_auth()
            .with_single_cert(
                self.chain.clone(),
                PrivateKeyDer::Pkcs8(self.key.clone_key()),
            )
            .context("the generated server certificate was refused")?;
        config.alpn_protocols = vec![b"h3".to_vec()];
        let quic = quinn::crypto::rustls::QuicServerConfig::try_from(config)
            .context("QUIC refused the TLS configuration")?;
        Ok(quinn::ServerConfig::with_crypto(Arc::new(quic)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_a_ca_and_a_usable_server_config() {
        let tls = DemoTls::generate(&["localhost", "127.0.0.1"]).unwrap();
        assert!(tls.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert_eq!(tls.chain.len(), 2);
        let config = tls.server_config().unwrap();
        assert_eq!(config.alpn_protocols[0], b"h2");
        // QUIC takes the same certificate over TLS 1.3 (it refuses a config without it).
        tls.quic_server_config().unwrap();
    }
}
