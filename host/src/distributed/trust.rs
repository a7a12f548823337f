//! The cluster's trust boundary (docs/protocol.md, "Trust"): every connection runs over
//! TLS, with a certificate the coordinator makes at start, and before anything else
//! each side proves it holds the shared cluster token by HMAC-SHA256 over both sides'
//! nonces and the TLS session's exported keying material. The export binds the proof to
//! this TLS session: a man in the middle runs two sessions with two different exports,
//! so a proof it relays from one side does not verify on the other, and the workers
//! need not know the coordinator's certificate in advance.

use anyhow::{anyhow, bail, Context, Result};
use hmac::{Hmac, Mac};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use sha2::Sha256;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

/// The environment variable holding the cluster token.
pub const TOKEN_ENV: &str = "HOST_CLUSTER_TOKEN";

/// The fewest characters a token may have: the proofs a peer sees could be tried
/// offline against guesses, so the token must be too long to guess.
pub const MIN_TOKEN_LEN: usize = 16;

/// The fewest bits a token's characters must carry, by their empirical (Shannon)
/// entropy: a long token of one repeated letter, or of two alternating, passes the
/// length rule and is guessed at once. `openssl rand -hex 32` gives about 250.
pub const MIN_TOKEN_BITS: f64 = 40.0;

/// Bytes of each side's nonce, and of the exported keying material.
pub const NONCE_LEN: usize = 32;

/// The label of the TLS exporter (RFC 5705 / RFC 8446 7.5) the proof is bound to.
const EXPORTER_LABEL: &[u8] = b"EXPORTER-loadtest-cluster-proof";

/// The Shannon entropy of `text`'s characters, by their frequencies in it, times its
/// length: an estimate that can only flatter a token (it does not see patterns such as
/// `abcabc...`), so a token under the line is surely weak.
fn entropy_bits(text: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    let mut n = 0usize;
    for c in text.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
        n += 1;
    }
    let n = n as f64;
    counts
        .values()
        .map(|&k| {
            let p = k as f64 / n;
            -p * p.log2() * n
        })
        .sum()
}

/// The name the coordinator's certificate carries (the workers do not check it: the
/// proof does).
const SERVER_NAME: &str = "loadtest-coordinator";

/// The shared secret of a cluster, or none (loopback only).
#[derive(Clone, Default)]
pub struct ClusterToken(Option<Arc<[u8]>>);

impl std::fmt::Debug for ClusterToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token itself.
        f.write_str(if self.0.is_some() {
            "ClusterToken(set)"
        } else {
            "ClusterToken(none)"
        })
    }
}

impl ClusterToken {
    /// A token from its text (for tests and `host k8s render`).
    pub fn new(text: &str) -> Result<Self> {
        let text = text.trim();
        if text.chars().count() < MIN_TOKEN_LEN {
            bail!(
                "the cluster token has {} characters: it needs at least {MIN_TOKEN_LEN} (make one with `openssl rand -hex 32`)",
                text.chars().count()
            );
        }
        let bits = entropy_bits(text);
        if bits < MIN_TOKEN_BITS {
            bail!(
                "the cluster token is too easy to guess: its characters carry about {bits:.0} \
                 bits of entropy, and it needs {MIN_TOKEN_BITS:.0} or more (a letter repeated \
                 carries none); make one with `openssl rand -hex 32`"
            );
        }
        Ok(Self(Some(Arc::from(text.as_bytes()))))
    }

    /// `--token-file FILE`, else [`TOKEN_ENV`], else none.
    pub fn from_flag_or_env(file: Option<&Path>) -> Result<Self> {
        if let Some(file) = file {
            let text = std::fs::read_to_string(file).with_context(|| {
                format!("cannot read the cluster token file {}", file.display())
            })?;
            return Self::new(&text).with_context(|| format!("--token-file {}", file.display()));
        }
        match std::env::var(TOKEN_ENV) {
            Ok(text) if text.trim().is_empty() => {
                bail!("{TOKEN_ENV} is set but empty: give it the cluster token, or unset it")
            }
            Ok(text) => Self::new(&text).context(TOKEN_ENV),
            Err(std::env::VarError::NotPresent) => Ok(Self(None)),
            Err(e) => bail!("{TOKEN_ENV}: {e}"),
        }
    }

    /// Whether a token was given.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// The proof of holding the token for `role`, over both nonces and the session's
    /// export. Without a token the key is empty: such a proof only shows that the peer
    /// has no token either (allowed on loopback only).
    pub fn proof(
        &self,
        role: Role,
        exporter: &[u8],
        worker_nonce: &[u8],
        coord_nonce: &[u8],
    ) -> [u8; 32] {
        self.mac(role, exporter, worker_nonce, coord_nonce)
            .finalize()
            .into_bytes()
            .into()
    }

    /// Whether `proof` is the peer's proof for `role` (compared in constant time).
    pub fn verify(
        &self,
        role: Role,
        exporter: &[u8],
        worker_nonce: &[u8],
        coord_nonce: &[u8],
        proof: &[u8],
    ) -> bool {
        self.mac(role, exporter, worker_nonce, coord_nonce)
            .verify_slice(proof)
            .is_ok()
    }

