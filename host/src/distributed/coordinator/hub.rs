//! The coordinator's state: the workers that joined, their segments and status, and
//! their seconds folded into the run's recorder as they come.

use super::refusal::{Lost, Refusal};
use crate::config::distributed::OnWorkerLoss;
use crate::control::{RunControl, StopReason};
use crate::distributed::protocol::{
    self, CoordMsg, Join, PluginErrors, ScenarioCounts, Tick, WorkerHello, WorkerMsg,
};
use crate::distributed::series;
use crate::distributed::trust::ClusterToken;
use crate::executor::StageReport;
use crate::metrics::value::new_histogram;
use crate::metrics::{builtin, Value};
use crate::plugin::state::HostServices;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{mpsc, watch, Notify};

/// The coordinator's state, shared by the run (through [`Remote`]) and the tasks that
/// talk to workers.
pub(super) struct Hub {
    /// Itself, for the futures that outlive a borrow (a scenario waiting for its end).
    pub(super) this: std::sync::Weak<Hub>,
    pub(super) expected: u32,
    pub(super) plugin_name: String,
    /// The component, or nothing when `plugin_reference` is set.
    pub(super) plugin: Vec<u8>,
    /// The registry reference (by digest) the workers pull the component from.
    pub(super) plugin_reference: Option<String>,
    pub(super) sha256: String,
    /// `-v`: the workers write their plugin `debug` log lines too.
    pub(super) verbose: bool,
    /// What each worker must prove it holds.
    pub(super) token: ClusterToken,
    /// The TLS side of every connection.
    pub(super) tls: tokio_rustls::TlsAcceptor,
    pub(super) state: Mutex<State>,
    /// Woken when a worker joins, gets ready, fails or is lost.
    pub(super) changed: Notify,
    /// Workers done since the start (finished or lost).
    pub(super) done: watch::Sender<usize>,
}

#[derive(Default)]
pub(super) struct State {
    /// Past the start line: no worker joins any more.
    pub(super) closed: bool,
    /// The common start.
    pub(super) t0: Option<Instant>,
    pub(super) workers: Vec<Slot>,
    pub(super) run: Option<RunParts>,
    pub(super) next_id: u64,
}

/// What the tasks need of the run once it is at the start line.
pub(super) struct RunParts {
    pub(super) control: Arc<RunControl>,
    pub(super) services: Arc<HostServices>,
    pub(super) on_loss: OnWorkerLoss,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    Joined,
    Ready,
    Running,
    Finished,
    Lost,
}

/// One worker.
pub(super) struct Slot {
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) address: String,
    /// The index the worker asked for (`--index`, `JOB_COMPLETION_INDEX`).
    pub(super) claimed: Option<u32>,
    /// Its index in the run (from the start line): the segment it runs.
    pub(super) index: u32,
    pub(super) segment: String,
    pub(super) tx: mpsc::UnboundedSender<CoordMsg>,
    pub(super) status: Status,
    pub(super) failed: Option<String>,
    pub(super) counts: Vec<ScenarioCounts>,
    pub(super) in_flight: i64,
    pub(super) ws_open: i64,
    pub(super) sockets_open: i64,
    pub(super) reports: Vec<(String, Vec<StageReport>)>,
    pub(super) http_reqs: f64,
    pub(super) iterations: f64,
    pub(super) dropped: f64,
    pub(super) duration: hdrhistogram::Histogram<u64>,
    pub(super) lost_at: Option<f64>,
    pub(super) lost: Option<String>,
    /// Its plugin's failures, as last sent.
    pub(super) errors: PluginErrors,
    /// When its last tick came, and that tick's `elapsed_ms`.
    pub(super) last_tick: Option<(Instant, u64)>,
    /// Its requests per second in the interval of its last tick.
    pub(super) last_rate: f64,
    /// Lost after the start: about how many requests it made since its last tick
    /// (its last rate over the silence), which were never merged. `None` if it was
    /// lost before its first tick (no rate known).
    pub(super) not_merged: Option<u64>,
}

