//! `host sweep --stack`: the Compose stack comes up once and stays up across the
//! levels; each level runs against its entry URLs only and samples its containers,
//! so the stats are cut per level (each level is a run with its own `stack` section).
//! The stack is removed at the end (unless kept), whatever ended the sweep.

use crate::config::{stack as stack_config, Overrides, StackConfig};
use crate::stack::up::{self, StackFlags, UpOptions};
use anyhow::{anyhow, Result};
use std::path::Path;

/// A stack brought up for a sweep.
pub(crate) struct SweepStack {
    project: String,
    keep: bool,
    /// The project's lock, held until the sweep ends.
    claim: std::sync::Arc<crate::stack::claim::Claim>,
}

impl SweepStack {
    /// Brings the stack up and points `overrides` at it: `BASE_URL` (and
    /// `BASE_URL_<SERVICE>`) set, the entry URLs the only targets allowed, every
    /// container sampled.
    pub(crate) async fn up(
        flags: &StackFlags,
        config: Option<&Path>,
        keep: bool,
        overrides: &mut Overrides,
    ) -> Result<SweepStack> {
        let stack_config = match config {
            Some(path) => {
                stack_config::from_file(path).map_err(|e| anyhow!("config error: {e}"))?
            }
            None => StackConfig::default(),
        };
        let options = UpOptions::resolve(flags, &stack_config)?;
        let keep = keep || stack_config.keep;
        let stack = tokio::select! {
            stack = up::up(&options) => stack?,
            _ = crate::signals::next() => {
                eprintln!("interrupted while starting: removing project {}", options.project);
                up::down_quietly(&options.project).await;
                return Err(anyhow!("interrupted before the sweep started; nothing was measured"));
            }
        };
        let this = SweepStack {
            project: stack.project.clone(),
            keep,
            claim: stack.claim(),
        };
        let Some(entry) = stack.entry_urls.first() else {
            this.down().await;
            return Err(anyhow!(
                "no service of {} publishes a port, so the plugin could reach nothing; \
                 publish the entry service's port on 127.0.0.1 (ports: [\"127.0.0.1::8080\"])",
                options.file.display()
            ));
        };
        eprintln!(
            "sweep: stack {} ready in {:.1}s; BASE_URL={}",
            stack.project,
            stack.took.as_secs_f64(),
            entry.url
        );
        crate::stack::entry::point_run_at(&stack.entry_urls, overrides);
        overrides
            .sample_containers
            .extend(stack.containers.iter().map(|c| c.name.clone()));
        Ok(this)
    }

    /// Removes the stack, unless it is to be kept.
    pub(crate) async fn down(self) {
        if self.keep {
            self.claim.mark_kept();
            eprintln!(
                "stack {} kept running; remove it with: host down --project {}",
                self.project, self.project
            );
            return;
        }
        match up::down(&self.project).await {
            Ok(removed) => eprintln!(
                "stack {} removed ({})",
                self.project,
                up::describe_removed(&removed)
            ),
            Err(e) => eprintln!(
                "warning: could not remove the stack {}: {e:#}",
                self.project
            ),
        }
    }
}
