//! What a VU's store holds: its WASI context (no files, no sockets), who it is, the
//! run-wide services its imports use, and one state per capability (capabilities.rs).

use super::budget::CallBudget;
use super::capabilities::{HtmlState, HttpState, LayerState, MetricsState};
use super::output::OutputTail;
use crate::metrics::{Recorder, TagSet};
use crate::net::{HttpClient, NetShared};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Longest sleep a plugin may ask for in one call; longer asks are cut to it (and
/// said once per run).
pub(crate) const MAX_SLEEP: std::time::Duration = std::time::Duration::from_secs(3600);

/// Read-only data sets shared by all VUs (`[data]`), one JSON text per record.
pub(crate) type DataSets = HashMap<String, Vec<String>>;

/// Run-wide services every VU's imports use.
pub struct HostServices {
    /// Where metric samples go.
    pub recorder: Arc<Recorder>,
    /// Policy and counters of the network imports.
    pub net: Arc<NetShared>,
    /// Shared data sets.
    pub data: Arc<DataSets>,
    /// CPU one call into the plugin may use.
    pub cpu_per_call: std::time::Duration,
    /// Custom metric problems already reported (each is reported once, a bounded
    /// number of them).
    pub warned: crate::bounded::WarnOnce,
    /// Samples of custom metrics refused because the registry was full.
    pub metrics_refused: std::sync::atomic::AtomicU64,
    /// Built-in metric names the plugin tried to add samples to (refused; at most
    /// the built-ins, so bounded).
    pub builtins_refused: Mutex<std::collections::BTreeSet<String>>,
    /// Where the plugin's `log()` lines go.
    pub log: super::log::LogSink,
    /// Sleeps asked for longer than the most one may last, and the longest asked (ms).
    pub sleeps_cut: Mutex<(u64, u64)>,
    /// The run's stop signals: a plugin's `run-control.abort` stops the run through
    /// them, as a crossed `abort_on_fail` threshold does.
    pub control: Arc<crate::control::RunControl>,
    /// The run's browsers (`browser`), started when first needed.
    pub(crate) browsers: Arc<crate::browser::service::Browsers>,
    /// The run's scenarios as `k6/execution` reads them (`instance`, `scenario.progress`),
    /// shared with the setup instance's services.
    pub exec: Arc<super::exec_live::ExecLive>,
}

impl HostServices {
    /// Prints `message` once per `key` for the whole run (for a bounded number of keys).
    pub fn warn_once(&self, key: &str, message: &str) {
        self.warned.warn(key, message);
    }

    /// The summary's warnings about what the plugin made past the host's bounds: custom
    /// metrics past the cap, series folded, warnings not printed.
    pub fn bound_warnings(&self) -> Vec<String> {
        use std::sync::atomic::Ordering;
        let mut out = Vec::new();
        let refused = self.metrics_refused.load(Ordering::Relaxed);
        if refused > 0 {
            out.push(format!(
                "{refused} samples of custom metrics were ignored: the plugin used more than \
                 {} custom metric names",
                crate::metrics::MAX_METRICS
            ));
        }
        let builtins = self
            .builtins_refused
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !builtins.is_empty() {
            let names: Vec<String> = builtins.iter().map(|n| format!("`{n}`")).collect();
            out.push(format!(
                "the plugin's samples for {} were ignored: a custom metric cannot take a \
                 built-in metric's name, whose samples are the host's own",
                names.join(", ")
            ));
        }
        drop(builtins);
        out.extend(self.recorder.gate().warning());
        let unprinted = self.warned.unprinted();
        if unprinted > 0 {
            out.push(format!(
                "{unprinted} plugin warnings were not printed (more than {} distinct ones)",
                crate::bounded::MAX_WARNINGS
            ));
        }
        out
    }

    /// Notes a sleep of `asked_ms` that was cut to `max`; warns on the first one.
    pub fn sleep_cut(&self, asked_ms: u64, max: std::time::Duration) {
        let mut cut = self.sleeps_cut.lock().unwrap_or_else(|p| p.into_inner());
        if cut.0 == 0 {
            crate::stderr::warn(format_args!(
                "the plugin asked to sleep {:.0} s; a sleep lasts at most {} s, so it (and any \
                 longer one of this run) is cut to that",
                asked_ms as f64 / 1000.0,
                max.as_secs()
            ));
        }
        cut.0 += 1;
        cut.1 = cut.1.max(asked_ms);
    }

    /// Warnings for the summary about what the plugin asked for and did not get.
    pub fn warnings(&self) -> Vec<String> {
        let (n, longest) = *self.sleeps_cut.lock().unwrap_or_else(|p| p.into_inner());
        if n == 0 {
            return Vec::new();
        }
        vec![format!(
            "{n} sleep{} longer than the longest allowed ({} s) {} cut to it (the longest asked: {:.0} s)",
            if n == 1 { "" } else { "s" },
            MAX_SLEEP.as_secs(),
            if n == 1 { "was" } else { "were" },
            longest as f64 / 1000.0
        )]
    }
}

/// Who a VU is.
#[derive(Debug, Clone)]
pub struct VuIdentity {
    /// Unique in the run, from 1.
    pub vu_id: u64,
    /// Unique in its scenario, from 1.
    pub vu_id_in_scenario: u64,
    /// Its scenario's name.
    pub scenario: Arc<str>,
    /// Its scenario's executor (`ramping-vus`...); empty outside a scenario (setup,
    /// teardown), as k6's `exec.scenario` is unset there.
    pub executor: &'static str,
    /// The scenario's tags plus `scenario`.
    pub tags: TagSet,
    /// Environment: the run's `[env]` overlaid by the scenario's.
    pub env: Arc<BTreeMap<String, String>>,
    /// Where its scenario's iteration numbers come from; `None` outside a scenario
    /// (setup, teardown), whose number is 0.
    pub numbers: Option<Arc<crate::plugin::numbers::IterationNumbers>>,
}

/// The data of one VU's store.
pub struct VuState {
    wasi: WasiCtx,
    /// The VU's resource table: what the plugin holds by handle (sockets, documents,
    /// response contents, streams), shared by WASI and every capability's view.
    pub(crate) table: ResourceTable,
    /// Run-wide services.
    pub services: Arc<HostServices>,
    /// The `http` and `cookies` imports' state: the VU's client, what the plugin holds.
    pub http: HttpState,
    /// Who this VU is.
    pub identity: VuIdentity,
    /// The VU's iteration number, from 0.
    pub iteration: u64,
    /// The iteration's number in its scenario, from 0, once the plugin asked for it
    /// (see [`crate::plugin::numbers`]); `None` in an iteration that has not asked yet.
    /// 0 before the first iteration (`init`), which takes no number.
    pub iteration_in_scenario: Option<u64>,
    /// The message the plugin's panic hook reported, if it panicked.
    pub panic_message: Option<String>,
    /// What the plugin last printed.
    pub output: OutputTail,
    /// Limits of the call in progress.
    pub budget: CallBudget,
    /// What is left of this VU's log lines for the current second.
    pub log_budget: super::log::LogBudget,
    /// The `html` import's state.
    pub html: HtmlState,
    /// The `metrics` import's state: tag sets made, what the plugin declared.
    pub metrics: MetricsState,
    /// The k6 layer's state: its response slots, failures, checks and series.
    pub layer: LayerState,
    /// The data sets the plugin published (`shared-data.publish`); `Some` only in the
    /// instance that runs `describe`.
    pub published: Option<Published>,
    /// Raw sockets (`sockets`): the capability's own state, reached by its imports
    /// through [`VuState::sockets`].
    pub(crate) sockets: super::sockets::SocketsCtx,
    /// Browser contexts and pages (`browser`): the capability's own state, reached
    /// by its imports through [`VuState::browser`].
    pub(crate) browser: super::browser::BrowserCtx,
}

/// Data sets published from `describe` (contract 0.3.3), and their size.
#[derive(Debug, Default)]
pub struct Published {
    /// The sets by name, one JSON text per record.
    pub sets: DataSets,
    /// Bytes of records over all sets.
    pub bytes: usize,
}

impl VuState {
    /// A fresh state; WASI grants clocks, random, env and captured stdout/stderr only.
    pub fn new(services: Arc<HostServices>, identity: VuIdentity) -> Self {
        let output = OutputTail::default();
        let mut builder = WasiCtxBuilder::new();
        builder
            .stdout(output.clone())
            .stderr(output.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        for (k, v) in identity.env.iter() {
            builder.env(k, v);
        }
        let http = HttpClient::new(services.net.clone()).for_vu(identity.vu_id);
        let sockets = super::sockets::SocketsCtx::new(
            services.net.clone(),
            identity.tags.clone(),
            services.net.http.local_ip(identity.vu_id),
        );
        let browser =
            super::browser::BrowserCtx::new(services.browsers.clone(), identity.tags.clone());
        let services_cpu = services.cpu_per_call;
        Self {
            wasi: builder.build(),
            table: ResourceTable::new(),
            services,
            http: HttpState::new(http),
            identity,
            iteration: 0,
            iteration_in_scenario: Some(0),
            panic_message: None,
            output,
            budget: CallBudget::new(services_cpu),
            log_budget: Default::default(),
            html: HtmlState::default(),
            metrics: MetricsState::default(),
            layer: LayerState::default(),
            published: None,
            sockets,
            browser,
        }
    }

    /// What the `sockets` imports see of the store: their state, the resource table
    /// and the call's budget.
    pub(crate) fn sockets(&mut self) -> super::sockets::SocketsView<'_> {
        super::sockets::SocketsView {
            ctx: &mut self.sockets,
            table: &mut self.table,
            budget: &mut self.budget,
        }
    }

    /// What the `browser` imports see of the store: their state, the resource table
    /// and the call's budget.
    pub(crate) fn browser(&mut self) -> super::browser::BrowserView<'_> {
        super::browser::BrowserView {
            ctx: &mut self.browser,
            table: &mut self.table,
            budget: &mut self.budget,
        }
    }

    /// The resource table (sockets live here).
    pub fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }
}

impl WasiView for VuState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
