//! Reads `[thresholds]` in k6's syntax: a metric or tagged sub-metric
//! (`"http_req_duration{name:static}"`) mapped to a list of expressions such as
//! `"p(95)<500"`, each written short (a string) or long
//! (`{ threshold = "...", abort_on_fail = true, delay_abort_eval = "10s" }`).
//!
//! Errors show the offending text with a caret under the bad part, so a typo in a long
//! config is found at a glance.

use crate::config::table::{nearest, ConfigError, TableReader};
use crate::metrics::summary::Aggregation;
use crate::metrics::{MetricKind, Registry, TagSet};
use std::fmt;
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

/// A metric name and the tags a sub-metric selects.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSelector {
    /// The metric's name.
    pub name: String,
    /// Series whose tags contain all of these are merged; empty = the whole metric.
    pub tags: TagSet,
    /// The key as written in the config (`http_req_duration{name:static}`).
    pub text: String,
    /// The kind when the name is a built-in; custom metrics get theirs at run time.
    pub builtin_kind: Option<MetricKind>,
    /// Whether it is a built-in timing (its values are milliseconds).
    pub is_time: bool,
}

/// `aggregation operator number`, e.g. `p(99.9) <= 250`.
#[derive(Debug, Clone, PartialEq)]
pub struct Expression {
    /// Which value of the metric is tested.
    pub aggregation: Aggregation,
    /// How it is compared.
    pub operator: Operator,
    /// What it is compared with (milliseconds for times).
    pub bound: f64,
    /// The expression as written, trimmed.
    pub text: String,
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `<`
    Less,
    /// `<=`
    LessOrEqual,
    /// `>`
    Greater,
    /// `>=`
    GreaterOrEqual,
    /// `==`
    Equal,
    /// `!=`
    NotEqual,
}

/// Longest first, so `<=` is not read as `<` followed by `=`.
const OPERATORS: &[(&str, Operator)] = &[
    ("<=", Operator::LessOrEqual),
    (">=", Operator::GreaterOrEqual),
    ("==", Operator::Equal),
    ("!=", Operator::NotEqual),
    ("<", Operator::Less),
    (">", Operator::Greater),
];

impl Operator {
    /// Whether `observed OP bound` holds.
    pub fn holds(self, observed: f64, bound: f64) -> bool {
        match self {
            Self::Less => observed < bound,
            Self::LessOrEqual => observed <= bound,
            Self::Greater => observed > bound,
            Self::GreaterOrEqual => observed >= bound,
            // Exact float equality is what k6 does; observed values are already rounded
            // to the histogram's precision.
            Self::Equal => observed == bound,
            Self::NotEqual => observed != bound,
        }
    }

    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        OPERATORS
            .iter()
            .find(|(_, op)| *op == self)
            .map(|(text, _)| *text)
            .unwrap_or("?")
    }
}

/// The name an aggregation is written with (`p(95)`, `avg`, ...).
pub fn aggregation_name(a: &Aggregation) -> String {
    match a {
        Aggregation::Avg => "avg".into(),
        Aggregation::Min => "min".into(),
        Aggregation::Max => "max".into(),
        Aggregation::Med => "med".into(),
        Aggregation::Percentile(p) => format!("p({p})"),
        Aggregation::Count => "count".into(),
        Aggregation::Rate => "rate".into(),
        Aggregation::Value => "value".into(),
    }
}

/// The aggregations a metric kind offers, as written.
pub fn aggregations_of(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Counter => "count, rate",
        MetricKind::Gauge => "value, min, max",
        MetricKind::Rate => "rate",
        MetricKind::Trend => "avg, min, max, med, count, p(N)",
    }
}

/// A kind as configs and messages write it.
pub fn kind_name(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Counter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Rate => "rate",
        MetricKind::Trend => "trend",
    }
}

