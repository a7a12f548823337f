//! Helpers shared by the integration tests: plugins built from plugins/, runs in-process
//! with a config written to a temp dir, and summary.json read back.

#![allow(dead_code)]

use host::config::Overrides;
use host::run::{RunOutcome, RunRequest};
use std::path::PathBuf;

/// A plugin built from plugins/ by the host's build script.
pub fn plugin(name: &str) -> PathBuf {
    let path = PathBuf::from(host::demo::PLUGINS_DIR).join(format!("{name}.wasm"));
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// A finished run and its summary.json.
pub struct Finished {
    pub outcome: RunOutcome,
    pub json: serde_json::Value,
    pub dir: tempfile::TempDir,
}

impl Finished {
    /// A metric's field from summary.json (`metrics.NAME.FIELD`), 0 when absent.
    pub fn metric(&self, name: &str, field: &str) -> f64 {
        self.json["metrics"][name][field].as_f64().unwrap_or(0.0)
    }

    /// A scenario's counter from summary.json.
    pub fn scenario(&self, name: &str, field: &str) -> u64 {
        self.json["scenarios"][name][field]
            .as_u64()
            .unwrap_or_else(|| panic!("no scenarios.{name}.{field} in {}", self.json))
    }
}

/// Runs `plugin` with the run config `toml` (may be empty) and `env`.
pub async fn run(plugin_name: &str, toml: &str, env: &[(&str, &str)]) -> anyhow::Result<Finished> {
    let dir = tempfile::tempdir()?;
    let config = if toml.is_empty() {
        None
    } else {
        let path = dir.path().join("run.toml");
        std::fs::write(&path, toml)?;
        Some(path)
    };
    let request = RunRequest {
        plugin: plugin(plugin_name),
        config,
        overrides: Overrides {
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        },
        out: dir.path().join("results"),
        quiet: true,
        handle_signals: false,
    };
    let outcome = host::run::run(request).await?;
    let text = std::fs::read_to_string(outcome.results_dir.join("summary.json"))?;
    let json = serde_json::from_str(&text)?;
    Ok(Finished { outcome, json, dir })
}
