//! Several JavaScript VUs in one wasm instance (issue #53, prototype driver).
//!
//! Drives the guest of `plugins/js-multivu` (built by its `build.sh`: QuickJS-ng, one
//! runtime, one context per VU, Asyncify-instrumented) with the host's wasmtime: all VUs
//! live in one instance and one store; a VU's `sleep` (the import `host.sleep`) unwinds
//! its wasm stack into its own asyncify buffer, so the driver can run the others, and
//! rewinds it when its wait is over. The VUs loop their script's `iteration()`.
//!
//! `cargo run --example js_multivu -p host -- GUEST.wasm SCRIPT.js [--vus N]
//! [--duration S] [--stack-kib K] [--buf-kib K]`; prints what it ran and, with
//! `--sample-at S`, this process's PSS at S seconds (bench/js/multivu.py reads the PSS
//! from /proc itself).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use wasmtime::{Caller, Engine, Linker, Memory, Store, TypedFunc};

mod multivu_wasi;
use multivu_wasi::{add_wasi, load, typed, GuestMemory};

/// The guest's exports the driver calls.
#[derive(Clone)]
struct Exports {
    memory: Memory,
    get_sp: TypedFunc<(), u32>,
    set_sp: TypedFunc<u32, ()>,
    enter: TypedFunc<(u32, u32), ()>,
    leave: TypedFunc<(), ()>,
    iterate: TypedFunc<u32, u32>,
    /// None for the module before `wasm-opt --asyncify` (its `sleep` blocks the thread:
    /// one VU only; for measuring what the instrumentation costs).
    asyncify: Option<Asyncify>,
}

/// The functions `wasm-opt --asyncify` adds.
#[derive(Clone)]
struct Asyncify {
    start_unwind: TypedFunc<u32, ()>,
    stop_unwind: TypedFunc<(), ()>,
    start_rewind: TypedFunc<u32, ()>,
    stop_rewind: TypedFunc<(), ()>,
    get_state: TypedFunc<(), u32>,
}

/// The store's data: which VU runs, and what its `sleep` asked for.
struct Drv {
    ex: Option<Exports>,
    /// The VU whose call is in progress.
    current: usize,
    /// Set by `sleep` when the current VU unwinds.
    suspended: Option<Duration>,
    /// Each VU's asyncify buffer (guest address) and the buffer's size.
    bufs: Vec<u32>,
    buf_size: u32,
    /// Each suspended VU's shadow-stack pointer where its unwind left it.
    sps: Vec<u32>,
}

impl GuestMemory for Drv {
    fn guest_memory(&self) -> Option<Memory> {
        self.ex.as_ref().map(|ex| ex.memory)
    }
}

/// Asyncify's states (`asyncify_get_state`).
const REWINDING: u32 = 2;

/// `host.sleep(s)`: the first call suspends the VU (asyncify unwind); the call made again
/// by the rewind ends the wait.
fn sleep(mut caller: Caller<'_, Drv>, s: f64) -> wasmtime::Result<()> {
    let ex = caller
        .data()
        .ex
        .clone()
        .ok_or_else(|| wasmtime::format_err!("sleep before the driver was ready"))?;
    let Some(asy) = ex.asyncify else {
        std::thread::sleep(Duration::from_secs_f64(s.clamp(0.0, 86_400.0)));
        return Ok(());
    };
    if asy.get_state.call(&mut caller, ())? == REWINDING {
        asy.stop_rewind.call(&mut caller, ())?;
        return Ok(());
    }
    let cur = caller.data().current;
    let buf = caller.data().bufs[cur];
    let end = buf + caller.data().buf_size;
    // The buffer's header: where to write next, where it ends.
    ex.memory
        .write(&mut caller, buf as usize, &(buf + 8).to_le_bytes())?;
    ex.memory
        .write(&mut caller, buf as usize + 4, &end.to_le_bytes())?;
    let sp = ex.get_sp.call(&mut caller, ())?;
    caller.data_mut().sps[cur] = sp;
    caller.data_mut().suspended = Some(Duration::from_secs_f64(s.clamp(0.0, 86_400.0)));
    asy.start_unwind.call(&mut caller, buf)?;
    Ok(())
}

/// `host.log(ptr, len)`: a line of the guest's (an iteration's exception).
fn log(mut caller: Caller<'_, Drv>, ptr: u32, len: u32) -> wasmtime::Result<()> {
    let ex = caller
        .data()
        .ex
        .clone()
        .ok_or_else(|| wasmtime::format_err!("log before the driver was ready"))?;
    let mut bytes = vec![0; len.min(4096) as usize];
    ex.memory.read(&mut caller, ptr as usize, &mut bytes)?;
    eprintln!(
        "VU {}: {}",
        caller.data().current + 1,
        String::from_utf8_lossy(&bytes)
    );
    Ok(())
}

