//! The run's `[data]` files travel with the plugin: the coordinator reads each one and
//! points the config it sends at a bare file name; the worker writes the files beside
//! that config, where the names resolve (a relative `[data]` path is taken from the
//! config's folder). So a worker needs no copy of the data sets, as it needs none of
//! the plugin. The `[tls]` files (`ca_file`, `client_cert`, `client_key`) travel the
//! same way: a worker refuses a config that names a file of its own machine
//! ([`super::policy`]).

use super::protocol::DataFile;
use crate::config::RunConfig;
use anyhow::{anyhow, bail, Context, Result};
use std::path::Path;

/// What every data file's name sent starts with.
const PREFIX: &str = "data-";

/// What every `[tls]` file's name sent starts with: a worker writes no other names.
const TLS_PREFIX: &str = "tls-";

/// The config to send (its `[data]` paths replaced by the names of the files sent) and
/// the files.
pub(crate) fn pack(config: &RunConfig) -> Result<(toml::Table, Vec<DataFile>)> {
    let mut source = config.source.clone();
    let mut files = Vec::new();
    for (i, (set, path)) in config.data.iter().enumerate() {
        let bytes = std::fs::read(path).with_context(|| {
            format!(
                "[data] {set}: cannot read {} to send it to the workers",
                path.display()
            )
        })?;
        let name = file_name(i, set, path);
        let data = source
            .entry("data")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let toml::Value::Table(data) = data {
            data.insert(set.clone(), toml::Value::String(name.clone()));
        }
        files.push(DataFile { name, bytes });
    }
    if let Some(toml::Value::Table(tls)) = source.get_mut("tls") {
        for key in super::policy::TLS_FILE_KEYS {
            let Some(toml::Value::String(path)) = tls.get(key) else {
                continue;
            };
            let path = std::path::PathBuf::from(path);
            let bytes = std::fs::read(&path).with_context(|| {
                format!(
                    "[tls] {key}: cannot read {} to send it to the workers",
                    path.display()
                )
            })?;
            let ext = path
                .extension()
                .and_then(|e| e.to_str())
                .map(|e| format!(".{}", clean(e)))
                .unwrap_or_default();
            let name = format!("{TLS_PREFIX}{key}{ext}");
            tls.insert(key.into(), toml::Value::String(name.clone()));
            files.push(DataFile { name, bytes });
        }
    }
    Ok((source, files))
}

/// Writes the files received into `dir`, the folder of the worker's config.
pub(crate) fn unpack(files: &[DataFile], dir: &Path) -> Result<()> {
    for file in files {
        // A name from the wire must not place a file elsewhere.
        let plain = Path::new(&file.name).file_name().and_then(|n| n.to_str());
        if plain != Some(file.name.as_str())
            || !(file.name.starts_with(PREFIX) || file.name.starts_with(TLS_PREFIX))
        {
            bail!(
                "the coordinator sent a data file named {:?}: refused (a plain `{PREFIX}…` name was expected)",
                file.name
            );
        }
        crate::files::create_private(&dir.join(&file.name))
            .and_then(|mut f| std::io::Write::write_all(&mut f, &file.bytes))
            .map_err(|e| anyhow!("cannot write the data file {}: {e}", file.name))?;
    }
    Ok(())
}

/// `data-<i>-<set>.<ext>`: unique by position, readable by set name, and with the
/// original extension, which says how the file is read (`.csv`, else JSON).
fn file_name(i: usize, set: &str, path: &Path) -> String {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| format!(".{}", clean(e)))
        .unwrap_or_default();
    format!("{PREFIX}{i}-{}{ext}", clean(set))
}

/// Letters, digits and `_` kept; anything else made `_`.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_the_extension_and_stay_plain() {
        assert_eq!(
            file_name(0, "users", Path::new("/a/b/users.CSV")),
            "data-0-users.CSV"
        );
        assert_eq!(
            file_name(3, "../x y", Path::new("/a/list")),
            "data-3-___x_y"
        );
    }

    #[test]
    fn a_name_that_would_leave_the_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["../data-0-x.csv", "/tmp/data-0-x", "users.csv"] {
            let files = [DataFile {
                name: name.into(),
                bytes: b"[]".to_vec(),
            }];
            let err = unpack(&files, dir.path()).unwrap_err().to_string();
            assert!(err.contains("refused"), "{name}: {err}");
        }
        let files = [DataFile {
            name: "data-0-users.csv".into(),
            bytes: b"name\nann\n".to_vec(),
        }];
        unpack(&files, dir.path()).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("data-0-users.csv")).unwrap(),
            b"name\nann\n"
        );
    }
}
