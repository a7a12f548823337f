//! A connection's own TLS material, given by a plugin as PEM text (k6's gRPC `connect`
//! param `tls`: `cert`, `key`, `cacerts`), layered over the run's `[tls]`: its CAs are
//! trusted besides the run's roots, its client certificate replaces `[tls]
//! client_cert`; versions, suites and `insecure_skip_verify` stay the run's.
//!
//! The client configurations are cached by material: a script that connects every
//! iteration with the same certificates builds one once (reading the system's roots is
//! the costly part), and a bounded number of distinct ones are kept.

use crate::config::tls::client::{build_with_auth, parse_certs, parse_key, roots_from};
use crate::config::tls::TlsOptions;
use rustls::ClientConfig;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// PEM text for one connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TlsMaterial {
    /// The client certificate chain, with `client_key`.
    pub client_cert: Option<String>,
    /// Its private key (unencrypted PKCS#8, PKCS#1 or SEC1).
    pub client_key: Option<String>,
    /// Certificates trusted besides the run's roots.
    pub ca_certs: Vec<String>,
}

impl TlsMaterial {
    /// Whether it adds nothing to the run's `[tls]`.
    pub fn is_empty(&self) -> bool {
        self.client_cert.is_none() && self.client_key.is_none() && self.ca_certs.is_empty()
    }
}

/// Distinct materials kept; past it, configurations are built for each connection.
const MAX_CACHED: usize = 32;

/// A configuration's key: the material and the ALPN offer.
type Key = (TlsMaterial, Vec<Vec<u8>>);

/// Client configurations by material and ALPN offer.
#[derive(Default)]
pub(crate) struct Cache {
    built: Mutex<HashMap<Key, Arc<ClientConfig>>>,
}

impl Cache {
    /// The configuration of `material` over the run's `options`, offering `alpn`;
    /// an error says which part of the material to fix.
    pub(crate) fn get(
        &self,
        options: &TlsOptions,
        material: &TlsMaterial,
        alpn: &[&[u8]],
    ) -> Result<Arc<ClientConfig>, MaterialError> {
        let key = (material.clone(), alpn.iter().map(|p| p.to_vec()).collect());
        if let Some(c) = self.lock().get(&key) {
            return Ok(c.clone());
        }
        let config = Arc::new(build(options, material, alpn)?);
        let mut built = self.lock();
        if built.len() < MAX_CACHED {
            built.insert(key, config.clone());
        }
        Ok(config)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<ClientConfig>>> {
        self.built.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Why a connection's TLS material cannot be used; the message names the part to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MaterialError {
    /// A part of the material (or of the run's `[tls]` it is built over) is unusable;
    /// `part` names it as the user wrote it (`tls.cert`, `[tls] ca_file`, ...).
    #[error("{part}: {message}")]
    Part {
        /// The field to fix.
        part: String,
        /// What is wrong with it.
        message: String,
    },
    /// A certificate without its key, or a key without its certificate.
    #[error("tls: give both cert and key (a client certificate needs its key)")]
    Unpaired,
    /// Nothing to verify the server against.
    #[error(
        "no trusted root certificates: the system store is empty and neither [tls] \
         ca_file nor tls.cacerts is given"
    )]
    NoRoots,
}

impl MaterialError {
    /// A part's error from the `(key, message)` pairs the PEM readers give.
    fn part((part, message): (&str, String)) -> Self {
        MaterialError::Part {
            part: part.to_string(),
            message,
        }
    }

    /// An error of the run's own `[tls]` settings, named as the run config names them.
    fn run_setting((key, message): (&str, String)) -> Self {
        MaterialError::Part {
            part: format!("[tls] {key}"),
            message,
        }
    }
}

/// Builds the configuration of `material` over `options`.
fn build(
    options: &TlsOptions,
    material: &TlsMaterial,
    alpn: &[&[u8]],
) -> Result<ClientConfig, MaterialError> {
    let auth = match (&material.client_cert, &material.client_key) {
        (Some(cert), Some(key)) => Some((
            parse_certs("tls.cert", "the client certificate", cert.as_bytes())
                .map_err(MaterialError::part)?,
            parse_key("tls.key", "the client key", key.as_bytes()).map_err(MaterialError::part)?,
        )),
        (None, None) => None,
        _ => return Err(MaterialError::Unpaired),
    };
    let load = !options.insecure_skip_verify;
    let mut trust = roots_from(options, load).map_err(MaterialError::run_setting)?;
    for (i, pem) in material.ca_certs.iter().enumerate() {
        let shown = format!("CA certificate {}", i + 1);
        for cert in
            parse_certs("tls.cacerts", &shown, pem.as_bytes()).map_err(MaterialError::part)?
        {
            trust
                .roots
                .add(cert.clone())
                .map_err(|e| MaterialError::Part {
                    part: "tls.cacerts".to_string(),
                    message: format!("{shown} cannot be used as a root by rustls: {e}"),
                })?;
            trust.from_files.push(cert);
        }
    }
    if load && trust.roots.is_empty() {
        return Err(MaterialError::NoRoots);
    }
    build_with_auth(options, trust, alpn, |v| v, auth).map_err(|(k, m)| match k {
        "client_key" => MaterialError::part(("tls.key", m)),
        other => MaterialError::run_setting((other, m)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca_and_leaf() -> (String, String, String) {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(params, ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["client".to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        (ca.pem(), leaf.pem(), key.serialize_pem())
    }

    #[test]
    fn material_is_checked_and_cached() {
        let (ca, cert, key) = ca_and_leaf();
        let options = TlsOptions::default();
        let cache = Cache::default();
        let material = TlsMaterial {
            client_cert: Some(cert.clone()),
            client_key: Some(key.clone()),
            ca_certs: vec![ca],
        };
        let a = cache.get(&options, &material, &[b"h2"]).unwrap();
        let b = cache.get(&options, &material, &[b"h2"]).unwrap();
        assert!(
            Arc::ptr_eq(&a, &b),
            "the second connection reuses the config"
        );
        assert!(a.client_auth_cert_resolver.has_certs());

        let bad = |m: TlsMaterial| cache.get(&options, &m, &[b"h2"]).unwrap_err().to_string();
        let err = bad(TlsMaterial {
            ca_certs: vec!["not pem".into()],
            ..Default::default()
        });
        assert!(
            err.contains("tls.cacerts") && err.contains("CA certificate 1"),
            "{err}"
        );
        let err = bad(TlsMaterial {
            client_cert: Some(cert.clone()),
            ..Default::default()
        });
        assert!(err.contains("cert and key"), "{err}");
        let err = bad(TlsMaterial {
            client_cert: Some(cert),
            client_key: Some("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n".into()),
            ..Default::default()
        });
        assert!(err.contains("tls.key") && err.contains("decrypt"), "{err}");
    }
}
