//! The `[tls]` section: how `https://` and `wss://` connections are made, under k6's
//! names where k6 has one.
//!
//! ```toml
//! [tls]
//! ca_file = "ca.pem"                 # trusted besides the system's roots
//! insecure_skip_verify = false       # accept any certificate (warned in the summary)
//! client_cert = "client.pem"         # certificate chain shown when the server asks
//! client_key = "client.key"          # its private key (PKCS#8, PKCS#1 or SEC1 PEM)
//! tls_version = "tls1.3"             # or { min = "tls1.2", max = "tls1.3" }
//! tls_cipher_suites = ["TLS_AES_128_GCM_SHA256"]
//! ```
//!
//! A relative file name is taken from the run config's folder, as `[data]` files are.
//! Files are read, and every setting checked, when the config is: a missing file or
//! an unknown suite stops the run before it starts, not at its first request.

pub(crate) mod client;
pub(crate) mod options;

pub(crate) use options::{TlsOptions, TlsVersion};

use crate::table::{unknown_message, ConfigError, TableReader};
use std::path::PathBuf;

/// Reads `[tls]` from the run config, or the defaults when it is absent, and checks
/// it by building a client configuration from it (which reads its files).
#[cfg(test)]
pub(crate) fn parse(source: &toml::Table) -> Result<TlsOptions, ConfigError> {
    let options = read(source)?;
    check(&options)?;
    Ok(options)
}

/// Checks the options as the connections will use them, by building a client
/// configuration from them (which reads their files). The defaults always pass.
pub(crate) fn check(options: &TlsOptions) -> Result<(), ConfigError> {
    client::check(options).map_err(|(key, message)| r_error(key, message))
}

/// Reads `[tls]` from the run config, or the defaults when it is absent, without
/// reading its files ([`check`] does, once the command line has had its say).
pub(crate) fn read(source: &toml::Table) -> Result<TlsOptions, ConfigError> {
    let mut options = TlsOptions::default();
    let Some(value) = source.get("tls") else {
        return Ok(options);
    };
    let table = value.as_table().ok_or_else(|| ConfigError {
        path: "tls".into(),
        message: "must be a table: write it as [tls]".into(),
    })?;
    let mut r = TableReader::new("tls", table);
    options.ca_file = r.string("ca_file")?.map(PathBuf::from);
    options.insecure_skip_verify = r.boolean("insecure_skip_verify")?.unwrap_or(false);
    options.client_cert = r.string("client_cert")?.map(PathBuf::from);
    options.client_key = r.string("client_key")?.map(PathBuf::from);
    match table.get("tls_version") {
        None => {}
        Some(toml::Value::String(text)) => {
            r.string("tls_version")?;
            let v = TlsVersion::parse(text).map_err(|e| r.error("tls_version", e.to_string()))?;
            (options.min_version, options.max_version) = (v, v);
        }
        Some(toml::Value::Table(range)) => {
            r.string("tls_version").ok();
            let mut rr = TableReader::new("tls.tls_version", range);
            if let Some(min) = rr.string("min")? {
                options.min_version =
                    TlsVersion::parse(&min).map_err(|e| rr.error("min", e.to_string()))?;
            }
            if let Some(max) = rr.string("max")? {
                options.max_version =
                    TlsVersion::parse(&max).map_err(|e| rr.error("max", e.to_string()))?;
            }
            rr.finish()?;
            if options.min_version > options.max_version {
                return Err(r.error(
                    "tls_version",
                    format!(
                        "min {} is above max {}",
                        options.min_version.name(),
                        options.max_version.name()
                    ),
                ));
            }
        }
        Some(_) => {
            r.string("tls_version").ok();
            return Err(r.error(
                "tls_version",
                "must be a version such as \"tls1.3\" or a range such as { min = \"tls1.2\", max = \"tls1.3\" }",
            ));
        }
    }
    if let Some(list) = table.get("tls_cipher_suites") {
        r.string("tls_cipher_suites").ok();
        let items = list.as_array().ok_or_else(|| {
            r.error(
                "tls_cipher_suites",
                "must be an array of names, such as [\"TLS_AES_128_GCM_SHA256\"]",
            )
        })?;
        let known = client::cipher_suite_names();
        for item in items {
            let name = item.as_str().ok_or_else(|| {
                r.error(
                    "tls_cipher_suites",
                    format!("expected a string, got `{item}`"),
                )
            })?;
            if !known.contains(&name) {
                return Err(r.error(
                    "tls_cipher_suites",
                    unknown_message("cipher suite", name, &known),
                ));
            }
            options.cipher_suites.push(name.to_string());
        }
    }
    r.finish()?;
    match (&options.client_cert, &options.client_key) {
        (Some(_), None) => {
            return Err(r_error(
                "client_key",
                "is missing: client_cert needs its key",
            ))
        }
        (None, Some(_)) => {
            return Err(r_error(
                "client_cert",
                "is missing: client_key is the key of a certificate, name it too",
            ))
        }
        _ => {}
    }
    Ok(options)
}

