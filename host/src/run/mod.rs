//! A run from start to end: plugin and config in, VUs made and initialised, executors
//! started together, metrics folded every second, results out.

pub(crate) mod data;
mod interrupt;
mod observe;
pub(crate) mod progress;
pub(crate) mod remote;
pub(crate) mod stage;
mod summarize;
pub(crate) mod verdict;

use crate::config::{self, Overrides, RunConfig};
use crate::control::RunControl;
use crate::executor::{self, ExecutorReport, ScenarioCtx};
use crate::metrics::{builtin, Aggregator, Recorder, Registry, TagSet};
use crate::net::{Allowlist, NetShared};
use crate::output::ResultsWriter;
use crate::plugin::bindings::Scenario;
use crate::plugin::state::{DataSets, HostServices, VuIdentity, VuState};
use crate::plugin::{self, build_engine, EngineOptions, EpochTicker, Plugin, PluginInfo};
use crate::sampling::ResourceWatch;
use crate::summary::Summary;
use crate::thresholds::Evaluator;
use crate::vu::errors::ErrorLog;
use crate::vu::factory::VuFactory;
use crate::vu::VuContext;
use anyhow::{anyhow, bail, Result};
use observe::{Ending, Observers, Scope, Tick};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::task::JoinSet;
use wasmtime::Store;

/// VUs initialised at once before the start.
const INIT_CONCURRENCY: usize = 64;

/// What the operator asked for.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The plugin file.
    pub plugin: PathBuf,
    /// `--config run.toml`.
    pub config: Option<PathBuf>,
    /// CLI overrides.
    pub overrides: Overrides,
    /// Folder under which the results folder is made.
    pub out: PathBuf,
    /// No progress lines.
    pub quiet: bool,
    /// Handle SIGINT/SIGTERM (off in tests that run several runs in one process).
    pub handle_signals: bool,
    /// Watches the run from beside it (the stack's service watcher, `run --stack`).
    pub watch: Option<crate::control::Watch>,
    /// The dashboard and streaming outputs (`--dashboard`, `--out KIND=TARGET`).
    pub live: crate::live::LiveOptions,
    /// This run's part in a distributed run (`host coordinate`, `host worker`).
    pub remote: Option<remote::RemoteRole>,
}

impl RunRequest {
    /// Every `--config` file, in the order they are layered.
    pub fn config_files(&self) -> Vec<&Path> {
        self.config
            .iter()
            .chain(&self.overrides.config_layers)
            .map(PathBuf::as_path)
            .collect()
    }
}

/// How a run ended.
pub struct RunOutcome {
    /// What `summary.json` holds.
    pub summary: Summary,
    /// Where the results were written.
    pub results_dir: PathBuf,
    /// The run's own exit code (thresholds, interruption, abort); results files that
    /// could not be written are in `write_failures`, not in this code.
    pub exit_code: i32,
    /// Results files that could not be written.
    pub write_failures: Vec<crate::output::WriteFailure>,
}

/// Exit codes, documented in the README.
pub mod exit_code {
    /// The run completed.
    pub const OK: i32 = 0;
    /// An error before or during the run, or a service of its stack died
    /// (`[stack] on_service_exit = "abort"`).
    pub const ERROR: i32 = 1;
    /// `host compare` flagged a regression.
    pub const REGRESSION: i32 = 98;
    /// A threshold was crossed.
    pub const THRESHOLDS: i32 = 99;
    /// Interrupted by Ctrl-C.
    pub const INTERRUPTED: i32 = 105;
    /// The plugin aborted the run.
    pub const PLUGIN_ABORT: i32 = 107;
    /// A distributed run lost a worker and `[distributed] on_worker_loss = "abort"`.
    pub const WORKER_LOST: i32 = 108;
    /// The run measured nothing: no iteration succeeded, or every request was denied.
    pub const MEASURED_NOTHING: i32 = 110;

    /// What a code means, in a few words.
    pub fn meaning(code: i32) -> &'static str {
        match code {
            OK => "completed",
            REGRESSION => "a regression",
            THRESHOLDS => "a threshold was crossed",
            INTERRUPTED => "interrupted",
            PLUGIN_ABORT => "the plugin aborted the run",
            WORKER_LOST => "a worker was lost",
            MEASURED_NOTHING => "the run measured nothing",
            _ => "an error",
        }
    }
}

