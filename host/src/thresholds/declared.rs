//! What a plugin may record, as it declares it from `describe()` (`metrics.declare`,
//! contract 0.3.2), and the check of the run's thresholds against it before the first
//! VU starts: a threshold on a metric, or on a tag value, that nothing can record would
//! only fail at the end ("got no samples") after the whole run. Built-in metrics and the
//! tags the host sets are always known; a plugin that declares nothing (one built
//! against an older contract) is not checked, except for the `scenario` tag, whose
//! values the run config gives.

use super::expression::{aggregation_name, aggregations_of, applies_to, kind_name};
use super::parse::Threshold;
use crate::metrics::{MetricKind, Registry};
use crate::table::{nearest, Collector, ConfigError, ConfigErrors};
use std::collections::BTreeMap;

/// Most metrics, tags and values of one tag a plugin may declare; past them the rest is
/// left out (and the checks it would allow are not made), so a plugin cannot grow the
/// host without bound.
const MAX_DECLARED: usize = 1_000;

/// Tags the host itself puts on samples (requests, checks, errors, WebSockets), which
/// thresholds may select whatever the plugin declares.
const HOST_TAGS: &[&str] = &[
    "scenario",
    "name",
    "url",
    "method",
    "status",
    "expected_response",
    "proto",
    "error",
    "error_code",
    "group",
    "kind",
    "check",
    "tls_version",
    "service",
    "subproto",
];

/// What a plugin declared it may record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    /// Custom metrics by name.
    pub metrics: BTreeMap<String, MetricKind>,
    /// Tags it sets, with the values each may take (`None`: any value).
    pub tags: BTreeMap<String, Option<Vec<String>>>,
    /// Whether some of what it declared was left out ([`MAX_DECLARED`]): then nothing
    /// is refused for want of a declaration.
    pub truncated: bool,
}

impl Declared {
    /// Adds a custom metric.
    pub fn add_metric(&mut self, name: String, kind: MetricKind) {
        if self.metrics.len() >= MAX_DECLARED && !self.metrics.contains_key(&name) {
            self.truncated = true;
            return;
        }
        self.metrics.insert(name, kind);
    }

    /// Adds a tag and its values (none: any value, which wins over a list).
    pub fn add_tag(&mut self, name: String, values: Vec<String>) {
        if self.tags.len() >= MAX_DECLARED && !self.tags.contains_key(&name) {
            self.truncated = true;
            return;
        }
        let slot = self.tags.entry(name).or_insert_with(|| Some(Vec::new()));
        let Some(known) = slot else {
            return;
        };
        if values.is_empty() {
            *slot = None;
            return;
        }
        for v in values {
            if known.len() >= MAX_DECLARED {
                self.truncated = true;
                break;
            }
            if !known.contains(&v) {
                known.push(v);
            }
        }
    }

    /// The values tag `name` may take: `None` when it was not declared, `Some(None)`
    /// when any value may be set.
    fn values_of(&self, name: &str) -> Option<Option<&[String]>> {
        self.tags.get(name).map(|v| v.as_deref())
    }
}

/// What the run config says that a threshold may name: its scenarios, and the tag keys
/// its scenarios add to every sample.
pub(crate) struct RunNames<'a> {
    /// The scenarios' names.
    pub scenarios: Vec<&'a str>,
    /// The keys of the scenarios' `tags`.
    pub tags: Vec<&'a str>,
}

/// Refuses, with a "did you mean", every threshold of `thresholds` on a metric or a tag
/// value that nothing in this run can record.
pub(crate) fn check(
    thresholds: &[Threshold],
    declared: Option<&Declared>,
    run: &RunNames<'_>,
) -> Result<(), ConfigErrors> {
    let mut errors = Collector::default();
    let builtins: Vec<String> = Registry::new().all().into_iter().map(|d| d.name).collect();
    let scenarios = &run.scenarios;
    let config_tags = &run.tags;
    let mut seen = std::collections::BTreeSet::new();
    for t in thresholds {
        let path = format!("thresholds.{}", super::parse::toml_key(&t.metric.text));
        let refuse = |message: String| ConfigError {
            path: path.clone(),
            message,
        };
        let mut problems = Vec::new();
        if t.metric.builtin_kind.is_none() {
            if let Some(d) = declared.filter(|d| !d.truncated) {
                match d.metrics.get(&t.metric.name) {
                    None => {
                        let mut known: Vec<&str> = d.metrics.keys().map(String::as_str).collect();
                        let declared_list = if known.is_empty() {
                            "no custom metric".to_string()
                        } else {
                            format!("these custom metrics: {}", known.join(", "))
                        };
                        known.extend(builtins.iter().map(String::as_str));
                        problems.push(format!(
                            "nothing records the metric `{}`: it is not built in, and the plugin \
                             declares {declared_list}{}",
                            t.metric.name,
                            did_you_mean(&t.metric.name, &known)
                        ));
                    }
                    Some(kind) if !applies_to(&t.expression.aggregation, *kind) => {
                        problems.push(format!(
                            "`{}` is a {} metric (as the plugin declares it): {} does not apply; \
                             use {}",
                            t.metric.name,
                            kind_name(*kind),
                            aggregation_name(&t.expression.aggregation),
                            aggregations_of(*kind)
                        ));
                    }
                    Some(_) => {}
                }
            }
        }
        for (key, value) in t.metric.tags.iter() {
            if key == "scenario" {
                if !scenarios.contains(&value) {
                    problems.push(format!(
                        "no sample has scenario `{value}`: the run's scenarios are {}{}",
                        scenarios.join(", "),
                        did_you_mean(value, scenarios)
                    ));
                }
                continue;
            }
            let Some(d) = declared.filter(|d| !d.truncated) else {
                continue;
            };
            match d.values_of(key) {
                Some(None) => {}
                Some(Some(values)) => {
                    // A request's `name` is its URL unless the plugin names it.
                    let url = key == "name" && value.contains("://");
                    if !url && !values.iter().any(|v| v == value) {
                        let known: Vec<&str> = values.iter().map(String::as_str).collect();
                        problems.push(format!(
                            "no sample has {key} `{value}`: the plugin declares the values {}{}",
                            known.join(", "),
                            did_you_mean(value, &known)
                        ));
                    }
                }
                None if HOST_TAGS.contains(&key) || config_tags.contains(&key) => {}
                None => {
                    let mut known: Vec<&str> = d.tags.keys().map(String::as_str).collect();
                    known.extend(HOST_TAGS);
                    known.extend(config_tags.iter().copied());
                    problems.push(format!(
                        "no sample has the tag `{key}`: the host does not set it and the \
                         plugin does not declare it{}",
                        did_you_mean(key, &known)
                    ));
                }
            }
        }
        // One entry per metric key, however many expressions it has.
        if !problems.is_empty() && seen.insert(t.metric.text.clone()) {
            for p in problems {
                errors.push(refuse(p));
            }
        }
    }
    errors.finish()
}

fn did_you_mean(given: &str, known: &[&str]) -> String {
    match nearest(given, known) {
        Some(best) => format!("; did you mean `{best}`?"),
        None => String::new(),
    }
}
