//! Figures per endpoint (method + `name`; a gRPC method's row has method `gRPC`): count, rate, error rate and latency
//! percentiles, from the run's totals, without a threshold per endpoint.
//!
//! A run whose URLs carry ids and no `name` tag would make one endpoint per id; past
//! [`MAX_ENDPOINTS`] names the least-requested are folded into one `other` row, and the
//! caller warns that such URLs need a `name`.

use super::registry::builtin;
use super::series::SeriesMap;
use super::value::{new_histogram, Value};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::HashMap;
use std::time::Duration;

/// Most endpoints listed; the rest are folded into `other`.
pub(crate) const MAX_ENDPOINTS: usize = 200;

/// The method column of a gRPC method's row.
pub(crate) const GRPC: &str = "gRPC";

/// The name of the row that gathers endpoints past [`MAX_ENDPOINTS`].
pub(crate) const OTHER: &str = "other";

/// One endpoint's figures.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Endpoint {
    /// `GET`, `POST`, ... (empty for the `other` row).
    pub method: String,
    /// The `name` tag (the URL when the plugin gave none).
    pub name: String,
    /// Requests (`http_reqs`).
    pub count: u64,
    /// Requests per second of the run.
    pub rate: f64,
    /// Share of requests counted in `http_req_failed`.
    pub error_rate: f64,
    /// Median of `http_req_duration`, ms (responses only).
    pub p50: f64,
    /// 95th percentile, ms.
    pub p95: f64,
    /// 99th percentile, ms.
    pub p99: f64,
}

/// The endpoints of a run, busiest first, and how many names were folded into `other`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Endpoints {
    /// Rows, by count (then method and name); `other` last.
    pub rows: Vec<Endpoint>,
    /// Distinct method + name pairs folded into `other` (0 when none).
    pub folded: usize,
}

#[derive(Default)]
struct Acc {
    count: f64,
    failed: u64,
    total: u64,
    duration: Option<Histogram<u64>>,
}

impl Acc {
    fn merge(&mut self, other: Acc) {
        self.count += other.count;
        self.failed += other.failed;
        self.total += other.total;
        if let Some(h) = other.duration {
            self.add_histogram(&h);
        }
    }

    fn add_histogram(&mut self, h: &Histogram<u64>) {
        let mine = self.duration.get_or_insert_with(new_histogram);
        // Both are made by new_histogram (same bounds): adding cannot fail.
        let _ = mine.add(h);
    }

    fn row(self, method: String, name: String, elapsed: Duration) -> Endpoint {
        let q = |p: f64| match &self.duration {
            Some(h) if !h.is_empty() => h.value_at_quantile(p) as f64 / 1000.0,
            _ => 0.0,
        };
        Endpoint {
            count: self.count.round() as u64,
            rate: self.count / elapsed.as_secs_f64().max(1e-9),
            error_rate: if self.total == 0 {
                0.0
            } else {
                self.failed as f64 / self.total as f64
            },
            p50: q(0.5),
            p95: q(0.95),
            p99: q(0.99),
            method,
            name,
        }
    }
}

/// The endpoints of `totals`, at most `max` (plus `other`).
pub(crate) fn endpoints(totals: &SeriesMap, elapsed: Duration, max: usize) -> Endpoints {
    let mut by_key: HashMap<(String, String), Acc> = HashMap::new();
    for ((id, tags), value) in totals {
        let (Some(method), Some(name)) = (tags.get("method"), tags.get("name")) else {
            continue;
        };
        // A gRPC method is one endpoint: its row's method is `gRPC`, its name the
        // call's `name` (the method's path unless the plugin named it).
        let grpc = matches!(
            *id,
            builtin::GRPC_REQS | builtin::GRPC_REQ_FAILED | builtin::GRPC_REQ_DURATION
        );
        let key = || {
            let method = if grpc { GRPC } else { method };
            (method.to_owned(), name.to_owned())
        };
        let acc = || Acc::default();
        match (*id, value) {
            (builtin::HTTP_REQS | builtin::GRPC_REQS, Value::Counter(c)) => {
                by_key.entry(key()).or_insert_with(acc).count += c;
            }
            (builtin::HTTP_REQ_FAILED | builtin::GRPC_REQ_FAILED, Value::Rate { hits, total }) => {
                let a = by_key.entry(key()).or_insert_with(acc);
                a.failed += hits;
                a.total += total;
            }
            (builtin::HTTP_REQ_DURATION | builtin::GRPC_REQ_DURATION, Value::Trend(h)) => {
                by_key.entry(key()).or_insert_with(acc).add_histogram(h)
            }
            _ => {}
        }
    }
    let mut all: Vec<((String, String), Acc)> =
        by_key.into_iter().filter(|(_, a)| a.count > 0.0).collect();
    all.sort_by(|(ka, a), (kb, b)| b.count.total_cmp(&a.count).then_with(|| ka.cmp(kb)));
    let folded = all.len().saturating_sub(max);
    let mut other = Acc::default();
    for (_, acc) in all.drain(max.min(all.len())..) {
        other.merge(acc);
    }
    let mut rows: Vec<Endpoint> = all
        .into_iter()
        .map(|((method, name), acc)| acc.row(method, name, elapsed))
        .collect();
    if folded > 0 {
        rows.push(other.row(String::new(), OTHER.to_owned(), elapsed));
    }
    Endpoints { rows, folded }
}