pub(crate) use crate::plugin::Inspected;
pub(crate) use interrupt::listen_for_signals_early;

/// Loads a plugin in a small engine and calls `describe()`.
pub async fn inspect(path: &Path, memory_bytes: u64) -> Result<Inspected> {
    inspect_with_env(path, memory_bytes, &BTreeMap::new()).await
}

/// [`inspect`] with `env` readable from `describe()`: a k6 script's options may be
/// computed from `__ENV`, as k6 computes them with the run's environment.
pub(crate) async fn inspect_with_env(
    path: &Path,
    memory_bytes: u64,
    env: &BTreeMap<String, String>,
) -> Result<Inspected> {
    let (bytes, sha256) = plugin::read_plugin(path)?;
    let engine = build_engine(EngineOptions {
        max_instances: 1,
        memory_bytes,
        needs: plugin::shape::PoolNeeds::of(&bytes),
    })?;
    let _ticker = EpochTicker::start(&engine)?;
    let plugin = Plugin::load(&engine, path, &bytes, &sha256)?;
    let services = services_for(
        &RunConfig::default_for_inspection(),
        Arc::new(Registry::new()),
        false,
        DataSets::new(),
    )?;
    let (info, declared, published) = plugin
        .describe(VuState::new(services, setup_identity(env)))
        .await?;
    Ok(Inspected {
        plugin,
        info,
        declared,
        published,
        embedded: plugin::embedded::read(&bytes),
    })
}

fn setup_identity(env: &BTreeMap<String, String>) -> VuIdentity {
    stage::identity(env, "setup")
}

/// The run-wide services; `published` are the data sets the plugin published from
/// `describe()`, beside the config's `[data]`.
fn services_for(
    config: &RunConfig,
    registry: Arc<Registry>,
    quiet: bool,
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
    Ok(Arc::new(HostServices {
        recorder,
        net,
        data: Arc::new(sets),
        cpu_per_call: config.limits.cpu_per_call,
        warned: Default::default(),
        metrics_refused: Default::default(),
        log: crate::plugin::log::LogSink::stderr(config.limits.log, quiet),
        sleeps_cut: Default::default(),
        control: Arc::new(RunControl::default()),
    }))
}

/// Refuses the run's plugin file unless it is the one each run config that pins one
/// (`plugin = { path, sha256 }`) names.
fn check_pin(request: &RunRequest, sha256: &str) -> Result<()> {
    for config in request.config_files() {
        if let Some(pin) = plugin::pin::read(config)? {
            pin.verify(&request.plugin, sha256)?;
        }
    }
    Ok(())
}

/// Resolves the run config: plugin defaults ← run.toml (each `--config` layered in
/// order) ← CLI.
pub(crate) fn resolve_config(info: &PluginInfo, request: &RunRequest) -> Result<RunConfig> {
    let merged = layered_source(&info.default_config, &request.config_files())?;
    config::build(merged, &request.overrides).map_err(|e| anyhow!("config error: {e}"))
}

/// The plugin's default config with each run config file laid over it in order, as
/// TOML not yet checked (`host run` builds it; `host sweep` rescales it per level first).
pub(crate) fn layered_source(default_config: &str, files: &[&Path]) -> Result<toml::Table> {
    let base = config::parse_toml(default_config, "the plugin's default config")
        .map_err(|e| anyhow!("{e}"))?;
    if files.is_empty() {
        return Ok(base);
    }
    let over = config::layers::read(files).map_err(|e| anyhow!("config error: {e}"))?;
    Ok(config::merge(base, over))
}

/// Runs a plugin and writes its results.
pub async fn run(request: RunRequest) -> Result<RunOutcome> {
    run_then(request, |_| {}).await
}

