//! `host sweep --stack`: the Compose stack comes up once and stays up across the
//! levels; each level runs against its entry URLs only and samples its containers,
//! so the stats are cut per level (each level is a run with its own `stack` section).
//! The stack is removed at the end (unless kept), whatever ended the sweep.

use crate::config::{stack as stack_config, Overrides, StackConfig};
use crate::stack::session::{Purpose, StackSession, Start};
use crate::stack::up::{StackFlags, UpOptions};
use anyhow::{anyhow, Result};
use std::path::Path;

/// Brings the stack up for a sweep and points `overrides` at it: `BASE_URL` (and
/// `BASE_URL_<SERVICE>`) set, the entry URLs the only targets allowed, every container
/// sampled. The session is ended by the sweep, whatever ends it.
pub(crate) async fn up(
    flags: &StackFlags,
    config: Option<&Path>,
    keep: bool,
    overrides: &mut Overrides,
) -> Result<StackSession> {
    let stack_config = match config {
        Some(path) => stack_config::from_file(path).map_err(|e| anyhow!("config error: {e}"))?,
        None => StackConfig::default(),
    };
    let options = UpOptions::resolve(flags, &stack_config)?;
    let keep = keep || stack_config.keep;
    let session = match StackSession::start(&options, keep, Purpose::Sweep).await? {
        Start::Ready(session) => session,
        Start::Interrupted => {
            return Err(anyhow!(
                "interrupted before the sweep started; nothing was measured"
            ))
        }
    };
    session.entry(&options.file, false).await?;
    let stack = session.stack();
    crate::stack::entry::point_run_at(&stack.entry_urls, overrides);
    overrides
        .sample_containers
        .extend(stack.containers.iter().map(|c| c.name.clone()));
    Ok(session)
}
