//! Checks and custom metrics.
//!
//! Checks are counted in the built-in `checks` rate (and per check in the summary);
//! custom metrics appear beside the built-in ones, with the kinds k6 has. Tags are
//! borrowed pairs: `&[("group", "3")]`, or `&[]` for none.

use crate::bindings::loadtest::scenario::metrics as wit;
use crate::tags::owned;

/// The kind of a custom metric: `Counter`, `Gauge`, `Rate` or `Trend`.
pub use wit::MetricKind as Kind;

/// Records the check `name` as passed or failed and returns `ok`, so it can be used
/// in conditions: `if !check("status is 200", res.status() == 200) { ... }`.
pub fn check(name: &str, ok: bool) -> bool {
    wit::check(name, ok, &[])
}

/// Like [`check`], with tags for the sample.
pub fn check_tagged(name: &str, ok: bool, tags: &[(&str, &str)]) -> bool {
    wit::check(name, ok, &owned(tags))
}

/// Adds a sample of `value` to the custom metric `name` of kind `kind`.
pub fn add(name: &str, kind: Kind, value: f64, tags: &[(&str, &str)]) {
    wit::add(name, kind, value, &owned(tags));
}

/// Adds `value` to the counter `name` (a sum: bytes, errors, ...).
pub fn counter(name: &str, value: f64, tags: &[(&str, &str)]) {
    add(name, Kind::Counter, value, tags);
}

/// Sets the gauge `name` to `value` (the last value counts).
pub fn gauge(name: &str, value: f64, tags: &[(&str, &str)]) {
    add(name, Kind::Gauge, value, tags);
}

/// Adds a sample to the rate `name`: the share of samples that are `true`.
pub fn rate(name: &str, value: bool, tags: &[(&str, &str)]) {
    add(name, Kind::Rate, if value { 1.0 } else { 0.0 }, tags);
}

/// Adds `value` to the trend `name` (a distribution with percentiles; use
/// milliseconds for timings, as the built-in trends do).
pub fn trend(name: &str, value: f64, tags: &[(&str, &str)]) {
    add(name, Kind::Trend, value, tags);
}

/// Adds `milliseconds` to the trend `name` and marks it a trend of times, so the
/// summary shows and exports it as one (k6's `new Trend(name, true)`; contract 0.3.3).
pub fn trend_time(name: &str, milliseconds: f64, tags: &[(&str, &str)]) {
    wit::add_time(name, milliseconds, &owned(tags));
}

/// A custom metric with fixed tags, registered with the host once (contract 0.3.9):
/// each [`Registered::add`] then sends a number and a value, not the name, kind and
/// tags again. Worth it for a metric recorded per protocol command or per message;
/// keep it where the VU keeps state (a `thread_local!`). When the host keeps no more
/// numbers for the VU (10,000) or refuses the name, it records by name instead, as
/// [`add`] does.
#[derive(Debug, Clone)]
pub struct Registered {
    id: Option<u32>,
    name: String,
    kind: Kind,
    time: bool,
    tags: Vec<(String, String)>,
}

impl Registered {
    /// Metric `name` of `kind` with `tags`.
    pub fn new(name: &str, kind: Kind, tags: &[(&str, &str)]) -> Registered {
        Self::register(name, kind, false, tags)
    }

    /// A trend of times (as [`trend_time`]) with `tags`.
    pub fn trend_time(name: &str, tags: &[(&str, &str)]) -> Registered {
        Self::register(name, Kind::Trend, true, tags)
    }

    fn register(name: &str, kind: Kind, time: bool, tags: &[(&str, &str)]) -> Registered {
        let tags = owned(tags);
        Registered {
            id: wit::register(name, kind, time, &tags),
            name: name.to_string(),
            kind,
            time,
            tags,
        }
    }

    /// Adds a sample (a rate's `true` is 1.0).
    pub fn add(&self, value: f64) {
        match self.id {
            Some(id) => wit::add_registered(id, value),
            None if self.time => wit::add_time(&self.name, value, &self.tags),
            None => wit::add(&self.name, self.kind, value, &self.tags),
        }
    }
}
