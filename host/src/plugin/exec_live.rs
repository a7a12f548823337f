//! The live numbers of k6's `k6/execution` beyond a VU's own: `scenario.startTime`,
//! `scenario.progress` and `instance.*` (iterations completed and interrupted, VUs
//! active and initialised, the test run's duration so far).
//!
//! Nothing here is on the hot path: the run publishes its scenarios' contexts once at
//! the start, and the numbers are read from their live counters (the ones progress and
//! the summary read) only when a script asks, through one reserved `vu.env` name
//! ([`LIVE_ENV`]) answered with a small JSON object. `instance` is this process: under
//! an execution segment (a distributed run) its numbers are this instance's, as k6's.

use std::sync::{Arc, OnceLock, Weak};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// One scenario as `k6/execution` reads it; the run implements it for its scenario
/// contexts (run/exec_live.rs), so this module needs nothing of the executors.
pub trait LiveScenario: Send + Sync {
    /// The scenario's name.
    fn name(&self) -> &str;
    /// When it starts (the run's start plus its `startTime`).
    fn start(&self) -> Instant;
    /// Iterations completed, interrupted; VUs active, initialised.
    fn counts(&self) -> [u64; 4];
    /// k6's progress, in `[0, 1]`.
    fn progress(&self) -> f64;
}

/// The reserved `vu.env` name under which the k6 layer reads the live numbers
/// (layer/execution.js); a NUL first, as no variable has.
pub(crate) const LIVE_ENV: &str = "\u{0}k6-execution\u{0}";

/// The run's scenarios as `k6/execution` reads them, once the run has started.
#[derive(Default)]
pub struct ExecLive {
    run: OnceLock<Started>,
}

/// What is known once the executors start.
struct Started {
    /// When the test run started (the scenarios' offsets count from it).
    t0: Instant,
    /// The same moment on the wall clock, in Unix milliseconds.
    t0_unix_ms: f64,
    /// Every scenario of this process, held weakly: a scenario's context holds the
    /// VU factory, which holds the run's services and so this; a strong hold would make
    /// a cycle that keeps the services (the browsers among them, which end when they
    /// are dropped) alive past the run.
    scenarios: Vec<Weak<dyn LiveScenario>>,
}

impl ExecLive {
    /// Notes the run's start `t0` and its scenarios; later calls change nothing.
    pub fn publish(&self, t0: Instant, scenarios: Vec<Arc<dyn LiveScenario>>) {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .saturating_sub(t0.elapsed());
        let _ = self.run.set(Started {
            t0,
            t0_unix_ms: wall.as_secs_f64() * 1000.0,
            scenarios: scenarios.iter().map(Arc::downgrade).collect(),
        });
    }

    /// The numbers as a JSON object for `scenario` (empty outside a scenario: setup,
    /// teardown): `instance` fields always (zeros before the start), `scenario`'s
    /// `startTime` and `progress` when it is one of the run's.
    pub fn json(&self, scenario: &str) -> String {
        let mut counts = [0u64; 4];
        let mut elapsed_ms = 0.0;
        let mut out = serde_json::Map::new();
        if let Some(run) = self.run.get() {
            // The scenarios still running (all of them while any VU can ask).
            let scenarios: Vec<_> = run.scenarios.iter().filter_map(Weak::upgrade).collect();
            for ctx in &scenarios {
                for (total, n) in counts.iter_mut().zip(ctx.counts()) {
                    *total += n;
                }
            }
            elapsed_ms = run.t0.elapsed().as_secs_f64() * 1000.0;
            if let Some(ctx) = scenarios.iter().find(|c| c.name() == scenario) {
                let offset = ctx.start().saturating_duration_since(run.t0);
                let start = (run.t0_unix_ms + offset.as_secs_f64() * 1000.0).floor();
                out.insert("startTime".into(), start.into());
                out.insert("progress".into(), ctx.progress().into());
            }
        }
        let [completed, interrupted, active, initialized] = counts;
        out.insert("currentTestRunDuration".into(), elapsed_ms.into());
        out.insert("iterationsCompleted".into(), completed.into());
        out.insert("iterationsInterrupted".into(), interrupted.into());
        out.insert("vusActive".into(), active.into());
        out.insert("vusInitialized".into(), initialized.into());
        serde_json::Value::Object(out).to_string()
    }
}
