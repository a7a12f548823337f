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

/// A 32-bit memory's whole index space: a reservation this large (with the guard)
/// lets compiled code load and store with no bounds check (wasmtime elides them).
const FULL_RESERVATION: u64 = 1 << 32;

/// Address space the pool may take with full reservations: an eighth of what a
/// process has, so a second engine (an inspection beside a run) still fits.
const FULL_RESERVATIONS_UP_TO: u64 = ADDRESS_SPACE / 8;

/// Virtual memory reserved per linear memory for a pool of `memories` memories.
///
/// The whole 4 GiB index space when the pool fits in [`FULL_RESERVATIONS_UP_TO`]
/// (about 3,700 memories): compiled code then checks no bounds, which took 29 % of
/// the guest instructions out of a bench/js/hello.js iteration (results/js.md,
/// branch hello53).
/// Past that, the cap itself (the memory can never grow past it, so the pool's
/// address space stays small for many VUs) and every access is bounds-checked.
/// The cap is enforced the same either way (`max_memory_size`).
pub(crate) fn reservation(memories: u64, memory_bytes: u64) -> u64 {
    let full = memories.saturating_mul(FULL_RESERVATION + GUARD_BYTES);
    if memory_bytes <= FULL_RESERVATION && full <= FULL_RESERVATIONS_UP_TO {
        FULL_RESERVATION
    } else {
        memory_bytes.max(1 << 20)
    }
}

/// The engine settings of a run for `instances` instances: the pooling allocator sized
/// from the plan, the memory cap, epoch interruption. (The stack-switching test below
/// adds `wasm_stack_switching` to exactly these.)
fn run_config(options: EngineOptions, instances: u32) -> Config {
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
        // The whole index space (no bounds checks) for a pool that fits, else the
        // cap: a large pool's address space stays small.
        .memory_reservation(reservation(
            u64::from(instances.saturating_mul(options.needs.memories)),
            options.memory_bytes,
        ))
        .memory_guard_size(GUARD_BYTES)
        // The `gc` cargo feature (for stack switching's continuation types) turns
        // these proposals on by default; runs keep them off, as before it.
        .wasm_gc(false)
        .wasm_exceptions(false)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    // For profiling by hand (`perf record`): the plugin's compiled functions then have
    // names in /tmp/perf-PID.map, so a profile shows which guest code the time is in.
    if std::env::var_os("HOST_PERF_MAP").is_some_and(|v| v == "1") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    config
}

