//! The `[regressions]` section: which metrics `host run --baseline` holds against the
//! baseline run, and how much each may change before the run ends with the regression
//! exit code.
//!
//! ```toml
//! [regressions]
//! http_req_duration = "p(95) +10%"            # the p95 may rise by 10 % at most
//! http_reqs = "rate -5%"                      # the rate may fall by 5 % at most
//! iteration_duration = ["avg +20%", "p(99) +50%"]
//! ```
//!
//! The sign says which way is worse: `+` a rise, `-` a fall. Every mistake of the
//! section is listed at once, as the rest of the config's.

use crate::table::{ConfigError, ConfigErrors};

/// A statistic a rule holds: the figures summary.json keeps for each metric.
pub(crate) const STATS: &[&str] = &[
    "avg", "min", "med", "p(50)", "p(90)", "p(95)", "p(99)", "p(99.9)", "max", "rate", "count",
    "value",
];

/// Which way a change is a regression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worse {
    /// A rise beyond the tolerance (latency, errors).
    Up,
    /// A fall beyond the tolerance (throughput, checks).
    Down,
}

/// One rule: `metric`'s `stat` may move the `worse` way by `tolerance` at most.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The metric, as summary.json names it.
    pub metric: String,
    /// The statistic as summary.json keys it (`p95`, `med`, `p99.9`, `avg`, `rate`).
    pub stat: String,
    /// Which way is worse.
    pub worse: Worse,
    /// The change allowed, as a share (0.1 = 10 %).
    pub tolerance: f64,
    /// The rule as written, for messages.
    pub text: String,
}

impl Rule {
    /// The change as the rule writes it, of a relative change `change` (0.12 → `+12.0%`).
    pub(crate) fn describe_change(change: f64) -> String {
        format!("{:+.1}%", change * 100.0)
    }
}

/// Reads `[regressions]`; no section is no rule.
pub(crate) fn parse(source: &toml::Table) -> Result<Vec<Rule>, ConfigErrors> {
    let Some(value) = source.get("regressions") else {
        return Ok(Vec::new());
    };
    let Some(table) = value.as_table() else {
        return Err(ConfigError {
            path: "regressions".into(),
            message: "must be a table: [regressions] with lines such as \
                      http_req_duration = \"p(95) +10%\""
                .into(),
        }
        .into());
    };
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    for (metric, value) in table {
        let path = format!("regressions.{metric}");
        let texts: Vec<&toml::Value> = match value {
            toml::Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for text in texts {
            match text.as_str() {
                Some(text) => match parse_rule(metric, text) {
                    Ok(rule) => rules.push(rule),
                    Err(message) => errors.push(ConfigError {
                        path: path.clone(),
                        message,
                    }),
                },
                None => errors.push(ConfigError {
                    path: path.clone(),
                    message: format!(
                        "must be a rule such as \"p(95) +10%\" (or a list of them), got `{text}`"
                    ),
                }),
            }
        }
    }
    if errors.is_empty() {
        Ok(rules)
    } else {
        Err(ConfigErrors(errors))
    }
}

/// `p(95) +10%` → the rule; else what to fix.
fn parse_rule(metric: &str, text: &str) -> Result<Rule, String> {
    let example = "write STAT +N% or STAT -N%, such as \"p(95) +10%\" or \"rate -5%\"";
    let mut words = text.split_whitespace();
    let (Some(stat), Some(change), None) = (words.next(), words.next(), words.next()) else {
        return Err(format!("`{text}` is not a rule; {example}"));
    };
    let Some(key) = stat_key(stat) else {
        return Err(format!(
            "unknown statistic `{stat}` in `{text}`; use one of {}",
            STATS.join(", ")
        ));
    };
    let worse = match change.chars().next() {
        Some('+') => Worse::Up,
        Some('-') => Worse::Down,
        _ => {
            return Err(format!(
                "`{change}` in `{text}` has no sign: + when a rise is worse, - when a fall is"
            ))
        }
    };
    let number = change[1..]
        .strip_suffix('%')
        .ok_or_else(|| format!("`{change}` in `{text}` is not a percentage; {example}"))?;
    let tolerance = match number.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => v / 100.0,
        _ => {
            return Err(format!(
                "`{change}` in `{text}` is not a percentage; {example}"
            ))
        }
    };
    Ok(Rule {
        metric: metric.to_string(),
        stat: key.to_string(),
        worse,
        tolerance,
        text: text.to_string(),
    })
}

/// A statistic as written (`p(95)`, `p95`, `med`) → its key in summary.json.
pub(crate) fn stat_key(stat: &str) -> Option<&'static str> {
    Some(match stat.trim() {
        "avg" | "mean" => "avg",
        "min" => "min",
        "med" | "p(50)" | "p50" => "med",
        "p(90)" | "p90" => "p90",
        "p(95)" | "p95" => "p95",
        "p(99)" | "p99" => "p99",
        "p(99.9)" | "p99.9" => "p99.9",
        "max" => "max",
        "rate" => "rate",
        "count" => "count",
        "value" => "value",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<Rule>, String> {
        parse(&toml::from_str(text).unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn rules_read_their_stat_sign_and_tolerance() {
        let rules = read(
            "[regressions]\nhttp_req_duration = \"p(95) +10%\"\n\
             http_reqs = [\"rate -5%\", \"count -0.5%\"]\n",
        )
        .unwrap();
        let got: Vec<(&str, &str, Worse, f64)> = rules
            .iter()
            .map(|r| (r.metric.as_str(), r.stat.as_str(), r.worse, r.tolerance))
            .collect();
        assert_eq!(
            got,
            vec![
                ("http_req_duration", "p95", Worse::Up, 0.1),
                ("http_reqs", "rate", Worse::Down, 0.05),
                ("http_reqs", "count", Worse::Down, 0.005),
            ]
        );
        assert!(read("").unwrap().is_empty());
    }

    #[test]
    fn every_mistake_is_listed() {
        let e = read(
            "[regressions]\na = \"p(97) +10%\"\nb = \"p(95) 10%\"\nc = 3\nd = \"p(95)\"\n\
             e = \"avg +ten%\"\n",
        )
        .unwrap_err();
        for want in [
            "regressions.a: unknown statistic `p(97)`",
            "regressions.b: `10%` in `p(95) 10%` has no sign",
            "regressions.c: must be a rule such as",
            "regressions.d: `p(95)` is not a rule",
            "regressions.e: `+ten%` in `avg +ten%` is not a percentage",
        ] {
            assert!(e.contains(want), "{want} in {e}");
        }
        assert!(read("regressions = 1")
            .unwrap_err()
            .contains("must be a table"));
    }
}
