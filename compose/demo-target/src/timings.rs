//! Handling time per route: a Prometheus histogram of how long the server took from a
//! request's head (hyper calls the service once it has parsed it) to its response built,
//! by method and route, so a client's latency can be set beside the server's own.
//!
//! It is the server's time only: the wait in the socket before hyper reads a request,
//! and the writing of the response, fall outside it (a packet capture sees those).
//! Atomics in a fixed table, so timing a request takes no lock.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, in seconds (each bucket counts times up to its bound).
const BOUNDS: [f64; 17] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
];

/// The methods told apart; any other is `OTHER`.
const METHODS: [&str; 8] = [
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "OTHER",
];

/// The routes, named as the plugins' and k6 scripts' `name` tags name them; a path that
/// names none of them is `other`.
const ROUTES: [&str; 32] = [
    "/",
    "/static/*",
    "/health",
    "/metrics",
    "/auth/token",
    "/app",
    "/assets/*",
    "/api/config",
    "/api/me",
    "/inbox",
    "/accounts",
    "/accounts/me",
    "/auth/refresh",
    "/groups/{g}/search",
    "/survey",
    "/survey/login",
    "/survey/answer",
    "/cookies",
    "/cookies/set",
    "/ws",
    "/admin/faults",
    "/admin/hold",
    "/admin/outbox/claim",
    "/admin/outbox/{id}/done",
    "/invoke",
    "/events",
    "/admin/webhooks/receive",
    "/commands",
    "/commands/{id}",
    "/groups/{g}/notes",
    "/groups/{g}/notes/{id}",
    "other",
];

/// The route of a path (an index into [`ROUTES`]), by the same shapes the router
/// matches (empty segments dropped), so every request falls in exactly one; no
/// allocation, as it runs for every request.
fn route(path: &str) -> usize {
    let other = ROUTES.len() - 1;
    ROUTES[..other]
        .iter()
        .position(|pattern| {
            let mut want = pattern.split('/').filter(|s| !s.is_empty());
            let mut have = path.split('/').filter(|s| !s.is_empty());
            loop {
                match (want.next(), have.next()) {
                    (None, None) => return true,
                    (Some(w), Some(h)) if w == h || w == "*" || w.starts_with('{') => {}
                    _ => return false,
                }
            }
        })
        .unwrap_or(other)
}

/// Where a request's time goes: its method and route, found when it arrives.
#[derive(Clone, Copy)]
pub struct Slot(usize);

/// The index of a method in [`METHODS`].
fn method(method: &hyper::Method) -> usize {
    METHODS
        .iter()
        .position(|m| *m == method.as_str())
        .unwrap_or(METHODS.len() - 1)
}

/// One method and route's histogram.
#[derive(Default)]
struct Cell {
    /// Requests per bucket (not cumulative; the last counts those past every bound).
    buckets: [AtomicU64; BOUNDS.len() + 1],
    sum_ns: AtomicU64,
}

/// Handling times of every method and route.
pub struct RouteTimings {
    cells: Box<[Cell]>,
}

impl Default for RouteTimings {
    fn default() -> Self {
        RouteTimings {
            cells: (0..ROUTES.len() * METHODS.len())
                .map(|_| Cell::default())
                .collect(),
        }
    }
}

impl RouteTimings {
    /// The slot of a request to `path` with `method`.
    pub fn slot(method_: &hyper::Method, path: &str) -> Slot {
        Slot(route(path) * METHODS.len() + method(method_))
    }

