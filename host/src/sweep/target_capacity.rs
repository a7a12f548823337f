//! The demo target's capacity switch on the command line (`host target` and `host demo`
//! take `--workers N --service-time D [--queue Q]`): a target whose true capacity,
//! N / D requests a second, is known, so a sweep's capacity model can be checked.

use clap::Args;
use std::time::Duration;

/// `--workers`, `--service-time` and `--queue`.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct CapacityArgs {
    /// Capacity limit: serve at most this many requests at once; the rest wait.
    #[arg(long, requires = "service_time")]
    pub workers: Option<usize>,
    /// With --workers: how long each request holds its worker (`10ms`).
    #[arg(long, value_parser = crate::config::args::duration_arg, requires = "workers")]
    pub service_time: Option<Duration>,
    /// With --workers: requests that may wait for a worker; past it, 503 + Retry-After.
    #[arg(long, default_value_t = demo_target::capacity::DEFAULT_QUEUE)]
    pub queue: usize,
}

impl CapacityArgs {
    /// The limit to give the target, if one was asked for.
    pub(crate) fn capacity(&self) -> Option<demo_target::Capacity> {
        match (self.workers, self.service_time) {
            (Some(workers), Some(service_time)) if workers > 0 => Some(demo_target::Capacity {
                workers,
                service_time,
                queue: self.queue,
            }),
            _ => None,
        }
    }

    /// The same as `host target` flags, for the demo's child target.
    pub(crate) fn flags(&self) -> Vec<String> {
        match self.capacity() {
            None => Vec::new(),
            Some(c) => vec![
                format!("--workers={}", c.workers),
                format!("--service-time={}us", c.service_time.as_micros()),
                format!("--queue={}", c.queue),
            ],
        }
    }
}
