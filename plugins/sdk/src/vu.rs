//! The virtual user running the plugin: who it is, think time, the run's environment.

use std::time::Duration;

use crate::bindings::loadtest::scenario::vu as wit;

/// Who is running and which iteration this is: `vu_id` (unique in the run, from 1),
/// `vu_id_in_scenario` (from 1), `iteration` (this VU's, from 0),
/// `iteration_in_scenario` (from 0) and `scenario` (its name in the run config).
pub use wit::VuInfo;

/// The current VU and iteration.
pub fn info() -> VuInfo {
    wit::info()
}

/// The VU's id, unique in the run, from 1.
pub fn id() -> u64 {
    wit::info().vu_id
}

/// This VU's iteration number, from 0.
pub fn iteration() -> u64 {
    wit::info().iteration
}

/// Sleeps for `duration` (think time). The host awaits the timer, so no thread is
/// held; the precision is one millisecond, rounded down, and longer sleeps saturate.
pub fn sleep(duration: Duration) {
    let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    wit::sleep(ms);
}

/// A variable of the run's environment (`[env]` in the run config, `-e KEY=VALUE`),
/// or `None` when unset.
pub fn env(name: &str) -> Option<String> {
    wit::env(name)
}

/// Like [`env()`], with a fallback for an unset variable.
pub fn env_or(name: &str, default: &str) -> String {
    wit::env(name).unwrap_or_else(|| default.to_owned())
}
