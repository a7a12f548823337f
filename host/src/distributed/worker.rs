//! `host worker --coordinator ADDR`: dials the coordinator, receives the plugin (or
//! pulls it from a registry by digest, [`super::plugin_source`]; its sha256 checked
//! either way), the run config, its execution segment and the setup data, runs its
//! segment with the common start, streams every second's samples back, and stops when
//! told, or on its own within seconds when the coordinator is gone (no orphaned load).
//! It speaks TLS and sends nothing of its own before the coordinator has proved it
//! holds the cluster token ([`super::trust`]); what it runs stays within its own
//! policy ([`super::policy`]).

use super::protocol::{
    self, CoordMsg, Final, Init, Join, PluginErrors, ScenarioCounts, Tick, WorkerHello, WorkerMsg,
};
use super::trust::{self, ClusterToken, Role};
use super::{HEARTBEAT, LOSS_AFTER, PREPARE_TIMEOUT};
use crate::control::{RunControl, StopReason};
use crate::executor::{ExecutorReport, ScenarioCtx};
use crate::metrics::Second;
use crate::run::observe::Scope;
use crate::run::remote::{BarrierCtx, Remote, RemoteRole};
use crate::run::{RunOutcome, RunRequest};
use anyhow::{anyhow, bail, Context, Result};
use futures::future::BoxFuture;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncRead, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// The connection to the coordinator: TLS over TCP.
type Conn = tokio_rustls::client::TlsStream<TcpStream>;

/// What `host worker` was asked.
#[derive(Debug, Clone)]
pub(crate) struct WorkerRequest {
    /// The coordinator's address (`host:port`).
    pub coordinator: String,
    /// The worker's name (default: host name and process id).
    pub name: Option<String>,
    /// The plugin the worker expects: refused unless the coordinator's has its sha256.
    pub plugin: Option<PathBuf>,
    /// Folder under which the worker's own results folder is made.
    pub out: PathBuf,
    /// How long to keep dialling a coordinator that is not up yet.
    pub connect_timeout: Duration,
    /// The segment to run, `I` of N (a Kubernetes Indexed Job's completion index);
    /// without it the coordinator deals segments by join order.
    pub index: Option<u32>,
    /// The cluster token the coordinator must prove it holds (and this worker proves).
    pub token: ClusterToken,
    /// `--allow`: the targets this worker lets the plugin reach, intersected with the
    /// coordinator's (empty: the coordinator's list as it is).
    pub allow: Vec<String>,
    /// How to reach a registry when the coordinator names the plugin by reference.
    pub registry: crate::oci::RegistryOptions,
}