/// Whether `aggregation` can be computed for a metric of `kind`.
pub fn applies_to(aggregation: &Aggregation, kind: MetricKind) -> bool {
    use Aggregation as A;
    matches!(
        (kind, aggregation),
        (MetricKind::Counter, A::Count | A::Rate)
            | (MetricKind::Gauge, A::Value | A::Min | A::Max)
            | (MetricKind::Rate, A::Rate)
            | (
                MetricKind::Trend,
                A::Avg | A::Min | A::Max | A::Med | A::Count | A::Percentile(_)
            )
    )
}

/// A syntax error in a piece of threshold text, with the span to underline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// The whole text.
    pub text: String,
    /// Byte offset where the bad part starts.
    pub start: usize,
    /// Byte offset where it ends (exclusive; at least one caret is drawn).
    pub end: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Carets count characters, not bytes, so they line up under non-ASCII text.
        let lead = self.text[..self.start.min(self.text.len())].chars().count();
        let width = self.text[self.start.min(self.text.len())..self.end.min(self.text.len())]
            .chars()
            .count()
            .max(1);
        write!(
            f,
            "{}\n      {}\n      {}{}",
            self.message,
            self.text,
            " ".repeat(lead),
            "^".repeat(width)
        )
    }
}

fn syntax(text: &str, start: usize, end: usize, message: impl Into<String>) -> SyntaxError {
    // Offsets found by scanning bytes may fall inside a multi-byte character: widen
    // them to whole characters so the caret line can be drawn.
    let mut start = start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = end.clamp(start, text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    SyntaxError {
        text: text.to_string(),
        start,
        end,
        message: message.into(),
    }
}

/// Parses `aggregation operator number`.
pub fn parse_expression(text: &str) -> Result<Expression, SyntaxError> {
    let s = text;
    let skip_ws = |i: usize| {
        i + s[i..]
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(s.len() - i)
    };
    let start = skip_ws(0);
    if start == s.len() {
        return Err(syntax(
            s,
            0,
            s.len(),
            "empty threshold; write it like p(95)<500",
        ));
    }
    let word_end = start
        + s[start..]
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(s.len() - start);
    let word = &s[start..word_end];
    let (aggregation, after) = match word {
        "avg" => (Aggregation::Avg, word_end),
        "min" => (Aggregation::Min, word_end),
        "max" => (Aggregation::Max, word_end),
        "med" => (Aggregation::Med, word_end),
        "count" => (Aggregation::Count, word_end),
        "rate" => (Aggregation::Rate, word_end),
        "value" => (Aggregation::Value, word_end),
        "p" => parse_percentile(s, word_end)?,
        "" => {
            return Err(syntax(
                s,
                start,
                start + 1,
                "expected an aggregation (avg, min, max, med, count, rate, value or p(N))",
            ))
        }
        other => {
            let known = ["avg", "min", "max", "med", "count", "rate", "value"];
            let hint = match nearest(other, &known) {
                Some(best) => format!("; did you mean `{best}`?"),
                None if other.starts_with('p') && other[1..].parse::<f64>().is_ok() => {
                    format!("; write percentiles as p({})", &other[1..])
                }
                None => String::new(),
            };
            return Err(syntax(
                s,
                start,
                word_end,
                format!("unknown aggregation `{other}` (avg, min, max, med, count, rate, value or p(N)){hint}"),
            ));
        }
    };
    let op_start = skip_ws(after);
    let Some((op_text, operator)) = OPERATORS
        .iter()
        .find(|(t, _)| s[op_start..].starts_with(t))
        .copied()
    else {
        let end = op_start
            + s[op_start..]
                .find(|c: char| c.is_ascii_alphanumeric() || c.is_whitespace() || c == '.')
                .unwrap_or(s.len() - op_start);
        return Err(syntax(
            s,
            op_start,
            end.max(op_start + 1),
            "expected an operator: <, <=, >, >=, == or !=",
        ));
    };
    let op_end = op_start + op_text.len();
    // `<>`, `=<`, `===`: an operator followed by more operator characters.
    if s[op_end..].starts_with(['<', '>', '=', '!']) {
        let end = op_end
            + s[op_end..]
                .find(|c: char| !matches!(c, '<' | '>' | '=' | '!'))
                .unwrap_or(s.len() - op_end);
        return Err(syntax(
            s,
            op_start,
            end,
            "unknown operator; use <, <=, >, >=, == or !=",
        ));
    }
    let num_start = skip_ws(op_end);
    let num_text = s[num_start..].trim_end();
    if num_text.is_empty() {
        return Err(syntax(
            s,
            num_start.min(s.len()),
            s.len() + 1,
            "expected a number after the operator",
        ));
    }
    let bound: f64 = match num_text.parse() {
        Ok(v) if f64::is_finite(v) => v,
        _ => {
            let digits = num_text
                .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
                .unwrap_or(0);
            let hint = if digits > 0 && num_text[..digits].parse::<f64>().is_ok() {
                " (no units: times are in milliseconds, rates between 0 and 1)"
            } else {
                ""
            };
            return Err(syntax(
                s,
                num_start + digits,
                num_start + num_text.len(),
                format!("expected a number{hint}"),
            ));
        }
    };
    Ok(Expression {
        aggregation,
        operator,
        bound,
        text: text.trim().to_string(),
    })
}

/// Reads `(N)` after `p`; `at` is just past the `p`.
fn parse_percentile(s: &str, at: usize) -> Result<(Aggregation, usize), SyntaxError> {
    if !s[at..].starts_with('(') {
        return Err(syntax(s, at, at + 1, "expected `(` after p: write p(95)"));
    }
    let open = at + 1;
    let Some(close_rel) = s[open..].find(')') else {
        return Err(syntax(s, at, s.len(), "missing `)`: write p(95)"));
    };
    let close = open + close_rel;
    let inner = s[open..close].trim();
    match inner.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok((Aggregation::Percentile(p), close + 1)),
        Ok(_) => Err(syntax(s, open, close, "a percentile is between 0 and 100")),
        Err(_) => Err(syntax(
            s,
            open,
            close.max(open + 1),
            "expected a number between 0 and 100 in p(N)",
        )),
    }
}

