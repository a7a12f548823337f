//! The plugin runtime: reads and checks a component, compiles it (or loads it from the
//! cache), links the host's imports and WASI, and makes one store + instance per VU.

// Generated code: its items are as public as bindgen makes them.
#[allow(unreachable_pub, missing_docs)]
pub mod bindings;
pub(crate) mod browser;
pub(crate) mod budget;
pub(crate) mod built_from;
pub(crate) mod cache;
pub(crate) mod cache_entry;
pub(crate) mod call;
pub(crate) mod capabilities;
pub(crate) mod embedded;
pub(crate) mod engine;
pub(crate) mod exec_live;
pub(crate) mod imports;
pub(crate) mod layer;
pub(crate) mod layer_crypto;
pub(crate) mod layer_redis;
pub(crate) mod layer_responses;
pub(crate) mod layer_samples;
pub(crate) mod layer_series;
pub(crate) mod layer_sockets;
pub(crate) mod layer_vu;
pub(crate) mod link;
pub(crate) mod log;
pub(crate) mod numbers;
pub(crate) mod output;
pub(crate) mod pin;
pub(crate) mod reference;
pub(crate) mod response_slots;
pub(crate) mod secret_url;
pub(crate) mod secrets;
pub(crate) mod send;
pub(crate) mod shape;
pub(crate) mod sockets;
pub(crate) mod state;
pub(crate) mod summary;
pub(crate) mod trap;
pub(crate) mod validate;

use anyhow::{Context, Result};
use bindings::{Scenario, ScenarioPre};
use sha2::{Digest, Sha256};
use state::VuState;
use std::path::{Path, PathBuf};
use std::time::Instant;
use wasmtime::component::Linker;
use wasmtime::{Engine, Store};

pub(crate) use bindings::exports::loadtest::scenario::plugin::PluginInfo;
pub(crate) use call::{outcome, GuestCallError};
pub(crate) use engine::{build_engine, EngineOptions, EpochTicker};
use trap::trap_message;
pub(crate) use trap::TrapCause;

/// A plugin ready to be instantiated for VUs.
#[derive(Clone)]
pub struct Plugin {
    /// The engine it was compiled for.
    pub engine: Engine,
    /// Linked and type-checked, ready to instantiate.
    pub pre: ScenarioPre<VuState>,
    /// Facts about the file.
    pub meta: PluginFile,
    /// Its `summary` export's `handle-summary` (k6's `handleSummary`), if it has one.
    pub summary: Option<wasmtime::component::ComponentExportIndex>,
}

/// Facts about a plugin file, for results and `inspect`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PluginFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// sha256 of the file, hex.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// Whether the compiled form came from the cache.
    pub from_cache: bool,
    /// Milliseconds spent compiling or loading.
    pub load_ms: f64,
}

/// A plugin file loaded into an engine, with what `describe()` said of itself.
pub struct Inspected {
    /// The compiled plugin.
    pub plugin: Plugin,
    /// Its self-description.
    pub info: PluginInfo,
    /// What it declared it may record from `describe()` (contract 0.3.2); `None` for a
    /// plugin that declares nothing.
    pub declared: Option<crate::thresholds::declared::Declared>,
    /// The data sets it published from `describe()` (contract 0.3.3: a script's
    /// `SharedArray`s), shared by every VU of the run as `[data]` sets are.
    pub published: state::DataSets,
    /// The README and source URL in its custom sections.
    pub embedded: embedded::Embedded,
}

/// Reads a plugin file, refusing anything that is not a component.
pub(crate) fn read_plugin(path: &Path) -> Result<(Vec<u8>, String)> {
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read plugin {}", path.display()))?;
    validate::check_header(path, &bytes)?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    Ok((bytes, sha256))
}

impl Plugin {
    /// Compiles (or loads from cache), checks the contract version, links.
    pub fn load(engine: &Engine, path: &Path, bytes: &[u8], sha256: &str) -> Result<Plugin> {
        let started = Instant::now();
        let (component, from_cache) = cache::load_or_compile(engine, bytes, sha256)
            .map_err(|e| anyhow::anyhow!("{} is not a valid component: {e:#}", path.display()))?;
        validate::check_contract(engine, &component, path)?;
        let mut linker: Linker<VuState> = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        link::add_to_linker(&mut linker)?;
        link::add_layer_to_linker(&mut linker)?;
        let instance_pre = linker.instantiate_pre(&component).map_err(|e| {
            anyhow::anyhow!(
                "{} does not fit this host's contract ({}@{}): {e:#}; rebuild it with this host's SDK",
                path.display(),
                bindings::WIT_PACKAGE,
                bindings::WIT_VERSION
            )
        })?;
        let pre = ScenarioPre::new(instance_pre).map_err(|e| {
            anyhow::anyhow!(
                "{} is missing an export of the plugin interface: {e:#}",
                path.display()
            )
        })?;
        Ok(Plugin {
            engine: engine.clone(),
            summary: summary::find(engine, &component),
            pre,
            meta: PluginFile {
                path: path.to_path_buf(),
                sha256: sha256.to_string(),
                size: bytes.len() as u64,
                from_cache,
                load_ms: started.elapsed().as_secs_f64() * 1000.0,
            },
        })
    }

