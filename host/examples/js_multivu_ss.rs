//! Several JavaScript VUs in one wasm instance, switched by wasm stack switching (issue
//! #53, prototype driver on the host's own wasmtime, whose `stack-switching` feature the
//! host enables): the QuickJS-ng guest of plugins/js-multivu *before* Asyncify
//! (`guest-plain.wasm`), its `host.sleep` import bound to `sleep` of the scheduler module
//! (`sched.wat`: one continuation per VU), which suspends the VU; the driver resumes a
//! VU when its wait is over. No instrumentation of the guest.
//!
//! `cargo run -p host --example js_multivu_ss -- GUEST-PLAIN.wasm SCHED.wat SCRIPT.js
//! [--vus N] [--duration S] [--layer [--bytecode | --shared] [--files-per-vu]]`
//!
//! Without `--layer` the script is the prototype's form (a global `iteration()`,
//! `sleep` a global). With `--layer` it is a k6 script: each VU's context evaluates
//! what `host build` evaluates for it (the k6 layer with the script's bundle,
//! `host::js_module_text`) and an iteration is the layer's `plugin.iteration`; the
//! contract's interfaces are the guest's stand-ins (guest.c). How each context gets the
//! layer: parsed from the text (the default), read from bytecode compiled once without
//! the functions' source text (`--bytecode`), or as closures over one compiled function
//! shared by all contexts (`--shared`, the layer wrapped as a function). The files the
//! script `open()`s ride in the bundle's text; they are left out of the VUs' copies
//! (the describe context has them: a SharedArray's function runs there) unless
//! `--files-per-vu`. At the end it prints the iterations, and QuickJS's memory by kind
//! (`JS_ComputeMemoryUsage`) per VU.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use wasmtime::{Caller, Engine, Linker, Memory, Module, Store, TypedFunc, Val};

mod multivu_wasi;
use multivu_wasi::{load, memory, typed, GuestMemory};

/// The store's data: the guest's memory, once instantiated, and the VU that runs.
struct Drv {
    memory: Option<Memory>,
    current: usize,
}

impl GuestMemory for Drv {
    fn guest_memory(&self) -> Option<Memory> {
        self.memory
    }
}

/// The WASI calls (multivu_wasi) and the guest's `host.log`.
fn add_wasi(linker: &mut Linker<Drv>) -> Result<()> {
    multivu_wasi::add_wasi(linker)?;
    linker.func_wrap(
        "host",
        "log",
        |mut caller: Caller<'_, Drv>, ptr: u32, len: u32| -> wasmtime::Result<()> {
            let mem = memory(&caller)?;
            let mut bytes = vec![0; len.min(4096) as usize];
            mem.read(&mut caller, ptr as usize, &mut bytes)?;
            eprintln!(
                "VU {}: {}",
                caller.data().current + 1,
                String::from_utf8_lossy(&bytes)
            );
            Ok(())
        },
    )?;
    Ok(())
}

/// guest.c's `mv_init_layer(n, text, len, vu_text, vu_len, stack_kib, buf_kib, flags)`.
type InitLayer = TypedFunc<(u32, u32, u32, u32, u32, u32, u32, u32), u32>;

/// The command line.
struct Args {
    guest: String,
    sched: String,
    script: String,
    vus: u32,
    duration: f64,
    layer: bool,
    /// mv_init_layer's flags: 1 bytecode once, 2 shared closures.
    flags: u32,
    files_per_vu: bool,
}

fn args() -> Result<Args> {
    let mut a = Args {
        guest: String::new(),
        sched: String::new(),
        script: String::new(),
        vus: 1,
        duration: 10.0,
        layer: false,
        flags: 0,
        files_per_vu: false,
    };
    let mut pos = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--vus" => a.vus = it.next().context("--vus N")?.parse()?,
            "--duration" => a.duration = it.next().context("--duration S")?.parse()?,
            "--layer" => a.layer = true,
            "--bytecode" => a.flags = 1,
            "--shared" => a.flags = 2,
            "--files-per-vu" => a.files_per_vu = true,
            _ => pos.push(x),
        }
    }
    let [guest, sched, script] = <[String; 3]>::try_from(pos).map_err(|_| {
        anyhow::anyhow!(
            "usage: js_multivu_ss GUEST-PLAIN.wasm SCHED.wat SCRIPT.js [--vus N] [--duration S] \
             [--layer [--bytecode | --shared] [--files-per-vu]]"
        )
    })?;
    (a.guest, a.sched, a.script) = (guest, sched, script);
    if a.vus == 0 {
        bail!("--vus must be at least 1");
    }
    Ok(a)
}

