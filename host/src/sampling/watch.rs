//! A run's resource watch: checks what to sample before the run, starts the sampler
//! with the run's clock, folds its samples at each aggregator tick (stats.jsonl, the
//! per-service figures, the saturation signals), and at the end writes stats.md and
//! fills summary.json's `stack` and `generator_saturated`.

use super::book::{Series, StatsBook};
use super::docker::{self, ContainerTarget};
use super::files::{render_md, StatsJsonl};
use super::process::ProcessSource;
use super::sampler::{Message, Sampler, Sources};
use super::saturation::SaturationWatch;
use crate::config::SamplingOptions;
use crate::executor::ScenarioCtx;
use crate::metrics::summary::Stats;
use crate::run::summary::Summary;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a run will sample, checked before it starts.
pub struct Prepared {
    sources: Sources,
}

impl Prepared {
    /// Adds containers found another way (the stack a run started).
    pub fn add_containers(&mut self, containers: impl IntoIterator<Item = ContainerTarget>) {
        self.sources.containers.extend(containers);
    }
}

/// Checks every target of `options` (containers running, processes alive) so a typo
/// fails before the run, not after it; the generator is always sampled.
pub async fn prepare(options: &SamplingOptions) -> Result<Prepared> {
    let mut sources = Sources::default();
    sources.processes.push(ProcessSource::generator()?);
    for p in &options.pids {
        sources
            .processes
            .push(ProcessSource::pid(p.pid, p.service.clone())?);
    }
    if !options.containers.is_empty() {
        let client = docker::connect().await?;
        for name in &options.containers {
            sources
                .containers
                .push(docker::inspect(&client, name).await?);
        }
    }
    Ok(Prepared { sources })
}

/// The sampler of a running run and what it gathered so far.
pub struct ResourceWatch {
    sampler: Sampler,
    book: StatsBook,
    jsonl: Option<StatsJsonl>,
    saturation: SaturationWatch,
    interval_s: f64,
    dir: PathBuf,
}

impl ResourceWatch {
    /// Starts sampling; sample times count from `t0` (the run's start) and the files go
    /// to the results folder `dir`.
    pub fn start(prepared: Prepared, interval: Duration, t0: Instant, dir: &Path) -> Result<Self> {
        let path = dir.join("stats.jsonl");
        let jsonl = StatsJsonl::create(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Self {
            sampler: Sampler::start(prepared.sources, interval, t0)?,
            book: StatsBook::default(),
            jsonl: Some(jsonl),
            saturation: SaturationWatch::new(interval.as_secs_f64()),
            interval_s: interval.as_secs_f64(),
            dir: dir.to_path_buf(),
        })
    }

    /// Folds what was sampled since the last tick, and looks at the scenarios' drops.
    pub fn tick(&mut self, contexts: &[Arc<ScenarioCtx>]) {
        let messages = self.sampler.drain();
        self.fold(messages);
        self.saturation.tick(contexts);
    }

    fn fold(&mut self, messages: Vec<Message>) {
        let mut samples = Vec::new();
        for m in &messages {
            match m {
                Message::Sample(s) => {
                    if s.service == "generator" && s.source == "self" {
                        self.saturation.generator(s);
                    }
                    self.book.add(s);
                    samples.push(s);
                }
                Message::Ended {
                    service,
                    source,
                    t,
                    why,
                } => {
                    eprintln!(
                        "warning: sampling of {service} ({source}) stopped at {t:.1} s: {why}"
                    );
                    self.book.ended(service, source, *t, why);
                }
            }
        }
        if let Some(w) = &mut self.jsonl {
            if let Err(e) = w.write(&samples) {
                eprintln!("warning: stats.jsonl is no longer written: {e}");
                self.jsonl = None;
            }
        }
    }

    /// Stops sampling, then fills `summary` (`stack`, `generator_saturated`, and a
    /// warning when the generator was the bottleneck) and writes stats.md. Returns the
    /// per-service chart points for the report.
    pub fn finish(
        mut self,
        contexts: &[Arc<ScenarioCtx>],
        summary: &mut Summary,
    ) -> Result<Vec<(String, Series)>> {
        let rest = self.sampler.stop();
        self.fold(rest);
        self.saturation.tick(contexts);
        let start_lag_p99 =
            summary
                .metrics
                .get("iteration_start_lag")
                .and_then(|m| match &m.stats {
                    Stats::Trend(t) if t.count > 0 => Some(t.p99),
                    _ => None,
                });
        let verdict = self.saturation.verdict(start_lag_p99);
        let warning = verdict.warning();
        let stack = self.book.summary(self.interval_s);
        let title = format!(
            "{} {}, started {}",
            summary.plugin.name, summary.plugin.version, summary.started_at
        );
        let path = self.dir.join("stats.md");
        std::fs::write(&path, render_md(&title, &stack, warning.as_deref()))
            .with_context(|| format!("cannot write {}", path.display()))?;
        if let Some(w) = warning {
            summary.warnings.push(w);
        }
        summary.stack = Some(stack);
        summary.generator_saturated = verdict;
        Ok(self.book.series())
    }
}
