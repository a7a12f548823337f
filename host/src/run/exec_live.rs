//! The run's scenario contexts as `k6/execution` reads them ([`LiveScenario`]): kept
//! here, where the run sees both the executors and the plugin's imports, so neither
//! imports the other.

use crate::config::ExecutorConfig;
use crate::executor::context::ScenarioCtx;
use crate::plugin::exec_live::LiveScenario;
use std::sync::atomic::Ordering;
use std::time::Instant;

impl LiveScenario for ScenarioCtx {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn start(&self) -> Instant {
        self.start
    }

    fn counts(&self) -> [u64; 4] {
        let s = &self.stats;
        [
            s.completed.get(),
            s.interrupted.get(),
            s.active_vus.load(Ordering::Relaxed),
            s.allocated_vus.load(Ordering::Relaxed),
        ]
    }

    fn progress(&self) -> f64 {
        progress(self)
    }
}

/// k6's `ProgressFn` of the scenario, in `[0, 1]`: iterations done (completed or
/// interrupted) over this instance's total for the iteration-based executors, time
/// spent over the schedule's duration (the stages' sum) for the others.
fn progress(ctx: &ScenarioCtx) -> f64 {
    let stats = &ctx.stats;
    let total = match ctx.config.executor {
        ExecutorConfig::SharedIterations { iterations, .. } => {
            Some(ctx.stripe().map_or(0, |s| s.scale(iterations)))
        }
        ExecutorConfig::PerVuIterations { iterations, .. } => {
            Some(stats.allocated_vus.load(Ordering::Relaxed) * iterations)
        }
        _ => None,
    };
    let p = match total {
        Some(0) => 1.0,
        Some(total) => (stats.completed.get() + stats.interrupted.get()) as f64 / total as f64,
        None => {
            let duration = ctx.config.executor.duration();
            let spent = Instant::now().saturating_duration_since(ctx.start);
            if duration.is_zero() {
                1.0
            } else {
                spent.as_secs_f64() / duration.as_secs_f64()
            }
        }
    };
    p.clamp(0.0, 1.0)
}
