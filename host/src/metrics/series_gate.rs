//! The cap on series: a metric under one tag set is a series, and every series costs
//! memory for the whole run (a trend's histogram 16 KiB or more) and a line in the
//! results. A plugin that puts a new tag value or check name in every sample made a
//! million series in 15 s (923 MiB, a 98 MB summary.json). Past the cap a new series is
//! folded into its metric's `other` series (tags `{scenario, series:other}`), counted,
//! and warned about once, as the endpoints table folds past 200 rows.
//!
//! Only a series a shard has not seen since the last tick asks the gate, so a steady
//! run takes its lock a few times per series per second.

use super::registry::{builtin, MetricId};
use super::tags::TagSet;
use rustc_hash::FxHashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Most series of a run.
pub(crate) const MAX_SERIES: usize = 10_000;

/// Most of them that hold histograms (a trend series; an HTTP response's tag set holds
/// seven), which cost the most.
pub(crate) const MAX_HISTOGRAMS: usize = 2_000;

/// The value of the `series` tag of a folded series.
pub(crate) const OTHER: &str = "other";

/// What a new series costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cost {
    /// A counter, rate or gauge.
    Plain,
    /// A trend: one histogram.
    Trend,
    /// The responses of one HTTP tag set: a count, a rate and seven histograms.
    HttpResponses,
    /// The requests of one HTTP tag set: three counters.
    HttpRequests,
}

impl Cost {
    fn histograms(self) -> usize {
        match self {
            Self::Trend => 1,
            Self::HttpResponses => 7,
            Self::Plain | Self::HttpRequests => 0,
        }
    }
}

#[derive(Default)]
struct Admitted {
    keys: FxHashSet<(MetricId, TagSet)>,
    histograms: usize,
}

/// The run's admitted series.
#[derive(Default)]
pub struct SeriesGate {
    admitted: Mutex<Admitted>,
    folded: AtomicU64,
    warned: AtomicBool,
}

impl SeriesGate {
    /// The tag set to record `(id, tags)` under: `tags` when the series exists or fits
    /// under the caps, else the metric's `other` series. `id` names the series for an
    /// HTTP tag set (`http_reqs` for responses, `http_reqs_sent` for requests).
    pub(crate) fn admit(&self, id: MetricId, tags: &TagSet, cost: Cost) -> TagSet {
        if tags.get("series") == Some(OTHER) {
            return tags.clone();
        }
        let mut admitted = self.admitted.lock().unwrap_or_else(|p| p.into_inner());
        let key = (id, tags.clone());
        if admitted.keys.contains(&key) {
            return key.1;
        }
        let histograms = admitted.histograms + cost.histograms();
        if admitted.keys.len() < MAX_SERIES && histograms <= MAX_HISTOGRAMS {
            admitted.histograms = histograms;
            admitted.keys.insert(key);
            return tags.clone();
        }
        drop(admitted);
        self.folded.fetch_add(1, Ordering::Relaxed);
        if !self.warned.swap(true, Ordering::Relaxed) {
            crate::stderr::warn(format_args!(
                "more than {MAX_SERIES} metric series (or {MAX_HISTOGRAMS} trend series): \
                 the plugin makes a new tag value or check name again and again; samples of \
                 new series are folded into {{series:{OTHER}}} and counted"
            ));
        }
        folded(id, tags)
    }

    /// Samples folded into `other` series so far.
    pub(crate) fn folded(&self) -> u64 {
        self.folded.load(Ordering::Relaxed)
    }

    /// The summary's warning, when samples were folded.
    pub(crate) fn warning(&self) -> Option<String> {
        let n = self.folded();
        (n > 0).then(|| {
            format!(
                "{n} samples went to {{series:{OTHER}}} series: the run made more than \
                 {MAX_SERIES} series (or {MAX_HISTOGRAMS} trend series), from tag values \
                 or check names that keep changing; thresholds on tagged sub-metrics miss them"
            )
        })
    }
}

/// The `other` series of `tags`: its scenario kept, and a check's or request's name
/// made `other`, so that the checks and endpoints lists show the fold as one row.
fn folded(id: MetricId, tags: &TagSet) -> TagSet {
    let mut pairs = vec![("series", OTHER)];
    if let Some(scenario) = tags.get("scenario") {
        pairs.push(("scenario", scenario));
    }
    if id == builtin::CHECKS || tags.get("check").is_some() {
        pairs.push(("check", OTHER));
    }
    if tags.get("name").is_some() {
        pairs.push(("name", OTHER));
    }
    if let Some(method) = tags.get("method") {
        pairs.push(("method", method));
    }
    TagSet::from_pairs(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_cap_new_series_fold_into_one_and_are_counted() {
        let gate = SeriesGate::default();
        let base = TagSet::from_pairs([("scenario", "s")]);
        for i in 0..MAX_SERIES {
            let tags = base.with([("check", i.to_string())]);
            assert_eq!(gate.admit(builtin::CHECKS, &tags, Cost::Plain), tags);
        }
        // An admitted series stays itself.
        let first = base.with([("check", "0")]);
        assert_eq!(gate.admit(builtin::CHECKS, &first, Cost::Plain), first);
        let late = base.with([("check", "late")]);
        let got = gate.admit(builtin::CHECKS, &late, Cost::Plain);
        assert_eq!(got.to_string(), "{check:other,scenario:s,series:other}");
        assert_eq!(gate.admit(builtin::CHECKS, &got, Cost::Plain), got);
        assert_eq!(gate.folded(), 1);
        assert!(gate.warning().unwrap().starts_with("1 samples"));
        assert_eq!(gate.admitted.lock().unwrap().keys.len(), MAX_SERIES);
    }

    #[test]
    fn histograms_have_a_cap_of_their_own() {
        let gate = SeriesGate::default();
        let mut admitted = 0;
        for i in 0..MAX_HISTOGRAMS {
            let tags = TagSet::from_pairs([("name", format!("/n/{i}")), ("method", "GET".into())]);
            if gate.admit(builtin::HTTP_REQS, &tags, Cost::HttpResponses) == tags {
                admitted += 1;
            }
        }
        assert_eq!(admitted, MAX_HISTOGRAMS / 7);
        let tags = TagSet::from_pairs([("name", "/x"), ("method", "POST")]);
        let got = gate.admit(builtin::HTTP_REQS, &tags, Cost::HttpResponses);
        assert_eq!(got.to_string(), "{method:POST,name:other,series:other}");
        // Plain series still fit.
        let plain = TagSet::from_pairs([("k", "v")]);
        assert_eq!(gate.admit(builtin::ITERATIONS, &plain, Cost::Plain), plain);
    }
}