/// Joins a distributed run and runs this worker's segment; returns the run's outcome
/// (the worker's own results, written under `out`).
pub(crate) async fn work(request: WorkerRequest) -> Result<RunOutcome> {
    let expected_sha = match &request.plugin {
        Some(path) => Some(crate::plugin::read_plugin(path)?.1),
        None => None,
    };
    super::policy::check_allow(&request.allow)?;
    let name = request.name.clone().unwrap_or_else(default_name);
    let mut conn = connect(&request, &name).await?;
    let join = WorkerMsg::Join(Join {
        plugin_sha256: expected_sha.clone(),
        index: request.index,
    });
    protocol::write(&mut conn, &join).await?;
    match read(&mut conn, protocol::MAX_HELLO_FRAME, PREPARE_TIMEOUT).await? {
        CoordMsg::Welcome {
            magic,
            protocol: version,
            host_version,
        } if magic == protocol::MAGIC && version == protocol::PROTOCOL_VERSION => {
            crate::stderr::line(format_args!(
                "worker {name}: joined the coordinator at {} (host {host_version})",
                request.coordinator
            ));
        }
        CoordMsg::Refused(why) => bail!("the coordinator refused this worker: {why}"),
        other => bail!("the coordinator answered the join with {other:?}"),
    }
    let (mut reader, writer) = tokio::io::split(conn);
    // Heartbeats flow from here on: compiling the plugin may take seconds, and the
    // coordinator must not take the silence for a loss.
    let (tx, rx) = mpsc::unbounded_channel::<WorkerMsg>();
    let writer_task = tokio::spawn(write_loop(writer, rx));
    let beats = tokio::spawn(heartbeats(tx.clone()));
    let init = loop {
        match read(&mut reader, protocol::MAX_FRAME, PREPARE_TIMEOUT).await? {
            CoordMsg::Init(init) => break init,
            CoordMsg::Heartbeat => continue,
            CoordMsg::Refused(why) => bail!("the coordinator refused this worker: {why}"),
            CoordMsg::Stop { reason, .. } => {
                bail!("the coordinator stopped before the start: {reason}")
            }
            other => bail!("expected the run's plugin and config, got {other:?}"),
        }
    };
    // Beside the results, not in /tmp: a worker's image may have no /tmp.
    let dir = request.out.join(format!(".worker-{}", std::process::id()));
    // Private (0700, files 0600): the config holds the run's environment values.
    crate::files::create_private_dir_all(&dir)
        .with_context(|| format!("cannot make a folder for the plugin: {}", dir.display()))?;
    let _remove = RemoveOnDrop(dir.clone());
    let run = match prepare(&init, expected_sha.as_deref(), &dir, &request).await {
        Ok(run) => run,
        Err(e) => {
            let _ = tx.send(WorkerMsg::Failed(format!("{e:#}")));
            drop(tx);
            beats.abort();
            let _ = tokio::time::timeout(Duration::from_secs(2), writer_task).await;
            return Err(e);
        }
    };
    crate::stderr::line(format_args!(
        "worker {name}: runs segment {} of {} (worker {})",
        init.segment, init.sequence, init.index
    ));
    let role = Arc::new(WorkerRole {
        tx: tx.clone(),
        reader: Mutex::new(Some(reader)),
        setup_data: init.setup_data.as_str().into(),
        done: Arc::new(AtomicBool::new(false)),
        errors_sent: AtomicU64::new(0),
        log_verbose: init.verbose,
    });
    let mut run = run;
    run.remote = Some(RemoteRole(role.clone()));
    let outcome = crate::run::run(run).await;
    if let Err(e) = &outcome {
        let _ = tx.send(WorkerMsg::Failed(format!("{e:#}")));
    }
    beats.abort();
    drop((tx, role));
    // The last messages (Final) are written before the process leaves.
    let _ = tokio::time::timeout(Duration::from_secs(2), writer_task).await;
    outcome
}

/// The TLS handshake, the hello, and the proofs: this worker's first, then the
/// coordinator's, which must verify before anything else is sent.
async fn prove(stream: TcpStream, request: &WorkerRequest, name: &str) -> Result<Conn> {
    let addr = &request.coordinator;
    let connector = trust::connector()?;
    let mut conn = tokio::time::timeout(
        PREPARE_TIMEOUT,
        connector.connect(trust::server_name(), stream),
    )
    .await
    .map_err(|_| anyhow!("the TLS handshake with the coordinator at {addr} timed out"))?
    .map_err(|e| anyhow!("the TLS handshake with the coordinator at {addr} failed: {e}"))?;
    let nonce = trust::nonce();
    let hello = WorkerMsg::Hello(WorkerHello {
        magic: protocol::MAGIC,
        protocol: protocol::PROTOCOL_VERSION,
        host_version: env!("CARGO_PKG_VERSION").into(),
        name: name.to_string(),
        nonce,
    });
    protocol::write(&mut conn, &hello).await?;
    let theirs = match read(&mut conn, protocol::MAX_HELLO_FRAME, PREPARE_TIMEOUT).await? {
        CoordMsg::Challenge {
            magic,
            protocol: version,
            nonce,
        } if magic == protocol::MAGIC && version == protocol::PROTOCOL_VERSION => nonce,
        CoordMsg::Refused(why) => {
            return Err(decisive(format!(
                "the coordinator refused this worker: {why}"
            )))
        }
        other => {
            return Err(decisive(format!(
                "the coordinator answered the hello with {other:?}"
            )))
        }
    };
    let exporter = trust::exporter(conn.get_ref().1)?;
    let token = &request.token;
    let ours = token.proof(Role::Worker, &exporter, &nonce, &theirs);
    protocol::write(&mut conn, &WorkerMsg::Proof(ours)).await?;
    match read(&mut conn, protocol::MAX_HELLO_FRAME, PREPARE_TIMEOUT).await? {
        CoordMsg::Proof(proof)
            if token.verify(Role::Coordinator, &exporter, &nonce, &theirs, &proof) =>
        {
            Ok(conn)
        }
        CoordMsg::Proof(_) => Err(decisive(format!(
            "the coordinator at {addr} did not prove it holds the cluster token: this worker left it \
             and sent it nothing more (another token, or someone in between); give both sides the same {} or --token-file",
            trust::TOKEN_ENV
        ))),
        CoordMsg::Refused(why) => Err(decisive(format!("the coordinator refused this worker: {why}"))),
        other => Err(decisive(format!("the coordinator answered the proof with {other:?}"))),
    }
}

