//! `host demo`: the demo target (a child process) on a free loopback port and the bundled
//! `notes` plugin run against it, so a fresh clone shows a real run with no set-up.

use crate::run::{self, RunOutcome, RunRequest};
use crate::target_process::TargetProcess;
use anyhow::{Context, Result};
use std::path::PathBuf;

/// The `notes` example plugin, built from plugins/notes by build.rs.
pub(crate) const BUNDLED_NOTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/notes.wasm"));

/// Where tests and tools find the plugins built from plugins/.
pub const PLUGINS_DIR: &str = env!("HOST_PLUGINS_DIR");

/// Writes the bundled plugin to the cache folder and returns its path.
pub(crate) fn bundled_notes_path() -> Result<PathBuf> {
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
pub(crate) struct DemoRun {
    /// The run against the target.
    pub outcome: RunOutcome,
    /// Requests the demo target answered, as it said when it stopped (`None` if it
    /// did not say).
    pub served: Option<u64>,
}

/// Runs the demo with the target (a child process, see [`crate::target_process`])
/// started with `fault_flags`; `request` turns the plugin path into the run request;
/// `before_writing` gets the summary before the results files are written. The
/// target is sampled as the service `demo-target`.
pub(crate) async fn run_demo(
    plugin: Option<PathBuf>,
    fault_flags: Vec<String>,
    request: impl FnOnce(PathBuf) -> RunRequest,
    before_writing: impl FnOnce(&crate::summary::Summary),
) -> Result<DemoRun> {
    let target = TargetProcess::start(&fault_flags).await?;
    let base_url = target.base_url.clone();
    println!("demo target listening on {base_url} (pid {})", target.pid);
    let plugin = match plugin {
        Some(p) => p,
        None => bundled_notes_path()?,
    };
    let mut req = request(plugin);
    req.overrides.env.insert(0, ("BASE_URL".into(), base_url));
    req.overrides
        .sample_pids
        .push(format!("demo-target={}", target.pid));
    let outcome = run::run_then(req, before_writing).await;
    let served = target.stop().await;
    Ok(DemoRun {
        outcome: outcome?,
        served,
    })
}
