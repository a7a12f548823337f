//! The run's gauges (VUs, VUs allocated, requests in flight, open WebSockets and raw
//! sockets), sampled
//! between the ticks: half-way through each second, and once more before the last.

use crate::executor::ScenarioCtx;
use crate::metrics::{builtin, TagSet};
use crate::plugin::state::HostServices;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Records each gauge's value now.
pub(super) fn sample_gauges(services: &HostServices, contexts: &[Arc<ScenarioCtx>]) {
    let recorder = &services.recorder;
    let none = TagSet::empty();
    let active: u64 = contexts
        .iter()
        .map(|c| c.stats.active_vus.load(Ordering::Relaxed))
        .sum();
    let allocated: u64 = contexts
        .iter()
        .map(|c| c.stats.allocated_vus.load(Ordering::Relaxed))
        .sum();
    recorder.gauge(builtin::VUS, &none, active as f64);
    recorder.gauge(builtin::VUS_MAX, &none, allocated as f64);
    recorder.gauge(
        builtin::HTTP_REQS_IN_FLIGHT,
        &none,
        services.net.in_flight.get_signed().max(0) as f64,
    );
    if services.net.ws_used.load(Ordering::Relaxed) {
        let open = services.net.ws_open.load(Ordering::Relaxed).max(0);
        recorder.gauge(builtin::WS_SOCKETS_OPEN, &none, open as f64);
    }
    if services.net.sockets_used.load(Ordering::Relaxed) {
        let open = services.net.sockets_open.load(Ordering::Relaxed).max(0);
        recorder.gauge(builtin::SOCKETS_OPEN, &none, open as f64);
    }
}
