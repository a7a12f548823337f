//! Stop signals shared by every part of a run: a graceful stop (no new iterations), a
//! hard stop (interrupt running ones), and why the run stopped early.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Why a run ended before its schedule did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "by", content = "reason", rename_all = "snake_case")]
pub enum StopReason {
    /// The operator pressed Ctrl-C (or sent SIGINT/SIGTERM).
    Interrupted,
    /// The plugin made the run impossible (setup failed, every iteration fails, ...).
    PluginAbort(String),
    /// A threshold with `abort_on_fail` was crossed.
    Threshold(String),
    /// A service of the run's stack exited or was OOM-killed (`[stack] on_service_exit
    /// = "abort"`).
    ServiceExit(String),
    /// A worker of a distributed run was lost (`[distributed] on_worker_loss =
    /// "abort"`).
    WorkerLost(String),
    /// The coordinator of a distributed run stopped this worker, or was lost.
    Coordinator(String),
    /// The run could not measure anything (every request so far was denied by the
    /// allowlist): going on to its end would only repeat that.
    CannotMeasure(String),
}

impl std::fmt::Display for StopReason {
    /// In words, for the printed summary (`summary.json` keeps the tagged form).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Interrupted => f.write_str("the operator (Ctrl-C or SIGTERM)"),
            Self::PluginAbort(why) => write!(f, "the plugin: {why}"),
            Self::Threshold(why) => write!(f, "a threshold with abort_on_fail: {why}"),
            Self::ServiceExit(why) => write!(f, "the stack: {why}"),
            Self::WorkerLost(why) => write!(f, "a lost worker: {why}"),
            Self::Coordinator(why) => write!(f, "the coordinator: {why}"),
            Self::CannotMeasure(why) => write!(f, "the host, as the run could not measure: {why}"),
        }
    }
}

/// The run's stop signals.
#[derive(Default)]
pub struct RunControl {
    /// Set: executors start no new iterations. Cancelled only by
    /// [`RunControl::stop_with`], which also sets what [`RunControl::stopping`] reads.
    pub stop: CancellationToken,
    /// Set: running iterations are interrupted now.
    pub hard_stop: CancellationToken,
    /// `stop` was cancelled. Checked before every iteration: the token's own
    /// `is_cancelled` takes a mutex, which VU loops on two worker threads contend for
    /// (results/scaling.md).
    stopped: AtomicBool,
    reason: Mutex<Option<StopReason>>,
}

impl RunControl {
    /// Stops the run early; the first reason given is kept.
    pub fn stop_with(&self, reason: StopReason) {
        let mut slot = self.reason.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(reason);
        }
        self.stopped.store(true, Ordering::Release);
        self.stop.cancel();
    }

    /// Whether the run was stopped (no new iterations): `stop.is_cancelled()` without
    /// its lock.
    pub fn stopping(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Why the run stopped early, if it did.
    pub fn reason(&self) -> Option<StopReason> {
        self.reason
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_read_as_words() {
        assert_eq!(
            StopReason::Interrupted.to_string(),
            "the operator (Ctrl-C or SIGTERM)"
        );
        let abort = StopReason::PluginAbort("20 iterations failed in a row".into());
        assert_eq!(
            abort.to_string(),
            "the plugin: 20 iterations failed in a row"
        );
        let threshold = StopReason::Threshold("http_req_failed: rate<0.01 crossed".into());
        assert!(!threshold.to_string().contains('{'));
        assert!(threshold.to_string().ends_with("rate<0.01 crossed"));
        // summary.json keeps the tagged form.
        assert_eq!(
            serde_json::to_value(&abort).unwrap(),
            serde_json::json!({"by": "plugin_abort", "reason": "20 iterations failed in a row"})
        );
    }
}

/// Something that watches a run from beside it (the stack's service watcher): it is
/// handed the run's clock and control when the executors start, may stop the run, and
/// is asked at the end what it saw.
pub trait RunWatch: Send + Sync {
    /// The executors started at `t0`; `control` stops the run.
    fn started(&self, t0: Instant, control: Arc<RunControl>);
    /// What it saw during the run, oldest first.
    fn events(&self) -> Vec<WatchEvent>;
    /// Containers to sample during the run besides those the config names: the
    /// stack's own services, so the target's resources sit beside its latency.
    fn containers(&self) -> Vec<crate::docker::ContainerTarget> {
        Vec::new()
    }
}

/// One thing a [`RunWatch`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvent {
    /// When.
    pub at: Instant,
    /// Which service.
    pub service: String,
    /// What happened, in words (`exited with code 137 (killed)`).
    pub what: String,
}

/// A shared [`RunWatch`], so a run request can carry one and still be cloned.
#[derive(Clone)]
pub struct Watch(pub Arc<dyn RunWatch>);

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watch")
    }
}