    /// A new store and instance for a VU.
    pub async fn instantiate(&self, state: VuState) -> Result<(Store<VuState>, Scenario)> {
        let (store, scenario, _) = self.instantiate_with_handle(state).await?;
        Ok((store, scenario))
    }

    /// A new store and instance, with the instance's handle for exports beyond the
    /// `scenario` world's (the `summary` export).
    pub(crate) async fn instantiate_with_handle(
        &self,
        state: VuState,
    ) -> Result<(Store<VuState>, Scenario, wasmtime::component::Instance)> {
        let mut store = Store::new(&self.engine, state);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|mut ctx| {
            if ctx.data_mut().budget.on_tick(Instant::now()).is_some() {
                return Ok(wasmtime::UpdateDeadline::Interrupt);
            }
            // Give the tokio worker back every tick so a busy plugin cannot starve
            // other VUs or the scheduler; plain `Yield` was measured to starve them.
            // A plugin that waited in an import since the last tick gave it back then.
            if !ctx.data_mut().budget.must_yield() {
                return Ok(wasmtime::UpdateDeadline::Continue(1));
            }
            Ok(wasmtime::UpdateDeadline::YieldCustom(
                1,
                Box::pin(tokio::task::yield_now()),
            ))
        });
        let instance = self
            .pre
            .instance_pre()
            .instantiate_async(&mut store)
            .await
            .map_err(|e| instantiate_error(&self.meta.path, e))?;
        let scenario = Scenario::new(&mut store, &instance)
            .map_err(|e| instantiate_error(&self.meta.path, e))?;
        Ok((store, scenario, instance))
    }

    /// Calls `describe()` in a throwaway instance; also what it declared it may record
    /// (`metrics.declare`), if it declared anything, and the data sets it published
    /// (`shared-data.publish`).
    pub async fn describe(
        &self,
        state: VuState,
    ) -> Result<(
        PluginInfo,
        Option<crate::thresholds::declared::Declared>,
        state::DataSets,
    )> {
        let (mut store, instance) = self.instantiate(state).await?;
        store.data_mut().published = Some(Default::default());
        store.data_mut().budget.start_call(DESCRIBE_DEADLINE);
        let info = instance
            .loadtest_scenario_plugin()
            .call_describe(&mut store)
            .await
            .map_err(|e| {
                let interrupted =
                    e.downcast_ref::<wasmtime::Trap>() == Some(&wasmtime::Trap::Interrupt);
                match built_from::script_of(&self.meta.path) {
                    // A k6 script's describe() runs its init code (the top level).
                    Some(script) if interrupted => anyhow::anyhow!(
                        "{}: the script's init code (its top level, outside any function) \
                         ran past {} s: does it loop?",
                        script.display(),
                        DESCRIBE_DEADLINE.as_secs()
                    ),
                    Some(script) => anyhow::anyhow!(
                        "{}: the script's init code failed: {}",
                        script.display(),
                        trap_message(&e, store.data())
                    ),
                    None => anyhow::anyhow!(
                        "{}: describe() failed: {}",
                        self.meta.path.display(),
                        trap_message(&e, store.data())
                    ),
                }
            })?;
        let published = store.data_mut().published.take().unwrap_or_default();
        Ok((
            info,
            store.data_mut().metrics.declared.take(),
            published.sets,
        ))
    }
}

/// `describe()` must not do I/O; it gets this long.
const DESCRIBE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

fn instantiate_error(path: &Path, e: wasmtime::Error) -> anyhow::Error {
    let text = format!("{e:#}");
    if text.contains("maximum concurrent") || text.contains("Cannot allocate memory") {
        anyhow::anyhow!(
            "cannot create another instance of {}: {text}; lower the VU count, or raise the kernel's map limit (sysctl -w vm.max_map_count=1048576)",
            path.display()
        )
    } else {
        anyhow::anyhow!("cannot instantiate {}: {text}", path.display())
    }
}