impl Hub {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a worker in, or refuses it with the reason.
    pub(super) fn join(
        &self,
        hello: &WorkerHello,
        join: &Join,
        address: SocketAddr,
        tx: mpsc::UnboundedSender<CoordMsg>,
    ) -> Result<u64, Refusal> {
        if hello.magic != protocol::MAGIC || hello.protocol != protocol::PROTOCOL_VERSION {
            return Err(Refusal::Protocol {
                theirs: hello.protocol,
                ours: protocol::PROTOCOL_VERSION,
            });
        }
        let ours = env!("CARGO_PKG_VERSION");
        if hello.host_version != ours {
            return Err(Refusal::HostVersion {
                theirs: hello.host_version.clone(),
                ours,
            });
        }
        if let Some(sha) = &join.plugin_sha256 {
            if *sha != self.sha256 {
                return Err(Refusal::Plugin {
                    theirs: sha.clone(),
                    plugin: self.plugin_name.clone(),
                    ours: self.sha256.clone(),
                });
            }
        }
        let mut state = self.lock();
        if state.closed {
            return Err(Refusal::Late);
        }
        let joined = state
            .workers
            .iter()
            .filter(|w| w.status != Status::Lost)
            .count();
        if joined >= self.expected as usize {
            return Err(Refusal::Full(self.expected));
        }
        if let Some(index) = join.index {
            if index >= self.expected {
                return Err(Refusal::IndexOutOfRange {
                    index,
                    expected: self.expected,
                });
            }
            if let Some(holder) = state.workers.iter().find(|w| w.claimed == Some(index)) {
                return Err(Refusal::IndexTaken {
                    index,
                    holder: holder.name.clone(),
                    address: holder.address.clone(),
                });
            }
        }
        state.next_id += 1;
        let id = state.next_id;
        state.workers.push(Slot {
            id,
            name: hello.name.clone(),
            address: address.to_string(),
            claimed: join.index,
            index: 0,
            segment: String::new(),
            tx,
            status: Status::Joined,
            failed: None,
            counts: Vec::new(),
            in_flight: 0,
            ws_open: 0,
            sockets_open: 0,
            reports: Vec::new(),
            http_reqs: 0.0,
            iterations: 0.0,
            dropped: 0.0,
            duration: new_histogram(),
            lost_at: None,
            lost: None,
            errors: PluginErrors::default(),
            last_tick: None,
            last_rate: 0.0,
            not_merged: None,
        });
        Ok(id)
    }

    /// Handles one message of worker `id`; an error loses the worker.
    pub(super) fn on_message(&self, id: u64, msg: WorkerMsg) -> Result<(), Lost> {
        match msg {
            WorkerMsg::Heartbeat => Ok(()),
            WorkerMsg::Ready => {
                self.with_slot(id, |w| {
                    if w.status == Status::Joined {
                        w.status = Status::Ready;
                    }
                });
                self.changed.notify_waiters();
                Ok(())
            }
            WorkerMsg::Failed(why) => {
                self.with_slot(id, |w| w.failed = Some(why.clone()));
                self.changed.notify_waiters();
                Err(Lost::Failed(why))
            }
            WorkerMsg::Tick(tick) => self.take_tick(id, tick),
            WorkerMsg::Final(last) => {
                self.take_tick(id, last.tick)?;
                let mut finished = false;
                self.with_slot(id, |w| {
                    w.reports = last.reports;
                    if w.status != Status::Lost {
                        w.status = Status::Finished;
                        finished = true;
                    }
                });
                if finished {
                    self.done.send_modify(|n| *n += 1);
                }
                Ok(())
            }
            WorkerMsg::Aborted(why) => {
                self.abort_for(id, &why);
                Ok(())
            }
            WorkerMsg::Hello(_) | WorkerMsg::Proof(_) | WorkerMsg::Join(_) => {
                Err(Lost::SecondHello)
            }
        }
    }

    /// Folds a worker's second into the run's recorder and its own figures.
    pub(super) fn take_tick(&self, id: u64, tick: Tick) -> Result<(), Lost> {
        let services = match &self.lock().run {
            Some(run) => run.services.clone(),
            None => return Err(Lost::EarlySamples),
        };
        let registry = services.recorder.registry().clone();
        let decoded = series::decode(tick.series, &registry).map_err(Lost::Garbage)?;
        let (mut reqs, mut iterations, mut dropped) = (0.0, 0.0, 0.0);
        let mut duration = new_histogram();
        for d in &decoded {
            match (&d.value, d.id) {
                (Value::Counter(n), builtin::HTTP_REQS) => reqs += n,
                (Value::Counter(n), builtin::ITERATIONS) => iterations += n,
                (Value::Counter(n), builtin::DROPPED_ITERATIONS) => dropped += n,
                (Value::Trend(h), builtin::HTTP_REQ_DURATION) => {
                    let _ = duration.add(&**h);
                }
                _ => {}
            }
        }
        series::absorb(&services.recorder, decoded);
        if !tick.log.is_empty() || tick.log_not_sent > 0 {
            self.relay_log(id, &services, tick.log, tick.log_not_sent);
        }
        self.with_slot(id, |w| {
            if let Some(errors) = tick.errors {
                w.errors = errors;
            }
            w.counts = tick.scenarios;
            w.in_flight = tick.in_flight;
            w.ws_open = tick.ws_open;
            w.sockets_open = tick.sockets_open;
            w.http_reqs += reqs;
            w.iterations += iterations;
            w.dropped += dropped;
            let _ = w.duration.add(&duration);
            let since = w.last_tick.map_or(0, |(_, ms)| ms);
            let interval_s = tick.elapsed_ms.saturating_sub(since) as f64 / 1000.0;
            if interval_s > 0.05 {
                w.last_rate = reqs / interval_s;
            }
            w.last_tick = Some((Instant::now(), tick.elapsed_ms));
        });
        Ok(())
    }