/// Runs a plugin; `before_writing` gets the summary before the results files are
/// written (the command line prints it there, so a full disk cannot lose it), then
/// the results are written.
pub(crate) async fn run_then(
    request: RunRequest,
    before_writing: impl FnOnce(&Summary),
) -> Result<RunOutcome> {
    let mut plan = plan(&request).await?;
    // Sampling targets are checked before anything starts: a typo fails at once.
    let mut sampling = crate::sampling::prepare(&plan.config.sampling).await?;
    // The stack a run started (`run --stack`) is sampled too: its resources are the
    // other half of the figures.
    if let Some(watch) = &request.watch {
        sampling.add_containers(watch.0.containers());
    }
    let title = format!("{} {}", plan.info.name, plan.info.version);
    let live = crate::live::Live::start(&request.live, &plan.config.outputs, &title)?;
    let published = std::mem::take(&mut plan.published);
    let mut setup = setup(&request, &plan.config, published).await?;
    let mut started = start(&request, &plan, &setup, sampling, live).await?;
    let driven = drive(&plan, &setup, &mut started).await?;
    teardown(&request, &plan.config, &mut setup).await;
    let summary_timeout = plan.config.limits.setup_timeout;
    let (mut outcome, observers) = finish(plan, &setup, started, driven, before_writing);
    handle_summary(&request, &mut setup, summary_timeout, &mut outcome).await;
    observers.close().await;
    Ok(outcome)
}

/// What is settled before anything runs: the plugin's self-description, the resolved
/// config and its thresholds.
struct Plan {
    info: PluginInfo,
    config: RunConfig,
    thresholds: Evaluator,
    /// Times the process had run out of file descriptors before this run.
    descriptors_exhausted: u64,
    /// What the plan found worth saying before the run (a `--duration` that shortens
    /// nothing, a `run.toml` edited since the build); printed at once, and kept for the
    /// summary.
    warnings: Vec<String>,
    /// The data sets the plugin published from `describe()` (its SharedArrays).
    published: DataSets,
}

/// The plugin loaded for the run, the run's shared parts, and `setup()` done.
struct Setup {
    /// Held for the whole run: dropping it stops the epochs that bound guest calls.
    _ticker: EpochTicker,
    plugin: Plugin,
    registry: Arc<Registry>,
    services: Arc<HostServices>,
    control: Arc<RunControl>,
    errors: Arc<ErrorLog>,
    started_at: SystemTime,
    /// The instance `setup()` ran in; `teardown()` runs in it too.
    store: Store<VuState>,
    instance: Scenario,
    /// The same instance's handle, for the exports beyond the `scenario` world's.
    handle: wasmtime::component::Instance,
    data: Arc<str>,
    /// Where the setup instance's requests are recorded when they are not counted
    /// with the run's (`[http] count_setup = false`).
    apart: Option<Arc<Recorder>>,
}

/// The executors running, and what watches them.
struct Started {
    /// What runs each second and at the end, in order.
    observers: Observers,
    /// The results folder.
    results_dir: PathBuf,
    t0: Instant,
    contexts: Vec<Arc<ScenarioCtx>>,
    tasks: JoinSet<(String, ExecutorReport)>,
    /// Stopped when this is dropped, at the end of the run.
    _signals: Option<interrupt::SignalHandler>,
}

/// What the drive loop leaves when every executor is done.
struct Driven {
    aggregator: Aggregator,
    reports: BTreeMap<String, ExecutorReport>,
    elapsed: Duration,
}

