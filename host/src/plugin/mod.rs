//! The plugin runtime: reads and checks a component, compiles it (or loads it from the
//! cache), links the host's imports and WASI, and makes one store + instance per VU.

pub mod bindings;
pub mod cache;
pub mod engine;
pub mod imports;
pub mod output;
pub mod state;
pub mod validate;

use anyhow::{Context, Result};
use bindings::{Scenario, ScenarioPre};
use sha2::{Digest, Sha256};
use state::VuState;
use std::path::{Path, PathBuf};
use std::time::Instant;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Engine, Store};

pub use bindings::exports::loadtest::scenario::plugin::{PluginInfo, ScenarioInfo};
pub use engine::{build_engine, EngineOptions, EpochTicker};

/// A plugin ready to be instantiated for VUs.
#[derive(Clone)]
pub struct Plugin {
    /// The engine it was compiled for.
    pub engine: Engine,
    /// Linked and type-checked, ready to instantiate.
    pub pre: ScenarioPre<VuState>,
    /// Facts about the file.
    pub meta: PluginFile,
}

/// Facts about a plugin file, for results and `inspect`.
#[derive(Debug, Clone, serde::Serialize)]
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

/// Reads a plugin file, refusing anything that is not a component.
pub fn read_plugin(path: &Path) -> Result<(Vec<u8>, String)> {
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
        Scenario::add_to_linker::<VuState, HasSelf<VuState>>(&mut linker, |s| s)?;
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
        let mut store = Store::new(&self.engine, state);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|_| {
            // Give the tokio worker back every tick so a busy plugin cannot starve
            // other VUs or the scheduler; plain `Yield` was measured to starve them.
            Ok(wasmtime::UpdateDeadline::YieldCustom(
                1,
                Box::pin(tokio::task::yield_now()),
            ))
        });
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| instantiate_error(&self.meta.path, e))?;
        Ok((store, instance))
    }

    /// Calls `describe()` in a throwaway instance.
    pub async fn describe(&self, state: VuState) -> Result<PluginInfo> {
        let (mut store, instance) = self.instantiate(state).await?;
        instance
            .loadtest_scenario_plugin()
            .call_describe(&mut store)
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "{}: describe() failed: {}",
                    self.meta.path.display(),
                    trap_message(&e, store.data())
                )
            })
    }
}

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

/// The most useful text about a trap: the plugin's panic report, else the trap with
/// what the plugin last printed.
pub fn trap_message(e: &wasmtime::Error, state: &VuState) -> String {
    if let Some(panic) = &state.panic_message {
        return panic.clone();
    }
    let trap = e
        .downcast_ref::<wasmtime::Trap>()
        .map(|t| t.to_string())
        .unwrap_or_else(|| {
            format!("{e:#}")
                .lines()
                .next()
                .unwrap_or_default()
                .to_string()
        });
    let printed = state.output.text();
    let last_line = printed.lines().rev().find(|l| !l.trim().is_empty());
    match last_line {
        Some(line) => format!("{trap} (plugin output: {line})"),
        None => trap,
    }
}