/// Parses a metric key: `name` or `name{tag:value,tag:value}`.
pub fn parse_metric_key(text: &str) -> Result<(String, TagSet), SyntaxError> {
    let (name, selector) = match text.find('{') {
        None => (text.trim(), None),
        Some(open) => (text[..open].trim(), Some(open)),
    };
    if name.is_empty() {
        return Err(syntax(text, 0, 1, "expected a metric name"));
    }
    if !is_identifier(name) {
        let lead = text.len() - text.trim_start().len();
        let bad = name
            .char_indices()
            .find(|(i, c)| {
                !(*c == '_' || c.is_ascii_alphabetic() || (*i > 0 && c.is_ascii_digit()))
            })
            .map(|(i, _)| lead + i)
            .unwrap_or(lead);
        return Err(syntax(
            text,
            bad,
            bad + 1,
            "a metric name has letters, digits and _ only; a sub-metric is written name{tag:value}",
        ));
    }
    let Some(open) = selector else {
        return Ok((name.to_string(), TagSet::empty()));
    };
    let trimmed_end = text.trim_end().len();
    if !text[..trimmed_end].ends_with('}') {
        return Err(syntax(
            text,
            open,
            trimmed_end,
            "missing `}` at the end of the tag selector",
        ));
    }
    let close = trimmed_end - 1;
    let inner = &text[open + 1..close];
    if inner.trim().is_empty() {
        return Err(syntax(
            text,
            open,
            close + 1,
            "empty tag selector; write name{tag:value}",
        ));
    }
    let mut pairs = Vec::new();
    let mut at = open + 1;
    for part in inner.split(',') {
        let part_start = at;
        at += part.len() + 1;
        let Some(colon) = part.find(':') else {
            return Err(syntax(
                text,
                part_start,
                part_start + part.len(),
                "expected tag:value",
            ));
        };
        let key = part[..colon].trim();
        let value = unquote(part[colon + 1..].trim());
        if key.is_empty() {
            return Err(syntax(
                text,
                part_start,
                part_start + colon + 1,
                "empty tag name",
            ));
        }
        pairs.push((key.to_string(), value.to_string()));
    }
    Ok((name.to_string(), TagSet::from_pairs(pairs)))
}

fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

fn is_identifier(name: &str) -> bool {
    name.len() <= 128
        && name
            .chars()
            .enumerate()
            .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()))
}

/// Resolves a metric key against the built-ins: a built-in gets its kind; a name one or
/// two letters away from a built-in is taken for a typo; any other valid name is left
/// for the plugin to declare at run time.
fn resolve_metric(key: &str, builtins: &Registry) -> Result<MetricSelector, String> {
    let (name, tags) = parse_metric_key(key).map_err(|e| {
        let names: Vec<String> = builtins.all().into_iter().map(|d| d.name).collect();
        let known: Vec<&str> = names.iter().map(String::as_str).collect();
        let head = key.split('{').next().unwrap_or(key).trim();
        match nearest(head, &known) {
            Some(best) if best != head => format!("{e}\n    did you mean `{best}`?"),
            _ => e.to_string(),
        }
    })?;
    let builtin = builtins.lookup(&name).map(|id| builtins.def(id));
    let builtin_kind = builtin.as_ref().map(|d| d.kind);
    if builtin_kind.is_none() {
        let near = builtins
            .all()
            .into_iter()
            .map(|d| (strsim::damerau_levenshtein(&name, &d.name), d.name))
            .filter(|(d, _)| *d <= 2)
            .min_by_key(|(d, _)| *d);
        if let Some((_, best)) = near {
            return Err(format!(
                "unknown metric `{name}`; did you mean `{best}`? (a custom metric must not be named within two letters of a built-in)"
            ));
        }
    }
    Ok(MetricSelector {
        name,
        tags,
        text: key.trim().to_string(),
        builtin_kind,
        is_time: builtin.is_some_and(|d| d.is_time),
    })
}

