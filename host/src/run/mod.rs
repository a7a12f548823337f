//! A run from start to end: plugin and config in, VUs made and initialised, executors
//! started together, metrics folded every second, results out.

pub(crate) mod data;
mod exec_live;
pub mod exit_code;
mod gauges;
mod interrupt;
pub(crate) mod observe;
mod plan;
pub(crate) mod progress;
pub(crate) mod remote;
mod request;
mod services;
mod setup;
pub(crate) mod stage;
mod summarize;
mod teardown;
pub(crate) mod verdict;

use crate::config::{self, RunConfig};
use crate::executor::{self, ExecutorReport, ScenarioCtx};
use crate::metrics::{Aggregator, Registry};
use crate::metrics::{Second, SoFar};
use crate::output::ResultsWriter;
use crate::plugin::state::{DataSets, VuState};
use crate::plugin::{self, build_engine, EngineOptions, EpochTicker, Plugin, PluginInfo};
use crate::sampling::ResourceWatch;
use crate::summary::Summary;
use crate::thresholds::Evaluator;
use crate::vu::factory::VuFactory;
use crate::vu::VuContext;
use anyhow::{anyhow, bail, Result};
use observe::{Ending, Observers, Scope};
use plan::Plan;
pub use request::{RunOutcome, RunRequest};
use services::{check_pin, services_for, setup_identity};
use setup::Setup;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// VUs initialised at once before the start.
const INIT_CONCURRENCY: usize = 64;

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

/// For a process that exits right after its one run (`host run`): the VUs' instances
/// are kept, not torn down, once their executors are done with them, and the kernel
/// frees them at exit (see [`crate::vu::graveyard`]). Their states still end in place.
pub(crate) fn keep_instances_until_exit() {
    if let Ok(services) = inert_services() {
        crate::vu::graveyard::open(services);
    }
}

/// Services of no run (the inspection defaults, an empty registry): what a kept
/// instance's inert state holds.
pub(crate) fn inert_services() -> Result<Arc<crate::plugin::state::HostServices>> {
    services_for(
        &RunConfig::default_for_inspection(),
        Arc::new(Registry::new()),
        false,
        DataSets::new(),
    )
}

/// `setup()`'s identity, for tests outside this module.
#[cfg(test)]
pub(crate) fn setup_identity_for_tests(
    env: &BTreeMap<String, String>,
) -> crate::plugin::state::VuIdentity {
    setup_identity(env)
}

/// Resolves the run config: plugin defaults ← run.toml (each `--config` layered in
/// order) ← CLI.
pub(crate) fn resolve_config(info: &PluginInfo, request: &RunRequest) -> Result<RunConfig> {
    let merged = layered_source(&info.default_config, &request.config_files())?;
    if let Some(warning) = config::k6_replaced_warning(&merged, &request.overrides) {
        crate::stderr::warn(warning);
    }
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
    let mut setup = setup::setup(&request, &plan.config, published).await?;
    let mut started = start(&request, &plan, &setup, sampling, live).await?;
    let driven = drive(&plan, &setup, &mut started).await?;
    teardown::teardown(&request, &plan.config, &mut setup).await;
    let summary_timeout = plan.config.limits.setup_timeout;
    let (mut outcome, observers) = finish(plan, &setup, started, driven, before_writing);
    teardown::handle_summary(&request, &mut setup, summary_timeout, &mut outcome).await;
    observers.close().await;
    Ok(outcome)
}

/// The executors running, and what watches them.
struct Started {
    /// What runs each second and at the end, in order.
    observers: Observers,
    /// The results folder.
    results_dir: PathBuf,
    t0: Instant,
    /// How long the VUs made before the start took to initialise (not in the run's
    /// duration, which starts after them).
    vus_init: Duration,
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
    let names = crate::thresholds::declared::RunNames {
        scenarios: config.scenarios.iter().map(|s| s.name.as_str()).collect(),
        tags: (config.scenarios.iter())
            .flat_map(|s| s.tags.keys().map(String::as_str))
            .collect(),
    };
    crate::thresholds::declared::check(&parsed, inspected.declared.as_ref(), &names)
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
    let vu_ctx = Arc::new(VuContext {
        plugin: setup.plugin.clone(),
        services: setup.services.clone(),
        setup_data: setup.data.clone(),
        errors: setup.errors.clone(),
        iteration_timeout: config.limits.iteration_timeout,
        init_failures: config.limits.init_failures,
        control: setup.control.clone(),
    });
    let factories = VuFactory::for_scenarios(&vu_ctx, &config.env, &config.scenarios);
    let remote = request.remote.as_ref().map(|r| r.0.clone());
    let vus_here = remote.as_ref().is_none_or(|r| r.runs_vus_here());
    let mut scenario_vus = Vec::new();
    // One cut-off for every scenario's VUs made before the start: an `init` that ran
    // out of its budget (a loop) gives up the others' too (issue 49 item 16).
    let init_started = Instant::now();
    let give_up = tokio_util::sync::CancellationToken::new();
    for (scenario, factory) in config.scenarios.iter().zip(&factories) {
        let initial = if vus_here { scenario.initial_vus() } else { 0 };
        scenario_vus.push(
            factory
                .make_many(initial, INIT_CONCURRENCY, &give_up)
                .await?,
        );
    }
    let vus_init = init_started.elapsed();

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
                config: config.clone(),
            })
            .await?;
    }
    let results = ResultsWriter::create(&request.out, &plan.info.name)?;
    let t0 = Instant::now();
    let resources =
        ResourceWatch::start(sampling, config.sampling.stats_interval, t0, results.dir())?;
    let results_dir = results.dir().to_path_buf();
    // Pages' screenshots are written there, and nowhere else.
    setup.services.browsers.set_results(results_dir.clone());
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
    // `k6/execution` reads the scenarios' live counters from here, when asked.
    setup.services.exec.publish(
        t0,
        contexts
            .iter()
            .map(|c| c.clone() as Arc<dyn crate::plugin::exec_live::LiveScenario>)
            .collect(),
    );
    Ok(Started {
        observers,
        results_dir,
        t0,
        vus_init,
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
            _ = gauge_tick.tick() => gauges::sample_gauges(&setup.services, scope.contexts),
            _ = tick.tick() => {
                observers.before_tick(&scope);
                let interval = aggregator.tick();
                let second = Second {
                    so_far: SoFar {
                        totals: &aggregator,
                        registry: scope.registry,
                        elapsed: t0.elapsed(),
                    },
                    interval: &interval,
                };
                observers.tick(&scope, &second);
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
        vus_init,
        contexts,
        ..
    } = started;
    let scope = scope(&plan, setup, t0, &contexts);
    observers.before_tick(&scope);
    gauges::sample_gauges(&setup.services, &contexts);
    let last = aggregator.tick();
    let second = Second {
        so_far: SoFar {
            totals: &aggregator,
            registry: scope.registry,
            elapsed: t0.elapsed(),
        },
        interval: &last,
    };
    observers.last_tick(&scope, &second, &reports);
    let mut summary = summarize::summary(&plan.info, setup, &scope, &aggregator, &reports, elapsed);
    summary.vus_init_s = vus_init.as_secs_f64();
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