/// Plan: describe the plugin, resolve the config, parse the thresholds, and check that
/// every scenario runs something the plugin has.
async fn plan(request: &RunRequest) -> Result<Plan> {
    // A pinned plugin is checked before any of its code runs, describe() included.
    let (_, sha256) = plugin::read_plugin(&request.plugin)?;
    check_pin(request, &sha256)?;
    let env: BTreeMap<String, String> = request.overrides.env.iter().cloned().collect();
    let inspected = inspect_with_env(
        &request.plugin,
        crate::config::Limits::default().memory_bytes,
        &env,
    )
    .await?;
    let config = resolve_config(&inspected.info, request)?;
    crate::output::check_writable(&request.out)?;
    // Every VU's connections take descriptors: the soft limit goes up to the hard one.
    crate::net::descriptors::raise_limit();
    let parsed = crate::thresholds::parse_thresholds(&config.thresholds)
        .map_err(|e| anyhow!("config error: {e}"))?;
    // Before any VU starts: a threshold nothing can feed would fail only at the end.
    crate::thresholds::declared::check(&parsed, inspected.declared.as_ref(), &config)
        .map_err(|e| anyhow!("config error: {e}"))?;
    let thresholds = Evaluator::new(parsed).allow_missing(config.allow_missing_thresholds);
    let known: Vec<&str> = inspected
        .info
        .scenarios
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    for s in &config.scenarios {
        if !known.is_empty() && !known.contains(&s.exec.as_str()) {
            bail!(
                "config error: scenarios.{}.exec: the plugin has no scenario `{}`; it has: {}",
                s.name,
                s.exec,
                known.join(", ")
            );
        }
    }
    let mut warnings =
        crate::config::duration_flag::unshortened(&config, request.overrides.duration);
    warnings.extend(crate::author::drift::run_toml_drift(
        &request.plugin,
        &inspected.info.default_config,
        &request.config_files(),
    ));
    for warning in &warnings {
        crate::stderr::warn(warning);
    }
    Ok(Plan {
        info: inspected.info,
        config,
        thresholds,
        descriptors_exhausted: crate::net::descriptors::exhausted_count(),
        warnings,
        published: inspected.published,
    })
}

/// Setup: an engine sized for the run, the plugin, the shared services, and `setup()`,
/// which runs once in an instance of its own; its result goes to every VU.
async fn setup(request: &RunRequest, config: &RunConfig, published: DataSets) -> Result<Setup> {
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
    let log_quiet = request.remote.as_ref().and_then(|r| r.0.log_quiet());
    let services = services_for(
        config,
        registry.clone(),
        log_quiet.unwrap_or(request.quiet),
        published,
    )?;
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

/// Start: every scenario's initial VUs made and initialised, the signal handler, the
/// results folder, and the executors spawned together.
async fn start(
    request: &RunRequest,
    plan: &Plan,
    setup: &Setup,
    sampling: crate::sampling::Prepared,
    live: crate::live::Live,
) -> Result<Started> {
    let config = &plan.config;
    let vu_ctx = VuContext {
        plugin: setup.plugin.clone(),
        services: setup.services.clone(),
        setup_data: setup.data.clone(),
        errors: setup.errors.clone(),
        iteration_timeout: config.limits.iteration_timeout,
        init_failures: config.limits.init_failures,
        control: setup.control.clone(),
    };
    let factories = VuFactory::for_scenarios(&vu_ctx, &config.env, &config.scenarios);
    let remote = request.remote.as_ref().map(|r| r.0.clone());
    let vus_here = remote.as_ref().is_none_or(|r| r.runs_vus_here());
    let mut scenario_vus = Vec::new();
    for (scenario, factory) in config.scenarios.iter().zip(&factories) {
        let initial = if vus_here { scenario.initial_vus() } else { 0 };
        scenario_vus.push(factory.make_many(initial, INIT_CONCURRENCY).await?);
    }

    let signals = request.handle_signals.then(|| {
        interrupt::spawn_signal_handler(
            setup.control.clone(),
            config
                .scenarios
                .iter()
                .map(|s| s.graceful_stop)
                .max()
                .unwrap_or_default(),
        )
    });

    if let Some(remote) = &remote {
        remote
            .barrier(remote::BarrierCtx {
                control: setup.control.clone(),
                services: setup.services.clone(),
                setup_data: setup.data.clone(),
                scenarios: config.scenarios.iter().map(|s| s.name.clone()).collect(),
                config: config.clone(),
            })
            .await?;
    }
    let results = ResultsWriter::create(&request.out, &plan.info.name)?;
    let t0 = Instant::now();
    let resources =
        ResourceWatch::start(sampling, config.sampling.stats_interval, t0, results.dir())?;
    let results_dir = results.dir().to_path_buf();
    // The set is assembled once, from the request: nothing below asks again who
    // takes part.
    let observers = Observers::assemble(
        request.remote.as_ref(),
        request.watch.as_ref(),
        observe::Outputs {
            results,
            resources,
            progress: progress::Progress::new(request.quiet, config.scheduled_end()),
            live,
        },
    );
    let mut contexts = Vec::new();
    let mut tasks = JoinSet::new();
    for ((scenario, vus), factory) in config.scenarios.iter().zip(scenario_vus).zip(factories) {
        let ctx = Arc::new(ScenarioCtx::new(
            scenario.clone(),
            t0 + scenario.start_time,
            setup.control.clone(),
            factory,
        ));
        ctx.stats
            .allocated_vus
            .store(vus.len() as u64, Ordering::Relaxed);
        contexts.push(ctx.clone());
        let name = scenario.name.clone();
        match &remote {
            // A coordinator's executors run at its workers.
            Some(r) if !vus_here => {
                let done = r.scenario_done(name.clone());
                tasks.spawn(async move { (name, done.await) });
            }
            _ => {
                tasks.spawn(async move { (name, executor::run(ctx, vus).await) });
            }
        }
    }
    Ok(Started {
        observers,
        results_dir,
        t0,
        contexts,
        tasks,
        _signals: signals,
    })
}

/// The run as its observers see it.
fn scope<'a>(
    plan: &'a Plan,
    setup: &'a Setup,
    t0: Instant,
    contexts: &'a [Arc<ScenarioCtx>],
) -> Scope<'a> {
    Scope {
        t0,
        config: &plan.config,
        registry: &setup.registry,
        contexts,
        services: &setup.services,
        errors: &setup.errors,
        control: &setup.control,
        thresholds: &plan.thresholds,
    }
}

