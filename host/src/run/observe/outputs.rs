//! The observers that keep or show the run's figures: the results folder, the sampled
//! resources, the progress display and the live outputs.

use super::observer::{Ending, Observer, Scope};
use crate::executor::ExecutorReport;
use crate::live::{Live, ServiceNow};
use crate::metrics::Second;
use crate::output::ResultsWriter;
use crate::run::progress::Progress;
use crate::sampling::ResourceWatch;
use crate::summary::Summary;
use futures::future::BoxFuture;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The outputs a run writes and shows, made before its start.
pub(crate) struct Outputs {
    /// The results folder's files.
    pub results: ResultsWriter,
    /// The target's and the generator's resources, sampled off the hot path.
    pub resources: ResourceWatch,
    /// The progress display.
    pub progress: Progress,
    /// The dashboard and streaming outputs.
    pub live: Live,
}

/// The sampled services' newest figures, from the resource sampling to the live
/// outputs, which show them beside the run's.
type Latest = Arc<Mutex<Vec<ServiceNow>>>;

impl Outputs {
    /// Adds them to `set` in the order of their effects: the sampled resources before
    /// the results (whose report charts them), the results before the live outputs
    /// (whose dashboard links to them).
    pub(super) fn into_observers(self, set: &mut Vec<Box<dyn Observer>>) {
        // Nothing to watch with: the live outputs are left out, and nobody asks the
        // sampling for its newest figures each second.
        let live = (!self.live.is_empty()).then_some(self.live);
        let latest = live.as_ref().map(|_| Latest::default());
        set.push(Box::new(Resources {
            watch: Some(self.resources),
            latest: latest.clone(),
        }));
        set.push(Box::new(Results(Some(self.results))));
        set.push(Box::new(self.progress));
        if let (Some(live), Some(latest)) = (live, latest) {
            set.push(Box::new(LiveOutputs {
                live: Some(live),
                latest,
            }));
        }
    }
}

/// The sampled resources: folded each second, summed up at the end into the
/// summary's `stack`, the saturation verdict and `stats.md`.
struct Resources {
    watch: Option<ResourceWatch>,
    latest: Option<Latest>,
}

impl Observer for Resources {
    fn tick(&mut self, scope: &Scope<'_>, _second: &Second<'_>) {
        let Some(watch) = &mut self.watch else { return };
        watch.tick(scope.contexts);
        if let Some(latest) = &self.latest {
            *latest.lock().unwrap_or_else(PoisonError::into_inner) = watch.latest();
        }
    }

    fn annotate(&mut self, summary: &mut Summary, end: &mut Ending<'_>) {
        let Some(watch) = self.watch.take() else {
            return;
        };
        let title = format!(
            "{} {}, started {}",
            summary.plugin.name, summary.plugin.version, summary.started_at
        );
        let figures = summary.figures();
        let mut sampled = watch.finish(end.scope.contexts, &title, &figures);
        end.failures.extend(sampled.write_failure.take());
        if let Some(warning) = sampled.verdict.warning() {
            summary.warnings.push(warning);
        }
        summary.stack = Some(sampled.stack);
        summary.generator_saturated = sampled.verdict.generator;
        summary.target_saturated = sampled.verdict.target;
        summary.bottleneck = sampled.verdict.bottleneck;
        end.service_series = sampled.series;
        summary.warnings.append(&mut sampled.warnings);
    }
}

/// The results folder: a line per second in its files, the summary's files at the end.
struct Results(Option<ResultsWriter>);

impl Observer for Results {
    fn tick(&mut self, _scope: &Scope<'_>, second: &Second<'_>) {
        if let Some(results) = &mut self.0 {
            results.tick(second);
        }
    }

    fn last_tick(
        &mut self,
        scope: &Scope<'_>,
        second: &Second<'_>,
        _reports: &BTreeMap<String, ExecutorReport>,
    ) {
        self.tick(scope, second);
    }

    fn annotate(&mut self, summary: &mut Summary, _end: &mut Ending<'_>) {
        if let Some(results) = &self.0 {
            summary.warnings.extend(results.warnings());
        }
    }

    fn finish(&mut self, summary: &Summary, end: &mut Ending<'_>) {
        let Some(mut results) = self.0.take() else {
            return;
        };
        results.set_services(std::mem::take(&mut end.service_series));
        let written = results.finish(summary);
        // The results' own files are listed first, before what others failed to write.
        let others = std::mem::replace(&mut end.failures, written.failures);
        end.failures.extend(others);
        end.results_dir = written.dir;
    }
}

impl Observer for Progress {
    fn tick(&mut self, scope: &Scope<'_>, second: &Second<'_>) {
        Progress::tick(self, second.elapsed, scope.contexts, second.interval);
    }

    fn stopped(&mut self) {
        self.finish();
    }
}

/// The dashboard and the streaming outputs (`--dashboard`, `--out`).
struct LiveOutputs {
    /// Taken by [`Observer::close`].
    live: Option<Live>,
    latest: Latest,
}

impl LiveOutputs {
    fn hand(&mut self, scope: &Scope<'_>, second: &Second<'_>) {
        let Some(live) = &mut self.live else { return };
        let services = self
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        live.tick(second, scope.thresholds, services);
    }
}

impl Observer for LiveOutputs {
    fn tick(&mut self, scope: &Scope<'_>, second: &Second<'_>) {
        self.hand(scope, second);
    }

    fn last_tick(
        &mut self,
        scope: &Scope<'_>,
        second: &Second<'_>,
        _reports: &BTreeMap<String, ExecutorReport>,
    ) {
        self.hand(scope, second);
    }

    fn finish(&mut self, summary: &Summary, end: &mut Ending<'_>) {
        if let Some(live) = &mut self.live {
            live.finish(summary, &end.results_dir);
        }
    }

    fn close(mut self: Box<Self>) -> BoxFuture<'static, ()> {
        let live = self.live.take();
        Box::pin(async move {
            if let Some(live) = live {
                live.close().await;
            }
        })
    }
}