    /// Counts one request of `slot` that took `took` to handle.
    pub fn record(&self, slot: Slot, took: Duration) {
        let cell = &self.cells[slot.0];
        let seconds = took.as_secs_f64();
        let bucket = BOUNDS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(BOUNDS.len());
        cell.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        cell.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Requests timed so far with `method` (as `GET`) on `route` (as `/assets/*`).
    #[cfg(test)]
    fn count(&self, method_: &str, route_: &str) -> u64 {
        let (Some(m), Some(r)) = (
            METHODS.iter().position(|m| *m == method_),
            ROUTES.iter().position(|r| *r == route_),
        ) else {
            return 0;
        };
        self.cells[r * METHODS.len() + m]
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .sum()
    }

    /// Appends the histogram in the Prometheus text format, with a series for each
    /// method and route that served at least one request.
    pub fn render(&self, out: &mut String) {
        let name = "demo_request_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time from a request's head parsed to its response built (the server's handling, without socket waits or writing), by method and route."
        );
        let _ = writeln!(out, "# TYPE {name} histogram");
        for (r, route_) in ROUTES.iter().enumerate() {
            for (m, method_) in METHODS.iter().enumerate() {
                let cell = &self.cells[r * METHODS.len() + m];
                // Loaded once each, so the buckets, the count and +Inf agree even while
                // requests are being counted.
                let counts: Vec<u64> = cell
                    .buckets
                    .iter()
                    .map(|b| b.load(Ordering::Relaxed))
                    .collect();
                let total: u64 = counts.iter().sum();
                if total == 0 {
                    continue;
                }
                let labels = format!("method=\"{method_}\",route=\"{route_}\"");
                let mut cumulative = 0;
                for (bound, n) in BOUNDS.iter().zip(&counts) {
                    cumulative += n;
                    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {cumulative}");
                }
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {total}");
                let sum = cell.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
                let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
                let _ = writeln!(out, "{name}_count{{{labels}}} {total}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::Method;

    #[test]
    fn routes_are_named_as_the_tools_tag_them() {
        let name = |p: &str| ROUTES[route(p)];
        assert_eq!(name("/"), "/");
        assert_eq!(name("/assets/app-1a2b.js"), "/assets/*");
        assert_eq!(name("/groups/3/notes"), "/groups/{g}/notes");
        assert_eq!(name("/groups/3/notes/17"), "/groups/{g}/notes/{id}");
        assert_eq!(name("/groups/3/search"), "/groups/{g}/search");
        assert_eq!(name("/commands/9"), "/commands/{id}");
        assert_eq!(name("/admin/outbox/claim"), "/admin/outbox/claim");
        assert_eq!(name("/admin/outbox/4/done"), "/admin/outbox/{id}/done");
        assert_eq!(name("/auth/token"), "/auth/token");
        assert_eq!(name("//api//config"), "/api/config");
        assert_eq!(name("/survey/answer"), "/survey/answer");
        assert_eq!(name("/groups/3/notes/17/x"), "other");
        assert_eq!(name("/nothing"), "other");
        assert_eq!(name("/other"), "other");
        assert_eq!(name("/assets/*/x"), "other");
    }

    #[test]
    fn renders_cumulative_buckets_sum_and_count() {
        let t = RouteTimings::default();
        let at = |m: &Method, p: &str| RouteTimings::slot(m, p);
        t.record(at(&Method::GET, "/assets/a.css"), Duration::from_micros(80));
        t.record(at(&Method::GET, "/assets/b.js"), Duration::from_millis(3));
        t.record(at(&Method::GET, "/assets/c.js"), Duration::from_secs(20));
        t.record(at(&Method::POST, "/auth/token"), Duration::from_micros(300));
        t.record(
            at(&Method::from_bytes(b"PURGE").unwrap(), "/x"),
            Duration::ZERO,
        );
        assert_eq!(t.count("OTHER", "other"), 1);
        assert_eq!(t.count("GET", "/assets/*"), 3);
        assert_eq!(t.count("POST", "/auth/token"), 1);
        assert_eq!(t.count("GET", "/auth/token"), 0);
        let mut text = String::new();
        t.render(&mut text);
        let series = "demo_request_duration_seconds";
        let l = "method=\"GET\",route=\"/assets/*\"";
        for (le, n) in [
            ("0.00005", 0),
            ("0.0001", 1),
            ("0.0025", 1),
            ("0.005", 2),
            ("10", 2),
            ("+Inf", 3),
        ] {
            let line = format!("{series}_bucket{{{l},le=\"{le}\"}} {n}\n");
            assert!(text.contains(&line), "no {line:?} in\n{text}");
        }
        assert!(
            text.contains(&format!("{series}_count{{{l}}} 3\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!("{series}_sum{{{l}}} 20.00308\n")),
            "{text}"
        );
        assert!(
            !text.contains("route=\"/app\""),
            "unused routes are left out:\n{text}"
        );
    }
}
