//! `setup()` and `teardown()` as stages of their own: their requests are tagged
//! `stage=setup` or `stage=teardown` (k6 tags them with its `::setup` group) and, unless
//! `[http] count_setup = true`, recorded apart from the run's, so they stay out of
//! `http_reqs`, the other totals and the thresholds. `summary.json` still shows them
//! (`setup`).

use crate::config::RunConfig;
use crate::metrics::{builtin, Recorder, SeriesMap, TagSet, Value};
use crate::net::NetShared;
use crate::plugin::state::{HostServices, VuIdentity};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

/// The identity of the instance that runs `setup()` then `teardown()`, in `stage`.
pub fn identity(env: &BTreeMap<String, String>, stage: &str) -> VuIdentity {
    VuIdentity {
        vu_id: 0,
        vu_id_in_scenario: 0,
        scenario: Arc::from(stage),
        tags: TagSet::from_pairs([("scenario", stage), ("stage", stage)]),
        env: Arc::new(env.clone()),
    }
}

/// The services of the setup instance, and the recorder its requests go to when they
/// are not counted with the run's (`None`: they are).
pub fn services(
    config: &RunConfig,
    run: &Arc<HostServices>,
) -> (Arc<HostServices>, Option<Arc<Recorder>>) {
    if config.http.count_setup {
        return (run.clone(), None);
    }
    let recorder = Arc::new(Recorder::new(run.recorder.registry().clone()));
    let net = NetShared::new(
        run.net.allowlist.clone(),
        run.net.default_timeout,
        run.net.max_body,
        recorder.clone(),
    )
    .with_websocket(run.net.websocket.clone())
    .with_http(run.net.http.clone());
    let services = HostServices {
        // Checks and custom metrics of setup() count, as in k6; only requests are apart.
        recorder: run.recorder.clone(),
        net: Arc::new(net),
        data: run.data.clone(),
        cpu_per_call: run.cpu_per_call,
        warned: Mutex::new(HashSet::new()),
    };
    (Arc::new(services), Some(recorder))
}

/// What `summary.json` says of the setup and teardown requests.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
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
pub fn summarize(series: &SeriesMap, counted: bool) -> SetupSummary {
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
