//! Registry references, `registry/repository:tag` or `registry/repository@sha256:…`,
//! told apart from file paths the way Docker tells a registry from a Docker Hub name:
//! the first part must be a host (it has a dot, a port, or is `localhost`).

use anyhow::{bail, Result};
use std::fmt;
use std::path::Path;

/// A parsed reference to an artifact in a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference {
    /// The registry's host, with its port when it has one (`ghcr.io`, `127.0.0.1:5000`).
    pub registry: String,
    /// The repository inside it (`team/checkout`).
    pub repository: String,
    /// The tag, when the reference names one (`1.2.0`).
    pub tag: Option<String>,
    /// The manifest's digest, when the reference names one (`sha256:…`, lowercase).
    pub digest: Option<String>,
}

impl Reference {
    /// Parses `text`, saying what is wrong with it when it is not a reference.
    pub(crate) fn parse(text: &str) -> Result<Reference> {
        let (rest, digest) = match text.split_once('@') {
            Some((rest, digest)) => (rest, Some(parse_digest(digest, text)?)),
            None => (text, None),
        };
        let Some((registry, path)) = rest.split_once('/') else {
            bail!("{text:?} is not a registry reference: write REGISTRY/REPOSITORY:TAG, e.g. ghcr.io/team/checkout:1.2.0");
        };
        if !is_registry_host(registry) {
            bail!(
                "{text:?} is not a registry reference: its first part {registry:?} is not a registry host \
                 (a name with a dot, a port, or localhost, e.g. ghcr.io or 127.0.0.1:5000)"
            );
        }
        // A colon after the last slash starts the tag (one before it is a port).
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repo, tag)) if !tag.contains('/') => (repo, Some(tag.to_string())),
            _ => (path, None),
        };
        if repository
            .split('/')
            .any(|part| part == "." || part == "..")
        {
            bail!(
                "{text:?}: the repository {repository:?} has a `.` or `..` part; a repository \
                 names a place in the registry, not a path to walk (it would be sent as \
                 /v2/{repository}/...): write it as the registry lists it, e.g. team/checkout"
            );
        }
        if repository.is_empty() || !repository.split('/').all(is_path_component) {
            bail!(
                "{text:?}: the repository {repository:?} must be lowercase letters and digits \
                 in parts separated by `/`, each part starting and ending with a letter or \
                 digit, with `.`, `_`, `__` or `-` between them (the OCI distribution rule)"
            );
        }
        if let Some(tag) = &tag {
            let valid = !tag.is_empty()
                && tag.len() <= 128
                && tag
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
                && !tag.starts_with(['.', '-']);
            if !valid {
                bail!("{text:?}: the tag {tag:?} must be letters, digits, `.`, `_`, `-` (at most 128, not starting with `.` or `-`)");
            }
        }
        let tag = match (&tag, &digest) {
            (None, None) => Some("latest".to_string()),
            _ => tag,
        };
        Ok(Reference {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }

    /// What the manifest is fetched by: the digest when there is one, else the tag.
    pub(crate) fn manifest_ref(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// The same repository and tag, pinned to a manifest digest.
    pub(crate) fn with_digest(&self, digest: &str) -> Reference {
        Reference {
            digest: Some(digest.to_string()),
            ..self.clone()
        }
    }

    /// Whether the registry is on this machine: Docker talks plain HTTP to those.
    pub(crate) fn is_loopback(&self) -> bool {
        let host = host_of(&self.registry);
        host == "localhost"
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// One part of a repository name, as the OCI distribution spec has it:
/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`.
fn is_path_component(part: &str) -> bool {
    let b = part.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &part[start..i];
        let dashes = sep.bytes().all(|c| c == b'-');
        if !(sep == "." || sep == "_" || sep == "__" || dashes) {
            return false;
        }
    }
    true
}

/// `sha256:` and 64 hex digits, lowercased.
fn parse_digest(digest: &str, text: &str) -> Result<String> {
    let hex = digest.strip_prefix("sha256:").unwrap_or("");
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("{text:?}: the digest {digest:?} must be sha256: and 64 hex digits (as `host push` prints it)");
    }
    Ok(format!("sha256:{}", hex.to_ascii_lowercase()))
}

/// The host of `host[:port]` (an IPv6 address keeps its brackets).
pub(crate) fn host_of(registry: &str) -> &str {
    if registry.starts_with('[') {
        return registry.find(']').map_or(registry, |end| &registry[..=end]);
    }
    registry.split(':').next().unwrap_or(registry)
}

/// Docker's rule for the first part of a name: a registry when it has a dot or a
/// port, or is `localhost`; `.` and `..` are folders.
fn is_registry_host(part: &str) -> bool {
    if part.is_empty() || part == "." || part == ".." || part.starts_with('.') {
        return false;
    }
    (part.contains('.') || part.contains(':') || part == "localhost")
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
}

/// Whether a plugin argument names a registry artifact rather than a file: a path that
/// exists is a file; otherwise text whose first part is a registry host and that does
/// not end in `.wasm` (a file name) is a reference.
pub(crate) fn names_reference(arg: &Path) -> bool {
    if arg.exists() {
        return false;
    }
    let Some(text) = arg.to_str() else {
        return false;
    };
    if text.ends_with(".wasm") || text.contains(char::is_whitespace) {
        return false;
    }
    match text.split_once('/') {
        Some((first, _)) => is_registry_host(first.split('@').next().unwrap_or(first)),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn references_are_parsed() {
        let r = Reference::parse("127.0.0.1:5000/team/checkout:1.2.0").unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "team/checkout");
        assert_eq!(r.tag.as_deref(), Some("1.2.0"));
        assert!(r.is_loopback());
        let r = Reference::parse(&format!("ghcr.io/team/checkout@sha256:{HEX}")).unwrap();
        assert_eq!(r.tag, None);
        assert_eq!(r.manifest_ref(), format!("sha256:{HEX}"));
        assert!(!r.is_loopback());
        for good in ["ghcr.io/a.b/c_d/e__f/g--h/x-1:1", "localhost/0/9"] {
            assert!(Reference::parse(good).is_ok(), "{good}");
        }
        let r = Reference::parse("localhost/x").unwrap();
        assert_eq!(r.tag.as_deref(), Some("latest"));
        assert_eq!(r.to_string(), "localhost/x:latest");
    }

    #[test]
    fn bad_references_say_what_to_write() {
        for (text, words) in [
            ("checkout:1.0", "REGISTRY/REPOSITORY:TAG"),
            ("team/checkout:1.0", "not a registry host"),
            ("ghcr.io/Team/x:1", "lowercase"),
            ("ghcr.io/x@sha256:12", "64 hex digits"),
            ("ghcr.io/x:-1", "the tag"),
            ("127.0.0.1:5000/../../../v2/x:1", "has a `.` or `..` part"),
            ("127.0.0.1:5000/team/../x:1", "has a `.` or `..` part"),
            ("127.0.0.1:5000/./x:1", "has a `.` or `..` part"),
            (
                "ghcr.io/team/.hidden:1",
                "starting and ending with a letter",
            ),
            ("ghcr.io/team/a..b:1", "starting and ending with a letter"),
            ("ghcr.io/team/x-:1", "starting and ending with a letter"),
        ] {
            let err = Reference::parse(text).unwrap_err().to_string();
            assert!(err.contains(words), "{text}: {err}");
        }
    }

    #[test]
    fn paths_are_not_references() {
        assert!(names_reference(Path::new("127.0.0.1:5000/team/x:1")));
        assert!(names_reference(Path::new("ghcr.io/team/x")));
        assert!(names_reference(Path::new("localhost:5000/x@sha256:ab")));
        assert!(!names_reference(Path::new("./plugins/x.wasm")));
        assert!(!names_reference(Path::new("target/x.wasm")));
        assert!(!names_reference(Path::new("../x/y")));
        assert!(!names_reference(Path::new("build.d/x.wasm")));
        assert!(!names_reference(Path::new("hello.wasm")));
        // A path that exists wins, even when it reads like a reference.
        let dir = std::env::temp_dir().join("oci-ref-test.example");
        std::fs::create_dir_all(dir.join("x")).unwrap();
        assert!(!names_reference(&dir.join("x")));
    }
}