    /// Shows worker `id`'s plugin log lines here, each marked with the worker's name.
    pub(super) fn relay_log(
        &self,
        id: u64,
        services: &HostServices,
        lines: Vec<String>,
        not_sent: u64,
    ) {
        let name = self
            .lock()
            .workers
            .iter()
            .find(|w| w.id == id)
            .map(|w| w.name.clone())
            .unwrap_or_default();
        for line in lines {
            services.log.relay(format!("[worker {name}] {line}"));
        }
        if not_sent > 0 {
            services.log.relay(format!(
                "[worker {name}] {not_sent} more log lines in that second were not sent (over {} a second)\n",
                crate::plugin::log::FORWARD_MAX
            ));
        }
    }

    /// Worker `id`'s plugin aborted its run: the whole run stops, as a single run
    /// would (its exit code says the plugin aborted).
    pub(super) fn abort_for(&self, id: u64, why: &str) {
        let state = self.lock();
        let Some(control) = state.run.as_ref().map(|r| r.control.clone()) else {
            return;
        };
        let who = state
            .workers
            .iter()
            .find(|w| w.id == id)
            .map(|w| format!("worker {} ({})", w.name, w.address))
            .unwrap_or_else(|| "a worker".into());
        drop(state);
        crate::stderr::line(format_args!(
            "coordinator: the plugin aborted the run at {who}: {why}; stopping every worker"
        ));
        control.stop_with(StopReason::PluginAbort(format!("{who}: {why}")));
        control.hard_stop.cancel();
    }

    pub(super) fn with_slot(&self, id: u64, f: impl FnOnce(&mut Slot)) {
        if let Some(w) = self.lock().workers.iter_mut().find(|w| w.id == id) {
            f(w);
        }
    }

    /// Worker `id` is gone: named with the time, and the run continues or stops as
    /// `[distributed] on_worker_loss` says. Before the start it just leaves.
    pub(super) fn lose(&self, id: u64, why: &str) {
        let mut state = self.lock();
        let t0 = state.t0;
        let on_loss = state.run.as_ref().map(|r| (r.control.clone(), r.on_loss));
        let Some(w) = state.workers.iter_mut().find(|w| w.id == id) else {
            return;
        };
        if matches!(w.status, Status::Finished | Status::Lost) {
            return;
        }
        let started = t0.is_some();
        let at = t0.map(|t| t.elapsed().as_secs_f64()).unwrap_or(0.0);
        w.status = Status::Lost;
        w.lost_at = Some(at);
        w.lost = Some(why.to_string());
        w.not_merged = w
            .last_tick
            .map(|(when, _)| (w.last_rate * when.elapsed().as_secs_f64()).round() as u64);
        w.in_flight = 0;
        w.ws_open = 0;
        w.sockets_open = 0;
        let who = format!("worker {} ({})", w.name, w.address);
        if !started {
            crate::stderr::line(format_args!(
                "coordinator: {who} left before the start: {why}"
            ));
            state.workers.retain(|w| w.id != id);
            drop(state);
            self.changed.notify_waiters();
            return;
        }
        drop(state);
        let description = format!("{who} lost at {at:.1}s: {why}");
        match on_loss {
            Some((control, OnWorkerLoss::Abort)) => {
                crate::stderr::line(format_args!(
                    "coordinator: {description}; stopping the run (on_worker_loss = \"abort\")"
                ));
                control.stop_with(StopReason::WorkerLost(description));
            }
            _ => crate::stderr::line(format_args!(
                "coordinator: {description}; the run goes on with the others"
            )),
        }
        self.done.send_modify(|n| *n += 1);
        self.changed.notify_waiters();
    }

    pub(super) fn broadcast(&self, msg: CoordMsg) {
        for w in &self.lock().workers {
            if !matches!(w.status, Status::Lost | Status::Finished) {
                let _ = w.tx.send(msg.clone());
            }
        }
    }
}