fn main() -> Result<()> {
    let a = args()?;
    let mut config = wasmtime::Config::new();
    config.wasm_stack_switching(true);
    // An interpreter frame takes ~3 KiB of native stack per JS call level; the
    // per-VU JS recursion guard (guest.c) stops a script long before this.
    config.max_wasm_stack(4 << 20);
    // A continuation's native stack is this size (reserved; only touched pages count).
    config.async_stack_size(5 << 20);
    config.wasm_exceptions(true);
    let engine = Engine::new(&config)?;
    let module = load(&engine, &a.guest, &format!("{}.ss.cwasm", a.guest))?;
    let sched_bytes = wat::parse_file(&a.sched)?;
    let sched = Module::new(&engine, &sched_bytes)?;
    let mut store = Store::new(
        &engine,
        Drv {
            memory: None,
            current: 0,
        },
    );
    let mut linker = Linker::new(&engine);
    add_wasi(&mut linker)?;
    // The table through which the scheduler calls `mv_iterate` (sched.wat imports it).
    let fns = wasmtime::Table::new(
        &mut store,
        wasmtime::TableType::new(wasmtime::RefType::FUNCREF, 1, None),
        wasmtime::Ref::Func(None),
    )?;
    linker.define(&store, "host", "fns", fns)?;
    let si = linker.instantiate(&mut store, &sched)?;
    let sleep = si
        .get_func(&mut store, "sleep")
        .context("the scheduler exports no sleep")?;
    linker.define(&store, "host", "sleep", sleep)?;
    let gi = linker.instantiate(&mut store, &module)?;
    store.data_mut().memory = gi.get_memory(&mut store, "memory");
    let mem = store.data().memory.context("the guest exports no memory")?;
    let iterate = gi
        .get_func(&mut store, "mv_iterate")
        .context("no mv_iterate")?;
    fns.set(&mut store, 0, wasmtime::Ref::Func(Some(iterate)))?;
    let wait = si
        .get_global(&mut store, "wait")
        .context("the scheduler exports no wait")?;
    let start: TypedFunc<u32, i32> = typed(&si, &mut store, "start")?;
    let resume: TypedFunc<u32, i32> = typed(&si, &mut store, "resume")?;
    let initialize: TypedFunc<(), ()> = typed(&gi, &mut store, "_initialize")?;
    initialize.call(&mut store, ())?;
    let get_sp: TypedFunc<(), u32> = typed(&gi, &mut store, "mv_get_sp")?;
    let set_sp: TypedFunc<u32, ()> = typed(&gi, &mut store, "mv_set_sp")?;
    let enter: TypedFunc<(u32, u32), ()> = typed(&gi, &mut store, "mv_enter")?;
    let leave: TypedFunc<(), ()> = typed(&gi, &mut store, "mv_leave")?;
    let alloc: TypedFunc<u32, u32> = typed(&gi, &mut store, "mv_alloc")?;
    let put = |store: &mut Store<Drv>, text: &[u8]| -> Result<(u32, u32)> {
        let ptr = alloc.call(&mut *store, text.len() as u32 + 1)?;
        mem.write(&mut *store, ptr as usize, text)?;
        mem.write(&mut *store, ptr as usize + text.len(), &[0])?;
        Ok((ptr, text.len() as u32))
    };
    let t_init = Instant::now();
    let failed = if a.layer {
        let module = host::js_module_text(std::path::Path::new(&a.script))?;
        let full = if a.flags == 2 {
            as_function(&module)?
        } else {
            module
        };
        let vu_text = if a.files_per_vu || a.flags == 2 {
            full.clone()
        } else {
            without_files(&full)?
        };
        let (p, n) = put(&mut store, full.as_bytes())?;
        let (vp, vn) = put(&mut store, vu_text.as_bytes())?;
        let init: InitLayer = typed(&gi, &mut store, "mv_init_layer")?;
        init.call(&mut store, (a.vus, p, n, vp, vn, 64, 1, a.flags))?
    } else {
        let text = std::fs::read(&a.script).with_context(|| format!("cannot read {}", a.script))?;
        let (p, n) = put(&mut store, &text)?;
        let init: TypedFunc<(u32, u32, u32, u32, u32), u32> = typed(&gi, &mut store, "mv_init")?;
        init.call(&mut store, (a.vus, p, n, 64, 1))?
    };
    if failed != 0 {
        bail!("the init code of VU {failed} failed (its message above)");
    }
    let init_s = t_init.elapsed().as_secs_f64();
    // For bench/js/multivu.py: memory is sampled from here on, every VU's init done.
    eprintln!("ready {init_s:.2} s");
    let top: TypedFunc<u32, u32> = typed(&gi, &mut store, "mv_vu_stack_top")?;
    let n = a.vus as usize;
    let mut tops = Vec::with_capacity(n);
    for i in 0..a.vus {
        tops.push(top.call(&mut store, i)?);
    }
    let mut sps = vec![0u32; n];
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs_f64(a.duration);
    let mut due: BinaryHeap<Reverse<(Instant, usize)>> = (0..n).map(|i| Reverse((t0, i))).collect();
    let mut waiting = vec![false; n];
    let mut iterations = vec![0u64; n];
    let mut failures = 0u64;
    let mut switches = 0u64;
    while let Some(Reverse((when, i))) = due.pop() {
        if when >= end {
            break;
        }
        let now = Instant::now();
        if when > now {
            std::thread::sleep(when - now);
        }
        store.data_mut().current = i;
        let r = if waiting[i] {
            set_sp.call(&mut store, sps[i])?;
            enter.call(&mut store, (i as u32, 0))?;
            resume.call(&mut store, i as u32)
        } else {
            set_sp.call(&mut store, tops[i])?;
            enter.call(&mut store, (i as u32, 1))?;
            start.call(&mut store, i as u32)
        }
        .map_err(anyhow::Error::from)
        .with_context(|| format!("VU {} trapped, which ends the instance", i + 1))?;
        switches += 1;
        if r == -1 {
            sps[i] = get_sp.call(&mut store, ())?;
            leave.call(&mut store, ())?;
            let Val::F64(bits) = wait.get(&mut store) else {
                bail!("the scheduler's wait is not an f64")
            };
            let s = f64::from_bits(bits).clamp(0.0, 86_400.0);
            waiting[i] = true;
            due.push(Reverse((Instant::now() + Duration::from_secs_f64(s), i)));
        } else {
            iterations[i] += 1;
            failures += u64::from(r != 0);
            waiting[i] = false;
            due.push(Reverse((Instant::now(), i)));
        }
    }
    let total: u64 = iterations.iter().sum();
    println!(
        "vus {n} iterations {total} (per VU {}..{}) failed {failures} switches {switches} init {init_s:.2} s",
        iterations.iter().min().unwrap_or(&0),
        iterations.iter().max().unwrap_or(&0)
    );
    print_memory(&gi, &mut store, mem, n)
}