/// An answer of the coordinator that trying again would not change (a refusal, a
/// proof that does not verify): the worker stops on it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Decisive(String);

fn decisive(why: String) -> anyhow::Error {
    anyhow::Error::new(Decisive(why))
}

/// Dials and proves itself until admitted, within `--connect-timeout`: a connection
/// the coordinator closed before answering (its handshake slots were full, a flood
/// of peers was in them) is tried again after a wait of 250 ms doubling to 2 s; a
/// refusal is final.
async fn connect(request: &WorkerRequest, name: &str) -> Result<Conn> {
    let deadline = tokio::time::Instant::now() + request.connect_timeout;
    let mut wait = Duration::from_millis(250);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let stream = dial(&request.coordinator, left).await?;
        stream.set_nodelay(true)?;
        match prove(stream, request, name).await {
            Ok(conn) => return Ok(conn),
            Err(e) if e.is::<Decisive>() => return Err(e),
            Err(e) if tokio::time::Instant::now() + wait >= deadline => {
                return Err(e.context(format!(
                    "no admission by the coordinator at {} within --connect-timeout {}",
                    request.coordinator,
                    crate::config::format_duration(request.connect_timeout)
                )))
            }
            Err(e) => {
                crate::stderr::line(format_args!(
                    "worker {name}: the coordinator at {} closed the connection before \
                     admitting it ({e:#}); trying again in {} ms",
                    request.coordinator,
                    wait.as_millis()
                ));
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// Removes the worker's copy of the plugin when the worker is done.
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    std::io::Write::write_all(&mut crate::files::create_private(path)?, bytes)
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Dials until the coordinator answers or `timeout` passes (in Compose, workers may
/// start before it listens).
async fn dial(addr: &str, timeout: Duration) -> Result<TcpStream> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                bail!("cannot reach the coordinator at {addr}: {e}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "worker".into());
    format!("{host}-{}", std::process::id())
}

/// Gets the plugin (sent, or pulled), checks its bytes, and writes it and the config
/// where the run reads them.
async fn prepare(
    init: &Init,
    expected_sha: Option<&str>,
    dir: &std::path::Path,
    request: &WorkerRequest,
) -> Result<RunRequest> {
    // A worker whose --plugin FILE has the sha256 named needs no registry to run it.
    let local = request
        .plugin
        .as_deref()
        .filter(|_| expected_sha == Some(init.plugin_sha256.as_str()));
    let bytes = super::plugin_source::plugin_bytes(init, local, &request.registry).await?;
    let sha = hex::encode(Sha256::digest(&bytes));
    if sha != init.plugin_sha256 {
        bail!(
            "the plugin's bytes arrived with sha256 {sha}, not {} as the coordinator named: refused",
            init.plugin_sha256
        );
    }
    if let Some(expected) = expected_sha {
        if expected != sha {
            bail!("the coordinator runs plugin sha256 {sha}, this worker's --plugin is {expected}");
        }
    }
    // Only the file name is taken: a path from the wire must not place a file.
    let file = std::path::Path::new(&init.plugin_name)
        .file_name()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("plugin.wasm"));
    let plugin = dir.join(file);
    write_private(&plugin, &bytes)?;
    let config = dir.join("run.toml");
    let config_toml = super::policy::apply(&init.config_toml, &request.allow)?;
    write_private(&config, config_toml.as_bytes())?;
    super::data_files::unpack(&init.data_files, dir)?;
    Ok(RunRequest {
        plugin,
        config: Some(config),
        overrides: crate::config::Overrides {
            execution_segment: Some(init.segment.clone()),
            execution_segment_sequence: Some(init.sequence.clone()),
            ..Default::default()
        },
        out: request.out.clone(),
        quiet: true,
        handle_signals: true,
        watch: None,
        remote: None,
        live: Default::default(),
    })
}

async fn read<R: AsyncRead + Unpin>(r: &mut R, max: u32, within: Duration) -> Result<CoordMsg> {
    match tokio::time::timeout(within, protocol::read(r, max)).await {
        Ok(Ok(msg)) => Ok(msg),
        Ok(Err(e)) => Err(anyhow!("the coordinator: {e}")),
        Err(_) => Err(anyhow!(
            "the coordinator said nothing for {}s",
            within.as_secs()
        )),
    }
}

async fn write_loop(mut writer: WriteHalf<Conn>, mut rx: mpsc::UnboundedReceiver<WorkerMsg>) {
    while let Some(msg) = rx.recv().await {
        if protocol::write(&mut writer, &msg).await.is_err() {
            break;
        }
    }
}

async fn heartbeats(tx: mpsc::UnboundedSender<WorkerMsg>) {
    let mut every = tokio::time::interval(HEARTBEAT);
    loop {
        every.tick().await;
        if tx.send(WorkerMsg::Heartbeat).is_err() {
            return;
        }
    }
}

/// The worker's side of the run's [`Remote`] seam.
struct WorkerRole {
    tx: mpsc::UnboundedSender<WorkerMsg>,
    /// Taken by the barrier, then by the task that listens for stops.
    reader: Mutex<Option<ReadHalf<Conn>>>,
    setup_data: Arc<str>,
    /// Set once the last message is sent: the coordinator closing then is no loss.
    done: Arc<AtomicBool>,
    /// The plugin failures counted when the list was last sent.
    errors_sent: AtomicU64,
    /// Whether the coordinator writes `debug` log lines (`-v`).
    log_verbose: bool,
}

impl Remote for WorkerRole {
    fn given_setup_data(&self) -> Option<Arc<str>> {
        Some(self.setup_data.clone())
    }

    fn log_verbose(&self) -> Option<bool> {
        Some(self.log_verbose)
    }

    fn barrier(&self, ctx: BarrierCtx) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let mut reader = self
                .reader
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
                .ok_or_else(|| anyhow!("the start line was reached twice"))?;
            // The coordinator shows the plugin's log lines from the start on (lines
            // of `init` before it are in this worker's own stderr).
            ctx.services.log.start_forwarding();
            let _ = self.tx.send(WorkerMsg::Ready);
            let at = loop {
                match read(&mut reader, protocol::MAX_FRAME, PREPARE_TIMEOUT).await? {
                    CoordMsg::Start { at_unix_ms } => break at_unix_ms,
                    CoordMsg::Heartbeat => continue,
                    CoordMsg::Stop { reason, .. } => {
                        bail!("the coordinator stopped before the start: {reason}")
                    }
                    other => bail!("expected the start, got {other:?}"),
                }
            };
            tokio::spawn(listen(reader, ctx.control.clone(), self.done.clone()));
            tokio::spawn(report_abort(ctx.control.clone(), self.tx.clone()));
            let at = UNIX_EPOCH + Duration::from_millis(at);
            if let Ok(wait) = at.duration_since(SystemTime::now()) {
                tokio::time::sleep(wait).await;
            }
            Ok(())
        })
    }

    fn tick(&self, scope: &Scope<'_>, second: &Second<'_>) {
        // The list goes only when it changed: most seconds of most runs have no failure.
        let total = scope.errors.total();
        let changed = self.errors_sent.swap(total, Ordering::Relaxed) != total;
        let _ = self
            .tx
            .send(WorkerMsg::Tick(encode_tick(scope, second, changed)));
    }

    fn finished(
        &self,
        scope: &Scope<'_>,
        second: &Second<'_>,
        reports: &BTreeMap<String, ExecutorReport>,
    ) {
        let msg = Final {
            tick: encode_tick(scope, second, true),
            reports: reports
                .iter()
                .map(|(name, r)| (name.clone(), r.stages.clone()))
                .collect(),
        };
        self.done.store(true, Ordering::Relaxed);
        let _ = self.tx.send(WorkerMsg::Final(msg));
    }
}

