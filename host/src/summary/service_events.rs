//! Services of the run's stack that died during the run: when, and how many requests
//! failed from then on, so a summary shows which errors the dead service explains.

use crate::control::WatchEvent;
use serde::Serialize;
use std::time::{Duration, Instant};

/// A service that exited, was OOM-killed, paused or unpaused during the run.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ServiceEvent {
    /// The Compose service.
    pub service: String,
    /// What happened (`exited with code 137 (killed)`, `was OOM-killed`, `was paused`,
    /// `was unpaused`).
    pub what: String,
    /// Seconds from the start of the run.
    pub at_s: f64,
    /// Requests that failed from the start of that second to the end of the run.
    pub failed_requests_after: u64,
}

/// The events the run's watch saw, each with the requests that failed after it
/// (`failed_total` of the whole run minus the count at the last tick before it), and
/// the warning naming it. `failed_by_second` holds the failed requests so far at each
/// second of the run.
pub(crate) fn service_events(
    events: &[WatchEvent],
    t0: Instant,
    failed_by_second: &[(Duration, u64)],
    failed_total: u64,
) -> Vec<(ServiceEvent, String)> {
    events
        .iter()
        .map(|event| {
            let at = event.at.saturating_duration_since(t0);
            // The count at the last tick before the event: the failures in the second
            // the service died belong to it.
            let before = failed_by_second
                .iter()
                .take_while(|(t, _)| *t <= at)
                .last()
                .map_or(0, |(_, n)| *n);
            let after = failed_total.saturating_sub(before);
            let warning = format!(
                "service {} {} at {:.1}s; {after} requests failed after it",
                event.service,
                event.what,
                at.as_secs_f64()
            );
            let noted = ServiceEvent {
                service: event.service.clone(),
                what: event.what.clone(),
                at_s: at.as_secs_f64(),
                failed_requests_after: after,
            };
            (noted, warning)
        })
        .collect()
}