/// Builds an engine; the error names `vm.max_map_count` when the pool cannot be mapped.
pub(crate) fn build_engine(options: EngineOptions) -> Result<Engine> {
    let instances = options.max_instances.saturating_add(SPARE_INSTANCES);
    check_address_space(instances as u64, options.memory_bytes)?;
    check_map_limit(instances as u64)?;
    let config = run_config(options, instances);
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

// wasmtime implements stack switching on x86-64 Unix only (it refuses the flag elsewhere).
#[cfg(all(test, target_arch = "x86_64", unix))]
mod tests {
    //! Issue #53's step 0: several VUs of one instance switched by wasm stack switching
    //! (continuations), under the run's own engine settings.
    use super::{run_config, EngineOptions};
    use wasmtime::component::{Component, Linker};
    use wasmtime::{Engine, Store};

    /// The multi-VU prototype's scheduler (`cont.new` per VU, `resume`, `suspend` in
    /// `sleep`), embedded in a component as one of its core modules beside a guest
    /// whose `iterate(vu)` sleeps twice and keeps a counter per VU in its memory, and a
    /// module holding the table through which the scheduler calls the guest.
    fn component_text() -> String {
        let sched = include_str!("../../../plugins/js-multivu/switch-probe/sched.wat").replacen(
            "(module",
            "(core module $sched",
            1,
        );
        format!(
            r#"(component
  (core module $fns (table (export "fns") 1 funcref))
  {sched}
  (core module $guest
    (import "host" "fns" (table 1 funcref))
    (import "sched" "sleep" (func $sleep (param f64)))
    (memory 1)
    (func $iterate (param $vu i32) (result i32)
      (local $a i32)
      (local.set $a (i32.mul (local.get $vu) (i32.const 4)))
      (i32.store (local.get $a) (i32.add (i32.load (local.get $a)) (i32.const 1)))
      (call $sleep (f64.convert_i32_u (local.get $vu)))
      (i32.store (local.get $a) (i32.add (i32.load (local.get $a)) (i32.const 10)))
      (call $sleep (f64.const 0))
      (i32.add (i32.mul (i32.load (local.get $a)) (i32.const 100)) (local.get $vu)))
    (elem (table 0) (i32.const 0) func $iterate))
  (core instance $t (instantiate $fns))
  (core instance $s (instantiate $sched (with "host" (instance $t))))
  (core instance $g (instantiate $guest (with "sched" (instance $s)) (with "host" (instance $t))))
  (func (export "start") (param "vu" u32) (result s32) (canon lift (core func $s "start")))
  (func (export "resume") (param "vu" u32) (result s32) (canon lift (core func $s "resume")))
)"#
        )
    }

    fn options(bytes: &[u8]) -> EngineOptions {
        EngineOptions {
            max_instances: 4,
            memory_bytes: 64 << 20,
            needs: crate::plugin::shape::PoolNeeds::of(bytes),
        }
    }

    /// Under the run's engine settings (pooling allocator, epoch interruption, async
    /// calls on fibers) with `wasm_stack_switching` on, the component validates,
    /// instantiates, and two VUs interleave: each suspends in `sleep` and resumes where
    /// it left, its counter in the shared memory intact, in the order the host chose.
    #[tokio::test]
    async fn a_component_embedding_the_continuation_scheduler_runs_under_the_run_engine() {
        let bytes = wat::parse_str(component_text()).expect("the component's text parses");
        let mut config = run_config(options(&bytes), 4);
        config.wasm_stack_switching(true).wasm_exceptions(true);
        let engine = Engine::new(&config).expect("the run's engine takes stack switching");
        let component = Component::new(&engine, &bytes).expect("the component validates");
        let mut store = Store::new(&engine, ());
        store.set_epoch_deadline(1_000);
        let instance = Linker::<()>::new(&engine)
            .instantiate_async(&mut store, &component)
            .await
            .expect("the component instantiates from the pool");
        let start = instance
            .get_typed_func::<(u32,), (i32,)>(&mut store, "start")
            .unwrap();
        let resume = instance
            .get_typed_func::<(u32,), (i32,)>(&mut store, "resume")
            .unwrap();
        let mut calls = Vec::new();
        for (f, vu) in [
            (start, 0),
            (start, 1),
            (resume, 1),
            (resume, 0),
            (resume, 0),
            (resume, 1),
            (start, 0),
            (resume, 0),
            (resume, 0),
        ] {
            let (r,) = f.call_async(&mut store, (vu,)).await.expect("no trap");
            calls.push(r);
        }
        // -1: suspended in `sleep`; n * 100 + vu: the iteration ended with counter n.
        assert_eq!(calls, [-1, -1, -1, -1, 1100, 1101, -1, -1, 2200]);
    }

    /// Without the flag the same engine refuses the component, naming the proposal:
    /// turning the cargo feature on changes nothing for runs until a run asks for it.
    #[test]
    fn without_the_flag_the_run_engine_refuses_continuations() {
        let bytes = wat::parse_str(component_text()).unwrap();
        let engine = Engine::new(&run_config(options(&bytes), 4)).unwrap();
        let e = Component::new(&engine, &bytes).expect_err("continuations need the flag");
        assert!(
            format!("{e:#}").contains("stack switching"),
            "unexpected error: {e:#}"
        );
    }

    /// `wit-component` (the JS route's encoder) takes a core module holding
    /// continuations: it validates with every wasm feature on. The scheduler, its table
    /// and wait global kept inside, becomes a component whose `start` and `resume` an
    /// engine with stack switching compiles (the default allocator: with its two tables
    /// the module is over the pooling allocator's one table per module).
    #[test]
    fn wit_component_encodes_the_continuation_scheduler() {
        let text = include_str!("../../../plugins/js-multivu/switch-probe/sched.wat")
            .replace("(import \"host\" \"fns\" (table $fns 1 funcref))", "")
            .replace("(tag $yield)", "(table $fns 1 funcref) (tag $yield)")
            .replace(" (export \"wait\")", "")
            .replace("(func (export \"sleep\")", "(func $sleep");
        let mut module = wat::parse_str(&text).unwrap();
        let mut resolve = wit_parser::Resolve::default();
        let pkg = resolve
            .push_str(
                "sched.wit",
                "package local:sched;\nworld sched {\n  export start: func(vu: u32) -> s32;\n  \
                 export resume: func(vu: u32) -> s32;\n}\n",
            )
            .unwrap();
        let world = resolve.select_world(&[pkg], Some("sched")).unwrap();
        wit_component::embed_component_metadata(
            &mut module,
            &resolve,
            world,
            wit_component::StringEncoding::UTF8,
        )
        .unwrap();
        let bytes = wit_component::ComponentEncoder::default()
            .module(&module)
            .expect("wit-component reads the module")
            .validate(true)
            .encode()
            .expect("wit-component encodes and validates it");
        let mut config = wasmtime::Config::new();
        config.wasm_stack_switching(true).wasm_exceptions(true);
        let engine = Engine::new(&config).unwrap();
        let component = Component::new(&engine, &bytes).expect("wasmtime compiles it");
        let exports: Vec<String> = component
            .component_type()
            .exports(&engine)
            .map(|(name, _)| name.to_string())
            .collect();
        assert_eq!(exports, ["start", "resume"]);
    }

    /// A small pool reserves the whole 4 GiB index space per memory (no bounds checks);
    /// a pool that would take more than its share of the address space, or a cap
    /// above 4 GiB, reserves the cap as before.
    #[test]
    fn small_pools_reserve_the_index_space_and_large_ones_the_cap() {
        use super::{reservation, FULL_RESERVATION};
        let cap = 64 << 20;
        assert_eq!(reservation(1, cap), FULL_RESERVATION);
        assert_eq!(reservation(2_000, cap), FULL_RESERVATION);
        assert_eq!(reservation(10_000, cap), cap);
        assert_eq!(reservation(1, 8 << 30), 8 << 30);
        assert_eq!(reservation(10_000, 1000), 1 << 20);
    }
}
