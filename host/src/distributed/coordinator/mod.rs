//! `host coordinate plugin.wasm --workers N`: listens for workers, refuses those that
//! come late or differ (host version, protocol, plugin), hands each one the plugin, the
//! config, its segment and `setup()`'s data, starts everyone at one instant, folds
//! their seconds into this run's recorder (so progress, thresholds and results work as
//! in a single run), notices a lost worker within [`LOSS_AFTER`](super::LOSS_AFTER), and stops every
//! worker when the run stops. Every connection is TLS, and a worker is taken only once
//! it has proved it holds the cluster token ([`super::trust`]): until then it is sent
//! nothing of the run and its frames are held to [`MAX_HELLO_FRAME`](super::protocol::MAX_HELLO_FRAME).
//!
//! One job per file: [`transport`] takes the connections (TLS, the proofs, the
//! framing) and carries the messages, [`hub`] is the coordinator's state (its workers,
//! their segments, their seconds folded in), [`start_line`] brings the workers to the
//! common start, and [`remote`] is the coordinator as its run sees it.

mod hub;
mod refusal;
mod remote;
mod start_line;
mod transport;

use super::trust::{self, ClusterToken};
use crate::run::remote::RemoteRole;
use crate::run::{RunOutcome, RunRequest};
use crate::summary::Summary;
use anyhow::{anyhow, bail, Result};
use hub::{Hub, State};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};

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
        verbose: crate::plugin::log::verbose(),
        token: request.token.clone(),
        tls,
        state: Mutex::new(State::default()),
        changed: Notify::new(),
        done: done_tx,
    });
    let accept = tokio::spawn(transport::accept_loop(listener, hub.clone()));
    let beats = tokio::spawn(transport::heartbeats(hub.clone()));
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
