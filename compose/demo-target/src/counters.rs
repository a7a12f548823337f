//! A plain event counter and the Prometheus text lines that expose one.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// A monotonic count of events, updated without a lock.
#[derive(Default, Debug)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Counts one event.
    pub fn inc(&self) {
        self.add(1);
    }

    /// Counts `n` events (bytes, results, ...).
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The count so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Appends one metric (`counter` or `gauge`) with its HELP and TYPE lines.
pub fn render(out: &mut String, name: &str, kind: &str, help: &str, value: u64) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    let _ = writeln!(out, "{name} {value}");
}
