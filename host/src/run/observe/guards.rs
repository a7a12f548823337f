//! The observers that stop a run by themselves: an `abort_on_fail` threshold crossed,
//! a streak of failed iterations, and a run whose every request was denied. Each
//! judges a second after every output has it, so the second that stops a run is in
//! its results.

use super::observer::{Observer, Scope};
use crate::control::StopReason;
use crate::metrics::Second;

/// Adds the automatic stops to `set`, in the order they are judged.
pub(super) fn push(set: &mut Vec<Box<dyn Observer>>) {
    set.push(Box::new(ThresholdAbort));
    set.push(Box::new(FailureStreak));
    set.push(Box::new(AllDenied));
}

/// Stops the run when an `abort_on_fail` threshold is crossed (past its delay).
struct ThresholdAbort;

impl Observer for ThresholdAbort {
    fn tick(&mut self, scope: &Scope<'_>, second: &Second<'_>) {
        // Graceful first, then at once: a crossed abort threshold means the rest of
        // the run would measure a system already judged failed.
        if let Some(why) = scope.thresholds.check_abort(second) {
            crate::stderr::line(format_args!("stopping: threshold {why}"));
            scope.control.stop_with(StopReason::Threshold(why));
            scope.control.hard_stop.cancel();
        }
    }
}

/// Stops the run when `limits.abort_after_failures` iterations failed in a row.
struct FailureStreak;

impl Observer for FailureStreak {
    fn tick(&mut self, scope: &Scope<'_>, _second: &Second<'_>) {
        let limit = scope.config.limits.abort_after_failures;
        let errors = scope.errors;
        if limit > 0 && errors.streak() >= limit {
            let last = errors
                .entries()
                .0
                .first()
                .map(|e| e.message.clone())
                .unwrap_or_default();
            let control = scope.control;
            control.stop_with(StopReason::PluginAbort(format!(
                "{limit} iterations failed in a row; last error: {last}"
            )));
            control.hard_stop.cancel();
        }
    }
}

/// Stops the run when every request so far was denied by the allowlist.
struct AllDenied;

impl Observer for AllDenied {
    fn tick(&mut self, scope: &Scope<'_>, second: &Second<'_>) {
        crate::run::verdict::stop_if_all_denied(
            second.elapsed,
            second.totals.totals(),
            scope.control,
        );
    }
}