/// Tells the coordinator when the plugin aborts this worker's run, so that it stops
/// the others too; a stop from the coordinator is not reported back.
async fn report_abort(control: Arc<RunControl>, tx: mpsc::UnboundedSender<WorkerMsg>) {
    control.stop.cancelled().await;
    if let Some(StopReason::PluginAbort(why)) = control.reason() {
        let why = crate::stderr::redact::redact(&why).into_owned();
        let _ = tx.send(WorkerMsg::Aborted(why));
    }
}

/// Listens for the coordinator during the run: a stop is obeyed; silence or a closed
/// connection (the coordinator died or was cut off) stops the load at once.
async fn listen(mut reader: ReadHalf<Conn>, control: Arc<RunControl>, done: Arc<AtomicBool>) {
    loop {
        match read(&mut reader, protocol::MAX_FRAME, LOSS_AFTER).await {
            Ok(CoordMsg::Heartbeat) => {}
            Ok(CoordMsg::Stop { reason, hard }) => {
                control.stop_with(StopReason::Coordinator(reason));
                if hard {
                    control.hard_stop.cancel();
                }
            }
            Ok(_) => {}
            Err(_) if done.load(Ordering::Relaxed) => return,
            Err(e) => {
                if !control.stopping() {
                    crate::stderr::line(format_args!("worker: stopping the load: {e:#}"));
                }
                control.stop_with(StopReason::Coordinator(format!("lost: {e:#}")));
                control.hard_stop.cancel();
                return;
            }
        }
    }
}

