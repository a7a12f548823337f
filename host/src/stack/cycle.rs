//! `host run PLUGIN --stack [FILE]`: the whole cycle. Up, wait until ready, run with
//! `BASE_URL` and the allowlist set to the stack's entry URLs only, then down (unless
//! kept) whatever happened: a finished run, Ctrl-C, a crossed threshold, a plugin
//! abort, a dead service or a host error.

use super::session::{Purpose, StackSession, Start};
use super::up::{StackFlags, UpOptions};
use super::watch::ServiceWatch;
use crate::config::{stack as stack_config, StackConfig};
use crate::control::Watch;
use crate::run::{self, RunOutcome, RunRequest};
use anyhow::{anyhow, Result};
use std::sync::Arc;

/// What `run --stack` adds to a run.
#[derive(Debug, Clone, Default)]
pub struct StackRun {
    /// File, project, cores and memory from the command line.
    pub flags: StackFlags,
    /// `--keep`: leave the stack running afterwards.
    pub keep: bool,
}

/// Brings the stack up, runs `request` against it, and takes it down.
pub async fn run_with_stack(mut request: RunRequest, stack_run: StackRun) -> Result<RunOutcome> {
    let files = request.config_files();
    let config = if files.is_empty() {
        StackConfig::default()
    } else {
        crate::config::layers::read(&files)
            .and_then(|layered| stack_config::parse(&layered))
            .map_err(|e| anyhow!("config error: {e}"))?
    };
    let options = UpOptions::resolve(&stack_run.flags, &config)?;
    let keep = stack_run.keep || config.keep;
    let session = match StackSession::start(&options, keep, Purpose::Run).await? {
        Start::Ready(session) => session,
        Start::Interrupted => {
            return Err(anyhow!(
                "interrupted before the run started; nothing was measured"
            ))
        }
    };
    session.entry(&options.file, request.quiet).await?;
    let stack = session.stack();
    // The plugin runs against this stack and nothing else.
    super::entry::point_run_at(&stack.entry_urls, &mut request.overrides);
    // `[stack] stats_interval` is the sampling interval of such a run; the command
    // line's `--stats-interval` still wins.
    if request.overrides.stats_interval.is_none() {
        request.overrides.stats_interval = config.stats_interval;
    }

    let watch = match super::engine::connect().await {
        Ok(docker) => Arc::new(ServiceWatch::new(
            docker,
            &stack.project,
            config.on_service_exit,
            &stack.containers,
        )),
        Err(e) => {
            super::up::down_quietly(&stack.project).await;
            return Err(e);
        }
    };
    request.watch = Some(Watch(watch.clone()));
    let outcome = run::run(request).await;
    // Stopped first, so the teardown is not taken for services dying.
    watch.stop();
    session.end().await;
    outcome
}
