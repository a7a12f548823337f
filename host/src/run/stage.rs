//! `setup()` and `teardown()` as stages of their own: their requests are tagged
//! `stage=setup` or `stage=teardown` (k6 tags them with its `::setup` group) and, unless
//! `[http] count_setup = true`, recorded apart from the run's, so they stay out of
//! `http_reqs`, the other totals and the thresholds. `summary.json` still shows them
//! (`setup`, made by `summary::setup`).

use crate::config::RunConfig;
use crate::metrics::{Recorder, TagSet};
use crate::net::NetShared;
use crate::plugin::state::{HostServices, VuIdentity};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The identity of the instance that runs `setup()` then `teardown()`, in `stage`.
pub(crate) fn identity(env: &BTreeMap<String, String>, stage: &str) -> VuIdentity {
    VuIdentity {
        vu_id: 0,
        vu_id_in_scenario: 0,
        scenario: Arc::from(stage),
        executor: "",
        tags: TagSet::from_pairs([("scenario", stage), ("stage", stage)]),
        env: Arc::new(env.clone()),
        numbers: None,
    }
}

/// The services of the setup instance, and the recorder its requests go to when they
/// are not counted with the run's (`None`: they are).
pub(crate) fn services(
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
    .with_http(run.net.http.clone())
    .with_tls(run.net.tls.clone());
    let services = HostServices {
        // Checks and custom metrics of setup() count, as in k6; only requests are apart.
        recorder: run.recorder.clone(),
        net: Arc::new(net),
        data: run.data.clone(),
        cpu_per_call: run.cpu_per_call,
        warned: Default::default(),
        metrics_refused: Default::default(),
        builtins_refused: Default::default(),
        log: crate::plugin::log::LogSink::stderr(run.log.limits(), run.log.verbose()),
        sleeps_cut: Default::default(),
        control: run.control.clone(),
        // setup() shares the run's browsers (and its allowlist).
        browsers: run.browsers.clone(),
        // teardown() reads the run's numbers (`exec.instance`), as in k6.
        exec: run.exec.clone(),
    };
    (Arc::new(services), Some(recorder))
}
