//! Helpers shared by the integration tests: the demo target, short runs of the example
//! plugins in-process, and finding a run's results folder.

#![allow(dead_code)]

use demo_target::{DemoConfig, DemoServer, Faults};
use host::run::{RunOutcome, RunRequest};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A plugin built from plugins/ by build.rs.
pub fn plugin(name: &str) -> PathBuf {
    Path::new(host::demo::PLUGINS_DIR).join(format!("{name}.wasm"))
}

/// The demo target on a free loopback port, with `latency` added to every request.
pub async fn demo_target(latency: Duration) -> DemoServer {
    let config = DemoConfig {
        faults: Faults {
            latency,
            ..Faults::default()
        },
        ..DemoConfig::default()
    };
    DemoServer::start("127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("demo target starts")
}

/// Writes `toml` as a run config in `dir` and returns its path.
pub fn write_config(dir: &Path, toml: &str) -> PathBuf {
    let path = dir.join("run.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

/// Runs `plugin` in-process with `config` and `env`, results under `out`.
pub async fn run(plugin_name: &str, config: &Path, env: &[(&str, &str)], out: &Path) -> RunOutcome {
    let mut request = RunRequest {
        plugin: plugin(plugin_name),
        config: Some(config.to_path_buf()),
        out: out.to_path_buf(),
        quiet: true,
        handle_signals: false,
        ..RunRequest::default()
    };
    request.overrides.env = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    host::run::run(request).await.expect("the run completes")
}

/// The only run folder under `out`.
pub fn only_results_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "one results folder in {}: {dirs:?}",
        out.display()
    );
    dirs.into_iter().next().unwrap()
}

/// Reads a results folder's summary.json.
pub fn summary_json(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}