/// Makes the section's relative file names relative to `dir`, the run config's
/// folder, as `[data]` files are.
pub(crate) fn resolve_paths(table: &mut toml::Table, dir: &std::path::Path) {
    let Some(toml::Value::Table(tls)) = table.get_mut("tls") else {
        return;
    };
    for key in ["ca_file", "client_cert", "client_key"] {
        if let Some(toml::Value::String(path)) = tls.get_mut(key) {
            if std::path::Path::new(path.as_str()).is_relative() {
                *path = dir.join(path.as_str()).to_string_lossy().into_owned();
            }
        }
    }
}

fn r_error(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        path: format!("tls.{key}"),
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<TlsOptions, ConfigError> {
        parse(&toml::from_str(text).unwrap())
    }

    #[test]
    fn defaults_offer_tls12_and_tls13_and_verify() {
        let o = parse_text("").unwrap();
        assert_eq!(o, TlsOptions::default());
        assert!(!o.insecure_skip_verify);
        assert_eq!(
            (o.min_version, o.max_version),
            (TlsVersion::Tls12, TlsVersion::Tls13)
        );
    }

    #[test]
    fn versions_and_suites_take_k6_names() {
        let o = parse_text(
            "[tls]\ntls_version = { min = \"tls1.3\" }\ntls_cipher_suites = [\"TLS_AES_128_GCM_SHA256\"]",
        )
        .unwrap();
        assert_eq!(o.min_version, TlsVersion::Tls13);
        assert_eq!(o.cipher_suites, ["TLS_AES_128_GCM_SHA256"]);
        let o = parse_text("[tls]\ntls_version = \"tls1.2\"").unwrap();
        assert_eq!(
            (o.min_version, o.max_version),
            (TlsVersion::Tls12, TlsVersion::Tls12)
        );
    }

    #[test]
    fn mistakes_are_explained() {
        let cases = [
            ("tls_version = \"tls1.1\"", "tls.tls_version", "obsolete"),
            ("tls_version = \"1.3\"", "tls.tls_version", "use \"tls1.2\""),
            (
                "tls_version = { min = \"tls1.3\", max = \"tls1.2\" }",
                "tls.tls_version",
                "above max",
            ),
            (
                "tls_cipher_suites = [\"TLS_AES_128_GCM_SHA265\"]",
                "tls.tls_cipher_suites",
                "did you mean `TLS_AES_128_GCM_SHA256`",
            ),
            (
                "ca_file = \"/nonexistent/ca.pem\"",
                "tls.ca_file",
                "/nonexistent/ca.pem",
            ),
            ("client_cert = \"a.pem\"", "tls.client_key", "needs its key"),
            (
                "tls_version = \"tls1.2\"\ntls_cipher_suites = [\"TLS_AES_128_GCM_SHA256\"]",
                "tls.tls_cipher_suites",
                "none of them is a TLS 1.2 suite",
            ),
            (
                "insecure_skip_verfy = true",
                "tls.insecure_skip_verfy",
                "did you mean",
            ),
        ];
        for (text, path, needle) in cases {
            let err = parse_text(&format!("[tls]\n{text}")).unwrap_err();
            assert_eq!(err.path, path, "{text}: {err}");
            assert!(err.message.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn a_file_that_is_not_pem_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate").unwrap();
        let err = parse_text(&format!(
            "[tls]\nca_file = {:?}",
            path.display().to_string()
        ))
        .unwrap_err();
        assert_eq!(err.path, "tls.ca_file");
        assert!(err.message.contains("no PEM certificate"), "{err}");
    }
}
