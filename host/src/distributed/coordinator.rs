//! `host coordinate plugin.wasm --workers N`: listens for workers, refuses those that
//! come late or differ (host version, protocol, plugin), hands each one the plugin, the
//! config, its segment and `setup()`'s data, starts everyone at one instant, folds
//! their seconds into this run's recorder (so progress, thresholds and results work as
//! in a single run), notices a lost worker within [`LOSS_AFTER`], and stops every
//! worker when the run stops. Every connection is TLS, and a worker is taken only once
//! it has proved it holds the cluster token ([`super::trust`]): until then it is sent
//! nothing of the run and its frames are held to [`protocol::MAX_HELLO_FRAME`].

use super::protocol::{
    self, CoordMsg, FrameError, Init, Join, PluginErrors, ScenarioCounts, Tick, WorkerHello,
    WorkerMsg,
};
use super::trust::{self, ClusterToken, Role};
use super::{segments, series, HEARTBEAT, LOSS_AFTER, PREPARE_TIMEOUT, START_DELAY};
use crate::config::distributed::OnWorkerLoss;
use crate::control::{RunControl, StopReason};
use crate::executor::{ExecutorReport, ScenarioCtx, StageReport};
use crate::metrics::summary::{stats_of, Stats};
use crate::metrics::value::new_histogram;
use crate::metrics::{builtin, Value};
use crate::plugin::state::HostServices;
use crate::run::remote::{BarrierCtx, Remote, RemoteRole};
use crate::run::{RunOutcome, RunRequest};
use crate::summary::workers::WorkerSummary;
use crate::summary::Summary;
use anyhow::{anyhow, bail, Result};
use futures::future::BoxFuture;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify, OwnedSemaphorePermit, Semaphore};

/// A worker's connection: TLS over TCP.
type Conn = tokio_rustls::server::TlsStream<TcpStream>;

/// Time a connection has for the TLS handshake and the proofs.
const ADMIT_WITHIN: Duration = Duration::from_secs(10);

/// Connections that may be in the handshake or the proofs at once: more are closed at
/// once, so that a flood of them holds a bounded amount of memory.
const MAX_ADMITTING: usize = 64;

/// What `host coordinate` was asked.
#[derive(Debug, Clone)]
pub(crate) struct CoordinateRequest {
    /// The run (plugin, config files, flags, results folder).
    pub run: RunRequest,
    /// How many workers take part.
    pub workers: u32,
    /// Where workers dial.
    pub listen: SocketAddr,
    /// The cluster token every worker must prove it holds.
    pub token: ClusterToken,
    /// When the plugin came from a registry: its reference pinned by manifest digest.
    /// The workers pull it themselves and only the sha256 travels with the run.
    pub plugin_reference: Option<String>,
}

/// The line printed once the coordinator listens (tests and scripts read the port).
pub const LISTENING: &str = "coordinator listening on ";

/// Runs a distributed run: the plugin's setup and teardown here, its load at the
/// workers; `before_writing` gets the merged summary before the results are written.
pub(crate) async fn coordinate(
    request: CoordinateRequest,
    before_writing: impl FnOnce(&Summary),
) -> Result<RunOutcome> {
    if request.workers == 0 {
        bail!("--workers must be at least 1");
    }
    let o = &request.run.overrides;
    if o.execution_segment.is_some() || o.execution_segment_sequence.is_some() {
        bail!(
            "host coordinate gives each worker its execution segment: leave out --execution-segment and --execution-segment-sequence"
        );
    }
    trust::check_listen(request.listen, &request.token)?;
    // Workers join from the moment the port is open, before the run's own handler:
    // a Ctrl-C from then on must reach the run, which tells them.
    if request.run.handle_signals {
        crate::run::listen_for_signals_early();
    }
    let (mut bytes, sha256) = crate::plugin::read_plugin(&request.run.plugin)?;
    if request.plugin_reference.is_some() {
        // The workers pull it by digest: the bytes stay here (they are still read, for
        // the sha256 every worker checks its pull against).
        bytes = Vec::new();
    }
    let tls = trust::acceptor()?;
    let listener = TcpListener::bind(request.listen)
        .await
        .map_err(|e| anyhow!("cannot listen on {}: {e}", request.listen))?;
    let addr = listener.local_addr()?;
    crate::stderr::line(format_args!(
        "{LISTENING}{addr}: waiting for {} worker(s)",
        request.workers
    ));
    let plugin_name = request
        .run
        .plugin
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plugin.wasm".into());
    let (done_tx, _) = watch::channel(0usize);
    let hub = Arc::new_cyclic(|this| Hub {
        this: this.clone(),
        expected: request.workers,
        plugin_name,
        plugin: bytes,
        plugin_reference: request.plugin_reference.clone(),
        sha256,
        quiet: request.run.quiet,
        token: request.token.clone(),
        tls,
        state: Mutex::new(State::default()),
        changed: Notify::new(),
        done: done_tx,
    });
    let accept = tokio::spawn(accept_loop(listener, hub.clone()));
    let beats = tokio::spawn(heartbeats(hub.clone()));
    let mut run = request.run;
    run.remote = Some(RemoteRole(hub.clone()));
    let outcome = crate::run::run_then(run, before_writing).await;
    accept.abort();
    beats.abort();
    outcome
}

