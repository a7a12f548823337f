//! `--dashboard [ADDR]`: a web page served during the run, updated every second by
//! server-sent events, with `/metrics` in OpenMetrics text beside it. The page (one
//! HTML file with its script and styles) is built into the binary: it fetches nothing
//! else. At the end it shows the summary's figures and links to report.html; from the
//! command line it then stays up until Ctrl-C, so that page and its link still work.

pub(crate) mod access;
pub(crate) mod history;
pub(crate) mod server;
pub(crate) mod snapshot;

use super::frame::Frame;
use super::output::Output;
use crate::summary::Summary;
use anyhow::{Context, Result};
use futures::future::BoxFuture;
use server::Shared;
use snapshot::Snapshot;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest the end of the run waits for open pages to get the last update.
const DELIVERY_WAIT: Duration = Duration::from_secs(3);

/// The dashboard while the run goes.
pub(crate) struct Dashboard {
    shared: Arc<Shared>,
    title: String,
    last: Option<Snapshot>,
    server: tokio::task::JoinHandle<()>,
    /// Where it listens.
    bound: SocketAddr,
}

impl Dashboard {
    /// Binds `addr` (an address in use fails the run before it starts) and serves.
    pub(crate) fn start(addr: SocketAddr, title: &str) -> Result<Dashboard> {
        let listener = std::net::TcpListener::bind(addr).with_context(|| {
            format!("--dashboard {addr}: cannot listen there (another run's dashboard? give another address, --dashboard 127.0.0.1:5666)")
        })?;
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let bound = listener.local_addr()?;
        let shared = Arc::new(Shared::new(title));
        let access = access::Access::for_address(bound);
        if access.token.is_some() {
            crate::stderr::warn(format_args!(
                "--dashboard {bound} is off loopback: anyone who can reach it could watch the \
                 run, so every request needs the token in this URL (set {} to choose it)",
                access::TOKEN_ENV
            ));
        }
        crate::stderr::line(format_args!("dashboard: {}", access.url()));
        let server = tokio::spawn(server::serve(listener, shared.clone(), access));
        Ok(Dashboard {
            shared,
            title: title.to_string(),
            last: None,
            server,
            bound,
        })
    }

    /// Publishes one second's update and the `/metrics` text.
    pub(crate) fn publish(&mut self, frame: &Frame<'_>) {
        let snap = snapshot::live(&self.title, frame);
        if let Ok(mut history) = self.shared.history.write() {
            history.push(&snap);
        }
        self.shared.publish(&snap);
        let text = super::openmetrics::render(
            frame.second.totals.totals(),
            &frame.defs,
            &frame.services,
            "k6_",
        );
        if let Ok(mut m) = self.shared.metrics.write() {
            *m = text;
        }
        self.last = Some(snap);
    }

    /// Publishes the last update, from the summary; report.html is then served from
    /// `results_dir`.
    pub(crate) fn conclude(&mut self, summary: &Summary, results_dir: &Path) {
        let report = results_dir.join("report.html");
        let path = report.exists().then(|| report.display().to_string());
        if let Ok(mut r) = self.shared.report.write() {
            *r = path.as_ref().map(|_| report.clone());
        }
        let snap = snapshot::last(self.last.as_ref(), summary, path);
        self.shared.publish(&snap);
        self.last = Some(snap);
    }

    /// Waits until every open page has the last update (at most [`DELIVERY_WAIT`]);
    /// with `linger`, keeps serving the finished page and its report until Ctrl-C (or
    /// SIGTERM), saying so; then stops serving.
    pub(crate) async fn close(self, linger: bool) {
        let deadline = Instant::now() + DELIVERY_WAIT;
        while self.shared.delivered.load(Ordering::SeqCst)
            < self.shared.clients.load(Ordering::SeqCst)
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The last frame was handed to the connection; give it time to be written.
        if self.shared.delivered.load(Ordering::SeqCst) > 0
            || self.shared.clients.load(Ordering::SeqCst) > 0
        {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        if linger {
            crate::stderr::line(format_args!(
                "the run is over; its dashboard stays up at http://{}/ (the finished page \
                 and its report): press Ctrl-C to exit",
                self.bound
            ));
            wait_for_exit().await;
        }
    }
}

impl Output for Dashboard {
    fn describe(&self) -> String {
        format!("--dashboard {}", self.bound)
    }

    fn tick(&mut self, frame: &Frame<'_>) -> Result<()> {
        self.publish(frame);
        Ok(())
    }

    fn finish(&mut self, summary: &Summary, results_dir: &Path) -> Result<()> {
        self.conclude(summary, results_dir);
        Ok(())
    }

    fn close(self: Box<Self>, linger: bool) -> BoxFuture<'static, ()> {
        Box::pin(Dashboard::close(*self, linger))
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn wait_for_exit() {
    crate::signals::next().await;
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        // Every exit path (an error, a panic unwinding) stops serving.
        self.server.abort();
    }
}
