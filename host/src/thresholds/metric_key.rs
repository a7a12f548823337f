//! The metric a threshold tests: `name` or a sub-metric `name{tag:value}`, resolved
//! against the built-in metrics so a typo of one is caught before the run.

use super::syntax_error::{syntax, SyntaxError};
use crate::metrics::{MetricKind, Registry, TagSet};
use crate::table::nearest;

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

/// Parses a metric key: `name` or `name{tag:value,tag:value}`.
pub fn parse_metric_key(text: &str) -> Result<(String, TagSet), SyntaxError> {
    let (name, selector) = match text.find('{') {
        None => (text.trim(), None),
        Some(open) => (text[..open].trim(), Some(open)),
    };
    if name.is_empty() {
        return Err(syntax(text, 0, 1, "expected a metric name"));
    }
    if !crate::metrics::registry::is_valid_name(name) {
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

/// Why a threshold's metric key is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum MetricKeyError {
    /// The key does not parse; `suggestion` is the built-in its name is closest to.
    #[error(
        "{syntax}{}",
        .suggestion.as_ref().map(|best| format!("\n    did you mean `{best}`?")).unwrap_or_default()
    )]
    Syntax {
        /// Where and what.
        syntax: SyntaxError,
        /// The nearest built-in, when one is near.
        suggestion: Option<String>,
    },
    /// A name so close to a built-in's that it is taken for a typo.
    #[error(
        "unknown metric `{name}`; did you mean `{builtin}`? (a custom metric must not be named within two letters of a built-in)"
    )]
    NearBuiltin {
        /// The name given.
        name: String,
        /// The built-in it is close to.
        builtin: String,
    },
}

/// Resolves a metric key against the built-ins: a built-in gets its kind; a name one or
/// two letters away from a built-in is taken for a typo; any other valid name is left
/// for the plugin to declare at run time.
pub(super) fn resolve_metric(
    key: &str,
    builtins: &Registry,
) -> Result<MetricSelector, MetricKeyError> {
    let (name, tags) = parse_metric_key(key).map_err(|syntax| {
        let names: Vec<String> = builtins.all().into_iter().map(|d| d.name).collect();
        let known: Vec<&str> = names.iter().map(String::as_str).collect();
        let head = key.split('{').next().unwrap_or(key).trim();
        let suggestion = nearest(head, &known)
            .filter(|best| *best != head)
            .map(str::to_owned);
        MetricKeyError::Syntax { syntax, suggestion }
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
        if let Some((_, builtin)) = near {
            return Err(MetricKeyError::NearBuiltin { name, builtin });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thresholds::syntax_error::caret;

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
}

/// Property tests (moved from tests/properties.rs). Saved failing cases:
/// host/proptest-regressions/thresholds/metric_key.txt.
#[cfg(test)]
mod properties {
    use super::parse_metric_key;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn metric_key_parser_never_panics(text in "\\PC{0,40}") {
            if let Err(e) = parse_metric_key(&text) {
                let _ = e.to_string();
            }
        }
    }
}
