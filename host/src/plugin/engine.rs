//! The wasmtime engine of a run: pooling allocator sized from the plan's VU count,
//! memory cap per instance, epoch interruption driven by a ticker thread.

use anyhow::{Context, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the epoch advances; the granularity of CPU deadlines and fair yielding.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Instances kept spare beyond the plan's VUs (inspection, setup and teardown).
const SPARE_INSTANCES: u32 = 4;

/// Engine settings that depend on the run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EngineOptions {
    /// Instances alive at once at most (VUs plus spares are added here).
    pub max_instances: u32,
    /// Linear memory cap per instance, in bytes.
    pub memory_bytes: u64,
    /// Pool slots one instance of the plugin takes (see `shape`).
    pub needs: super::shape::PoolNeeds,
}

/// Memory mappings one live instance takes (measured: 2,000 VUs used 12,096).
const MAPPINGS_PER_INSTANCE: u64 = 6;

/// Mappings kept free for the host's own threads, allocator and sockets.
const MAPPINGS_FOR_HOST: u64 = 4000;

/// Fails early, naming the sysctl to raise, when `instances` would need more memory
/// mappings than the kernel allows a process: past that limit even the host's own
/// allocations fail, so finding out mid-run is too late.
pub(crate) fn check_map_limit(instances: u64) -> Result<()> {
    let Some(limit) = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
    else {
        return Ok(());
    };
    let in_use = std::fs::read_to_string("/proc/self/maps")
        .map(|m| m.lines().count() as u64)
        .unwrap_or(0);
    let needed = instances * MAPPINGS_PER_INSTANCE + in_use + MAPPINGS_FOR_HOST;
    if needed <= limit {
        return Ok(());
    }
    let fits = limit.saturating_sub(in_use + MAPPINGS_FOR_HOST) / MAPPINGS_PER_INSTANCE;
    let suggested = (needed * 3 / 2).next_power_of_two();
    anyhow::bail!(
        "{instances} plugin instances need about {needed} memory mappings, but the kernel allows \
         {limit} per process (vm.max_map_count); lower the VU count (about {fits} fit) or raise \
         the limit: sysctl -w vm.max_map_count={suggested}"
    )
}

/// Guard pages reserved after each instance's memory.
const GUARD_BYTES: u64 = 32 << 20;

/// User address space on x86-64 and aarch64 Linux (47 bits), less room for the host.
const ADDRESS_SPACE: u64 = (1 << 47) - (8 << 40);

/// Fails early when the instance pool cannot fit in the process's address space.
fn check_address_space(instances: u64, memory_bytes: u64) -> Result<()> {
    let per_instance = memory_bytes.max(1 << 20) + GUARD_BYTES;
    let needed = instances.saturating_mul(per_instance);
    if needed <= ADDRESS_SPACE {
        return Ok(());
    }
    let tib = |b: u64| b as f64 / (1u64 << 40) as f64;
    anyhow::bail!(
        "cannot reserve address space for {instances} plugin instances: they need {:.1} TiB \
         ({} MiB each) and a process has about {:.0} TiB; lower the VU count (about {} fit) \
         or [limits] memory_mb",
        tib(needed),
        per_instance >> 20,
        tib(ADDRESS_SPACE),
        ADDRESS_SPACE / per_instance
    )
}

/// Builds an engine; the error names `vm.max_map_count` when the pool cannot be mapped.
pub(crate) fn build_engine(options: EngineOptions) -> Result<Engine> {
    let instances = options.max_instances.saturating_add(SPARE_INSTANCES);
    check_address_space(instances as u64, options.memory_bytes)?;
    check_map_limit(instances as u64)?;
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(instances)
        .total_stacks(instances)
        .total_memories(instances.saturating_mul(options.needs.memories))
        .total_tables(instances.saturating_mul(options.needs.tables))
        .total_core_instances(instances.saturating_mul(options.needs.core_instances))
        .max_memory_size(options.memory_bytes as usize);

    let mut config = Config::new();
    config
        .epoch_interruption(true)
        // Host futures (hyper) are polled on the fiber stack: keep it roomy.
        .async_stack_size(1 << 20)
        .max_wasm_stack(512 << 10)
        // A reservation the size of the cap keeps a large pool's address space small.
        .memory_reservation(options.memory_bytes.max(1 << 20))
        .memory_guard_size(GUARD_BYTES)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    // For profiling by hand (`perf record`): the plugin's compiled functions then have
    // names in /tmp/perf-PID.map, so a profile shows which guest code the time is in.
    if std::env::var_os("HOST_PERF_MAP").is_some_and(|v| v == "1") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    Engine::new(&config).map_err(|e| {
        let text = format!("{e:#}");
        if text.contains("mmap failed to reserve") {
            let per_vu = options.memory_bytes + (32 << 20);
            let tib = per_vu as f64 * instances as f64 / (1u64 << 40) as f64;
            anyhow::anyhow!(
                "cannot reserve address space for {instances} plugin instances \
                 ({tib:.1} TiB at {} MiB each): lower the VU count or [limits] memory_mb ({text})",
                per_vu >> 20
            )
        } else if text.contains("Cannot allocate memory") {
            anyhow::anyhow!(
                "cannot reserve memory for {instances} plugin instances ({text}); \
                 lower the VU count or raise the kernel's map limit: sysctl -w vm.max_map_count=1048576"
            )
        } else {
            anyhow::anyhow!(e).context("cannot configure the WebAssembly engine")
        }
    })
}

/// Advances an engine's epoch every [`EPOCH_TICK`] until dropped.
pub(crate) struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EpochTicker {
    /// Starts ticking `engine`.
    pub(crate) fn start(engine: &Engine) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let engine = engine.clone();
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("epoch-ticker".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .context("cannot start the epoch ticker thread")?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