    fn mac(
        &self,
        role: Role,
        exporter: &[u8],
        worker_nonce: &[u8],
        coord_nonce: &[u8],
    ) -> Hmac<Sha256> {
        let key: &[u8] = self.0.as_deref().unwrap_or_default();
        let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
        // Fixed-length fields after a role label: no two inputs read alike.
        mac.update(b"loadtest-cluster-proof\0");
        mac.update(role.label());
        mac.update(exporter);
        mac.update(worker_nonce);
        mac.update(coord_nonce);
        mac
    }
}

/// Which side a proof is for: each side's proof differs, so one cannot be echoed back
/// as the other's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The worker's proof.
    Worker,
    /// The coordinator's proof.
    Coordinator,
}

impl Role {
    fn label(self) -> &'static [u8] {
        match self {
            Role::Worker => b"worker\0",
            Role::Coordinator => b"coordinator\0",
        }
    }
}

/// A fresh random nonce.
pub fn nonce() -> [u8; NONCE_LEN] {
    rand::random()
}

/// Refuses to listen beyond loopback without a token: anyone who reaches the port
/// would otherwise receive the plugin, the config and its secrets.
pub fn check_listen(listen: SocketAddr, token: &ClusterToken) -> Result<()> {
    if token.is_set() || listen.ip().is_loopback() {
        return Ok(());
    }
    bail!(
        "--listen {listen} takes workers from other machines, so it needs a cluster token: \
         set {TOKEN_ENV} or pass --token-file FILE, with the same token at every worker \
         (make one with `openssl rand -hex 32 > cluster.token`); without one, listen on \
         127.0.0.1 only"
    )
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The coordinator's TLS side, with a certificate made now (nothing secret is stored or
/// shipped; the workers trust the session through the proof).
pub fn acceptor() -> Result<tokio_rustls::TlsAcceptor> {
    let key = rcgen::KeyPair::generate().context("making the coordinator's TLS key")?;
    let cert = rcgen::CertificateParams::new(vec![SERVER_NAME.to_string()])?
        .self_signed(&key)
        .context("making the coordinator's TLS certificate")?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .context("the coordinator's TLS certificate was refused")?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// The worker's TLS side: any certificate is taken (its signature over the handshake
/// still checked), since the proof that follows is bound to this very session.
pub fn connector() -> Result<tokio_rustls::TlsConnector> {
    let provider = provider();
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        // Who the coordinator is, is shown by its token proof over this session's
        // export, not by a CA: any certificate, its handshake signature still checked.
        .with_custom_certificate_verifier(Arc::new(crate::config::tls::client::AcceptAny(provider)))
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// The server name the workers send (any: the certificate is not checked by name).
pub fn server_name() -> ServerName<'static> {
    ServerName::try_from(SERVER_NAME).expect("a valid DNS name")
}

/// The session's exported keying material, which both ends of one TLS session share
/// and no one else can compute.
pub fn exporter<C, D>(conn: &C) -> Result<[u8; NONCE_LEN]>
where
    C: std::ops::Deref<Target = rustls::ConnectionCommon<D>>,
{
    conn.export_keying_material([0u8; NONCE_LEN], EXPORTER_LABEL, None)
        .map_err(|e| anyhow!("cannot export the TLS session's keying material: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_differ_by_role_session_and_token() {
        let a = ClusterToken::new("0123456789abcdef0123").unwrap();
        let b = ClusterToken::new("0123456789abcdef0124").unwrap();
        let (e, nw, nc) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        let p = a.proof(Role::Worker, &e, &nw, &nc);
        assert!(a.verify(Role::Worker, &e, &nw, &nc, &p));
        assert!(
            !a.verify(Role::Coordinator, &e, &nw, &nc, &p),
            "echoed back"
        );
        assert!(
            !a.verify(Role::Worker, &[9u8; 32], &nw, &nc, &p),
            "another session"
        );
        assert!(!b.verify(Role::Worker, &e, &nw, &nc, &p), "another token");
        assert!(
            !ClusterToken::default().verify(Role::Worker, &e, &nw, &nc, &p),
            "no token"
        );
        assert!(ClusterToken::new("short").is_err());
    }

    #[test]
    fn tokens_of_few_distinct_characters_are_refused() {
        for weak in [
            "aaaaaaaaaaaaaaaa",
            "abababababababab",
            "abcabcabcabcabcabcabc",
        ] {
            let err = ClusterToken::new(weak).unwrap_err().to_string();
            assert!(err.contains("too easy to guess"), "{weak}: {err}");
            assert!(err.contains("openssl rand -hex 32"), "{err}");
        }
        for good in [
            "0123456789abcdef",
            "test-cluster-token-0123456789abcdef",
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        ] {
            assert!(ClusterToken::new(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn off_loopback_needs_a_token() {
        let none = ClusterToken::default();
        assert!(check_listen("127.0.0.1:7878".parse().unwrap(), &none).is_ok());
        let err = check_listen("0.0.0.0:7878".parse().unwrap(), &none).unwrap_err();
        assert!(err.to_string().contains(TOKEN_ENV), "{err}");
        let token = ClusterToken::new("0123456789abcdef").unwrap();
        assert!(check_listen("0.0.0.0:7878".parse().unwrap(), &token).is_ok());
    }
}
