//! Series named the Prometheus way, shared by `/metrics` and remote write: metric names
//! and label names reduced to `[a-zA-Z_:][a-zA-Z0-9_:]*`, times in seconds (as k6's
//! remote write sends them), and every tag a label.

use crate::metrics::{MetricDef, TagSet};

/// A metric name: the prefix, then the name with anything not allowed made `_`.
pub(crate) fn metric_name(prefix: &str, name: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + name.len());
    out.push_str(prefix);
    for c in name.chars() {
        out.push(if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            c
        } else {
            '_'
        });
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// A label name: letters, digits and `_`, not starting with a digit or `__`.
pub(crate) fn label_name(key: &str) -> String {
    let mut out: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) || out.starts_with("__") {
        out.insert_str(0, "tag_");
    }
    out
}

/// The labels of a tag set, sorted by label name (remote write requires it).
pub(crate) fn labels(tags: &TagSet) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = tags
        .iter()
        // A `k6/secrets` value in a tag (a URL's token) is sent redacted, as written.
        .map(|(k, v)| (label_name(k), crate::stderr::redact::redact(v).into_owned()))
        .collect();
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// The factor from a trend's stored integers to what Prometheus gets: seconds for
/// timings (stored in µs), units for others (stored in thousandths).
pub(crate) fn trend_scale(def: &MetricDef) -> f64 {
    if def.is_time {
        1e-6
    } else {
        1e-3
    }
}

/// The statistics a trend is sent as (`trend_as = "percentiles"`), with their suffix.
pub(crate) const TREND_STATS: &[(&str, Option<f64>)] = &[
    ("min", None),
    ("avg", None),
    ("med", Some(0.5)),
    ("p90", Some(0.9)),
    ("p95", Some(0.95)),
    ("p99", Some(0.99)),
    ("max", None),
];

/// A trend statistic of `h` (stored integers, not scaled).
pub(crate) fn trend_stat(h: &hdrhistogram::Histogram<u64>, stat: &str, q: Option<f64>) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    match (stat, q) {
        (_, Some(q)) => h.value_at_quantile(q) as f64,
        ("min", _) => h.min() as f64,
        ("max", _) => h.max() as f64,
        _ => h.mean(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels_are_what_prometheus_accepts() {
        assert_eq!(metric_name("k6_", "http_reqs"), "k6_http_reqs");
        assert_eq!(metric_name("", "my-metric.x"), "my_metric_x");
        assert_eq!(metric_name("", "9lives"), "_9lives");
        assert_eq!(label_name("expected_response"), "expected_response");
        assert_eq!(label_name("my-tag"), "my_tag");
        assert_eq!(label_name("__name__"), "tag___name__");
        let tags = TagSet::from_pairs([("b", "2"), ("a-x", "1")]);
        assert_eq!(
            labels(&tags),
            vec![("a_x".into(), "1".into()), ("b".into(), "2".into())]
        );
    }
}
