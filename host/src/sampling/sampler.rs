//! The sampler: a thread of its own with a one-thread runtime, so reading stats never
//! takes a turn on the workers that run VUs. It holds one streaming stats call per
//! container and reads processes from /proc every interval, and hands what it read to
//! whoever drains it (the run loop once a second, or `host stats`).

use super::docker::{self, ContainerTarget};
use super::process::ProcessSource;
pub(crate) use super::sample::Message;
use anyhow::{Context, Result};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{self, Receiver, Sender};
use tokio::sync::oneshot;

/// Samples held for the drainer at most; past that (a run loop stalled for minutes)
/// new ones are dropped rather than held without bound.
const CHANNEL: usize = 4096;

/// What to sample.
#[derive(Default)]
pub(crate) struct Sources {
    /// Containers, each read through its own stats stream.
    pub containers: Vec<ContainerTarget>,
    /// Processes (and the generator itself), read from /proc.
    pub processes: Vec<ProcessSource>,
}

/// A running sampler.
pub(crate) struct Sampler {
    rx: Receiver<Message>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling `sources` every `interval`; sample times count from `t0`.
    pub(crate) fn start(sources: Sources, interval: Duration, t0: Instant) -> Result<Sampler> {
        let (tx, rx) = mpsc::channel(CHANNEL);
        let (stop, stopped) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the sampler's runtime")?;
        let thread = std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        _ = stopped => {}
                        _ = sample_all(sources, interval, t0, tx) => {}
                    }
                });
            })
            .context("cannot start the sampler thread")?;
        Ok(Sampler {
            rx,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Everything sampled since the last call.
    pub(crate) fn drain(&mut self) -> Vec<Message> {
        let mut out = Vec::new();
        while let Ok(m) = self.rx.try_recv() {
            out.push(m);
        }
        out
    }

    /// Stops sampling and returns what was sampled but not yet drained.
    pub(crate) fn stop(&mut self) -> Vec<Message> {
        self.shut_down();
        self.drain()
    }

    fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.shut_down();
    }
}

async fn sample_all(sources: Sources, interval: Duration, t0: Instant, tx: Sender<Message>) {
    let mut tasks = tokio::task::JoinSet::new();
    if !sources.containers.is_empty() {
        // The client is made on this thread's runtime: its connections live here.
        match docker::connect().await {
            Ok(client) => {
                for target in sources.containers {
                    tasks.spawn(docker::stream(
                        client.clone(),
                        target,
                        interval,
                        t0,
                        tx.clone(),
                    ));
                }
            }
            Err(e) => {
                for target in sources.containers {
                    let _ = tx
                        .send(Message::Ended {
                            service: target.service,
                            source: target.name,
                            t: t0.elapsed().as_secs_f64(),
                            why: format!("{e:#}"),
                        })
                        .await;
                }
            }
        }
    }
    if !sources.processes.is_empty() {
        tasks.spawn(read_processes(sources.processes, interval, t0, tx));
    }
    while tasks.join_next().await.is_some() {}
}

/// Reads every process each interval; one that exits is reported once and dropped.
async fn read_processes(
    mut processes: Vec<ProcessSource>,
    interval: Duration,
    t0: Instant,
    tx: Sender<Message>,
) {
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !processes.is_empty() {
        tick.tick().await;
        let t = t0.elapsed().as_secs_f64();
        let mut ended = Vec::new();
        for (i, p) in processes.iter_mut().enumerate() {
            match p.sample(t) {
                Ok(Some(sample)) => {
                    // Full: the drainer stalled; a lost sample beats unbounded memory.
                    let _ = tx.try_send(Message::Sample(sample));
                }
                Ok(None) => {}
                Err(e) => {
                    ended.push(i);
                    let _ = tx.try_send(Message::Ended {
                        service: p.service.clone(),
                        source: p.source().to_string(),
                        t,
                        why: e.to_string(),
                    });
                }
            }
        }
        for i in ended.into_iter().rev() {
            processes.remove(i);
        }
        if tx.is_closed() {
            return;
        }
    }
}
