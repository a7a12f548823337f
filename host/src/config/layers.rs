//! `--config a.toml --config b.toml`: run configs layered in order, the later on top.
//!
//! How two layers merge (the rules README.md and `--help` state):
//! - tables merge key by key at every depth: a later file changes only the keys it
//!   writes (`[limits] request_timeout` leaves the other limits as they were);
//! - arrays and plain values are replaced whole: a later `stages`, `local_ips`,
//!   `[targets] allow` or threshold list is the list, not an addition to it;
//! - `[scenarios.NAME]` merges into the earlier scenario of the same name, so a later
//!   file can change one scenario's `vus`; a later scenario with another `executor`
//!   replaces the earlier one whole (its options would not fit the new executor);
//!   scenarios only in earlier files stay, scenarios only in later ones are added.
//!
//! The layered result then goes over the plugin's defaults as one run config did
//! (there `[scenarios]` replaces the defaults' scenarios whole: see [`super::merge`]).

use super::{parse_toml, ConfigError};
use std::path::Path;

/// Reads each file and layers them in order; `[data]` and `[tls]` paths are made
/// relative to the file that names them. Errors name the file.
pub(crate) fn read(paths: &[&Path]) -> Result<toml::Table, ConfigError> {
    let mut merged = toml::Table::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            path: path.display().to_string(),
            message: format!("cannot read config: {e}"),
        })?;
        let mut table = parse_toml(&text, &path.display().to_string())?;
        // `plugin = { path, sha256 }` pins the plugin file (checked when the run
        // loads it), it is not a setting of the run.
        table.remove("plugin");
        if let Some(dir) = path.parent() {
            resolve_paths(&mut table, dir);
        }
        merged = layer(merged, table);
    }
    Ok(merged)
}

/// Makes the relative paths of a run config's `[data]` section relative to `dir` (the
/// config file's folder), so a run does not depend on the folder it was started from.
fn resolve_data_paths(table: &mut toml::Table, dir: &Path) {
    let Some(toml::Value::Table(data)) = table.get_mut("data") else {
        return;
    };
    for (_, value) in data.iter_mut() {
        if let toml::Value::String(path) = value {
            if Path::new(path.as_str()).is_relative() {
                *path = dir.join(path.as_str()).to_string_lossy().into_owned();
            }
        }
    }
}

/// Makes a config's relative file paths (`[data]`, `[tls]`) relative to `dir`, the
/// folder of the file that names them.
pub(crate) fn resolve_paths(table: &mut toml::Table, dir: &Path) {
    resolve_data_paths(table, dir);
    super::tls::resolve_paths(table, dir);
}

/// Lays `over` on `base` by the rules of this module.
pub(crate) fn layer(base: toml::Table, over: toml::Table) -> toml::Table {
    merge_tables(base, over, Depth::Top)
}

/// Where in the config two tables meet: scenarios have a rule of their own.
#[derive(Clone, Copy, PartialEq)]
enum Depth {
    Top,
    Scenarios,
    Other,
}

fn merge_tables(mut base: toml::Table, over: toml::Table, depth: Depth) -> toml::Table {
    for (key, value) in over {
        let child = match depth {
            Depth::Top if key == "scenarios" => Depth::Scenarios,
            _ => Depth::Other,
        };
        let merged = match (base.remove(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => {
                if depth == Depth::Scenarios
                    && executor(&b) != executor(&o)
                    && executor(&o).is_some()
                {
                    toml::Value::Table(o)
                } else {
                    toml::Value::Table(merge_tables(b, o, child))
                }
            }
            (_, value) => value,
        };
        base.insert(key, merged);
    }
    base
}

fn executor(scenario: &toml::Table) -> Option<&str> {
    scenario.get("executor").and_then(|e| e.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn later_keys_win_and_the_rest_stays() {
        let base = t("[limits]\nrequest_timeout = \"5s\"\nmemory_mb = 32\n[env]\nA = \"1\"\n[http]\nlocal_ips = [\"127.0.0.2\", \"127.0.0.3\"]");
        let over = t("[limits]\nrequest_timeout = \"9s\"\n[env]\nB = \"2\"\n[http]\nlocal_ips = [\"127.0.0.9\"]");
        let merged = layer(base, over);
        assert_eq!(merged["limits"]["request_timeout"].as_str(), Some("9s"));
        assert_eq!(merged["limits"]["memory_mb"].as_integer(), Some(32));
        assert_eq!(merged["env"]["A"].as_str(), Some("1"));
        assert_eq!(merged["env"]["B"].as_str(), Some("2"));
        let ips = merged["http"]["local_ips"].as_array().unwrap();
        assert_eq!(ips.len(), 1, "arrays are replaced whole: {ips:?}");
    }

    #[test]
    fn scenarios_merge_by_name_unless_the_executor_changes() {
        let base = t("[scenarios.a]\nexecutor = \"constant-vus\"\nvus = 2\nduration = \"5s\"\n[scenarios.b]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"5s\"");
        let over = t("[scenarios.a]\nvus = 7\n[scenarios.b]\nexecutor = \"per-vu-iterations\"\nvus = 3\niterations = 4\n[scenarios.c]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"1s\"");
        let merged = layer(base, over);
        let s = merged["scenarios"].as_table().unwrap();
        assert_eq!(s["a"]["vus"].as_integer(), Some(7));
        assert_eq!(
            s["a"]["duration"].as_str(),
            Some("5s"),
            "kept from the base"
        );
        assert!(
            s["b"].get("duration").is_none(),
            "a new executor replaces the scenario whole"
        );
        assert_eq!(s["b"]["iterations"].as_integer(), Some(4));
        assert!(s.contains_key("c"));
    }

    #[test]
    fn relative_data_paths_follow_the_config_file() {
        let mut table: toml::Table =
            toml::from_str("[data]\nusers = \"users.csv\"\nabs = \"/srv/x.json\"").unwrap();
        resolve_data_paths(&mut table, Path::new("/work/tests"));
        assert_eq!(
            table["data"]["users"].as_str(),
            Some("/work/tests/users.csv")
        );
        assert_eq!(table["data"]["abs"].as_str(), Some("/srv/x.json"));
    }
}
