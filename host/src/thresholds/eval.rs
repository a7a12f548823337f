//! Evaluates thresholds against the aggregator's totals: every tick for those that may
//! abort the run, and once at the end for the verdict, the summary and junit.xml.

use super::expression::{aggregation_name, aggregations_of, applies_to, kind_name};
use super::parse::Threshold;
use crate::metrics::summary::{merged_value, stats_of, Aggregation};
use crate::metrics::{SoFar, Unit};
use serde::Serialize;
use std::time::Duration;

/// What a threshold found at the end of a run (the `thresholds` entries of summary.json).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct ThresholdOutcome {
    /// The metric or sub-metric as written (`http_req_duration{name:static}`).
    pub metric: String,
    /// The expression as written (`p(95)<500`).
    pub threshold: String,
    /// Whether it held. A metric without samples fails, with a note, unless the run
    /// allows missing metrics (`[thresholds] allow_missing`, k6's behaviour).
    pub ok: bool,
    /// The value the expression tested; `null` when there was none.
    pub observed: Option<f64>,
    /// `ms` when the observed value is a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// Whether it could stop the run early.
    pub abort_on_fail: bool,
    /// Whether it did stop the run.
    pub aborted_run: bool,
    /// Why it could not be evaluated, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ThresholdOutcome {
    /// `p(95)=612.30ms` (or `p(95)=-` with no value).
    pub fn observed_text(&self) -> String {
        let agg = self
            .threshold
            .split(['<', '>', '=', '!'])
            .next()
            .unwrap_or("")
            .trim();
        match self.observed {
            None => format!("{agg}=-"),
            Some(v) if self.unit == Some(Unit::Millis) && v.abs() < 10.0 => {
                format!("{agg}={v:.3}ms")
            }
            Some(v) => format!(
                "{agg}={}{}",
                format_number(v),
                self.unit.map(Unit::as_str).unwrap_or("")
            ),
        }
    }
}

fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// The value a threshold tests, or why there is none.
enum Observation {
    Value(f64),
    NoSamples,
    WrongKind(String),
}

/// A run's thresholds and whether one has aborted it.
#[derive(Debug, Default)]
pub(crate) struct Evaluator {
    thresholds: Vec<Threshold>,
    /// Whether a threshold whose metric got no sample passes (k6) instead of failing.
    allow_missing: bool,
    /// The threshold that stopped the run, what it observed and when; set once, by
    /// the check each second, which only reads the run.
    aborted_by: std::sync::OnceLock<(usize, f64, Duration)>,
}

impl Evaluator {
    /// Evaluates `thresholds`.
    pub(crate) fn new(thresholds: Vec<Threshold>) -> Self {
        Self {
            thresholds,
            allow_missing: false,
            aborted_by: std::sync::OnceLock::new(),
        }
    }

    /// Lets thresholds whose metric got no sample pass, as k6 does.
    pub(crate) fn allow_missing(mut self, allow: bool) -> Self {
        self.allow_missing = allow;
        self
    }

    /// Checks the `abort_on_fail` thresholds whose delay has passed; returns why the run
    /// must stop the first time one fails.
    pub(crate) fn check_abort(&self, view: &SoFar<'_>) -> Option<String> {
        if self.aborted_by.get().is_some() {
            return None;
        }
        for (i, t) in self.thresholds.iter().enumerate() {
            if !t.abort_on_fail || view.elapsed < t.delay_abort_eval {
                continue;
            }
            if let Observation::Value(v) = observe(t, view) {
                if !t.expression.operator.holds(v, t.expression.bound) {
                    let _ = self.aborted_by.set((i, v, view.elapsed));
                    let outcome = outcome_of(t, Observation::Value(v), false, false);
                    return Some(format!(
                        "{}: {} crossed ({})",
                        t.metric.text,
                        t.expression.text,
                        outcome.observed_text()
                    ));
                }
            }
        }
        None
    }

    /// Evaluates every threshold once more, for the verdict.
    pub(crate) fn finish(&self, view: &SoFar<'_>) -> Vec<ThresholdOutcome> {
        self.thresholds
            .iter()
            .enumerate()
            .map(|(i, t)| match self.aborted_by.get().copied() {
                // The verdict that stopped the run stands, whatever came after it.
                Some((index, value, at)) if index == i => ThresholdOutcome {
                    note: Some(format!(
                        "crossed {:.1} s into the run, which it stopped",
                        at.as_secs_f64()
                    )),
                    ..outcome_of(t, Observation::Value(value), true, false)
                },
                _ => outcome_of(t, observe(t, view), false, self.allow_missing),
            })
            .collect()
    }
}

/// What the note of a threshold whose metric got no samples says.
const NO_SAMPLES: &str = "got no samples";