/// Drive: until every executor is done, fold metrics every second and hand each
/// second to the observers (results, progress, resources, live outputs, the
/// distributed role, the automatic stops); gauges are sampled in between.
async fn drive(plan: &Plan, setup: &Setup, started: &mut Started) -> Result<Driven> {
    let Started {
        observers,
        t0,
        contexts,
        tasks,
        ..
    } = started;
    let t0 = *t0;
    let scope = scope(plan, setup, t0, contexts);
    let mut aggregator = Aggregator::new(setup.services.recorder.clone());
    let mut reports = BTreeMap::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    // Gauges (VUs, in flight) are sampled half-way through each second: stages and
    // start times usually fall on whole seconds, and a sample taken at the same instant
    // as a VU starting or stopping would show either count.
    let mut gauge_tick = tokio::time::interval_at(
        tokio::time::Instant::now() + Duration::from_millis(500),
        Duration::from_secs(1),
    );
    observers.start(&scope);
    loop {
        tokio::select! {
            joined = tasks.join_next() => match joined {
                Some(Ok((name, report))) => { reports.insert(name, report); }
                Some(Err(e)) => bail!("an executor failed: {e}"),
                None => break,
            },
            _ = gauge_tick.tick() => sample_gauges(&setup.services, scope.contexts),
            _ = tick.tick() => {
                observers.before_tick(&scope);
                let interval = aggregator.tick();
                observers.tick(&Tick {
                    scope: &scope,
                    elapsed: t0.elapsed(),
                    interval: &interval,
                    aggregator: &aggregator,
                });
            }
        }
    }
    let elapsed = t0.elapsed();
    observers.stopped();
    Ok(Driven {
        aggregator,
        reports,
        elapsed,
    })
}

/// Teardown: `teardown()` gets the setup data, as in k6, even after an interrupted run;
/// its failure is a warning, since the results are already gathered.
async fn teardown(request: &RunRequest, config: &RunConfig, setup: &mut Setup) {
    if let Some(r) = &request.remote {
        if r.0.given_setup_data().is_some() {
            // A worker: teardown() runs once, at the coordinator.
            return;
        }
    }
    setup.store.data_mut().identity = stage::identity(&config.env, "teardown");
    setup
        .store
        .data_mut()
        .budget
        .start_call(config.limits.setup_timeout);
    let result = setup
        .instance
        .loadtest_scenario_plugin()
        .call_teardown(&mut setup.store, &setup.data)
        .await;
    if let Err(e) = plugin::outcome(result, setup.store.data()) {
        crate::stderr::warn(format_args!("teardown() {e}"));
    }
}

