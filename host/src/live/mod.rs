//! Watching a run as it goes: the web dashboard (`--dashboard`) with its OpenMetrics
//! `/metrics`, and the streaming outputs (`--out csv=…`, `--out json=…`,
//! `--out prometheus-rw=…`).
//!
//! Like the results writer, this is one more reader of the run's seconds: the run loop
//! hands [`Live::tick`] each [`Second`], which every [`Output`] gets as one
//! [`Frame`], and [`Live::finish`] the summary; nothing here touches the hot path.
//!
//! One job per file: [`output`] is the interface every output implements, [`frame`]
//! what each gets every second, [`spec`] reads `--out`, [`aggregate`] turns a series'
//! second into a value and metadata, [`sink_file`] is a (gzipped) output file,
//! [`k6csv`] and [`k6json`] write k6's formats, [`prom`] names series the Prometheus
//! way, [`openmetrics`] renders `/metrics`, [`remote_write`] pushes to a Prometheus,
//! and [`dashboard`] serves the page and its feed.

pub(crate) mod aggregate;
pub(crate) mod dashboard;
pub(crate) mod frame;
pub(crate) mod k6csv;
pub(crate) mod k6json;
pub(crate) mod openmetrics;
pub(crate) mod output;
pub(crate) mod prom;
pub(crate) mod remote_write;
pub(crate) mod sink_file;
pub(crate) mod spec;

use crate::config::OutputsConfig;
use crate::metrics::Second;
use crate::summary::Summary;
use crate::thresholds::Evaluator;
use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) use frame::{Frame, ServiceNow};
pub(crate) use output::Output;
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

/// The run's live outputs: one list, in the order the operator gave them, the
/// dashboard last.
pub(crate) struct Live {
    outputs: Vec<Slot>,
    last: Duration,
    linger: bool,
}

/// An output and whether its failure was warned about.
struct Slot {
    output: Box<dyn Output>,
    warned: bool,
}

impl Live {
    /// Opens every output and binds the dashboard's address; a file that cannot be
    /// made or an address in use fails the run before it starts.
    pub(crate) fn start(
        options: &LiveOptions,
        config: &OutputsConfig,
        title: &str,
    ) -> Result<Live> {
        let mut outputs: Vec<Box<dyn Output>> = Vec::new();
        for spec in &options.outputs {
            outputs.push(match spec {
                OutputSpec::Csv(path) => Box::new(
                    k6csv::CsvOutput::create(path)
                        .with_context(|| format!("--out csv: cannot write {}", path.display()))?,
                ),
                OutputSpec::Json(path) => Box::new(
                    k6json::JsonOutput::create(path)
                        .with_context(|| format!("--out json: cannot write {}", path.display()))?,
                ),
                OutputSpec::PrometheusRw(url) => {
                    Box::new(remote_write::RemoteWrite::start(url, &config.prometheus)?)
                }
            });
        }
        if let Some(addr) = options.dashboard {
            outputs.push(Box::new(dashboard::Dashboard::start(addr, title)?));
        }
        Ok(Live {
            outputs: outputs
                .into_iter()
                .map(|output| Slot {
                    output,
                    warned: false,
                })
                .collect(),
            last: Duration::ZERO,
            linger: options.linger,
        })
    }

    /// Nothing to watch with: the run loop skips building frames.
    pub(crate) fn is_empty(&self) -> bool {
        self.outputs.is_empty()
    }

    /// Hands one second to every output, with the thresholds judged so far and the
    /// sampled services' newest figures. An output that fails is warned about once and
    /// the run goes on.
    pub(crate) fn tick(
        &mut self,
        second: &Second<'_>,
        thresholds: &Evaluator,
        services: Vec<ServiceNow>,
    ) {
        if self.is_empty() {
            return;
        }
        let secs = (second.elapsed.saturating_sub(self.last)).as_secs_f64();
        self.last = second.elapsed;
        let frame = Frame {
            second: *second,
            thresholds,
            services,
            secs,
            unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64(),
            defs: second.registry.all(),
        };
        for slot in &mut self.outputs {
            if let Err(e) = slot.output.tick(&frame) {
                if !slot.warned {
                    slot.warned = true;
                    crate::stderr::warn(format_args!(
                        "{} could not be written: {e:#}",
                        slot.output.describe()
                    ));
                }
            }
        }
    }

    /// The run is over: files are ended, the dashboard shows the summary's figures and
    /// links to the report in `results_dir`.
    pub(crate) fn finish(&mut self, summary: &Summary, results_dir: &Path) {
        for slot in &mut self.outputs {
            if let Err(e) = slot.output.finish(summary, results_dir) {
                crate::stderr::warn(format_args!(
                    "{} could not be finished: {e:#}",
                    slot.output.describe()
                ));
            }
        }
    }

    /// Waits (briefly) until the pages watching have the final figures and the remote
    /// writes are sent (and, when asked to linger, until Ctrl-C), then stops serving.
    pub(crate) async fn close(self) {
        for slot in self.outputs {
            slot.output.close(self.linger).await;
        }
    }
}