/// The run was stopped (Ctrl-C, SIGTERM) before the workers started: no figures, so no
/// results; `host coordinate` exits with [`INTERRUPTED`](crate::run::exit_code::INTERRUPTED).
#[derive(Debug, thiserror::Error)]
#[error("stopped by {reason} while waiting for {waiting}; the workers that joined were told to stop, and no results were written (nothing ran)")]
pub(crate) struct StoppedBeforeStart {
    /// Why, in words.
    pub reason: String,
    /// What the coordinator was waiting for.
    pub waiting: String,
}

/// The coordinator's state, shared by the run (through [`Remote`]) and the tasks that
/// talk to workers.
struct Hub {
    /// Itself, for the futures that outlive a borrow (a scenario waiting for its end).
    this: std::sync::Weak<Hub>,
    expected: u32,
    plugin_name: String,
    /// The component, or nothing when `plugin_reference` is set.
    plugin: Vec<u8>,
    /// The registry reference (by digest) the workers pull the component from.
    plugin_reference: Option<String>,
    sha256: String,
    /// `--quiet`: the workers hide their plugin log lines below `warn` too.
    quiet: bool,
    /// What each worker must prove it holds.
    token: ClusterToken,
    /// The TLS side of every connection.
    tls: tokio_rustls::TlsAcceptor,
    state: Mutex<State>,
    /// Woken when a worker joins, gets ready, fails or is lost.
    changed: Notify,
    /// Workers done since the start (finished or lost).
    done: watch::Sender<usize>,
}

#[derive(Default)]
struct State {
    /// Past the start line: no worker joins any more.
    closed: bool,
    /// The common start.
    t0: Option<Instant>,
    workers: Vec<Slot>,
    run: Option<RunParts>,
    next_id: u64,
}

/// What the tasks need of the run once it is at the start line.
struct RunParts {
    control: Arc<RunControl>,
    services: Arc<HostServices>,
    on_loss: OnWorkerLoss,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Joined,
    Ready,
    Running,
    Finished,
    Lost,
}

/// One worker.
struct Slot {
    id: u64,
    name: String,
    address: String,
    /// The index the worker asked for (`--index`, `JOB_COMPLETION_INDEX`).
    claimed: Option<u32>,
    /// Its index in the run (from the start line): the segment it runs.
    index: u32,
    segment: String,
    tx: mpsc::UnboundedSender<CoordMsg>,
    status: Status,
    failed: Option<String>,
    counts: Vec<ScenarioCounts>,
    in_flight: i64,
    ws_open: i64,
    reports: Vec<(String, Vec<StageReport>)>,
    http_reqs: f64,
    iterations: f64,
    dropped: f64,
    duration: hdrhistogram::Histogram<u64>,
    lost_at: Option<f64>,
    lost: Option<String>,
    /// Its plugin's failures, as last sent.
    errors: PluginErrors,
    /// When its last tick came, and that tick's `elapsed_ms`.
    last_tick: Option<(Instant, u64)>,
    /// Its requests per second in the interval of its last tick.
    last_rate: f64,
    /// Lost after the start: about how many requests it made since its last tick
    /// (its last rate over the silence), which were never merged. `None` if it was
    /// lost before its first tick (no rate known).
    not_merged: Option<u64>,
}

