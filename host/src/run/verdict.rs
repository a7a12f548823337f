//! Whether a run that went to its end measured anything: a run in which no iteration
//! succeeded, or every request was refused by the allowlist, tested nothing, and must
//! not pass whatever its thresholds say (exit code 110, with the reason). So does a
//! run in which most requests could not reach the target (it was stopped or killed
//! during the run): k6 would exit 0 when its iterations throw, but what such a run
//! measured is the failure of the target, not its load.

use super::exit_code;
use crate::control::StopReason;
use crate::metrics::summary::Stats;
use crate::summary::{RunStatus, ScenarioSummary, Summary};
use crate::vu::errors::{ErrorEntry, ErrorKind};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long a run whose every request was denied by the allowlist goes on: long enough
/// for a plugin whose first requests go elsewhere (a sign-in, a page of links) to
/// reach an allowed one, short enough not to sit through a whole duration that can
/// measure nothing.
pub(crate) const ALL_DENIED_AFTER: Duration = Duration::from_secs(3);

/// Stops the run when, [`ALL_DENIED_AFTER`] into it, every request so far was denied
/// by the allowlist (and none was sent): it cannot measure anything. The reason is
/// said once, in the run's failure at the end.
pub(crate) fn stop_if_all_denied(
    elapsed: Duration,
    totals: &crate::metrics::SeriesMap,
    control: &crate::control::RunControl,
) {
    if elapsed < ALL_DENIED_AFTER || control.stopping() {
        return;
    }
    let c = crate::summary::http_counts(totals, 0);
    let attempted = c.sent
        + c.received
        + c.failed
        + c.not_sent.values().sum::<u64>()
        + browser_requests(totals);
    if c.denied > 0 && attempted == 0 {
        control.stop_with(StopReason::CannotMeasure(format!(
            "every request of its first {} was denied by the allowlist",
            crate::config::format_duration(ALL_DENIED_AFTER)
        )));
        control.hard_stop.cancel();
    }
}

/// Requests browser pages made (each measured in `browser_http_req_duration`): a
/// browser test whose page loaded measured something even when its page's requests to
/// other origins were all denied.
fn browser_requests(totals: &crate::metrics::SeriesMap) -> u64 {
    use crate::metrics::{builtin, Value};
    totals
        .iter()
        .filter(|((id, _), _)| *id == builtin::BROWSER_HTTP_REQ_DURATION)
        .map(|(_, v)| match v {
            Value::Trend(h) => h.len(),
            _ => 0,
        })
        .sum()
}

/// Judges a finished run: sets `failure` (and the status `failed` for a run that went to
/// its end) and returns the exit code. An early stop keeps its own code; a run that
/// measured nothing fails before its thresholds are looked at.
pub(crate) fn judge(summary: &mut Summary) -> i32 {
    summary.failure = failure(summary);
    match &summary.stop_reason {
        Some(StopReason::Interrupted) => exit_code::INTERRUPTED,
        Some(StopReason::PluginAbort(_)) => exit_code::PLUGIN_ABORT,
        Some(StopReason::Threshold(_)) => exit_code::THRESHOLDS,
        Some(StopReason::ServiceExit(_)) => exit_code::ERROR,
        Some(StopReason::WorkerLost(_)) => exit_code::WORKER_LOST,
        Some(StopReason::Coordinator(_)) => exit_code::INTERRUPTED,
        Some(StopReason::CannotMeasure(_)) => {
            summary.status = RunStatus::Failed;
            exit_code::MEASURED_NOTHING
        }
        None if summary.failure.is_some() => {
            summary.status = RunStatus::Failed;
            exit_code::MEASURED_NOTHING
        }
        None if crate::thresholds::all_passed(&summary.thresholds) => exit_code::OK,
        None => exit_code::THRESHOLDS,
    }
}

/// Why the run measured nothing (or, its target out of reach, nothing of the
/// target's load), or `None` when some iteration succeeded, some request was allowed
/// and most reached the target.
pub(crate) fn failure(summary: &Summary) -> Option<String> {
    // A denial is usually why the iterations failed, so it comes first, and the
    // iterations' most frequent error (the same denial, as the plugin saw it) is not
    // said again.
    let denied = requests_failure(summary);
    let errors: &[ErrorEntry] = if denied.is_some() {
        &[]
    } else {
        &summary.plugin_errors
    };
    let iterations = iterations_failure(&summary.scenarios, errors);
    // Said once: with no iteration succeeding, the unreachable target is the why.
    let unreachable = match (&denied, &iterations) {
        (None, None) => summary
            .http
            .unreachable()
            .map(|(unsent, tried)| crate::sampling::saturation::unreachable_message(unsent, tried)),
        _ => None,
    };
    let reasons: Vec<String> = [denied, iterations, unreachable]
        .into_iter()
        .flatten()
        .collect();
    (!reasons.is_empty()).then(|| reasons.join("; and "))
}

/// No iteration succeeded: each failed, was interrupted, was dropped, or never started
/// because no VU could run `init`.
fn iterations_failure(
    scenarios: &BTreeMap<String, ScenarioSummary>,
    errors: &[ErrorEntry],
) -> Option<String> {
    let sum = |f: fn(&ScenarioSummary) -> u64| scenarios.values().map(f).sum::<u64>();
    let (started, completed, failed) =
        (sum(|s| s.started), sum(|s| s.completed), sum(|s| s.failed));
    let (interrupted, dropped) = (sum(|s| s.interrupted), sum(|s| s.dropped));
    let init_failures: u64 = errors
        .iter()
        .filter(|e| e.kind == ErrorKind::Init)
        .map(|e| e.count)
        .sum();
    if completed > failed {
        return None;
    }
    let what = if completed > 0 && interrupted == 0 {
        format!("every iteration failed ({failed} of {completed})")
    } else if started > 0 {
        format!(
            "no iteration succeeded: {failed} failed and {interrupted} were interrupted of {started} started"
        )
    } else if dropped > 0 {
        format!("no iteration started: all {dropped} due were dropped for want of a VU")
    } else if init_failures > 0 {
        format!("no iteration started: init() failed {init_failures} times")
    } else {
        return None;
    };
    let last = errors
        .first()
        .map(|e| {
            format!(
                "; most frequent error ({} × {}): {}",
                e.count,
                e.kind.as_str(),
                e.message
            )
        })
        .unwrap_or_default();
    Some(format!("{what}{last}"))
}

/// Every request the plugin made was refused by the allowlist.
fn requests_failure(summary: &Summary) -> Option<String> {
    let count = |name: &str| match summary.metrics.get(name).map(|m| &m.stats) {
        Some(Stats::Counter { count, .. }) => *count as u64,
        Some(Stats::Trend(t)) => t.count,
        _ => 0,
    };
    // A browser page's own requests count as measured.
    let requests = count("http_reqs") + count("browser_http_req_duration");
    let denied = summary.http.denied;
    (denied > 0 && requests == 0).then(|| {
        format!(
            "every request was denied by the allowlist ({denied}); allow the target with [targets] allow or --allow URL"
        )
    })
}
