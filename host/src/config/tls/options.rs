//! The settings of `[tls]` as types: the versions and the options a run's connections
//! are made with. A leaf of `config::tls`: the section's reader (`tls`) and the rustls
//! client built from it (`tls::client`) both import it, and it imports neither.

use std::path::PathBuf;

/// Why a `tls_version` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum VersionError {
    /// A version rustls does not speak, because it is insecure.
    #[error("{0:?} is not supported (it is obsolete and insecure); use \"tls1.2\" or \"tls1.3\"")]
    Obsolete(String),
    /// No version's name.
    #[error("{0:?} is not a TLS version; use \"tls1.2\" or \"tls1.3\"")]
    Unknown(String),
}

/// A TLS protocol version the host speaks (rustls has no older ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    /// TLS 1.2.
    Tls12,
    /// TLS 1.3.
    Tls13,
}

impl TlsVersion {
    /// k6's name: `tls1.2`, `tls1.3`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tls12 => "tls1.2",
            Self::Tls13 => "tls1.3",
        }
    }

    /// Reads k6's name of a version.
    pub(crate) fn parse(text: &str) -> Result<Self, VersionError> {
        match text {
            "tls1.2" => Ok(Self::Tls12),
            "tls1.3" => Ok(Self::Tls13),
            "ssl3.0" | "tls1.0" | "tls1.1" => Err(VersionError::Obsolete(text.to_string())),
            _ => Err(VersionError::Unknown(text.to_string())),
        }
    }
}

/// TLS settings of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// A PEM file of certificates trusted besides the system's roots.
    pub ca_file: Option<PathBuf>,
    /// More such files, not from `[tls]`: the CAs of a Compose stack's https entries,
    /// which `run --stack` reads out of their containers.
    pub extra_ca_files: Vec<PathBuf>,
    /// Accept any server certificate.
    pub insecure_skip_verify: bool,
    /// The client certificate chain (PEM), with `client_key`.
    pub client_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    pub client_key: Option<PathBuf>,
    /// Lowest version offered.
    pub min_version: TlsVersion,
    /// Highest version offered.
    pub max_version: TlsVersion,
    /// Cipher suites offered, by k6's (IANA) names; empty: the provider's defaults.
    pub cipher_suites: Vec<String>,
}

impl Default for TlsOptions {
    fn default() -> Self {
        Self {
            ca_file: None,
            extra_ca_files: Vec::new(),
            insecure_skip_verify: false,
            client_cert: None,
            client_key: None,
            min_version: TlsVersion::Tls12,
            max_version: TlsVersion::Tls13,
            cipher_suites: Vec::new(),
        }
    }
}