/// The warning shown when names were folded into `other`.
pub(crate) fn folded_warning(folded: usize) -> String {
    format!(
        "{folded} request names past the first {MAX_ENDPOINTS} are shown as `{OTHER}` in the \
         endpoint figures; URLs with ids need a `name` tag (`.name(\"/notes/{{id}}\")`) to be grouped"
    )
}

/// `endpoints.md`: one row per endpoint.
pub(crate) fn markdown(rows: &[Endpoint]) -> String {
    let mut out = String::from(
        "# Endpoints\n\n| method | name | count | rate/s | errors | p50 ms | p95 ms | p99 ms |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} | {:.2} % | {:.2} | {:.2} | {:.2} |\n",
            r.method,
            r.name.replace('|', "\\|"),
            r.count,
            r.rate,
            r.error_rate * 100.0,
            r.p50,
            r.p95,
            r.p99
        ));
    }
    if rows.iter().any(|r| r.method.is_empty() && r.name == OTHER) {
        out.push_str(&format!(
            "\n`{OTHER}` gathers the names past the first {MAX_ENDPOINTS}; URLs with ids need a \
             `name` tag to be grouped.\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::TagSet;

    fn series(
        totals: &mut SeriesMap,
        method: &str,
        name: &str,
        status: &str,
        n: u32,
        ms: u64,
        failed: bool,
    ) {
        let tags = TagSet::from_pairs([("method", method), ("name", name), ("status", status)]);
        totals.insert((builtin::HTTP_REQS, tags.clone()), Value::Counter(n as f64));
        let mut h = new_histogram();
        for _ in 0..n {
            h.record(ms * 1000).unwrap();
        }
        totals.insert(
            (builtin::HTTP_REQ_DURATION, tags.clone()),
            Value::Trend(Box::new(h)),
        );
        let hits = if failed { n as u64 } else { 0 };
        totals.insert(
            (builtin::HTTP_REQ_FAILED, tags),
            Value::Rate {
                hits,
                total: n as u64,
            },
        );
    }

    #[test]
    fn rows_merge_statuses_of_one_endpoint() {
        let mut totals = SeriesMap::default();
        series(&mut totals, "GET", "/a", "200", 90, 10, false);
        series(&mut totals, "GET", "/a", "500", 10, 100, true);
        series(&mut totals, "POST", "/a", "201", 5, 20, false);
        let e = endpoints(&totals, Duration::from_secs(10), MAX_ENDPOINTS);
        assert_eq!(e.folded, 0);
        assert_eq!(e.rows.len(), 2);
        let get = &e.rows[0];
        assert_eq!(
            (get.method.as_str(), get.name.as_str(), get.count),
            ("GET", "/a", 100)
        );
        assert!((get.rate - 10.0).abs() < 1e-9);
        assert!((get.error_rate - 0.1).abs() < 1e-9);
        assert!((get.p50 - 10.0).abs() < 0.1, "{get:?}");
        assert!((get.p99 - 100.0).abs() < 0.1, "{get:?}");
        assert_eq!(e.rows[1].count, 5);
        let md = markdown(&e.rows);
        assert!(md.contains("| GET | /a | 100 | 10.00 | 10.00 % |"), "{md}");
    }

    #[test]
    fn past_the_limit_names_fold_into_other_and_counts_still_add_up() {
        let mut totals = SeriesMap::default();
        for i in 0..10 {
            series(
                &mut totals,
                "GET",
                &format!("/n/{i}"),
                "200",
                10 + i,
                1,
                false,
            );
        }
        let e = endpoints(&totals, Duration::from_secs(1), 3);
        assert_eq!(e.folded, 7);
        assert_eq!(e.rows.len(), 4);
        assert_eq!(e.rows[0].name, "/n/9");
        assert_eq!(e.rows[3].name, OTHER);
        let sum: u64 = e.rows.iter().map(|r| r.count).sum();
        assert_eq!(sum, (10..20).sum::<u32>() as u64);
        assert!(markdown(&e.rows).contains("need a `name`"));
    }

    #[test]
    fn a_grpc_method_is_one_row_whatever_its_statuses() {
        let mut totals = SeriesMap::default();
        let path = "/demo.v1.Starter/CreateInstance";
        for (status, n, failed) in [("0", 8.0, 0), ("3", 2.0, 2)] {
            let tags = TagSet::from_pairs([("method", path), ("name", path), ("status", status)]);
            totals.insert((builtin::GRPC_REQS, tags.clone()), Value::Counter(n));
            totals.insert(
                (builtin::GRPC_REQ_FAILED, tags),
                Value::Rate {
                    hits: failed,
                    total: n as u64,
                },
            );
        }
        series(&mut totals, "POST", path, "200", 5, 1, false);
        let e = endpoints(&totals, Duration::from_secs(1), MAX_ENDPOINTS);
        assert_eq!(e.rows.len(), 2, "{:?}", e.rows);
        let grpc = &e.rows[0];
        assert_eq!(
            (grpc.method.as_str(), grpc.name.as_str(), grpc.count),
            (GRPC, path, 10)
        );
        assert!((grpc.error_rate - 0.2).abs() < 1e-9);
        assert_eq!((e.rows[1].method.as_str(), e.rows[1].count), ("POST", 5));
    }
}