/// Parses the `[thresholds]` table.
pub fn parse_thresholds(table: &toml::Table) -> Result<Vec<Threshold>, ConfigError> {
    let builtins = Registry::new();
    let mut out = Vec::new();
    for (key, value) in table {
        let path = format!("thresholds.{}", toml_key(key));
        let at = |i: usize| format!("{path}[{i}]");
        let metric = resolve_metric(key, &builtins).map_err(|message| ConfigError {
            path: path.clone(),
            message,
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
fn toml_key(key: &str) -> String {
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

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    fn expr(text: &str) -> Expression {
        parse_expression(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn every_aggregation_and_operator_parses() {
        let cases = [
            ("avg<200", Aggregation::Avg, Operator::Less, 200.0),
            ("min <= 1", Aggregation::Min, Operator::LessOrEqual, 1.0),
            ("max>3.5", Aggregation::Max, Operator::Greater, 3.5),
            ("med >= 0", Aggregation::Med, Operator::GreaterOrEqual, 0.0),
            (
                "p(95)<500",
                Aggregation::Percentile(95.0),
                Operator::Less,
                500.0,
            ),
            (
                "p(99.9) < 1e3",
                Aggregation::Percentile(99.9),
                Operator::Less,
                1000.0,
            ),
            (
                "p( 50 )==10",
                Aggregation::Percentile(50.0),
                Operator::Equal,
                10.0,
            ),
            ("count!=0", Aggregation::Count, Operator::NotEqual, 0.0),
            ("rate<0.01", Aggregation::Rate, Operator::Less, 0.01),
            (
                "  value > -1  ",
                Aggregation::Value,
                Operator::Greater,
                -1.0,
            ),
        ];
        for (text, aggregation, operator, bound) in cases {
            let e = expr(text);
            assert_eq!(e.aggregation, aggregation, "{text}");
            assert_eq!(e.operator, operator, "{text}");
            assert_eq!(e.bound, bound, "{text}");
            assert_eq!(e.text, text.trim());
        }
    }

    #[test]
    fn operators_compare_as_written() {
        assert!(Operator::Less.holds(1.0, 2.0));
        assert!(!Operator::Less.holds(2.0, 2.0));
        assert!(Operator::LessOrEqual.holds(2.0, 2.0));
        assert!(Operator::Greater.holds(3.0, 2.0));
        assert!(Operator::GreaterOrEqual.holds(2.0, 2.0));
        assert!(Operator::Equal.holds(2.0, 2.0));
        assert!(Operator::NotEqual.holds(1.0, 2.0));
        assert_eq!(Operator::GreaterOrEqual.as_str(), ">=");
    }

    /// The caret line of an error, and the column its first caret is at.
    fn caret(e: &SyntaxError) -> (usize, usize) {
        let shown = e.to_string();
        let line = shown.lines().last().unwrap().to_string();
        let col = line.find('^').unwrap() - 6;
        (col, line.matches('^').count())
    }

    #[test]
    fn bad_expressions_point_at_the_offending_text() {
        let e = parse_expression("p(95)<>500").unwrap_err();
        assert!(e.message.contains("unknown operator"), "{e}");
        assert_eq!(caret(&e), (5, 2));

        let e = parse_expression("p95<500").unwrap_err();
        assert!(e.message.contains("p(95)"), "{e}");
        assert_eq!(caret(&e), (0, 3));

        let e = parse_expression("avrg<500").unwrap_err();
        assert!(e.message.contains("did you mean `avg`"), "{e}");
        assert_eq!(caret(&e), (0, 4));

        let e = parse_expression("p(95)<500ms").unwrap_err();
        assert!(e.message.contains("milliseconds"), "{e}");
        assert_eq!(caret(&e), (9, 2));

        let e = parse_expression("p(101)<5").unwrap_err();
        assert!(e.message.contains("between 0 and 100"), "{e}");
        assert_eq!(caret(&e), (2, 3));

        let e = parse_expression("p(95 <5").unwrap_err();
        assert!(e.message.contains("missing `)`"), "{e}");

        let e = parse_expression("rate 0.01").unwrap_err();
        assert!(e.message.contains("expected an operator"), "{e}");
        assert_eq!(caret(&e), (5, 1));

        let e = parse_expression("rate<").unwrap_err();
        assert!(e.message.contains("expected a number"), "{e}");

        let e = parse_expression("").unwrap_err();
        assert!(e.message.contains("empty"), "{e}");

        let e = parse_expression("avg=<5").unwrap_err();
        assert!(e.message.contains("expected an operator"), "{e}");
    }

    #[test]
    fn metric_keys_and_sub_metrics() {
        let (name, tags) = parse_metric_key("http_req_duration").unwrap();
        assert_eq!(name, "http_req_duration");
        assert!(tags.is_empty());
        let (name, tags) = parse_metric_key("http_req_duration{name:static, method:GET}").unwrap();
        assert_eq!(name, "http_req_duration");
        assert_eq!(tags.to_string(), "{method:GET,name:static}");
        let (_, tags) = parse_metric_key("checks{check:status is 200}").unwrap();
        assert_eq!(tags.get("check"), Some("status is 200"));
        let (_, tags) = parse_metric_key("x{scenario:'browse'}").unwrap();
        assert_eq!(tags.get("scenario"), Some("browse"));

        let e = parse_metric_key("http_req_duration{name:static").unwrap_err();
        assert!(e.message.contains("missing `}`"), "{e}");
        let e = parse_metric_key("http_req_duration{}").unwrap_err();
        assert!(e.message.contains("empty tag selector"), "{e}");
        let e = parse_metric_key("http_req_duration{name}").unwrap_err();
        assert!(e.message.contains("tag:value"), "{e}");
        let e = parse_metric_key("http-req-duration").unwrap_err();
        assert_eq!(caret(&e), (4, 1));
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
