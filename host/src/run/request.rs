//! What the operator asked a run for (the plugin, its configs and overrides, where the
//! results go, the run's part in a stack or a distributed run) and what the run gave
//! back. A leaf of `run`: the run's phases read and fill these and it imports none of
//! them.

use super::remote;
use crate::config::Overrides;
use crate::summary::Summary;
use std::path::{Path, PathBuf};

/// What the operator asked for.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The plugin file.
    pub plugin: PathBuf,
    /// `--config run.toml`.
    pub config: Option<PathBuf>,
    /// CLI overrides.
    pub overrides: Overrides,
    /// Folder under which the results folder is made.
    pub out: PathBuf,
    /// No progress lines.
    pub quiet: bool,
    /// Handle SIGINT/SIGTERM (off in tests that run several runs in one process).
    pub handle_signals: bool,
    /// Watches the run from beside it (the stack's service watcher, `run --stack`).
    pub watch: Option<crate::control::Watch>,
    /// The dashboard and streaming outputs (`--dashboard`, `--out KIND=TARGET`).
    pub live: crate::live::LiveOptions,
    /// This run's part in a distributed run (`host coordinate`, `host worker`).
    pub remote: Option<remote::RemoteRole>,
}

impl RunRequest {
    /// Every `--config` file, in the order they are layered.
    pub fn config_files(&self) -> Vec<&Path> {
        self.config
            .iter()
            .chain(&self.overrides.config_layers)
            .map(PathBuf::as_path)
            .collect()
    }
}

/// How a run ended.
pub struct RunOutcome {
    /// What `summary.json` holds.
    pub summary: Summary,
    /// Where the results were written.
    pub results_dir: PathBuf,
    /// The run's own exit code (thresholds, interruption, abort); results files that
    /// could not be written are in `write_failures`, not in this code.
    pub exit_code: i32,
    /// Results files that could not be written.
    pub write_failures: Vec<crate::output::WriteFailure>,
}
