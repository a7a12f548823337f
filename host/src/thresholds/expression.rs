//! A threshold's test, `aggregation operator number` (`p(95)<500`), and which
//! aggregations each kind of metric offers.

use super::syntax_error::{syntax, SyntaxError};
use crate::metrics::summary::Aggregation;
use crate::metrics::MetricKind;
use crate::table::nearest;

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
pub(crate) fn aggregation_name(a: &Aggregation) -> String {
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
pub(crate) fn aggregations_of(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Counter => "count, rate",
        MetricKind::Gauge => "value, min, max",
        MetricKind::Rate => "rate",
        MetricKind::Trend => "avg, min, max, med, count, p(N)",
    }
}

/// A kind as configs and messages write it.
pub(crate) fn kind_name(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Counter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Rate => "rate",
        MetricKind::Trend => "trend",
    }
}

/// Whether `aggregation` can be computed for a metric of `kind`.
pub(crate) fn applies_to(aggregation: &Aggregation, kind: MetricKind) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thresholds::syntax_error::caret;

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
}

/// Property tests (moved from tests/properties.rs). Saved failing cases:
/// host/proptest-regressions/thresholds/expression.txt.
#[cfg(test)]
mod properties {
    use super::parse_expression;
    use crate::metrics::summary::Aggregation;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn expression_parser_never_panics_and_points_inside_the_text(text in "\\PC{0,30}") {
            if let Err(e) = parse_expression(&text) {
                // Rendering the caret line must not panic either.
                let shown = e.to_string();
                prop_assert!(shown.contains('^'), "{}", shown);
            }
        }

        #[test]
        fn written_expressions_parse_to_what_was_written(
            agg in prop_oneof![
                Just("avg"), Just("min"), Just("max"), Just("med"), Just("count"), Just("rate"), Just("value")
            ],
            p in 0.0f64..100.0,
            use_percentile in any::<bool>(),
            op in prop_oneof![Just("<"), Just("<="), Just(">"), Just(">="), Just("=="), Just("!=")],
            bound in 0u32..1_000_000,
            spaces in any::<bool>(),
        ) {
            let p = (p * 100.0).round() / 100.0;
            let aggregation = if use_percentile { format!("p({p})") } else { agg.to_string() };
            let sep = if spaces { " " } else { "" };
            let text = format!("{aggregation}{sep}{op}{sep}{bound}");
            let e = parse_expression(&text).unwrap();
            prop_assert_eq!(e.operator.as_str(), op);
            prop_assert_eq!(e.bound, bound as f64);
            if use_percentile {
                prop_assert_eq!(e.aggregation, Aggregation::Percentile(p));
            }
        }
    }
}
