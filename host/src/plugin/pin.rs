//! Pinned plugins: a run config may name the exact file it was written for,
//! `plugin = { path = "checkout.wasm", sha256 = "…" }`, and the host then refuses to run
//! any other file — a team that receives a plugin runs the file it reviewed, or nothing.
//! `plugin = { oci = "registry/repo:tag", sha256 = "…" }` names it in a registry
//! instead (pulled, checked against the hash, and kept in the cache by digest).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The `plugin` key of a run config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pin {
    /// The file it names, resolved against the config's folder (optional: a pin may
    /// give the hash alone).
    pub path: Option<PathBuf>,
    /// The registry reference it names instead of a file.
    pub oci: Option<String>,
    /// The sha256 the file must have, lowercase hex.
    pub sha256: String,
    /// The config file the pin is in, for messages.
    pub origin: PathBuf,
}

/// The pin in the run config at `config`, if it has one.
pub(crate) fn read(config: &Path) -> Result<Option<Pin>> {
    let text = std::fs::read_to_string(config)
        .with_context(|| format!("cannot read config {}", config.display()))?;
    // Syntax errors are reported by the config reader, with their line; here a file
    // that does not parse simply has no pin to check.
    let Ok(table) = toml::from_str::<toml::Table>(&text) else {
        return Ok(None);
    };
    match table.get("plugin") {
        None => Ok(None),
        Some(value) => parse(value, config).map(Some),
    }
}

/// Reads `plugin = { path, sha256 }` from the config at `origin`.
pub(crate) fn parse(value: &toml::Value, origin: &Path) -> Result<Pin> {
    let shown = origin.display();
    let Some(table) = value.as_table() else {
        bail!(
            "config error in {shown}: plugin must be a table, e.g. plugin = {{ path = \"x.wasm\", sha256 = \"…\" }}"
        );
    };
    for key in table.keys() {
        if key != "path" && key != "sha256" && key != "oci" {
            bail!("config error in {shown}: plugin.{key} is not a known key; plugin takes `path` or `oci`, and `sha256`");
        }
    }
    let sha256 = match table.get("sha256") {
        Some(toml::Value::String(s)) => s.trim().to_ascii_lowercase(),
        Some(_) => bail!("config error in {shown}: plugin.sha256 must be a string of 64 hex digits"),
        None => bail!(
            "config error in {shown}: plugin.sha256 is missing; pin the file with the sha256 `host inspect` prints"
        ),
    };
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!(
            "config error in {shown}: plugin.sha256 must be 64 hex digits (as `host inspect` prints), got {sha256:?}"
        );
    }
    let path = match table.get("path") {
        None => None,
        Some(toml::Value::String(p)) => {
            let dir = origin.parent().unwrap_or(Path::new("."));
            Some(dir.join(p))
        }
        Some(_) => bail!("config error in {shown}: plugin.path must be a string (the .wasm file)"),
    };
    let oci = match table.get("oci") {
        None => None,
        Some(toml::Value::String(r)) => {
            crate::plugin::reference::Reference::parse(r)
                .map_err(|e| anyhow::anyhow!("config error in {shown}: plugin.oci: {e}"))?;
            Some(r.clone())
        }
        Some(_) => {
            bail!("config error in {shown}: plugin.oci must be a string (registry/repository:tag)")
        }
    };
    if path.is_some() && oci.is_some() {
        bail!("config error in {shown}: plugin takes `path` or `oci`, not both: say where the plugin is in one way");
    }
    Ok(Pin {
        path,
        oci,
        sha256,
        origin: origin.to_path_buf(),
    })
}

impl Pin {
    /// Refuses `plugin` (whose sha256 is `sha256`) unless it is the pinned file: the
    /// same file as `path` when the pin names one, and the pinned hash.
    pub(crate) fn verify(&self, plugin: &Path, sha256: &str) -> Result<()> {
        let origin = self.origin.display();
        // A registry pin names content, not a file: the hash below is the check.
        if let Some(pinned) = self.path.as_ref().filter(|_| self.oci.is_none()) {
            if !same_file(pinned, plugin) {
                bail!(
                    "{origin} pins the plugin {}, but the run was given {}; run the pinned file, or change plugin.path",
                    pinned.display(),
                    plugin.display()
                );
            }
        }
        if sha256 != self.sha256 {
            bail!(
                "{} does not match the sha256 pinned in {origin}: pinned {}, but the file's is {sha256}; \
                 this is not the file the config was written for — get the pinned file, or, after \
                 checking this one (`host inspect`), pin its sha256",
                plugin.display(),
                self.sha256
            );
        }
        Ok(())
    }
}

/// Whether two paths name the same file (after resolving `..` and links), else whether
/// they are written the same.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "ab00000000000000000000000000000000000000000000000000000000000000";

    fn pin(text: &str) -> Result<Pin> {
        let table: toml::Table = toml::from_str(text).unwrap();
        parse(&table["plugin"], Path::new("/cfg/run.toml"))
    }

    #[test]
    fn pins_are_read_and_checked() {
        let p = pin(&format!(
            "plugin = {{ path = \"x.wasm\", sha256 = \"{}\" }}",
            HASH.to_uppercase()
        ))
        .unwrap();
        assert_eq!(p.sha256, HASH);
        assert_eq!(p.path.as_deref(), Some(Path::new("/cfg/x.wasm")));
        let err = pin("plugin = { sha256 = \"abc\" }")
            .unwrap_err()
            .to_string();
        assert!(err.contains("64 hex digits"), "{err}");
        let err = pin(&format!("plugin = {{ sha = \"{HASH}\" }}"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("plugin.sha"), "{err}");
        let p = pin(&format!(
            "plugin = {{ oci = \"127.0.0.1:5000/a/b:1\", sha256 = \"{HASH}\" }}"
        ))
        .unwrap();
        assert_eq!(p.oci.as_deref(), Some("127.0.0.1:5000/a/b:1"));
        let err = pin(&format!(
            "plugin = {{ oci = \"a/b:1\", sha256 = \"{HASH}\" }}"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("plugin.oci") && err.contains("registry host"),
            "{err}"
        );
        let err = pin(&format!(
            "plugin = {{ oci = \"x.io/a:1\", path = \"x.wasm\", sha256 = \"{HASH}\" }}"
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("not both"), "{err}");
        let err = pin("plugin = \"x.wasm\"").unwrap_err().to_string();
        assert!(err.contains("must be a table"), "{err}");
    }

    #[test]
    fn another_hash_is_refused_naming_both() {
        let p = pin(&format!("plugin = {{ sha256 = \"{HASH}\" }}")).unwrap();
        let other = "cd".repeat(32);
        let err = p
            .verify(Path::new("x.wasm"), &other)
            .unwrap_err()
            .to_string();
        assert!(err.contains(HASH) && err.contains(&other), "{err}");
        assert!(p.verify(Path::new("x.wasm"), HASH).is_ok());
    }
}
