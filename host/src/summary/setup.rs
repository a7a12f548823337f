//! The `setup` part of `summary.json`: the requests `setup()` and `teardown()` made,
//! by stage, and whether the run's totals count them (`[http] count_setup`).

use crate::metrics::{builtin, SeriesMap, Value};
use serde::Serialize;
use std::collections::BTreeMap;

/// What `summary.json` says of the setup and teardown requests.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct SetupSummary {
    /// Whether they are counted in the run's totals (`[http] count_setup`).
    pub counted: bool,
    /// Requests by stage (`setup`, `teardown`).
    pub http_reqs: BTreeMap<String, u64>,
    /// Requests that failed (`http_req_failed`), by stage.
    pub http_req_failed: BTreeMap<String, u64>,
}

/// The setup and teardown requests in `series` (the run's totals when they were
/// counted, the setup recorder's samples otherwise).
pub(crate) fn summarize(series: &SeriesMap, counted: bool) -> SetupSummary {
    let mut out = SetupSummary {
        counted,
        ..Default::default()
    };
    for ((id, tags), value) in series {
        let Some(stage) = tags.get("stage") else {
            continue;
        };
        match (*id, value) {
            (builtin::HTTP_REQS, Value::Counter(c)) => {
                *out.http_reqs.entry(stage.to_owned()).or_default() += c.round() as u64;
            }
            (builtin::HTTP_REQ_FAILED, Value::Rate { hits, .. }) => {
                *out.http_req_failed.entry(stage.to_owned()).or_default() += hits;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::TagSet;

    #[test]
    fn requests_are_summed_by_stage() {
        let mut series = SeriesMap::default();
        let setup = TagSet::from_pairs([("stage", "setup"), ("status", "200")]);
        let teardown = TagSet::from_pairs([("stage", "teardown"), ("status", "500")]);
        let run = TagSet::from_pairs([("scenario", "default")]);
        series.insert((builtin::HTTP_REQS, setup.clone()), Value::Counter(2.0));
        series.insert((builtin::HTTP_REQS, teardown.clone()), Value::Counter(1.0));
        series.insert((builtin::HTTP_REQS, run), Value::Counter(9.0));
        series.insert(
            (builtin::HTTP_REQ_FAILED, teardown),
            Value::Rate { hits: 1, total: 1 },
        );
        let s = summarize(&series, false);
        assert!(!s.counted);
        assert_eq!(s.http_reqs["setup"], 2);
        assert_eq!(s.http_reqs["teardown"], 1);
        assert_eq!(s.http_req_failed["teardown"], 1);
        assert_eq!(s.http_reqs.len(), 2);
    }
}
