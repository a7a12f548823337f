//! `host demo`: the embedded demo target on a free loopback port and the bundled
//! `notes` plugin run against it, so a fresh clone shows a real run with no set-up.

use crate::run::{self, RunOutcome, RunRequest};
use anyhow::{Context, Result};
use demo_target::{DemoConfig, DemoServer, Faults};
use std::path::PathBuf;

/// The `notes` example plugin, built from plugins/notes by build.rs.
pub const BUNDLED_NOTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/notes.wasm"));

/// Where tests and tools find the plugins built from plugins/.
pub const PLUGINS_DIR: &str = env!("HOST_PLUGINS_DIR");

/// Writes the bundled plugin to the cache folder and returns its path.
pub fn bundled_notes_path() -> Result<PathBuf> {
    let dir = crate::plugin::cache::cache_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!("bundled-notes-{}.wasm", env!("CARGO_PKG_VERSION")));
    let current = std::fs::read(&path).ok();
    if current.as_deref() != Some(BUNDLED_NOTES) {
        std::fs::write(&path, BUNDLED_NOTES)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(path)
}

/// A finished demo: the run, and how many requests the target served.
pub struct DemoRun {
    /// The run against the target.
    pub outcome: RunOutcome,
    /// Requests the demo target answered.
    pub served: u64,
}

/// Runs the demo with the target injecting `faults`; `request` turns the plugin path
/// into the run request.
pub async fn run_demo(
    plugin: Option<PathBuf>,
    faults: Faults,
    request: impl FnOnce(PathBuf) -> RunRequest,
) -> Result<DemoRun> {
    let config = DemoConfig {
        faults,
        ..DemoConfig::default()
    };
    let server = DemoServer::start("127.0.0.1:0".parse()?, config).await?;
    let base_url = server.base_url();
    println!("demo target listening on {base_url}");
    let plugin = match plugin {
        Some(p) => p,
        None => bundled_notes_path()?,
    };
    let mut req = request(plugin);
    req.overrides.env.insert(0, ("BASE_URL".into(), base_url));
    let outcome = run::run(req).await;
    let served = server.requests_served();
    server.shutdown().await;
    Ok(DemoRun {
        outcome: outcome?,
        served,
    })
}
