//! Warnings about the run as a whole, printed after the summary and kept in
//! `summary.json` (`warnings`): things that make the figures mean less than they seem.

use crate::executor::ScenarioCtx;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One warning per open-model scenario that dropped iterations for want of a VU.
pub(super) fn dropped_iterations(contexts: &[Arc<ScenarioCtx>]) -> Vec<String> {
    contexts
        .iter()
        .filter_map(|ctx| {
            let stats = &ctx.stats;
            let dropped = stats.dropped.load(Ordering::Relaxed);
            if dropped == 0 {
                return None;
            }
            let due = dropped + stats.started.get();
            let allocated = stats.allocated_vus.load(Ordering::Relaxed);
            let max_vus = ctx.config.max_vus();
            let why = if allocated >= max_vus {
                format!("all {allocated} VUs (max_vus) were busy when they were due; raise max_vus, or the target is too slow for this rate")
            } else {
                format!("no VU was idle when they were due and more were still being made ({allocated} of max_vus {max_vus} made); raise pre_allocated_vus")
            };
            Some(format!(
                "scenario {} ran out of VUs: {dropped} of {due} iterations dropped ({:.1}%): {why}",
                ctx.config.name,
                100.0 * dropped as f64 / due as f64
            ))
        })
        .collect()
}