/// This process's PSS in KiB (/proc/self/smaps_rollup).
fn pss_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = text.lines().find(|l| l.starts_with("Pss:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The command line.
struct Args {
    guest: String,
    script: String,
    vus: u32,
    duration: f64,
    stack_kib: u32,
    buf_kib: u32,
    sample_at: Option<f64>,
    native_stack_kib: u32,
}

fn args() -> Result<Args> {
    let mut a = Args {
        guest: String::new(),
        script: String::new(),
        vus: 1,
        duration: 10.0,
        stack_kib: 64,
        buf_kib: 16,
        sample_at: None,
        native_stack_kib: 4096,
    };
    let mut it = std::env::args().skip(1);
    let mut pos = Vec::new();
    while let Some(x) = it.next() {
        let mut val = || it.next().with_context(|| format!("{x} needs a value"));
        match x.as_str() {
            "--vus" => a.vus = val()?.parse()?,
            "--duration" => a.duration = val()?.parse()?,
            "--stack-kib" => a.stack_kib = val()?.parse()?,
            "--buf-kib" => a.buf_kib = val()?.parse()?,
            "--native-stack-kib" => a.native_stack_kib = val()?.parse()?,
            "--sample-at" => a.sample_at = Some(val()?.parse()?),
            _ => pos.push(x),
        }
    }
    let [guest, script] = <[String; 2]>::try_from(pos).map_err(|_| anyhow::anyhow!("usage: js_multivu GUEST.wasm SCRIPT.js [--vus N] [--duration S] [--stack-kib K] [--buf-kib K] [--sample-at S]"))?;
    if a.vus == 0 || a.stack_kib < 32 || a.buf_kib < 1 {
        bail!("--vus must be at least 1, --stack-kib at least 32, --buf-kib at least 1");
    }
    a.guest = guest;
    a.script = script;
    Ok(a)
}

fn main() -> Result<()> {
    let a = args()?;
    let script = std::fs::read(&a.script).with_context(|| format!("reading {}", a.script))?;
    // QuickJS's recursion guard (the VU's shadow stack) must trip before wasmtime's
    // native one: a trap would end every VU of the instance. An instrumented
    // interpreter frame is large on the native stack, so give it room (the main
    // thread has 8 MiB).
    let mut config = wasmtime::Config::new();
    config.max_wasm_stack(a.native_stack_kib as usize * 1024);
    config.async_stack_size(a.native_stack_kib as usize * 1024 + (1 << 20));
    let engine = Engine::new(&config).map_err(anyhow::Error::from)?;
    let module = load(&engine, &a.guest, &format!("{}.cwasm", a.guest))?;
    let mut linker = Linker::new(&engine);
    linker.func_wrap("host", "sleep", sleep)?;
    linker.func_wrap("host", "log", log)?;
    add_wasi(&mut linker)?;
    let mut store = Store::new(
        &engine,
        Drv {
            ex: None,
            current: 0,
            suspended: None,
            bufs: Vec::new(),
            buf_size: 0,
            sps: Vec::new(),
        },
    );
    let instance = linker.instantiate(&mut store, &module)?;
    let ex = Exports {
        memory: instance
            .get_memory(&mut store, "memory")
            .context("no memory")?,
        get_sp: typed(&instance, &mut store, "mv_get_sp")?,
        set_sp: typed(&instance, &mut store, "mv_set_sp")?,
        enter: typed(&instance, &mut store, "mv_enter")?,
        leave: typed(&instance, &mut store, "mv_leave")?,
        iterate: typed(&instance, &mut store, "mv_iterate")?,
        asyncify: match instance.get_func(&mut store, "asyncify_get_state") {
            None => None,
            Some(_) => Some(Asyncify {
                start_unwind: typed(&instance, &mut store, "asyncify_start_unwind")?,
                stop_unwind: typed(&instance, &mut store, "asyncify_stop_unwind")?,
                start_rewind: typed(&instance, &mut store, "asyncify_start_rewind")?,
                stop_rewind: typed(&instance, &mut store, "asyncify_stop_rewind")?,
                get_state: typed(&instance, &mut store, "asyncify_get_state")?,
            }),
        },
    };
    if ex.asyncify.is_none() && a.vus > 1 {
        bail!(
            "{} has no asyncify functions (not built by build.sh?): it can run one VU only",
            a.guest
        );
    }
    store.data_mut().ex = Some(ex.clone());
    let initialize: TypedFunc<(), ()> = typed(&instance, &mut store, "_initialize")?;
    initialize.call(&mut store, ())?;

    let t0 = Instant::now();
    let alloc: TypedFunc<u32, u32> = typed(&instance, &mut store, "mv_alloc")?;
    // QuickJS reads one byte past the text: it must be 0.
    let ptr = alloc.call(&mut store, script.len() as u32 + 1)?;
    ex.memory.write(&mut store, ptr as usize, &script)?;
    ex.memory
        .write(&mut store, ptr as usize + script.len(), &[0])?;
    let init: TypedFunc<(u32, u32, u32, u32, u32), u32> = typed(&instance, &mut store, "mv_init")?;
    let failed = init.call(
        &mut store,
        (a.vus, ptr, script.len() as u32, a.stack_kib, a.buf_kib),
    )?;
    if failed != 0 {
        bail!("VU {failed}'s init code failed");
    }
    let stack_top: TypedFunc<u32, u32> = typed(&instance, &mut store, "mv_vu_stack_top")?;
    let vu_buf: TypedFunc<u32, u32> = typed(&instance, &mut store, "mv_vu_buf")?;
    let heap_used: TypedFunc<(), u64> = typed(&instance, &mut store, "mv_heap_used")?;
    let n = a.vus as usize;
    let mut tops = Vec::with_capacity(n);
    for i in 0..a.vus {
        tops.push(stack_top.call(&mut store, i)?);
        let b = vu_buf.call(&mut store, i)?;
        store.data_mut().bufs.push(b);
    }
    store.data_mut().buf_size = a.buf_kib * 1024;
    store.data_mut().sps = vec![0; n];
    eprintln!("{} VUs made in {:.3} s", n, t0.elapsed().as_secs_f64());

    // Every VU due now; a VU's entry is (when it is due, VU); `waiting[i]` says whether
    // it resumes (rewind) or starts an iteration.
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(a.duration);
    let mut due: BinaryHeap<Reverse<(Instant, usize)>> =
        (0..n).map(|i| Reverse((start, i))).collect();
    let mut waiting = vec![false; n];
    let mut iterations = vec![0u64; n];
    let mut switches = 0u64;
    let mut max_buf = 0u32;
    let mut sampled = a.sample_at.is_none();
    while let Some(Reverse((when, i))) = due.pop() {
        if when >= end {
            break;
        }
        if !sampled && start.elapsed().as_secs_f64() >= a.sample_at.unwrap_or(0.0) {
            sampled = true;
            eprintln!(
                "PSS at {:.1} s: {} KiB",
                start.elapsed().as_secs_f64(),
                pss_kib().unwrap_or(0)
            );
        }
        let now = Instant::now();
        if when > now {
            std::thread::sleep(when - now);
        }
        store.data_mut().current = i;
        let done = if waiting[i] {
            let sp = store.data().sps[i];
            ex.set_sp.call(&mut store, sp)?;
            ex.enter.call(&mut store, (i as u32, 0))?;
            let buf = store.data().bufs[i];
            let asy = ex
                .asyncify
                .as_ref()
                .context("a VU suspended without asyncify")?;
            asy.start_rewind.call(&mut store, buf)?;
            ex.iterate.call(&mut store, i as u32)
        } else {
            ex.set_sp.call(&mut store, tops[i])?;
            ex.enter.call(&mut store, (i as u32, 1))?;
            ex.iterate.call(&mut store, i as u32)
        };
        // A trap ends the instance: every VU in it is lost (see docs/js-multivu.md).
        let result = done.map_err(anyhow::Error::from).with_context(|| {
            format!(
                "VU {} trapped; the instance and its {} VUs are gone",
                i + 1,
                n
            )
        })?;
        switches += 1;
        if let Some(wait) = store.data_mut().suspended.take() {
            let asy = ex
                .asyncify
                .as_ref()
                .context("a VU suspended without asyncify")?;
            asy.stop_unwind.call(&mut store, ())?;
            ex.leave.call(&mut store, ())?;
            let buf = store.data().bufs[i];
            let mut head = [0u8; 4];
            ex.memory.read(&store, buf as usize, &mut head)?;
            max_buf = max_buf.max(u32::from_le_bytes(head) - buf - 8);
            waiting[i] = true;
            due.push(Reverse((Instant::now() + wait, i)));
        } else {
            let _ = result; // 1: the script threw (logged by the guest)
            iterations[i] += 1;
            waiting[i] = false;
            due.push(Reverse((Instant::now(), i)));
        }
    }
    let total: u64 = iterations.iter().sum();
    let min = iterations.iter().min().copied().unwrap_or(0);
    let max = iterations.iter().max().copied().unwrap_or(0);
    let pages = ex.memory.size(&store);
    println!(
        "vus {n} iterations {total} (per VU {min}..{max}) switches {switches} asyncify-bytes-max {max_buf} js-heap-bytes {} linear-memory-bytes {}",
        heap_used.call(&mut store, ())?,
        pages * 65536
    );
    Ok(())
}