/// The plugin's own summary (k6's `handleSummary`), when it exports one: called after
/// the results are written, in the instance `setup()` and `teardown()` ran in, with the
/// summary in k6's shape; what it returns is printed or written into the results
/// folder. Its failure is a results file that could not be written, so a run that
/// passed exits 1 and says why. A worker leaves it to the coordinator, as `teardown()`.
async fn handle_summary(
    request: &RunRequest,
    setup: &mut Setup,
    timeout: std::time::Duration,
    outcome: &mut RunOutcome,
) {
    let Some(export) = setup.plugin.summary else {
        return;
    };
    if let Some(r) = &request.remote {
        if r.0.given_setup_data().is_some() {
            return;
        }
    }
    let data = crate::output::k6_export::handle_summary_data(&outcome.summary);
    // The identity stays teardown's: anything it records is tagged `stage=teardown`.
    setup.store.data_mut().budget.start_call(timeout);
    let called =
        plugin::summary::call(&mut setup.store, &setup.handle, &export, &data.to_string()).await;
    match called {
        Ok(renderings) => {
            let failures = crate::output::handled::deliver(&renderings, &outcome.results_dir);
            outcome.write_failures.extend(failures);
        }
        Err(e) => outcome.write_failures.push(crate::output::WriteFailure {
            file: "the plugin's own summary (handleSummary)".into(),
            error: e.to_string(),
        }),
    }
}

/// Finish: the last gauges and interval, the summary with what each observer adds,
/// its verdict, then the observers write (the results files first). The observers are
/// handed back for [`Observers::close`], after the plugin's own summary.
fn finish(
    plan: Plan,
    setup: &Setup,
    started: Started,
    driven: Driven,
    before_writing: impl FnOnce(&Summary),
) -> (RunOutcome, Observers) {
    let Driven {
        mut aggregator,
        reports,
        elapsed,
    } = driven;
    let Started {
        mut observers,
        results_dir,
        t0,
        contexts,
        ..
    } = started;
    let scope = scope(&plan, setup, t0, &contexts);
    observers.before_tick(&scope);
    sample_gauges(&setup.services, &contexts);
    let last = aggregator.tick();
    let tick = Tick {
        scope: &scope,
        elapsed: t0.elapsed(),
        interval: &last,
        aggregator: &aggregator,
    };
    observers.last_tick(&tick, &reports);
    let mut summary = summarize::summary(&plan.info, setup, &scope, &aggregator, &reports, elapsed);
    let mut end = Ending {
        scope: &scope,
        results_dir,
        service_series: Vec::new(),
        failures: Vec::new(),
    };
    observers.annotate(&mut summary, &mut end);
    summarize::run_warnings(&mut summary, setup, &plan);
    let exit_code = verdict::judge(&mut summary);
    summarize::say_verdict(&mut summary);
    before_writing(&summary);
    observers.finish(&summary, &mut end);
    let outcome = RunOutcome {
        summary,
        results_dir: end.results_dir,
        exit_code,
        write_failures: end.failures,
    };
    (outcome, observers)
}

fn sample_gauges(services: &HostServices, contexts: &[Arc<ScenarioCtx>]) {
    let recorder = &services.recorder;
    let none = TagSet::empty();
    let active: u64 = contexts
        .iter()
        .map(|c| c.stats.active_vus.load(Ordering::Relaxed))
        .sum();
    let allocated: u64 = contexts
        .iter()
        .map(|c| c.stats.allocated_vus.load(Ordering::Relaxed))
        .sum();
    recorder.gauge(builtin::VUS, &none, active as f64);
    recorder.gauge(builtin::VUS_MAX, &none, allocated as f64);
    recorder.gauge(
        builtin::HTTP_REQS_IN_FLIGHT,
        &none,
        services.net.in_flight.get_signed().max(0) as f64,
    );
    if services.net.ws_used.load(Ordering::Relaxed) {
        let open = services.net.ws_open.load(Ordering::Relaxed).max(0);
        recorder.gauge(builtin::WS_SOCKETS_OPEN, &none, open as f64);
    }
}
