//! A run's resource watch: checks what to sample before the run, starts the sampler
//! with the run's clock, folds its samples at each aggregator tick (stats.jsonl, the
//! per-service figures, the saturation signals), and at the end writes stats.md and
//! hands back what summary.json's `stack`, `generator_saturated`, `target_saturated`
//! and `bottleneck` hold.

use super::book::{Series, StackSummary, StatsBook};
use super::docker::{self, ContainerTarget};
use super::files::{render_md, StatsJsonl};
use super::process::ProcessSource;
use super::sampler::{Message, Sampler, Sources};
use super::saturation::{RunFigures, Saturation, SaturationWatch};
use crate::config::SamplingOptions;
use crate::executor::ScenarioCtx;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a run will sample, checked before it starts.
pub(crate) struct Prepared {
    sources: Sources,
}

impl Prepared {
    /// Adds containers found another way (the stack a run started); one named already
    /// (`--sample-container`) is not sampled twice.
    pub(crate) fn add_containers(&mut self, containers: impl IntoIterator<Item = ContainerTarget>) {
        for c in containers {
            if !self.sources.containers.iter().any(|s| s.id == c.id) {
                self.sources.containers.push(c);
            }
        }
    }
}

/// Checks every target of `options` (containers running, processes alive) so a typo
/// fails before the run, not after it; the generator is always sampled.
pub(crate) async fn prepare(options: &SamplingOptions) -> Result<Prepared> {
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
pub(crate) struct ResourceWatch {
    sampler: Sampler,
    book: StatsBook,
    jsonl: StatsJsonl,
    saturation: SaturationWatch,
    interval_s: f64,
    dir: PathBuf,
}

impl ResourceWatch {
    /// Starts sampling; sample times count from `t0` (the run's start) and the files go
    /// to the results folder `dir`.
    pub(crate) fn start(
        prepared: Prepared,
        interval: Duration,
        t0: Instant,
        dir: &Path,
    ) -> Result<Self> {
        let path = dir.join("stats.jsonl");
        let jsonl = StatsJsonl::create(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Self {
            sampler: Sampler::start(prepared.sources, interval, t0)?,
            book: StatsBook::default(),
            jsonl,
            saturation: SaturationWatch::new(interval.as_secs_f64()),
            interval_s: interval.as_secs_f64(),
            dir: dir.to_path_buf(),
        })
    }

    /// Folds what was sampled since the last tick, and looks at the scenarios' drops.
    pub(crate) fn tick(&mut self, contexts: &[Arc<ScenarioCtx>]) {
        let messages = self.sampler.drain();
        self.fold(messages);
        self.saturation.tick(contexts);
    }

    /// Each sampled service's newest CPU and memory (the live dashboard's table).
    pub(crate) fn latest(&self) -> Vec<crate::sampling::book::Latest> {
        self.book.latest()
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
        self.jsonl.write(&samples);
    }

    /// Stops sampling, writes stats.md (headed `title`) and returns the figures for
    /// summary.json and the report; `run` holds the run's figures the verdict on who
    /// saturated reads (latency, start lag, counts). A stats.md that cannot be written
    /// is returned as a write failure, so a full disk loses no other file.
    pub(crate) fn finish(
        mut self,
        contexts: &[Arc<ScenarioCtx>],
        title: &str,
        run: &RunFigures,
    ) -> Sampled {
        let rest = self.sampler.stop();
        self.fold(rest);
        self.saturation.tick(contexts);
        let verdict = self.saturation.verdict(run);
        let stack = self.book.summary(self.interval_s);
        let text = render_md(title, &stack, verdict.warning().as_deref());
        let write_failure = crate::files::write_whole(&self.dir, "stats.md", text.as_bytes())
            .err()
            .map(|e| crate::files::WriteFailure {
                file: "stats.md".into(),
                error: e.to_string(),
            });
        Sampled {
            stack,
            verdict,
            series: self.book.series(),
            write_failure,
            warnings: self.jsonl.warning().into_iter().collect(),
        }
    }
}

/// What a run's sampling found.
pub(crate) struct Sampled {
    /// summary.json's `stack` section.
    pub stack: StackSummary,
    /// Who was the bottleneck: the generator, the target or neither.
    pub verdict: Saturation,
    /// Per-service chart points for the report.
    pub series: Vec<(String, Series)>,
    /// stats.md, when it could not be written.
    pub write_failure: Option<crate::files::WriteFailure>,
    /// For the summary: stats.jsonl writes that failed during the run.
    pub warnings: Vec<String>,
}
