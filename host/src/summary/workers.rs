//! Per-worker figures of a distributed run (`host coordinate`): what each worker did,
//! beside the merged figures, and when a lost worker was lost.

use crate::metrics::summary::TrendStats;
use serde::{Deserialize, Serialize};

/// One worker of a distributed run, under `workers` in summary.json.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WorkerSummary {
    /// The worker's name (`--name`, else its host name and process id).
    pub name: String,
    /// The address it connected from.
    pub address: String,
    /// Its index in the run, from 0 (`--index`, else join order): it runs the
    /// `index`-th of N equal segments.
    #[serde(default)]
    pub index: u32,
    /// Its plugin's failures (errors, panics, traps, timeouts); the messages are in the
    /// summary's `plugin_errors`, merged over the workers.
    #[serde(default)]
    pub plugin_errors: u64,
    /// Its execution segment (`0:1/3`).
    pub segment: String,
    /// Requests it made (its `http_reqs`).
    pub http_reqs: u64,
    /// Iterations it completed (its `iterations`).
    pub iterations: u64,
    /// Iterations its open-model scenarios dropped.
    pub dropped_iterations: u64,
    /// Its `http_req_duration`, from the histograms it sent.
    pub http_req_duration: Option<TrendStats>,
    /// Seconds from the start when it was lost (killed, cut off, or it sent garbage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_at_s: Option<f64>,
    /// Why it was lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
    /// Lost after its first report: about how many requests it made after its last
    /// report (its last second's rate over the time until it was lost), which are not
    /// in the merged figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_reqs_not_merged: Option<u64>,
}
