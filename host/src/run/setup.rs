//! Setup: an engine sized for the run, the plugin, the run-wide services, and the
//! plugin's `setup()`, run once in an instance of its own that `teardown()` and the
//! plugin's own summary use too.

use super::request::RunRequest;
use super::services::{check_pin, services_for, setup_identity};
use super::stage;
use crate::config::RunConfig;
use crate::control::RunControl;
use crate::metrics::{Recorder, Registry};
use crate::plugin::bindings::Scenario;
use crate::plugin::state::{DataSets, HostServices, VuState};
use crate::plugin::{self, build_engine, EngineOptions, EpochTicker, Plugin};
use crate::vu::errors::ErrorLog;
use anyhow::{bail, Result};
use std::sync::Arc;
use std::time::SystemTime;
use wasmtime::Store;

/// The plugin loaded for the run, the run's shared parts, and `setup()` done.
pub(super) struct Setup {
    /// Held for the whole run: dropping it stops the epochs that bound guest calls.
    pub(super) _ticker: EpochTicker,
    pub(super) plugin: Plugin,
    pub(super) registry: Arc<Registry>,
    pub(super) services: Arc<HostServices>,
    pub(super) control: Arc<RunControl>,
    pub(super) errors: Arc<ErrorLog>,
    pub(super) started_at: SystemTime,
    /// The instance `setup()` ran in; `teardown()` runs in it too.
    pub(super) store: Store<VuState>,
    pub(super) instance: Scenario,
    /// The same instance's handle, for the exports beyond the `scenario` world's.
    pub(super) handle: wasmtime::component::Instance,
    pub(super) data: Arc<str>,
    /// Where the setup instance's requests are recorded when they are not counted
    /// with the run's (`[http] count_setup = false`).
    pub(super) apart: Option<Arc<Recorder>>,
}

/// Setup: an engine sized for the run, the plugin, the shared services, and `setup()`,
/// which runs once in an instance of its own; its result goes to every VU.
pub(super) async fn setup(
    request: &RunRequest,
    config: &RunConfig,
    published: DataSets,
) -> Result<Setup> {
    let remote = request.remote.as_ref().map(|r| &r.0);
    // A coordinator runs no VUs: its engine only needs the setup instance.
    let max_vus = match remote {
        Some(r) if !r.runs_vus_here() => 1,
        _ => config.max_vus(),
    };
    let (bytes, sha256) = plugin::read_plugin(&request.plugin)?;
    // Again on the bytes that run: the file may have been replaced since the plan.
    check_pin(request, &sha256)?;
    // The pool is sized for this file: a Python plugin has many core modules.
    let engine = build_engine(EngineOptions {
        max_instances: u32::try_from(max_vus.saturating_add(1)).unwrap_or(u32::MAX),
        memory_bytes: config.limits.memory_bytes,
        needs: plugin::shape::PoolNeeds::of(&bytes),
    })?;
    let ticker = EpochTicker::start(&engine)?;
    let plugin = Plugin::load(&engine, &request.plugin, &bytes, &sha256)?;
    let registry = Arc::new(Registry::new());
    let log_verbose = request.remote.as_ref().and_then(|r| r.0.log_verbose());
    let services = services_for(
        config,
        registry.clone(),
        log_verbose.unwrap_or_else(crate::plugin::log::verbose),
        published,
    )?;
    // Browser scenarios: the browser starts now, so one that is missing or broken is
    // an error before setup() and the first iteration.
    if config.browser.enabled {
        services
            .browsers
            .pool()
            .await
            .map_err(|e| anyhow::anyhow!("browser scenarios: {e}"))?;
    }
    // The plugin's imports stop the run through the same signals (`run-control.abort`).
    let control = services.control.clone();
    let errors = Arc::new(ErrorLog::default());
    let started_at = SystemTime::now();

    let (setup_services, apart) = stage::services(config, &services);
    let setup_state = VuState::new(setup_services, setup_identity(&config.env));
    let (mut store, instance, handle) = plugin.instantiate_with_handle(setup_state).await?;
    let data: Arc<str> = match remote.and_then(|r| r.given_setup_data()) {
        // A worker: setup() ran once, at the coordinator.
        Some(data) => data,
        None => {
            let config_json = serde_json::to_string(&config.source).unwrap_or_default();
            store
                .data_mut()
                .budget
                .start_call(config.limits.setup_timeout);
            let result = instance
                .loadtest_scenario_plugin()
                .call_setup(&mut store, &config_json)
                .await;
            match plugin::outcome(result, store.data()) {
                Ok(data) => data.into(),
                Err(e) => bail!("setup() {e}"),
            }
        }
    };
    Ok(Setup {
        _ticker: ticker,
        plugin,
        registry,
        services,
        control,
        errors,
        started_at,
        store,
        instance,
        handle,
        data,
        apart,
    })
}
