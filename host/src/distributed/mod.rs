//! One test over many machines: `host coordinate` hands a plugin, its config, an
//! execution segment each and `setup()`'s data to `host worker` processes, starts them
//! at one instant, merges their samples every second exactly (counters added, HDR
//! histograms added), judges thresholds on the merged data and writes one results
//! folder. The wire protocol is in [`protocol`] and docs/protocol.md; who may take
//! part (TLS and the cluster token) in [`trust`].
//!
//! Both sides are ordinary runs (`run::run`) with a [`Remote`](crate::run::remote::Remote)
//! that changes a few steps: a worker skips setup and teardown and streams its
//! intervals; a coordinator runs no VUs and takes its workers' intervals instead.

pub(crate) mod coordinator;
pub(crate) mod data_files;
pub(crate) mod plugin_source;
pub(crate) mod policy;
pub mod protocol;
pub(crate) mod segments;
pub(crate) mod series;
pub mod trust;
pub(crate) mod worker;

use std::time::Duration;

/// How often each side tells the other it is alive.
pub(crate) const HEARTBEAT: Duration = Duration::from_millis(500);

/// Silence after which, once the run has started, the other side is taken for lost
/// (a killed process is seen at once: its connection closes).
pub(crate) const LOSS_AFTER: Duration = Duration::from_millis(2500);

/// Silence allowed before the start, while plugins compile and VUs are made.
pub(crate) const PREPARE_TIMEOUT: Duration = Duration::from_secs(60);

/// Time between the start message and the common start: enough for it to reach every
/// worker.
pub(crate) const START_DELAY: Duration = Duration::from_millis(500);