/// When the run measured nothing, a threshold whose metric got no samples is explained
/// by that (said once, where the run's failure is), not by a plugin that does not
/// record the metric.
pub(crate) fn blame_missing_samples_on_the_failure(outcomes: &mut [ThresholdOutcome]) {
    for o in outcomes {
        if o.observed.is_none() && o.note.as_deref().is_some_and(|n| n.contains(NO_SAMPLES)) {
            o.note = Some(format!(
                "metric `{}` {NO_SAMPLES}: the run measured nothing (its failure says why)",
                o.metric
            ));
        }
    }
}

fn outcome_of(
    t: &Threshold,
    observation: Observation,
    aborted_run: bool,
    allow_missing: bool,
) -> ThresholdOutcome {
    let is_time_value = !matches!(t.expression.aggregation, Aggregation::Count);
    let (ok, observed, note) = match observation {
        Observation::Value(v) => (
            t.expression.operator.holds(v, t.expression.bound),
            Some(v),
            None,
        ),
        // A threshold that tested nothing must not pass a broken run.
        Observation::NoSamples if allow_missing => (
            true,
            None,
            Some(format!(
                "metric `{}` {NO_SAMPLES}; passed because allow_missing = true",
                t.metric.text
            )),
        ),
        Observation::NoSamples => (
            false,
            None,
            Some(format!(
                "metric `{}` {NO_SAMPLES}, so nothing was tested; make the plugin record it, \
                 or set [thresholds] allow_missing = true to let it pass (as k6 does)",
                t.metric.text
            )),
        ),
        Observation::WrongKind(why) => (false, None, Some(why)),
    };
    ThresholdOutcome {
        metric: t.metric.text.clone(),
        threshold: t.expression.text.clone(),
        ok,
        observed,
        unit: (t.metric.is_time && is_time_value && observed.is_some()).then_some(Unit::Millis),
        abort_on_fail: t.abort_on_fail,
        aborted_run,
        note,
    }
}