impl Hub {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a worker in, or refuses it with the reason.
    fn join(
        &self,
        hello: &WorkerHello,
        join: &Join,
        address: SocketAddr,
        tx: mpsc::UnboundedSender<CoordMsg>,
    ) -> Result<u64, String> {
        if hello.magic != protocol::MAGIC || hello.protocol != protocol::PROTOCOL_VERSION {
            return Err(format!(
                "protocol version {} is not the coordinator's {}",
                hello.protocol,
                protocol::PROTOCOL_VERSION
            ));
        }
        let ours = env!("CARGO_PKG_VERSION");
        if hello.host_version != ours {
            return Err(format!(
                "host version {} is not the coordinator's {ours}: run the same host binary on every machine",
                hello.host_version
            ));
        }
        if let Some(sha) = &join.plugin_sha256 {
            if *sha != self.sha256 {
                return Err(format!(
                    "its plugin (sha256 {sha}) is not the coordinator's {} (sha256 {})",
                    self.plugin_name, self.sha256
                ));
            }
        }
        let mut state = self.lock();
        if state.closed {
            return Err("the run has started: a worker that joins late is refused".into());
        }
        let joined = state
            .workers
            .iter()
            .filter(|w| w.status != Status::Lost)
            .count();
        if joined >= self.expected as usize {
            return Err(format!(
                "the run already has its {} worker(s)",
                self.expected
            ));
        }
        if let Some(index) = join.index {
            if index >= self.expected {
                return Err(format!(
                    "its index {index} is out of range: the run has {} worker(s), indexes 0 to {}",
                    self.expected,
                    self.expected - 1
                ));
            }
            if let Some(holder) = state.workers.iter().find(|w| w.claimed == Some(index)) {
                return Err(format!(
                    "index {index} is taken by worker {} ({}): give each worker its own --index",
                    holder.name, holder.address
                ));
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
    fn on_message(&self, id: u64, msg: WorkerMsg) -> Result<(), String> {
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
                Err(format!("it failed: {why}"))
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
                Err("it sent a second hello".into())
            }
        }
    }

    /// Folds a worker's second into the run's recorder and its own figures.
    fn take_tick(&self, id: u64, tick: Tick) -> Result<(), String> {
        let services = match &self.lock().run {
            Some(run) => run.services.clone(),
            None => return Err("it sent samples before the start".into()),
        };
        let registry = services.recorder.registry().clone();
        let decoded =
            series::decode(tick.series, &registry).map_err(|e| format!("it sent garbage: {e}"))?;
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
    fn relay_log(&self, id: u64, services: &HostServices, lines: Vec<String>, not_sent: u64) {
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
    fn abort_for(&self, id: u64, why: &str) {
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

    fn with_slot(&self, id: u64, f: impl FnOnce(&mut Slot)) {
        if let Some(w) = self.lock().workers.iter_mut().find(|w| w.id == id) {
            f(w);
        }
    }

    /// Worker `id` is gone: named with the time, and the run continues or stops as
    /// `[distributed] on_worker_loss` says. Before the start it just leaves.
    fn lose(&self, id: u64, why: &str) {
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

    fn broadcast(&self, msg: CoordMsg) {
        for w in &self.lock().workers {
            if !matches!(w.status, Status::Lost | Status::Finished) {
                let _ = w.tx.send(msg.clone());
            }
        }
    }

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

    async fn start_line(&self, ctx: BarrierCtx) -> Result<()> {
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
        let (source, data_files) = super::data_files::pack(&ctx.config)?;
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
                    quiet: self.quiet,
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

/// Takes connections: each one shakes hands, proves itself, and is taken or refused.
async fn accept_loop(listener: TcpListener, hub: Arc<Hub>) {
    let admitting = Arc::new(Semaphore::new(MAX_ADMITTING));
    loop {
        match listener.accept().await {
            Ok((stream, address)) => match admitting.clone().try_acquire_owned() {
                Ok(permit) => {
                    tokio::spawn(serve(stream, address, hub.clone(), permit));
                }
                Err(_) => crate::stderr::line(format_args!(
                    "coordinator: dropped a connection from {address}: {MAX_ADMITTING} others are still proving themselves"
                )),
            },
            Err(e) => {
                crate::stderr::warn(format_args!("coordinator: accept failed: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// One worker's connection from its hello to its end.
async fn serve(
    stream: TcpStream,
    address: SocketAddr,
    hub: Arc<Hub>,
    permit: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    let admitted = tokio::time::timeout(ADMIT_WITHIN, admit(stream, address, &hub)).await;
    drop(permit);
    let (mut conn, hello, join) = match admitted {
        Ok(Some(admitted)) => admitted,
        Ok(None) => return,
        Err(_) => {
            return crate::stderr::line(format_args!(
            "coordinator: dropped a connection from {address}: it did not prove itself within {}s",
            ADMIT_WITHIN.as_secs()
        ))
        }
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let id = match hub.join(&hello, &join, address, tx.clone()) {
        Ok(id) => id,
        Err(why) => {
            crate::stderr::line(format_args!(
                "coordinator: refused worker {} ({address}): {why}",
                hello.name
            ));
            let _ = protocol::write(&mut conn, &CoordMsg::Refused(why)).await;
            return;
        }
    };
    let welcome = CoordMsg::Welcome {
        magic: protocol::MAGIC,
        protocol: protocol::PROTOCOL_VERSION,
        host_version: env!("CARGO_PKG_VERSION").into(),
    };
    if protocol::write(&mut conn, &welcome).await.is_err() {
        hub.lose(id, "the connection closed at the hello");
        return;
    }
    let claim = join
        .index
        .map(|i| format!(" for index {i}"))
        .unwrap_or_default();
    crate::stderr::line(format_args!(
        "coordinator: worker {} ({address}) joined{claim}",
        hello.name
    ));
    hub.changed.notify_waiters();
    let (reader, writer) = tokio::io::split(conn);
    tokio::spawn(write_loop(writer, rx));
    read_loop(reader, id, hub).await;
}

/// The TLS handshake, the hello, and the proofs both ways; then the worker's join.
/// `None` when the connection is refused or dropped (said on stderr).
async fn admit(
    stream: TcpStream,
    address: SocketAddr,
    hub: &Hub,
) -> Option<(Conn, WorkerHello, Join)> {
    let mut conn = match hub.tls.accept(stream).await {
        Ok(conn) => conn,
        Err(e) => {
            drop_garbage(address, &format!("no TLS handshake: {e}"));
            return None;
        }
    };
    let body = read_small(&mut conn, address).await?;
    // The head first: a hello of another protocol version has other fields after it,
    // and that worker is told why, not dropped as garbage.
    let Ok(protocol::HelloHead::Hello {
        magic,
        protocol: version,
        name,
        ..
    }) = protocol::decode(&body)
    else {
        drop_garbage(address, "it did not begin with a hello");
        return None;
    };
    if magic != protocol::MAGIC {
        drop_garbage(address, "its hello has the wrong magic bytes");
        return None;
    }
    if version != protocol::PROTOCOL_VERSION {
        let why = format!(
            "protocol version {version} is not the coordinator's {}: run the same host binary on every machine",
            protocol::PROTOCOL_VERSION
        );
        refuse(&mut conn, &name, address, why).await;
        return None;
    }
    let hello = match protocol::decode::<WorkerMsg>(&body) {
        Ok(WorkerMsg::Hello(hello)) => hello,
        Ok(other) => {
            drop_garbage(address, &format!("it began with {other:?}, not a hello"));
            return None;
        }
        Err(e) => {
            drop_garbage(address, &e.to_string());
            return None;
        }
    };
    let nonce = trust::nonce();
    let challenge = CoordMsg::Challenge {
        magic: protocol::MAGIC,
        protocol: protocol::PROTOCOL_VERSION,
        nonce,
    };
    protocol::write(&mut conn, &challenge).await.ok()?;
    let proof = match protocol::decode::<WorkerMsg>(&read_small(&mut conn, address).await?) {
        Ok(WorkerMsg::Proof(proof)) => proof,
        _ => {
            let why =
                "it did not answer the challenge with a proof of the cluster token".to_string();
            refuse(&mut conn, &hello.name, address, why).await;
            return None;
        }
    };
    let exporter = match trust::exporter(conn.get_ref().1) {
        Ok(e) => e,
        Err(e) => {
            drop_garbage(address, &format!("{e:#}"));
            return None;
        }
    };
    if !hub
        .token
        .verify(Role::Worker, &exporter, &hello.nonce, &nonce, &proof)
    {
        let why = if hub.token.is_set() {
            format!(
                "it did not prove it holds the cluster token: give it the coordinator's token ({} or --token-file)",
                trust::TOKEN_ENV
            )
        } else {
            format!(
                "its proof is of a cluster token and this coordinator has none: give both sides the same {} or --token-file, or neither (loopback only)",
                trust::TOKEN_ENV
            )
        };
        refuse(&mut conn, &hello.name, address, why).await;
        return None;
    }
    let ours = hub
        .token
        .proof(Role::Coordinator, &exporter, &hello.nonce, &nonce);
    protocol::write(&mut conn, &CoordMsg::Proof(ours))
        .await
        .ok()?;
    match protocol::decode::<WorkerMsg>(&read_small(&mut conn, address).await?) {
        Ok(WorkerMsg::Join(join)) => Some((conn, hello, join)),
        Ok(other) => {
            drop_garbage(
                address,
                &format!("it sent {other:?} where its join was due"),
            );
            None
        }
        Err(e) => {
            drop_garbage(address, &e.to_string());
            None
        }
    }
}

/// Reads a frame of at most [`protocol::MAX_HELLO_FRAME`] bytes (before the proofs);
/// `None` if the connection closed or sent more.
async fn read_small(conn: &mut Conn, address: SocketAddr) -> Option<Vec<u8>> {
    match protocol::read_frame(conn, protocol::MAX_HELLO_FRAME).await {
        Ok(body) => Some(body),
        Err(FrameError::Io(_)) => None,
        Err(e) => {
            drop_garbage(address, &e.to_string());
            None
        }
    }
}

/// Refuses a connection with the reason, on stderr and to the peer.
async fn refuse(conn: &mut Conn, name: &str, address: SocketAddr, why: String) {
    crate::stderr::line(format_args!(
        "coordinator: refused worker {name} ({address}): {why}"
    ));
    let _ = protocol::write(conn, &CoordMsg::Refused(why)).await;
    let _ = tokio::io::AsyncWriteExt::shutdown(conn).await;
}

fn drop_garbage(address: SocketAddr, why: &str) {
    crate::stderr::line(format_args!(
        "coordinator: dropped a connection from {address}: it sent garbage ({why})"
    ));
}

async fn write_loop(mut writer: WriteHalf<Conn>, mut rx: mpsc::UnboundedReceiver<CoordMsg>) {
    while let Some(msg) = rx.recv().await {
        if protocol::write(&mut writer, &msg).await.is_err() {
            break;
        }
    }
}

/// Reads a worker's messages until it finishes or is lost.
async fn read_loop(mut reader: ReadHalf<Conn>, id: u64, hub: Arc<Hub>) {
    loop {
        let started = hub.lock().t0.is_some();
        let within = if started { LOSS_AFTER } else { PREPARE_TIMEOUT };
        let read = tokio::time::timeout(
            within,
            protocol::read::<_, WorkerMsg>(&mut reader, protocol::MAX_WORKER_FRAME),
        )
        .await;
        let msg = match read {
            Ok(Ok(msg)) => msg,
            Ok(Err(FrameError::Io(e))) => {
                return hub.lose(id, &format!("its connection closed ({e})"));
            }
            Ok(Err(e)) => return hub.lose(id, &format!("it sent garbage ({e})")),
            Err(_) => {
                return hub.lose(
                    id,
                    &format!(
                        "silent for {:.1}s (killed or cut off)",
                        within.as_secs_f64()
                    ),
                )
            }
        };
        let last = matches!(msg, WorkerMsg::Final(_));
        if let Err(why) = hub.on_message(id, msg) {
            return hub.lose(id, &why);
        }
        if last {
            return;
        }
    }
}

/// Tells every worker that is not done that the coordinator lives.
async fn heartbeats(hub: Arc<Hub>) {
    let mut every = tokio::time::interval(HEARTBEAT);
    loop {
        every.tick().await;
        hub.broadcast(CoordMsg::Heartbeat);
    }
}

/// Passes the run's stop on to every worker: gracefully first, then at once on a hard
/// stop (a second Ctrl-C, or the graceful time over).
async fn relay_stops(control: Arc<RunControl>, senders: Vec<mpsc::UnboundedSender<CoordMsg>>) {
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
