//! Thresholds in k6's syntax, in one place: parsed from `[thresholds]` when the config
//! is read (so their mistakes are reported with the config's others: metric keys
//! `http_req_duration{name:x}`, expressions `p(95)<500`, errors pointing at the
//! character at fault), checked against what the plugin declares, evaluated every tick
//! for those with `abort_on_fail`, and judged at the end. A crossed threshold makes the
//! run's exit code 99.
//!
//! It sits below the run config (which parses `[thresholds]` through it) and takes
//! from it only the TOML reader (`table`), so it cannot stop a run itself: the run's
//! observer does that with what [`Evaluator::check_abort`] says.

pub(crate) mod declared;
pub(crate) mod eval;
pub(crate) mod expression;
pub(crate) mod metric_key;
pub(crate) mod parse;
pub(crate) mod syntax_error;

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