fn observe(t: &Threshold, view: &SoFar<'_>) -> Observation {
    let Some(id) = view.registry.lookup(&t.metric.name) else {
        return Observation::NoSamples;
    };
    let kind = view.registry.def(id).kind;
    if !applies_to(&t.expression.aggregation, kind) {
        return Observation::WrongKind(format!(
            "`{}` is a {} metric: {} does not apply; use {}",
            t.metric.name,
            kind_name(kind),
            aggregation_name(&t.expression.aggregation),
            aggregations_of(kind)
        ));
    }
    let Some(value) = merged_value(view.totals.totals(), id, kind, &t.metric.tags) else {
        return Observation::NoSamples;
    };
    // A tagged gauge's extremes are not tracked per series; its last value stands in.
    let range = if t.metric.tags.is_empty() {
        view.totals.gauge_range(id)
    } else {
        None
    };
    let stats = stats_of(&value, view.elapsed, range);
    match stats.aggregate(&value, &t.expression.aggregation) {
        Some(v) => Observation::Value(v),
        None => Observation::NoSamples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{builtin, Aggregator, MetricKind, Recorder, Registry, TagSet};
    use crate::thresholds::parse::parse_thresholds;
    use std::sync::Arc;

    fn evaluator(text: &str) -> Evaluator {
        Evaluator::new(parse_thresholds(&toml::from_str(text).unwrap()).unwrap())
    }

    /// Folds what `recorder` holds into an aggregator, as a tick does.
    fn aggregate(recorder: Recorder) -> Aggregator {
        let mut aggregator = Aggregator::new(Arc::new(recorder));
        aggregator.tick();
        aggregator
    }

    fn view<'a>(aggregator: &'a Aggregator, registry: &'a Registry) -> SoFar<'a> {
        SoFar {
            totals: aggregator,
            registry,
            elapsed: Duration::from_secs(10),
        }
    }

    #[test]
    fn trends_rates_counters_gauges_and_sub_metrics() {
        let registry = Arc::new(Registry::new());
        let r = Recorder::new(registry.clone());
        let fast = TagSet::from_pairs([("name", "static")]);
        let slow = TagSet::from_pairs([("name", "api")]);
        for _ in 0..90 {
            r.trend(builtin::HTTP_REQ_DURATION, &fast, 10_000); // 10 ms
        }
        for _ in 0..10 {
            r.trend(builtin::HTTP_REQ_DURATION, &slow, 800_000); // 800 ms
        }
        r.count(builtin::HTTP_REQS, &fast, 100.0);
        r.rate(builtin::HTTP_REQ_FAILED, &fast, false);
        r.rate(builtin::HTTP_REQ_FAILED, &slow, true);
        let ok = TagSet::from_pairs([("check", "status is 200")]);
        let body = TagSet::from_pairs([("check", "body")]);
        r.rate(builtin::CHECKS, &ok, true);
        r.rate(builtin::CHECKS, &body, false);
        let orders = registry
            .get_or_register("orders", MetricKind::Counter)
            .unwrap();
        r.count(orders, &TagSet::empty(), 3.0);
        let queue = registry
            .get_or_register("queue", MetricKind::Gauge)
            .unwrap();
        r.gauge(queue, &TagSet::empty(), 7.0);
        let totals = aggregate(r);
        let e = evaluator(
            r#"
            http_req_duration = ["p(95)<500", "max<1000", "med<11"]
            "http_req_duration{name:static}" = ["p(99)<50", "count==90"]
            http_reqs = ["count>=100", "rate==10"]
            http_req_failed = ["rate<0.1"]
            "checks{check:status is 200}" = ["rate==1"]
            checks = ["rate>0.99"]
            orders = ["count>2"]
            queue = ["value<5"]
            missing_metric = ["count>0"]
            "#,
        );
        let outcomes = e.finish(&view(&totals, &registry));
        let by = |m: &str, t: &str| {
            outcomes
                .iter()
                .find(|o| o.metric == m && o.threshold == t)
                .unwrap_or_else(|| panic!("{m} {t}"))
                .clone()
        };
        let p95 = by("http_req_duration", "p(95)<500");
        assert!(!p95.ok, "p95 is 800 ms: {p95:?}");
        assert_eq!(p95.unit, Some(Unit::Millis));
        assert!((p95.observed.unwrap() - 800.0).abs() < 1.0);
        let text = p95.observed_text();
        assert!(
            text.starts_with("p(95)=8") && text.ends_with("ms"),
            "{text}"
        );
        assert!(by("http_req_duration", "max<1000").ok);
        assert!(by("http_req_duration", "med<11").ok);
        assert!(by("http_req_duration{name:static}", "p(99)<50").ok);
        let count = by("http_req_duration{name:static}", "count==90");
        assert!(count.ok);
        assert_eq!(count.unit, None);
        assert!(by("http_reqs", "count>=100").ok);
        assert!(by("http_reqs", "rate==10").ok, "100 requests in 10 s");
        assert!(!by("http_req_failed", "rate<0.1").ok, "1 of 2 failed");
        assert!(by("checks{check:status is 200}", "rate==1").ok);
        assert!(!by("checks", "rate>0.99").ok);
        assert!(by("orders", "count>2").ok);
        assert!(!by("queue", "value<5").ok);
        let missing = by("missing_metric", "count>0");
        assert!(!missing.ok, "a threshold that tested nothing fails");
        assert!(missing.observed.is_none());
        let note = missing.note.unwrap();
        assert!(
            note.contains("got no samples") && note.contains("allow_missing = true"),
            "{note}"
        );
        // With allow_missing, k6's behaviour: it passes, with a note.
        let e = evaluator(
            r#"missing_metric = ["count>0"]
            "http_req_duration{name:nowhere}" = ["p(95)<500"]"#,
        )
        .allow_missing(true);
        for outcome in e.finish(&view(&totals, &registry)) {
            assert!(outcome.ok && outcome.observed.is_none(), "{outcome:?}");
            assert!(outcome.note.unwrap().contains("allow_missing"));
        }
        let e = evaluator(r#""http_req_duration{name:nowhere}" = ["p(95)<500"]"#);
        assert!(
            !e.finish(&view(&totals, &registry))[0].ok,
            "a sub-metric with no sample fails"
        );
    }

    #[test]
    fn custom_metric_of_the_wrong_kind_fails_with_a_note() {
        let registry = Arc::new(Registry::new());
        let id = registry
            .get_or_register("latency_x", MetricKind::Counter)
            .unwrap();
        let r = Recorder::new(registry.clone());
        r.count(id, &TagSet::empty(), 1.0);
        let totals = aggregate(r);
        let e = evaluator(r#"latency_x = ["p(95)<5"]"#);
        let out = e.finish(&view(&totals, &registry));
        assert!(!out[0].ok);
        assert!(out[0].note.as_ref().unwrap().contains("counter metric"));
    }

    #[test]
    fn abort_waits_for_its_delay_and_fires_once() {
        let registry = Arc::new(Registry::new());
        let r = Recorder::new(registry.clone());
        r.rate(builtin::HTTP_REQ_FAILED, &TagSet::empty(), true);
        let totals = aggregate(r);
        let e = evaluator(
            r#"http_req_failed = ["rate<0.5", { threshold = "rate<0.01", abort_on_fail = true, delay_abort_eval = "20s" }]"#,
        );
        let mut v = view(&totals, &registry);
        assert_eq!(e.check_abort(&v), None, "10 s < 20 s delay");
        v.elapsed = Duration::from_secs(21);
        let why = e.check_abort(&v).expect("aborts after the delay");
        assert!(why.contains("rate<0.01") && why.contains("rate=1"), "{why}");
        assert_eq!(e.check_abort(&v), None, "only once");
        let out = e.finish(&v);
        assert!(!out[0].aborted_run && out[1].aborted_run);
        assert!(!out[1].ok);
        assert!(
            out[1].note.as_ref().unwrap().contains("21.0 s"),
            "{:?}",
            out[1]
        );
    }
}
