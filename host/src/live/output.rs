//! The live-output interface, in the shape of k6's `output.Output` (output/types.go):
//! each `--out` and the dashboard is one [`Output`], made (and its file opened or its
//! address bound) before the run starts, handed every second's [`Frame`], told the
//! summary at the end, then closed. [`Live`](super::Live) holds them as one list.

use super::frame::Frame;
use crate::summary::Summary;
use anyhow::Result;
use futures::future::BoxFuture;
use std::path::Path;

/// One live output.
pub(crate) trait Output: Send {
    /// What the operator asked for, to name it in a warning (`--out csv=run.csv`).
    fn describe(&self) -> String;

    /// One second of the run. An error is warned about once (by the caller) and the
    /// run goes on: an output must not stop a load test.
    fn tick(&mut self, frame: &Frame<'_>) -> Result<()>;

    /// The run is over and judged: end files, show the summary's figures (the
    /// results, report.html among them, are in `results_dir`).
    fn finish(&mut self, _summary: &Summary, _results_dir: &Path) -> Result<()> {
        Ok(())
    }

    /// After the plugin's own summary: waits for what is still in flight (pushes, a
    /// page's last update) and, with `linger`, keeps serving until Ctrl-C.
    fn close(self: Box<Self>, _linger: bool) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}
