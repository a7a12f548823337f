//! Registry credentials where Docker keeps them: `$DOCKER_CONFIG/config.json` (else
//! `~/.docker/config.json`), `auths.REGISTRY.auth` as base64 `user:password`, or a
//! credential helper (`credHelpers.REGISTRY`, `credsStore`) asked as Docker asks it:
//! `docker-credential-NAME get` with the registry on stdin. `host login` writes the
//! `auths` entry, as `docker login` does without a helper, so either tool's login
//! serves the other.

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine as _;
use std::io::Write as _;
use std::path::PathBuf;

/// A user name and its password (or token).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Credentials {
    /// The user name.
    pub username: String,
    /// The password or access token.
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({}, ***)", self.username)
    }
}

/// Docker's config file.
pub(crate) fn config_path() -> PathBuf {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
        return PathBuf::from(dir).join("config.json");
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".docker").join("config.json")
}

/// The credentials stored for `registry`, if any.
pub(crate) fn lookup(registry: &str) -> Result<Option<Credentials>> {
    let path = config_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow!("cannot read {}: {e}", path.display())),
    };
    let config: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", path.display()))?;
    let helper = config["credHelpers"][registry]
        .as_str()
        .or_else(|| config["credsStore"].as_str());
    if let Some(entry) = auths_entry(&config, registry) {
        if let Some(found) = decode_entry(entry, registry, &path)? {
            return Ok(Some(found));
        }
    }
    match helper {
        Some(helper) if !helper.is_empty() => ask_helper(helper, registry),
        _ => Ok(None),
    }
}

/// `auths.REGISTRY`, also under the `https://REGISTRY` spelling older Docker wrote.
fn auths_entry<'a>(config: &'a serde_json::Value, registry: &str) -> Option<&'a serde_json::Value> {
    let auths = config.get("auths")?.as_object()?;
    auths.get(registry).or_else(|| {
        auths.iter().find_map(|(key, value)| {
            let bare = key
                .trim_start_matches("https://")
                .trim_start_matches("http://");
            let bare = bare.split('/').next().unwrap_or(bare);
            (bare == registry).then_some(value)
        })
    })
}

fn decode_entry(
    entry: &serde_json::Value,
    registry: &str,
    path: &std::path::Path,
) -> Result<Option<Credentials>> {
    if let (Some(u), Some(p)) = (entry["username"].as_str(), entry["password"].as_str()) {
        return Ok(Some(Credentials {
            username: u.to_string(),
            password: p.to_string(),
        }));
    }
    let Some(auth) = entry["auth"].as_str().filter(|a| !a.is_empty()) else {
        return Ok(None);
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok());
    match decoded.as_deref().and_then(|d| d.split_once(':')) {
        Some((u, p)) => Ok(Some(Credentials {
            username: u.to_string(),
            password: p.to_string(),
        })),
        None => bail!(
            "{}: auths.{registry}.auth is not base64 of USER:PASSWORD; log in again with `host login {registry}`",
            path.display()
        ),
    }
}

/// Asks `docker-credential-HELPER get` for `registry`'s credentials.
fn ask_helper(helper: &str, registry: &str) -> Result<Option<Credentials>> {
    let program = format!("docker-credential-{helper}");
    let mut child = match std::process::Command::new(&program)
        .arg("get")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => bail!(
            "{} names the credential helper {helper:?}, but {program} cannot be started ({e}): \
             install it, or remove it from the file",
            config_path().display()
        ),
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(registry.as_bytes());
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        // Helpers answer "credentials not found" with a failure: no credentials.
        return Ok(None);
    }
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("{program} get did not answer JSON"))?;
    match (answer["Username"].as_str(), answer["Secret"].as_str()) {
        (Some(u), Some(s)) if !s.is_empty() => Ok(Some(Credentials {
            username: u.to_string(),
            password: s.to_string(),
        })),
        _ => Ok(None),
    }
}

/// Stores `credentials` for `registry` in Docker's config file (made private to the
/// user), keeping everything else in it.
pub(crate) fn store(registry: &str, credentials: &Credentials) -> Result<PathBuf> {
    let path = config_path();
    let mut config: serde_json::Value = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON; fix or remove it", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => serde_json::json!({}),
        Err(e) => return Err(anyhow!("cannot read {}: {e}", path.display())),
    };
    let Some(object) = config.as_object_mut() else {
        bail!("{} is not a JSON object; fix or remove it", path.display());
    };
    let auths = object
        .entry("auths")
        .or_insert_with(|| serde_json::json!({}));
    let Some(auths) = auths.as_object_mut() else {
        bail!(
            "{}: `auths` is not an object; fix or remove it",
            path.display()
        );
    };
    let auth = base64::engine::general_purpose::STANDARD
        .encode(format!("{}:{}", credentials.username, credentials.password));
    auths.insert(registry.to_string(), serde_json::json!({ "auth": auth }));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(&config)?;
    let temp = path.with_extension("json.tmp");
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temp)
            .with_context(|| format!("cannot write {}", temp.display()))?;
        file.write_all(text.as_bytes())?;
        file.write_all(b"\n")?;
    }
    std::fs::rename(&temp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auths_entries_are_decoded_under_either_spelling() {
        let config = serde_json::json!({
            "auths": {
                "https://ghcr.io/v1/": { "auth": base64::engine::general_purpose::STANDARD.encode("me:pw") },
                "127.0.0.1:5000": { "auth": base64::engine::general_purpose::STANDARD.encode("u:p:q") },
            }
        });
        let path = std::path::Path::new("config.json");
        let got = decode_entry(auths_entry(&config, "ghcr.io").unwrap(), "ghcr.io", path)
            .unwrap()
            .unwrap();
        assert_eq!((got.username.as_str(), got.password.as_str()), ("me", "pw"));
        let got = decode_entry(auths_entry(&config, "127.0.0.1:5000").unwrap(), "x", path)
            .unwrap()
            .unwrap();
        assert_eq!(got.password, "p:q");
        assert!(auths_entry(&config, "docker.io").is_none());
        let bad = serde_json::json!({ "auth": "!!" });
        let err = decode_entry(&bad, "r", path).unwrap_err().to_string();
        assert!(err.contains("host login r"), "{err}");
    }
}