/// The layer module as a function expression returning its `plugin` (`--shared`): its
/// `import X from 'loadtest:…';` lines become `const X = __mvhost('loadtest:…');` (the
/// guest's stand-ins), its `export const` plain `const`s, on the same lines, so the
/// bundle's line table still holds.
fn as_function(module: &str) -> Result<String> {
    let mut out = String::with_capacity(module.len() + 64);
    out.push_str("(function () { 'use strict'; ");
    for line in module.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("import ") {
            let (name, spec) = rest
                .split_once(" from '")
                .and_then(|(n, s)| Some((n, s.split_once("';")?.0)))
                .with_context(|| format!("an import the driver does not know: {line}"))?;
            out.push_str(&format!("const {name} = __mvhost('{spec}');\n"));
        } else if let Some(rest) = line.strip_prefix("export const ") {
            out.push_str("const ");
            out.push_str(rest);
        } else {
            out.push_str(line);
        }
    }
    out.push_str("\nreturn plugin;\n})\n");
    Ok(out)
}

/// The module with its bundled files' texts left out (`BUNDLE.files = {…};` emptied):
/// what the VUs' contexts evaluate unless `--files-per-vu`.
fn without_files(module: &str) -> Result<String> {
    const START: &str = "BUNDLE.files = {";
    let at = module
        .find(START)
        .context("the bundle has no BUNDLE.files")?
        + START.len();
    let end = at
        + module[at..]
            .find("};\n")
            .context("BUNDLE.files is not closed")?;
    let dropped = module[at..end].matches('\n').count();
    // The same number of lines, so line numbers after it are unchanged.
    Ok(format!(
        "{}{}{}",
        &module[..at],
        "\n".repeat(dropped),
        &module[end..]
    ))
}

/// QuickJS's memory by kind (guest.c's `mv_memory_usage`: `JSMemoryUsage`'s 26 fields
/// and the SharedArray records' bytes), per VU, and the linear memory's size.
fn print_memory(
    gi: &wasmtime::Instance,
    store: &mut Store<Drv>,
    mem: Memory,
    n: usize,
) -> Result<()> {
    let usage: TypedFunc<(), u32> = typed(gi, store, "mv_memory_usage")?;
    let at = usage.call(&mut *store, ())? as usize;
    let mut raw = [0u8; 27 * 8];
    mem.read(&*store, at, &mut raw)?;
    let f = |i: usize| i64::from_le_bytes(raw[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    let per = |i: usize| f(i) as f64 / n as f64 / 1024.0;
    // Field order of JSMemoryUsage (quickjs.h).
    println!(
        "quickjs heap {:.1} MB ({:.1} KiB per VU): objects {} ({:.1} KiB/VU) properties {:.1} KiB/VU \
         shapes {:.1} KiB/VU strings {:.1} KiB/VU atoms {:.1} KiB/VU (runtime-wide) bytecode functions {} \
         ({:.1} KiB/VU, code {:.1}, pc2line {:.1}) arrays {} fast-array elements {}; shared records {:.1} MB; \
         linear memory {:.1} MB",
        f(0) as f64 / 1e6,
        per(0),
        f(9),
        per(10),
        per(12),
        per(14),
        per(8),
        per(6),
        f(15),
        per(16),
        per(17),
        per(19),
        f(21),
        f(23),
        f(26) as f64 / 1e6,
        mem.data_size(&*store) as f64 / 1e6
    );
    Ok(())
}
