//! Reads `[thresholds]` in k6's syntax: a metric or tagged sub-metric
//! (`"http_req_duration{name:static}"`) mapped to a list of expressions such as
//! `"p(95)<500"`, each written short (a string) or long
//! (`{ threshold = "...", abort_on_fail = true, delay_abort_eval = "10s" }`).
//!
//! Errors show the offending text with a caret under the bad part, so a typo in a long
//! config is found at a glance.

use super::expression::{aggregation_name, aggregations_of, applies_to, kind_name};
use super::expression::{parse_expression, Expression};
use super::metric_key::{resolve_metric, MetricSelector};
use super::syntax_error::syntax;
use crate::metrics::Registry;
use crate::table::{ConfigError, TableReader};
use std::time::Duration;

/// One threshold: a test on one aggregation of a metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The metric (or sub-metric) it tests.
    pub metric: MetricSelector,
    /// The test.
    pub expression: Expression,
    /// Stop the run as soon as the test fails while running.
    pub abort_on_fail: bool,
    /// No abort before this much of the run has passed (lets samples build up).
    pub delay_abort_eval: Duration,
}

/// Parses the `[thresholds]` table.
pub fn parse_thresholds(table: &toml::Table) -> Result<Vec<Threshold>, ConfigError> {
    let builtins = Registry::new();
    let mut out = Vec::new();
    for (key, value) in table {
        let path = format!("thresholds.{}", toml_key(key));
        let at = |i: usize| format!("{path}[{i}]");
        let metric = resolve_metric(key, &builtins).map_err(|e| ConfigError {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let items: Vec<&toml::Value> = match value {
            toml::Value::Array(items) => items.iter().collect(),
            toml::Value::String(_) | toml::Value::Table(_) => vec![value],
            other => {
                return Err(ConfigError {
                    path,
                    message: format!(
                        "expected a list of thresholds such as [\"p(95)<500\"], got {} `{other}`",
                        other.type_str()
                    ),
                })
            }
        };
        if items.is_empty() {
            return Err(ConfigError {
                path,
                message: "empty list; give at least one threshold such as \"p(95)<500\"".into(),
            });
        }
        for (i, item) in items.into_iter().enumerate() {
            let (text, abort_on_fail, delay_abort_eval) = match item {
                toml::Value::String(s) => (s.clone(), false, Duration::ZERO),
                toml::Value::Table(t) => {
                    let mut r = TableReader::new(at(i), t);
                    let text = r.string("threshold")?.ok_or_else(|| ConfigError {
                        path: at(i),
                        message: "missing `threshold = \"...\"`".into(),
                    })?;
                    let abort = r.boolean("abort_on_fail")?.unwrap_or(false);
                    let delay = r.duration("delay_abort_eval")?.unwrap_or_default();
                    r.finish()?;
                    (text, abort, delay)
                }
                other => {
                    return Err(ConfigError {
                        path: at(i),
                        message: format!(
                            "expected a string such as \"p(95)<500\" or a table {{ threshold = \"...\", abort_on_fail = true }}, got {} `{other}`",
                            other.type_str()
                        ),
                    })
                }
            };
            let expression = parse_expression(&text).map_err(|e| ConfigError {
                path: at(i),
                message: e.to_string(),
            })?;
            if let Some(kind) = metric.builtin_kind {
                if !applies_to(&expression.aggregation, kind) {
                    let agg = aggregation_name(&expression.aggregation);
                    let len = text
                        .find(|c: char| "<>=!".contains(c))
                        .unwrap_or(text.len());
                    return Err(ConfigError {
                        path: at(i),
                        message: syntax(
                            &text,
                            0,
                            len,
                            format!(
                                "`{}` is a {} metric: {agg} does not apply; use {}",
                                metric.name,
                                kind_name(kind),
                                aggregations_of(kind)
                            ),
                        )
                        .to_string(),
                    });
                }
            }
            out.push(Threshold {
                metric: metric.clone(),
                expression,
                abort_on_fail,
                delay_abort_eval,
            });
        }
    }
    Ok(out)
}

/// A key as TOML needs it in a dotted path (quoted unless bare).
pub(crate) fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_string()
    } else {
        format!("{key:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::MetricKind;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn short_and_long_forms_in_a_table() {
        let t = table(
            r#"
            http_req_duration = ["p(95)<500", { threshold = "p(99)<1000", abort_on_fail = true, delay_abort_eval = "10s" }]
            "http_req_duration{name:static}" = ["avg<50"]
            http_req_failed = "rate<0.01"
            "checks{check:status is 200}" = ["rate>0.99"]
            orders_placed = ["count>10"]
            "#,
        );
        let ts = parse_thresholds(&t).unwrap();
        assert_eq!(ts.len(), 6);
        let long = ts
            .iter()
            .find(|t| t.expression.text == "p(99)<1000")
            .unwrap();
        assert!(long.abort_on_fail);
        assert_eq!(long.delay_abort_eval, Duration::from_secs(10));
        assert_eq!(long.metric.builtin_kind, Some(MetricKind::Trend));
        let short = ts
            .iter()
            .find(|t| t.expression.text == "p(95)<500")
            .unwrap();
        assert!(!short.abort_on_fail);
        let sub = ts
            .iter()
            .find(|t| t.metric.text == "http_req_duration{name:static}")
            .unwrap();
        assert_eq!(sub.metric.tags.get("name"), Some("static"));
        let checks = ts.iter().find(|t| t.metric.name == "checks").unwrap();
        assert_eq!(checks.metric.tags.get("check"), Some("status is 200"));
        let custom = ts
            .iter()
            .find(|t| t.metric.name == "orders_placed")
            .unwrap();
        assert_eq!(custom.metric.builtin_kind, None);
    }

    #[test]
    fn config_errors_name_the_key_and_suggest_fixes() {
        let err = parse_thresholds(&table(r#"http_req_durations = ["p(95)<500"]"#)).unwrap_err();
        assert_eq!(err.path, "thresholds.http_req_durations");
        assert!(
            err.message.contains("did you mean `http_req_duration`"),
            "{err}"
        );

        let err = parse_thresholds(&table(r#""http-req-duration" = ["p(95)<500"]"#)).unwrap_err();
        assert!(
            err.message.contains("did you mean `http_req_duration`"),
            "{err}"
        );
        assert!(err.message.contains('^'), "{err}");

        let err = parse_thresholds(&table(r#"http_req_duration = ["p(95)<500", "p(99)=>9"]"#))
            .unwrap_err();
        assert_eq!(err.path, "thresholds.http_req_duration[1]");
        assert!(err.message.contains("expected an operator"), "{err}");
        assert!(err.message.contains("p(99)=>9\n"), "{err}");

        let err = parse_thresholds(&table(r#"http_reqs = ["p(95)<500"]"#)).unwrap_err();
        assert!(err.message.contains("counter metric"), "{err}");
        assert!(err.message.contains("count, rate"), "{err}");

        let err = parse_thresholds(&table(
            r#"http_req_duration = [{ threshold = "p(95)<5", abort_on_fial = true }]"#,
        ))
        .unwrap_err();
        assert!(
            err.message.contains("did you mean `abort_on_fail`"),
            "{err}"
        );

        let err = parse_thresholds(&table(r#"http_req_duration = [{ abort_on_fail = true }]"#))
            .unwrap_err();
        assert!(err.message.contains("missing `threshold"), "{err}");

        let err = parse_thresholds(&table(r#"http_req_duration = 5"#)).unwrap_err();
        assert!(err.message.contains("list of thresholds"), "{err}");

        let err = parse_thresholds(&table(
            r#"http_req_duration = [{ threshold = "p(95)<5", delay_abort_eval = "10 seconds" }]"#,
        ))
        .unwrap_err();
        assert!(err.message.contains("invalid duration"), "{err}");
    }
}

/// Property tests (moved from tests/properties.rs). Saved failing cases:
/// host/proptest-regressions/thresholds/parse.txt.
#[cfg(test)]
mod properties {
    use super::parse_thresholds;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn thresholds_table_never_panics(key in "\\PC{0,30}", expr in "\\PC{0,20}") {
            let mut table = toml::Table::new();
            table.insert(key, toml::Value::Array(vec![toml::Value::String(expr)]));
            let _ = parse_thresholds(&table);
        }
    }
}
