//! Thresholds in k6's syntax: parsed from `[thresholds]` when the config is resolved,
//! checked every tick for those with `abort_on_fail`, and judged at the end. A crossed
//! threshold makes the run's exit code 99.

pub mod eval;

// Parsing lives with the config (config::thresholds); re-exported for the callers
// that judge thresholds.
pub use crate::config::thresholds::{expression, metric_key, parse, syntax_error};

pub use eval::{Evaluator, RunView, ThresholdOutcome};
pub use parse::{parse_thresholds, Threshold};

/// Warnings about thresholds worth printing after a run (metrics that never got a sample,
/// so their thresholds tested nothing).
pub fn warnings(outcomes: &[ThresholdOutcome]) -> Vec<String> {
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
pub fn all_passed(outcomes: &[ThresholdOutcome]) -> bool {
    outcomes.iter().all(|o| o.ok)
}

/// Stops the run (gracefully, then at once) when an `abort_on_fail` threshold is crossed.
pub fn abort_if_crossed(
    evaluator: &mut Evaluator,
    view: &RunView<'_>,
    control: &crate::control::RunControl,
) {
    if let Some(why) = evaluator.check_abort(view) {
        crate::stderr::line(format_args!("stopping: threshold {why}"));
        control.stop_with(crate::control::StopReason::Threshold(why));
        control.hard_stop.cancel();
    }
}
