//! What a run's plan found before anything starts: the plugin's description, the
//! resolved config, the parsed thresholds and the warnings worth saying at once. A
//! leaf of `run`: the plan is made by `run::plan` and read by its later phases.

use crate::config::RunConfig;
use crate::plugin::state::DataSets;
use crate::plugin::PluginInfo;
use crate::thresholds::Evaluator;

/// What is settled before anything runs: the plugin's self-description, the resolved
/// config and its thresholds.
pub(super) struct Plan {
    pub(super) info: PluginInfo,
    pub(super) config: RunConfig,
    pub(super) thresholds: Evaluator,
    /// Times the process had run out of file descriptors before this run.
    pub(super) descriptors_exhausted: u64,
    /// What the plan found worth saying before the run (a `--duration` that shortens
    /// nothing, a `run.toml` edited since the build); printed at once, and kept for the
    /// summary.
    pub(super) warnings: Vec<String>,
    /// The data sets the plugin published from `describe()` (its SharedArrays).
    pub(super) published: DataSets,
}
