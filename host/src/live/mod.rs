//! Watching a run as it goes: the web dashboard (`--dashboard`) with its OpenMetrics
//! `/metrics`, and the streaming outputs (`--out csv=…`, `--out json=…`,
//! `--out prometheus-rw=…`).
//!
//! Like the results writer, this is one more reader of the aggregator's ticks: the run
//! loop hands [`Live::tick`] each second's interval and the totals, and
//! [`Live::finish`] the summary; nothing here touches the hot path.
//!
//! One job per file: [`spec`] reads `--out`, [`aggregate`] turns a series' second into
//! a value and metadata, [`sink_file`] is a (gzipped) output file, [`k6csv`] and
//! [`k6json`] write k6's formats, [`prom`] names series the Prometheus way,
//! [`openmetrics`] renders `/metrics`, [`remote_write`] pushes to a Prometheus, and
//! [`dashboard`] serves the page and its feed.

pub(crate) mod aggregate;
pub(crate) mod dashboard;
pub(crate) mod frame;
pub(crate) mod k6csv;
pub(crate) mod k6json;
pub(crate) mod openmetrics;
pub(crate) mod prom;
pub(crate) mod remote_write;
pub(crate) mod sink_file;
pub(crate) mod spec;

use crate::config::OutputsConfig;
use crate::summary::Summary;
use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) use frame::{Frame, ServiceNow, Tick};
pub(crate) use spec::OutputSpec;

/// Default address of `--dashboard`, as k6's.
pub(crate) const DEFAULT_DASHBOARD: &str = "127.0.0.1:5665";

/// What the operator asked to watch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveOptions {
    /// `--dashboard [ADDR]`: serve the page there.
    pub dashboard: Option<SocketAddr>,
    /// `--out KIND=TARGET`, in order.
    pub outputs: Vec<OutputSpec>,
    /// Keep serving the dashboard after the run until Ctrl-C (the command line's
    /// `--dashboard`; a run started from code ends when it is over).
    pub linger: bool,
}

/// Whether someone can press Ctrl-C: stdin is a terminal (stdout may be piped, as in
/// `host run ... | tee log`). A run under CI, or fed from a pipe or /dev/null, is not,
/// and must not wait for a Ctrl-C after the run that nobody can press.
pub(crate) fn at_a_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal()
}

/// A file output and where it goes.
enum FileOutput {
    Csv(Box<k6csv::CsvOutput>),
    Json(Box<k6json::JsonOutput>),
}

/// The run's live outputs.
pub(crate) struct Live {
    files: Vec<(PathBuf, FileOutput, bool)>,
    dashboard: Option<dashboard::Dashboard>,
    remote: Vec<remote_write::RemoteWrite>,
    last: Duration,
    linger: bool,
}

impl Live {
    /// Opens every output and binds the dashboard's address; a file that cannot be
    /// made or an address in use fails the run before it starts.
    pub(crate) fn start(
        options: &LiveOptions,
        config: &OutputsConfig,
        title: &str,
    ) -> Result<Live> {
        let mut files = Vec::new();
        let mut remote = Vec::new();
        for spec in &options.outputs {
            match spec {
                OutputSpec::Csv(path) => files.push((
                    path.clone(),
                    FileOutput::Csv(Box::new(k6csv::CsvOutput::create(path).with_context(
                        || format!("--out csv: cannot write {}", path.display()),
                    )?)),
                    false,
                )),
                OutputSpec::Json(path) => files.push((
                    path.clone(),
                    FileOutput::Json(Box::new(k6json::JsonOutput::create(path).with_context(
                        || format!("--out json: cannot write {}", path.display()),
                    )?)),
                    false,
                )),
                OutputSpec::PrometheusRw(url) => {
                    remote.push(remote_write::RemoteWrite::start(url, &config.prometheus)?)
                }
            }
        }
        let dashboard = match options.dashboard {
            Some(addr) => Some(dashboard::Dashboard::start(addr, title)?),
            None => None,
        };
        Ok(Live {
            files,
            dashboard,
            remote,
            last: Duration::ZERO,
            linger: options.linger,
        })
    }

    /// Nothing to watch with: the run loop skips building ticks.
    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty() && self.dashboard.is_none() && self.remote.is_empty()
    }

    /// Hands one interval to every output. A file that fails to be written is warned
    /// about once and the run goes on.
    pub(crate) fn tick(&mut self, tick: Tick<'_>) {
        if self.is_empty() {
            return;
        }
        let secs = (tick.elapsed.saturating_sub(self.last)).as_secs_f64();
        self.last = tick.elapsed;
        let frame = Frame {
            tick: &tick,
            secs,
            unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64(),
            defs: tick.registry.all(),
        };
        for (path, output, warned) in &mut self.files {
            let result = match output {
                FileOutput::Csv(o) => o.write(&frame),
                FileOutput::Json(o) => o.write(&frame),
            };
            if let Err(e) = result {
                if !*warned {
                    *warned = true;
                    crate::stderr::warn(format_args!(
                        "output {} could not be written: {e}",
                        path.display()
                    ));
                }
            }
        }
        for r in &mut self.remote {
            r.tick(&frame);
        }
        if let Some(d) = &mut self.dashboard {
            d.tick(&frame);
        }
    }

    /// The run is over: files are ended, the dashboard shows the summary's figures and
    /// links to the report in `results_dir`.
    pub(crate) fn finish(&mut self, summary: &Summary, results_dir: &Path) {
        for (path, output, _) in &mut self.files {
            let result = match output {
                FileOutput::Csv(o) => o.finish(),
                FileOutput::Json(o) => o.finish(),
            };
            if let Err(e) = result {
                crate::stderr::warn(format_args!(
                    "output {} could not be finished: {e}",
                    path.display()
                ));
            }
        }
        if let Some(d) = &mut self.dashboard {
            d.finish(summary, results_dir);
        }
    }

    /// Waits (briefly) until the pages watching have the final figures and the remote
    /// writes are sent (and, when asked to linger, until Ctrl-C), then stops serving.
    pub(crate) async fn close(self) {
        for r in self.remote {
            r.close().await;
        }
        if let Some(d) = self.dashboard {
            d.close(self.linger).await;
        }
    }
}