/// A second's message; with the plugin's failures if `with_errors`.
fn encode_tick(scope: &Scope<'_>, second: &Second<'_>, with_errors: bool) -> Tick {
    let errors = with_errors.then(|| {
        let (mut entries, unlisted) = scope.errors.entries();
        // A `k6/secrets` value in a failure's message leaves this worker redacted.
        for e in &mut entries {
            if let std::borrow::Cow::Owned(clean) = crate::stderr::redact::redact(&e.message) {
                e.message = clean;
            }
        }
        PluginErrors { entries, unlisted }
    });
    let services = scope.services;
    let (log, log_not_sent) = services.log.take_forwarded();
    Tick {
        elapsed_ms: second.elapsed.as_millis() as u64,
        series: super::series::encode(second.interval, second.registry),
        scenarios: scope.contexts.iter().map(|c| counts(c)).collect(),
        in_flight: services.net.in_flight.get_signed(),
        ws_open: services.net.ws_open.load(Ordering::Relaxed),
        sockets_open: services.net.sockets_open.load(Ordering::Relaxed),
        errors,
        log,
        log_not_sent,
    }
}

fn counts(ctx: &ScenarioCtx) -> ScenarioCounts {
    let s = &ctx.stats;
    let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    ScenarioCounts {
        name: ctx.config.name.clone(),
        active_vus: n(&s.active_vus),
        allocated_vus: n(&s.allocated_vus),
        started: s.started.get(),
        completed: s.completed.get(),
        failed: s.failed.get(),
        interrupted: s.interrupted.get(),
        dropped: n(&s.dropped),
    }
}
