//! The run-wide services every VU shares (recorder, network, data sets, log), the
//! identity of the `setup()` stage, and the plugin pin check: what both the run's
//! setup and `host inspect` build on, apart from the run's phases themselves.

use super::request::RunRequest;
use super::{data, stage};
use crate::config::RunConfig;
use crate::control::RunControl;
use crate::metrics::{Recorder, Registry};
use crate::net::{Allowlist, NetShared};
use crate::plugin;
use crate::plugin::state::{DataSets, HostServices, VuIdentity};
use anyhow::{anyhow, bail, Result};
use std::collections::BTreeMap;
use std::sync::Arc;

pub(super) fn setup_identity(env: &BTreeMap<String, String>) -> VuIdentity {
    stage::identity(env, "setup")
}

/// The run-wide services; `published` are the data sets the plugin published from
/// `describe()`, beside the config's `[data]`.
pub(super) fn services_for(
    config: &RunConfig,
    registry: Arc<Registry>,
    log_verbose: bool,
    published: DataSets,
) -> Result<Arc<HostServices>> {
    let mut sets = data::load(&config.data)?;
    for (name, records) in published {
        if sets.contains_key(&name) {
            bail!(
                "config error: [data] {name} has the name of a data set the plugin computes \
                 (a SharedArray): rename one of them"
            );
        }
        sets.insert(name, records);
    }
    let recorder = Arc::new(Recorder::new(registry));
    let allowlist = Allowlist::new(&config.allow).map_err(|e| anyhow!(e))?;
    let net = NetShared::new(
        allowlist,
        config.limits.request_timeout,
        config.limits.max_body_bytes,
        recorder.clone(),
    );
    let net = Arc::new(
        net.with_websocket(config.websocket.clone())
            .with_http(config.http.clone())
            .with_tls(Arc::new(crate::net::tls::TlsClient::new(
                config.tls.clone(),
            ))),
    );
    let browsers = Arc::new(crate::browser::service::Browsers::new(
        net.clone(),
        config.browser.processes,
    ));
    Ok(Arc::new(HostServices {
        recorder,
        browsers,
        net,
        data: Arc::new(sets),
        cpu_per_call: config.limits.cpu_per_call,
        warned: Default::default(),
        metrics_refused: Default::default(),
        builtins_refused: Default::default(),
        log: crate::plugin::log::LogSink::stderr(config.limits.log, log_verbose),
        sleeps_cut: Default::default(),
        control: Arc::new(RunControl::default()),
        exec: Default::default(),
    }))
}

/// Refuses the run's plugin file unless it is the one each run config that pins one
/// (`plugin = { path, sha256 }`) names.
pub(super) fn check_pin(request: &RunRequest, sha256: &str) -> Result<()> {
    for config in request.config_files() {
        if let Some(pin) = plugin::pin::read(config)? {
            pin.verify(&request.plugin, sha256)?;
        }
    }
    Ok(())
}
