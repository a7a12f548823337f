//! Progress while a run goes on: one plain line per second on stderr per scenario
//! (elapsed, VUs, iteration rate, p95 of requests, errors, drops).

use crate::executor::ScenarioCtx;
use crate::metrics::{builtin, Registry, SeriesMap, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Prints progress lines unless quiet.
pub struct Progress {
    quiet: bool,
    total: Duration,
    last_completed: Vec<u64>,
}

impl Progress {
    /// Progress for a run expected to last at most `total`.
    pub fn new(quiet: bool, total: Duration) -> Self {
        Self {
            quiet,
            total,
            last_completed: Vec::new(),
        }
    }

    /// Prints one line per scenario for the tick that just ended.
    pub fn tick(
        &mut self,
        elapsed: Duration,
        contexts: &[Arc<ScenarioCtx>],
        interval: &SeriesMap,
        _registry: &Registry,
    ) {
        if self.last_completed.len() != contexts.len() {
            self.last_completed = vec![0; contexts.len()];
        }
        let mut p95 = crate::metrics::value::new_histogram();
        for ((id, _), value) in interval {
            if *id == builtin::HTTP_REQ_DURATION {
                if let Value::Trend(h) = value {
                    let _ = p95.add(&**h);
                }
            }
        }
        for (i, ctx) in contexts.iter().enumerate() {
            let stats = &ctx.stats;
            let completed = stats.completed.load(Ordering::Relaxed);
            let rate = completed - self.last_completed[i];
            self.last_completed[i] = completed;
            if self.quiet {
                continue;
            }
            let p95_text = if p95.is_empty() {
                "-".to_string()
            } else {
                format!("{:.2}ms", p95.value_at_quantile(0.95) as f64 / 1000.0)
            };
            eprintln!(
                "[{:>5.0}s/{:.0}s] {}: vus={} iterations={} ({}/s) http p95={} failed={} dropped={}",
                elapsed.as_secs_f64(),
                self.total.as_secs_f64(),
                ctx.config.name,
                stats.active_vus.load(Ordering::Relaxed),
                completed,
                rate,
                p95_text,
                stats.failed.load(Ordering::Relaxed),
                stats.dropped.load(Ordering::Relaxed),
            );
        }
    }
}
