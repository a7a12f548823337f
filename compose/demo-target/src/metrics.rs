//! Request and connection counters, rendered in the Prometheus text format.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use hyper::StatusCode;

/// Lowest status code counted; codes are valid from 100 to 999.
const FIRST_STATUS: usize = 100;

/// Counters updated on every request; atomics so the hot path takes no lock.
pub struct Metrics {
    requests: AtomicU64,
    internal: AtomicU64,
    connections: AtomicU64,
    by_status: Box<[AtomicU64]>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: AtomicU64::new(0),
            internal: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            by_status: (FIRST_STATUS..1000).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl Metrics {
    /// Counts a request as soon as it arrives, before any fault or routing.
    pub fn request_received(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a request of the stack's own (health checks, metric scrapes, the
    /// worker's outbox calls under `/admin/`), so user traffic can be told apart.
    pub fn internal_received(&self) {
        self.internal.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an accepted connection.
    pub fn connection_accepted(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a response by its status code.
    pub fn response_sent(&self, status: StatusCode) {
        let index = usize::from(status.as_u16()) - FIRST_STATUS;
        self.by_status[index].fetch_add(1, Ordering::Relaxed);
    }

    /// Responses sent so far with `status`.
    pub fn responses(&self, status: u16) -> u64 {
        usize::from(status)
            .checked_sub(FIRST_STATUS)
            .and_then(|i| self.by_status.get(i))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Requests received so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Requests of the stack's own received so far (health checks, scrapes, /admin/).
    pub fn internal(&self) -> u64 {
        self.internal.load(Ordering::Relaxed)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition of all counters, plus the `notes` gauge.
    pub fn render(&self, notes: usize) -> String {
        let mut out = String::with_capacity(1024);
        let _ = writeln!(out, "# HELP demo_requests_total HTTP requests received.");
        let _ = writeln!(out, "# TYPE demo_requests_total counter");
        let _ = writeln!(out, "demo_requests_total {}", self.requests());
        let _ = writeln!(
            out,
            "# HELP demo_internal_requests_total Requests to /health, /metrics and /admin/* (probes, scrapes, the worker), also counted in demo_requests_total."
        );
        let _ = writeln!(out, "# TYPE demo_internal_requests_total counter");
        let _ = writeln!(
            out,
            "demo_internal_requests_total {}",
            self.internal.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP demo_requests_by_status HTTP responses sent, by status code."
        );
        let _ = writeln!(out, "# TYPE demo_requests_by_status counter");
        for (index, count) in self.by_status.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            if count > 0 {
                let status = index + FIRST_STATUS;
                let _ = writeln!(
                    out,
                    "demo_requests_by_status{{status=\"{status}\"}} {count}"
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP demo_connections_total TCP connections accepted."
        );
        let _ = writeln!(out, "# TYPE demo_connections_total counter");
        let _ = writeln!(out, "demo_connections_total {}", self.connections());
        let _ = writeln!(out, "# HELP demo_notes Notes currently stored.");
        let _ = writeln!(out, "# TYPE demo_notes gauge");
        let _ = writeln!(out, "demo_notes {notes}");
        out
    }
}

/// One gauge in the Prometheus text format.
pub fn render_gauge(name: &str, help: &str, value: usize) -> String {
    format!("# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_only_seen_statuses() {
        let m = Metrics::default();
        m.request_received();
        m.request_received();
        m.connection_accepted();
        m.response_sent(StatusCode::OK);
        m.response_sent(StatusCode::NOT_FOUND);
        m.response_sent(StatusCode::NOT_FOUND);
        assert_eq!(m.responses(404), 2);
        assert_eq!(m.responses(429), 0);
        assert_eq!(m.responses(42), 0);
        let text = m.render(7);
        assert!(text.contains("\ndemo_requests_total 2\n"), "{text}");
        assert!(text.contains("demo_requests_by_status{status=\"200\"} 1\n"));
        assert!(text.contains("demo_requests_by_status{status=\"404\"} 2\n"));
        assert!(!text.contains("status=\"500\""));
        assert!(text.contains("demo_connections_total 1\n"));
        assert!(text.contains("demo_notes 7\n"));
    }
}
