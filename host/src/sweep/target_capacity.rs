//! The demo target's capacity switch on the command line (`host target` and `host demo`
//! take `--workers N --service-time D [--queue Q] [--contention σ --crosstalk κ]`): a
//! target whose true capacity, N / D requests a second, is known, so a sweep's capacity
//! model can be checked. With `--crosstalk` (the retrograde mode) each request's service
//! time grows with the requests in service, so throughput peaks and then falls, as the
//! Universal Scalability Law describes.

use clap::Args;
use std::time::Duration;

/// `--workers`, `--service-time`, `--queue`, `--contention` and `--crosstalk`.
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
    /// With --workers (retrograde mode): service time grows by this share of
    /// --service-time for each other request in service (the USL's σ).
    #[arg(long, default_value_t = 0.0, requires = "workers", value_parser = demo_target::capacity::parse_share)]
    pub contention: f64,
    /// With --workers (retrograde mode): service time grows by this share of
    /// --service-time for each pair of requests in service (the USL's κ): throughput
    /// peaks at √((1 − σ)/κ) requests in service and falls past it.
    #[arg(long, default_value_t = 0.0, requires = "workers", value_parser = demo_target::capacity::parse_share)]
    pub crosstalk: f64,
}

impl CapacityArgs {
    /// The limit to give the target, if one was asked for.
    pub(crate) fn capacity(&self) -> Option<demo_target::Capacity> {
        match (self.workers, self.service_time) {
            (Some(workers), Some(service_time)) if workers > 0 => Some(demo_target::Capacity {
                queue: self.queue,
                contention: self.contention,
                crosstalk: self.crosstalk,
                ..demo_target::Capacity::new(workers, service_time)
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
                format!("--contention={}", c.contention),
                format!("--crosstalk={}", c.crosstalk),
            ],
        }
    }
}
