//! Thresholds in k6's syntax: parsed from `[thresholds]` when the config is resolved,
//! checked every tick for those with `abort_on_fail`, and judged at the end. A crossed
//! threshold makes the run's exit code 99.

pub(crate) mod declared;
pub(crate) mod eval;

// Parsing lives with the config (config::thresholds); re-exported for the callers
// that judge thresholds.
pub(crate) use crate::config::thresholds::{expression, parse};

pub(crate) use eval::{Evaluator, ThresholdOutcome};
pub(crate) use parse::parse_thresholds;

/// Warnings about thresholds worth printing after a run (metrics that never got a sample,
/// so their thresholds tested nothing).
pub(crate) fn warnings(outcomes: &[ThresholdOutcome]) -> Vec<String> {
    outcomes
        .iter()
        .filter(|o| !o.aborted_run)
        .filter_map(|o| {
            o.note
                .as_ref()
                .map(|note| format!("threshold {} on {}: {note}", o.threshold, o.metric))
        })
        .collect()
}

/// Whether every threshold held.
pub(crate) fn all_passed(outcomes: &[ThresholdOutcome]) -> bool {
    outcomes.iter().all(|o| o.ok)
}

/// Stops the run (gracefully, then at once) when an `abort_on_fail` threshold is crossed.
pub(crate) fn abort_if_crossed(
    evaluator: &Evaluator,
    view: &crate::metrics::SoFar<'_>,
    control: &crate::control::RunControl,
) {
    if let Some(why) = evaluator.check_abort(view) {
        crate::stderr::line(format_args!("stopping: threshold {why}"));
        control.stop_with(crate::control::StopReason::Threshold(why));
        control.hard_stop.cancel();
    }
}
