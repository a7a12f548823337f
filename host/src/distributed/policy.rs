//! A worker's own policy over the run a coordinator sends it: the plugin reaches only
//! those of the coordinator's `[targets] allow` that this worker's `--allow` lists too,
//! and a config that names a file by an absolute or `..` path (`[data]`, `[tls]`) is
//! refused: the files a run needs travel with it under plain names
//! ([`super::data_files`]), so such a path could only make the worker read a file of
//! its own machine.

use crate::net::allowlist::{Allowlist, Origin};
use anyhow::{anyhow, bail, Result};
use std::path::{Component, Path};

/// The `[tls]` keys that name files.
pub(crate) const TLS_FILE_KEYS: [&str; 3] = ["ca_file", "client_cert", "client_key"];

/// Checks `--allow` before dialling: each must be a URL of a target.
pub(crate) fn check_allow(allow: &[String]) -> Result<()> {
    for url in allow {
        Origin::parse(url).map_err(|e| anyhow!("--allow: {e}"))?;
    }
    Ok(())
}

/// The config to run: `config_toml` as received, its paths checked and its
/// `[targets] allow` narrowed to `allow` (when given).
pub(crate) fn apply(config_toml: &str, allow: &[String]) -> Result<String> {
    let mut table: toml::Table = config_toml
        .parse()
        .map_err(|e| anyhow!("the coordinator sent a config that is not TOML: {e}"))?;
    if let Some(data) = table.get("data") {
        check_paths("data", data)?;
    }
    if let Some(toml::Value::Table(tls)) = table.get("tls") {
        for key in TLS_FILE_KEYS {
            if let Some(value) = tls.get(key) {
                check_paths(&format!("tls.{key}"), value)?;
            }
        }
    }
    if allow.is_empty() {
        return Ok(config_toml.to_string());
    }
    let theirs: Vec<String> = table
        .get("targets")
        .and_then(|t| t.get("allow"))
        .and_then(|a| a.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let kept = intersect(&theirs, allow)?;
    let targets = table
        .entry("targets")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let Some(targets) = targets.as_table_mut() {
        targets.insert(
            "allow".into(),
            toml::Value::Array(kept.into_iter().map(toml::Value::from).collect()),
        );
    }
    toml::to_string(&table).map_err(|e| anyhow!("cannot write the run config: {e}"))
}

/// The coordinator's targets that this worker allows too (an empty coordinator list
/// means loopback only: then this worker's loopback targets).
fn intersect(theirs: &[String], ours: &[String]) -> Result<Vec<String>> {
    let mine = Allowlist::new(ours).map_err(|e| anyhow!("--allow: {e}"))?;
    if theirs.is_empty() {
        let kept: Vec<String> = ours
            .iter()
            .filter(|u| Origin::parse(u).is_ok_and(|o| o.is_loopback()))
            .cloned()
            .collect();
        if kept.is_empty() {
            bail!(
                "the coordinator's run reaches loopback only, and this worker's --allow ({}) lists no loopback target: nothing is left to reach, refused",
                ours.join(", ")
            );
        }
        return Ok(kept);
    }
    let (kept, dropped): (Vec<String>, Vec<String>) = theirs
        .iter()
        .cloned()
        .partition(|u| Origin::parse(u).is_ok_and(|o| mine.check(&o).is_ok()));
    if kept.is_empty() {
        bail!(
            "none of the coordinator's targets ({}) is in this worker's --allow ({}): refused",
            theirs.join(", "),
            ours.join(", ")
        );
    }
    if !dropped.is_empty() {
        crate::stderr::warn(format_args!(
            "worker: the coordinator's targets {} are not in this worker's --allow: the plugin's requests to them are refused here",
            dropped.join(", ")
        ));
    }
    Ok(kept)
}

/// Refuses an absolute or `..` path anywhere in `value` (a string, or a table's).
fn check_paths(at: &str, value: &toml::Value) -> Result<()> {
    match value {
        toml::Value::String(path) => {
            let p = Path::new(path);
            if p.is_absolute()
                || p.components()
                    .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
            {
                bail!(
                    "the coordinator's config names {path:?} at {at}: refused (an absolute or `..` path would make this worker read a file of its own machine; a run's files travel with it by plain names)"
                );
            }
            Ok(())
        }
        toml::Value::Table(t) => t
            .iter()
            .try_for_each(|(k, v)| check_paths(&format!("{at}.{k}"), v)),
        toml::Value::Array(a) => a.iter().try_for_each(|v| check_paths(at, v)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_leave_the_folder_are_refused() {
        for text in [
            "[data]\nusers = \"/etc/passwd\"\n",
            "[data]\nusers = \"../x.csv\"\n",
            "[tls]\nca_file = \"/root/ca.pem\"\n",
            "[tls]\nclient_key = \"a/../../k.pem\"\n",
        ] {
            let err = apply(text, &[]).unwrap_err().to_string();
            assert!(err.contains("refused"), "{text}: {err}");
        }
        apply(
            "[data]\nusers = \"data-0-users.csv\"\n[tls]\nca_file = \"tls-ca_file.pem\"\n",
            &[],
        )
        .unwrap();
    }

    #[test]
    fn the_targets_are_those_both_sides_allow() {
        let text = "[targets]\nallow = [\"http://api:8080\", \"https://other:443\"]\n";
        let out = apply(text, &["http://api:8080".into()]).unwrap();
        let t: toml::Table = out.parse().unwrap();
        assert_eq!(
            t["targets"]["allow"].as_array().unwrap(),
            &vec![toml::Value::from("http://api:8080")]
        );
        // Nothing in common: refused.
        let err = apply(text, &["http://elsewhere:80".into()]).unwrap_err();
        assert!(err.to_string().contains("none of"), "{err}");
        // Loopback-only runs keep this worker's loopback targets only.
        let out = apply("", &["http://127.0.0.1:9000".into(), "http://x:1".into()]).unwrap();
        let t: toml::Table = out.parse().unwrap();
        assert_eq!(t["targets"]["allow"].as_array().unwrap().len(), 1);
        assert!(apply("", &["http://x:1".into()]).is_err());
        // Without --allow, the coordinator's list as it is.
        assert_eq!(apply(text, &[]).unwrap(), text);
    }
}
