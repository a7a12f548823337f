//! Progress while a run goes on, per scenario: elapsed of total, VUs, iterations per
//! second, p95 of requests, errors and drops. A live bar per scenario when stderr is a
//! terminal; one plain line per scenario per second otherwise (CI logs); nothing with
//! `--quiet`.

use crate::config::ExecutorConfig;
use crate::control::{RunControl, StopReason};
use crate::executor::ScenarioCtx;
use crate::metrics::{builtin, SeriesMap, Value};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Where progress goes.
enum Display {
    Quiet,
    Lines,
    Bars {
        multi: MultiProgress,
        bars: Vec<ProgressBar>,
    },
}

/// One scenario's figures for one tick.
struct Figures {
    elapsed: Duration,
    total: Duration,
    vus: u64,
    completed: u64,
    per_second: u64,
    p95_ms: Option<f64>,
    failed_iterations: u64,
    failed_requests: u64,
    dropped: u64,
}

impl Figures {
    fn text(&self) -> String {
        let p95 = match self.p95_ms {
            Some(ms) => format!("{ms:.2}ms"),
            None => "-".into(),
        };
        format!(
            "{:.0}s/{:.0}s vus={} iterations={} ({}/s) http p95={} errors={} http failed={} dropped={}",
            self.elapsed.as_secs_f64(),
            self.total.as_secs_f64(),
            self.vus,
            self.completed,
            self.per_second,
            p95,
            self.failed_iterations,
            self.failed_requests,
            self.dropped,
        )
    }
}

/// Shows progress unless quiet.
pub(crate) struct Progress {
    display: Display,
    total: Duration,
    last_completed: Vec<u64>,
    failed_requests: Vec<u64>,
    control: Option<Arc<RunControl>>,
    told_stop: bool,
}

impl Progress {
    /// Progress for a run expected to last at most `total`; bars when stderr is a
    /// terminal.
    pub(crate) fn new(quiet: bool, total: Duration) -> Self {
        let display = if quiet {
            Display::Quiet
        } else if std::io::stderr().is_terminal() {
            Display::Bars {
                multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
                bars: Vec::new(),
            }
        } else {
            Display::Lines
        };
        Self {
            display,
            total,
            last_completed: Vec::new(),
            failed_requests: Vec::new(),
            control: None,
            told_stop: false,
        }
    }

    /// Updates the display with the tick that just ended.
    pub(crate) fn tick(
        &mut self,
        elapsed: Duration,
        contexts: &[Arc<ScenarioCtx>],
        interval: &SeriesMap,
    ) {
        if self.control.is_none() {
            self.control = contexts.first().map(|c| c.control.clone());
        }
        self.tell_stop();
        if self.last_completed.len() != contexts.len() {
            self.last_completed = vec![0; contexts.len()];
            self.failed_requests = vec![0; contexts.len()];
        }
        for (i, ctx) in contexts.iter().enumerate() {
            let name = ctx.config.name.as_str();
            let mut p95 = crate::metrics::value::new_histogram();
            for ((id, tags), value) in interval {
                if tags.get("scenario") != Some(name) {
                    continue;
                }
                match (*id, value) {
                    (builtin::HTTP_REQ_DURATION, Value::Trend(h)) => {
                        let _ = p95.add(&**h);
                    }
                    (builtin::HTTP_REQ_FAILED, Value::Rate { hits, .. }) => {
                        self.failed_requests[i] += hits;
                    }
                    _ => {}
                }
            }
            let stats = &ctx.stats;
            let completed = stats.completed.get();
            let per_second = completed - self.last_completed[i];
            self.last_completed[i] = completed;
            // Scenario time: a scenario with a start_time counts from its own start.
            let total = match ctx.config.executor.duration() {
                d if d.is_zero() => self.total,
                d => d,
            };
            let figures = Figures {
                elapsed: elapsed.saturating_sub(ctx.config.start_time),
                total,
                vus: stats.active_vus.load(Ordering::Relaxed),
                completed,
                per_second,
                p95_ms: (!p95.is_empty()).then(|| p95.value_at_quantile(0.95) as f64 / 1000.0),
                failed_iterations: stats.failed.get(),
                failed_requests: self.failed_requests[i],
                dropped: stats.dropped.load(Ordering::Relaxed),
            };
            match &mut self.display {
                Display::Quiet => {}
                // Never blocks: a stderr nobody reads must not stall the run loop.
                Display::Lines => crate::stderr::line(format_args!("{name}: {}", figures.text())),
                Display::Bars { multi, bars } => {
                    while bars.len() <= i {
                        bars.push(new_bar(multi, contexts[bars.len()].config.name.as_str()));
                    }
                    let bar = &bars[i];
                    let (position, length) = bar_position(ctx, &figures);
                    bar.set_length(length.max(1));
                    bar.set_position(position.min(length));
                    bar.set_message(figures.text());
                }
            }
        }
    }

    /// Bars redraw over whatever else was printed to stderr, so why the run is stopping
    /// is said again above them, once.
    fn tell_stop(&mut self) {
        let Display::Bars { multi, .. } = &self.display else {
            return;
        };
        let Some(reason) = self.control.as_ref().and_then(|c| c.reason()) else {
            return;
        };
        if self.told_stop {
            return;
        }
        self.told_stop = true;
        let text = match reason {
            StopReason::Interrupted => {
                "stopping: running iterations get their graceful_stop to finish; press Ctrl-C again to stop at once".to_string()
            }
            StopReason::Threshold(why) => format!("stopping: threshold {why}"),
            StopReason::PluginAbort(why) => format!("stopping: {why}"),
            StopReason::ServiceExit(why)
            | StopReason::WorkerLost(why)
            | StopReason::Coordinator(why)
            | StopReason::CannotMeasure(why) => {
                format!("stopping: {why}")
            }
        };
        let _ = multi.println(text);
    }

    /// Leaves the bars as they last were, so the summary prints below them.
    pub(crate) fn finish(&mut self) {
        self.tell_stop();
        if let Display::Bars { bars, .. } = &self.display {
            for bar in bars {
                bar.abandon();
            }
        }
    }
}

fn new_bar(multi: &MultiProgress, name: &str) -> ProgressBar {
    let style = ProgressStyle::with_template("{prefix:>12.bold} [{bar:24.cyan/blue}] {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    multi.add(
        ProgressBar::new(1)
            .with_style(style)
            .with_prefix(name.to_string()),
    )
}

/// How far the scenario is: by iterations for iteration-count executors, by time for
/// the others.
fn bar_position(ctx: &ScenarioCtx, f: &Figures) -> (u64, u64) {
    match &ctx.config.executor {
        ExecutorConfig::SharedIterations { iterations, .. } => (f.completed, *iterations),
        ExecutorConfig::PerVuIterations {
            vus, iterations, ..
        } => (f.completed, vus * iterations),
        _ => (f.elapsed.as_millis() as u64, f.total.as_millis() as u64),
    }
}
