//! The coordinator as its run sees it: a [`Remote`] that runs no VUs, holds the start
//! line, stands in for each scenario's executor until every worker is done, writes its
//! workers' live counts into the run's, and adds the workers to the summary.

use super::hub::Hub;
use super::start_line::relay_stops;
use crate::distributed::protocol::ScenarioCounts;
use crate::executor::{ExecutorReport, ScenarioCtx, StageReport};
use crate::metrics::summary::{stats_of, Stats};
use crate::metrics::Value;
use crate::plugin::state::HostServices;
use crate::run::remote::{BarrierCtx, Remote};
use crate::summary::workers::WorkerSummary;
use crate::summary::Summary;
use anyhow::Result;
use futures::future::BoxFuture;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

impl Remote for Hub {
    fn runs_vus_here(&self) -> bool {
        false
    }

    fn barrier(&self, ctx: BarrierCtx) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let control = ctx.control.clone();
            self.start_line(ctx).await?;
            // The `Arc<Hub>` is not at hand here: the task holds the senders instead.
            let senders: Vec<_> = self.lock().workers.iter().map(|w| w.tx.clone()).collect();
            tokio::spawn(relay_stops(control, senders));
            Ok(())
        })
    }

    fn scenario_done(&self, scenario: String) -> BoxFuture<'static, ExecutorReport> {
        let mut done = self.done.subscribe();
        let expected = self.expected as usize;
        let hub = self.this.upgrade();
        Box::pin(async move {
            let _ = done.wait_for(|n| *n >= expected).await;
            let Some(hub) = hub else {
                return ExecutorReport::default();
            };
            let state = hub.lock();
            let reports: Vec<_> = state.workers.iter().map(|w| &w.reports).collect();
            merge_reports(&reports, &scenario)
        })
    }

    fn before_tick(&self, contexts: &[Arc<ScenarioCtx>], services: &HostServices) {
        let state = self.lock();
        for ctx in contexts {
            let s = &ctx.stats;
            let sum = |f: fn(&ScenarioCounts) -> u64| -> u64 {
                state
                    .workers
                    .iter()
                    .flat_map(|w| w.counts.iter())
                    .filter(|c| c.name == ctx.config.name)
                    .map(f)
                    .sum()
            };
            s.active_vus.store(sum(|c| c.active_vus), Ordering::Relaxed);
            s.allocated_vus
                .store(sum(|c| c.allocated_vus), Ordering::Relaxed);
            s.started.set(sum(|c| c.started));
            s.completed.set(sum(|c| c.completed));
            s.failed.set(sum(|c| c.failed));
            s.interrupted.set(sum(|c| c.interrupted));
            s.dropped.store(sum(|c| c.dropped), Ordering::Relaxed);
        }
        let in_flight: i64 = state.workers.iter().map(|w| w.in_flight).sum();
        let ws_open: i64 = state.workers.iter().map(|w| w.ws_open).sum();
        services.net.in_flight.set(in_flight as u64);
        services.net.ws_open.store(ws_open, Ordering::Relaxed);
        if ws_open > 0 {
            services.net.ws_used.store(true, Ordering::Relaxed);
        }
        let sockets_open: i64 = state.workers.iter().map(|w| w.sockets_open).sum();
        services
            .net
            .sockets_open
            .store(sockets_open, Ordering::Relaxed);
        if sockets_open > 0 {
            services.net.sockets_used.store(true, Ordering::Relaxed);
        }
    }

    fn annotate(&self, summary: &mut Summary) {
        let state = self.lock();
        summary.workers = state
            .workers
            .iter()
            .map(|w| WorkerSummary {
                name: w.name.clone(),
                address: w.address.clone(),
                index: w.index,
                plugin_errors: w.errors.entries.iter().map(|e| e.count).sum::<u64>()
                    + w.errors.unlisted,
                segment: w.segment.clone(),
                http_reqs: w.http_reqs as u64,
                iterations: w.iterations as u64,
                dropped_iterations: w.dropped as u64,
                http_req_duration: match stats_of(
                    &Value::Trend(Box::new(w.duration.clone())),
                    Duration::from_secs_f64(summary.duration_s),
                    None,
                ) {
                    Stats::Trend(t) if t.count > 0 => Some(t),
                    _ => None,
                },
                lost_at_s: w.lost_at,
                lost: w.lost.clone(),
                http_reqs_not_merged: w.lost_at.and(w.not_merged),
            })
            .collect();
        summary.workers.sort_by_key(|w| w.index);
        // The workers' plugin failures, listed as one run's (with the coordinator's
        // own, from setup and teardown).
        let own = std::mem::take(&mut summary.plugin_errors);
        let mut parts = vec![(own.as_slice(), summary.plugin_errors_unlisted)];
        parts.extend(
            state
                .workers
                .iter()
                .map(|w| (w.errors.entries.as_slice(), w.errors.unlisted)),
        );
        (summary.plugin_errors, summary.plugin_errors_unlisted) = crate::vu::errors::merge(&parts);
        let lost: Vec<String> = state
            .workers
            .iter()
            .filter_map(|w| {
                let unreported = match w.not_merged {
                    Some(n) => format!(
                        "about {n} requests it made after its last report (its last rate over the silence) are not merged"
                    ),
                    None => "it was lost before its first report: what it did is not merged".into(),
                };
                Some(format!(
                    "worker {} ({}) was lost at {:.1}s: {}; the figures include what it reported until then; {unreported}",
                    w.name,
                    w.address,
                    w.lost_at?,
                    w.lost.as_deref()?
                ))
            })
            .collect();
        summary.warnings.extend(lost);
    }
}

/// A scenario's report over every worker that finished: stage targets and what was
/// reached added up (each worker ran its share of each stage).
fn merge_reports(workers: &[&Vec<(String, Vec<StageReport>)>], scenario: &str) -> ExecutorReport {
    let mut stages: Vec<StageReport> = Vec::new();
    for reports in workers {
        for (name, list) in reports.iter() {
            if name != scenario {
                continue;
            }
            if stages.len() < list.len() {
                stages.resize(list.len(), StageReport::default());
            }
            for (total, one) in stages.iter_mut().zip(list) {
                total.target += one.target;
                total.at_end += one.at_end;
                total.peak += one.peak;
            }
        }
    }
    ExecutorReport { stages }
}
