//! The observers that take part from beside the run: its role in a distributed run
//! (a coordinator folds its workers' seconds, a worker sends its own) and the stack's
//! watch over its services.

use super::observer::{Ending, Observer, Scope};
use crate::control::Watch;
use crate::executor::ExecutorReport;
use crate::metrics::Second;
use crate::run::remote::Remote;
use crate::summary::Summary;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The run's part in a distributed run, through its [`Remote`](crate::run::remote::Remote).
pub(super) struct RemoteObserver(Arc<dyn Remote>);

impl RemoteObserver {
    /// Observes for `role`.
    pub(super) fn new(role: Arc<dyn Remote>) -> Self {
        Self(role)
    }
}

impl Observer for RemoteObserver {
    fn before_tick(&mut self, scope: &Scope<'_>) {
        self.0.before_tick(scope.contexts, scope.services);
    }

    fn tick(&mut self, scope: &Scope<'_>, second: &Second<'_>) {
        self.0.tick(scope, second);
    }

    fn last_tick(
        &mut self,
        scope: &Scope<'_>,
        second: &Second<'_>,
        reports: &BTreeMap<String, ExecutorReport>,
    ) {
        self.0.finished(scope, second, reports);
    }

    fn annotate(&mut self, summary: &mut Summary, _end: &mut Ending<'_>) {
        self.0.annotate(summary);
    }
}

/// The stack's watch over its services (`run --stack`): told when the run starts, and
/// asked at the end what it saw, with the failed requests counted after each event.
pub(super) struct WatchObserver {
    watch: Watch,
    /// The failed requests so far at each second.
    failed_by_second: Vec<(Duration, u64)>,
}

impl WatchObserver {
    /// Observes for `watch`.
    pub(super) fn new(watch: Watch) -> Self {
        Self {
            watch,
            failed_by_second: Vec::new(),
        }
    }
}

impl Observer for WatchObserver {
    fn start(&mut self, scope: &Scope<'_>) {
        self.watch.0.started(scope.t0, scope.control.clone());
    }

    fn tick(&mut self, _scope: &Scope<'_>, second: &Second<'_>) {
        let failed = crate::summary::http_counts(second.totals.totals(), 0).failed;
        self.failed_by_second.push((second.elapsed, failed));
    }

    fn annotate(&mut self, summary: &mut Summary, end: &mut Ending<'_>) {
        summary.note_service_events(&self.watch.0.events(), end.scope.t0, &self.failed_by_second);
    }
}
