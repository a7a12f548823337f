//! Exit codes, documented in the README.

/// The run completed.
pub const OK: i32 = 0;
/// An error before or during the run, or a service of its stack died
/// (`[stack] on_service_exit = "abort"`).
pub const ERROR: i32 = 1;
/// `host compare` flagged a regression.
pub const REGRESSION: i32 = 98;
/// A threshold was crossed.
pub const THRESHOLDS: i32 = 99;
/// Interrupted by Ctrl-C.
pub const INTERRUPTED: i32 = 105;
/// The plugin aborted the run.
pub const PLUGIN_ABORT: i32 = 107;
/// A distributed run lost a worker and `[distributed] on_worker_loss = "abort"`.
pub const WORKER_LOST: i32 = 108;
/// The run measured nothing: no iteration succeeded, every request was denied, or most
/// requests could not reach the target.
pub const MEASURED_NOTHING: i32 = 110;

/// What a code means, in a few words.
pub fn meaning(code: i32) -> &'static str {
    match code {
        OK => "completed",
        REGRESSION => "a regression",
        THRESHOLDS => "a threshold was crossed",
        INTERRUPTED => "interrupted",
        PLUGIN_ABORT => "the plugin aborted the run",
        WORKER_LOST => "a worker was lost",
        MEASURED_NOTHING => "the run measured nothing",
        _ => "an error",
    }
}
