//! The start line: the coordinator waits for its workers to join, hands each one the
//! plugin, the config, its segment and `setup()`'s data, waits for every one to be
//! ready, and starts them all at one instant.

use super::hub::{Hub, RunParts, Slot, State, Status};
use super::StoppedBeforeStart;
use crate::control::RunControl;
use crate::distributed::protocol::{CoordMsg, Init};
use crate::distributed::{segments, PREPARE_TIMEOUT, START_DELAY};
use crate::run::remote::BarrierCtx;
use anyhow::{anyhow, bail, Result};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

impl Hub {
    /// Waits until `ready(state)` holds, or fails with what `check` finds wrong.
    async fn wait_until(
        &self,
        control: &RunControl,
        timeout: Duration,
        mut check: impl FnMut(&State) -> Result<bool>,
        waiting_for: impl Fn(&State) -> String,
    ) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if check(&self.lock())? {
                return Ok(());
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = control.stop.cancelled() => {
                    let reason = control
                        .reason()
                        .map(|r| r.to_string())
                        .unwrap_or_else(|| "stopped".into());
                    // Before the stop: the workers leave on it.
                    let waiting = waiting_for(&self.lock());
                    self.broadcast(CoordMsg::Stop { reason: reason.clone(), hard: true });
                    // The writers are tasks of this runtime: give them a moment to pass
                    // the stop on before the process leaves.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    return Err(StoppedBeforeStart { reason, waiting }.into());
                }
                _ = tokio::time::sleep_until(deadline) => {
                    bail!(
                        "gave up after {}s waiting for {} ([distributed] join_timeout)",
                        timeout.as_secs(),
                        waiting_for(&self.lock())
                    )
                }
            }
        }
    }

    pub(super) async fn start_line(&self, ctx: BarrierCtx) -> Result<()> {
        let n = self.expected;
        let options = ctx.config.distributed.clone();
        let timeout = options.join_timeout;
        self.lock().run = Some(RunParts {
            control: ctx.control.clone(),
            services: ctx.services.clone(),
            on_loss: options.on_worker_loss,
        });
        let live = |s: &State| {
            s.workers
                .iter()
                .filter(|w| w.status != Status::Lost)
                .count()
        };
        self.wait_until(
            &ctx.control,
            timeout,
            |s| Ok(live(s) >= n as usize),
            |s| format!("workers: {} of {n} joined", live(s)),
        )
        .await?;
        let (source, data_files) = crate::distributed::data_files::pack(&ctx.config)?;
        let config_toml = toml::to_string(&source)
            .map_err(|e| anyhow!("cannot write the run config for the workers: {e}"))?;
        let sequence = segments::sequence(n);
        {
            let mut state = self.lock();
            state.closed = true;
            assign_indexes(&mut state.workers, n);
            for w in state.workers.iter_mut() {
                w.segment = segments::segment(w.index, n);
                let init = Init {
                    plugin_name: self.plugin_name.clone(),
                    plugin: self.plugin.clone(),
                    plugin_reference: self.plugin_reference.clone(),
                    plugin_sha256: self.sha256.clone(),
                    config_toml: config_toml.clone(),
                    segment: w.segment.clone(),
                    sequence: sequence.clone(),
                    setup_data: ctx.setup_data.to_string(),
                    index: w.index,
                    data_files: data_files.clone(),
                    verbose: self.verbose,
                };
                let _ = w.tx.send(CoordMsg::Init(init));
            }
        }
        crate::stderr::line(format_args!(
            "coordinator: {n} worker(s) joined; segments {sequence}"
        ));
        self.wait_until(
            &ctx.control,
            PREPARE_TIMEOUT,
            |s| {
                if let Some(w) = s.workers.iter().find(|w| w.failed.is_some()) {
                    bail!(
                        "worker {} ({}) could not prepare: {}",
                        w.name,
                        w.address,
                        w.failed.as_deref().unwrap_or_default()
                    );
                }
                if live(s) < n as usize {
                    bail!("a worker left before the start");
                }
                Ok(s.workers.iter().all(|w| w.status == Status::Ready))
            },
            |s| {
                let ready = s
                    .workers
                    .iter()
                    .filter(|w| w.status == Status::Ready)
                    .count();
                format!("workers to be ready: {ready} of {n}")
            },
        )
        .await?;
        let at = SystemTime::now() + START_DELAY;
        let at_unix_ms = at.duration_since(UNIX_EPOCH)?.as_millis() as u64;
        {
            let mut state = self.lock();
            state.t0 = Some(Instant::now() + START_DELAY);
            for w in &mut state.workers {
                w.status = Status::Running;
                let _ = w.tx.send(CoordMsg::Start { at_unix_ms });
            }
        }
        tokio::time::sleep(START_DELAY).await;
        Ok(())
    }
}

/// Gives every worker its index: the one it asked for, else the lowest free one in
/// join order (`join` has refused duplicates and indexes out of range).
fn assign_indexes(workers: &mut [Slot], n: u32) {
    let claimed: Vec<u32> = workers.iter().filter_map(|w| w.claimed).collect();
    let mut free = (0..n).filter(|i| !claimed.contains(i));
    for w in workers {
        w.index = match w.claimed {
            Some(i) => i,
            None => free.next().unwrap_or(0),
        };
    }
}

/// Passes the run's stop on to every worker: gracefully first, then at once on a hard
/// stop (a second Ctrl-C, or the graceful time over).
pub(super) async fn relay_stops(
    control: Arc<RunControl>,
    senders: Vec<mpsc::UnboundedSender<CoordMsg>>,
) {
    control.stop.cancelled().await;
    let reason = control
        .reason()
        .map(|r| r.to_string())
        .unwrap_or_else(|| "stopped".into());
    for tx in &senders {
        let _ = tx.send(CoordMsg::Stop {
            reason: reason.clone(),
            hard: false,
        });
    }
    control.hard_stop.cancelled().await;
    for tx in &senders {
        let _ = tx.send(CoordMsg::Stop {
            reason: reason.clone(),
            hard: true,
        });
    }
}
