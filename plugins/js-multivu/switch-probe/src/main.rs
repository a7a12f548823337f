//! Several JavaScript VUs in one wasm instance, switched by wasm stack switching
//! (issue #53, probe): the QuickJS-ng guest of plugins/js-multivu *before* Asyncify
//! (`guest-plain.wasm`), its `host.sleep` import bound to `sleep` of sched.wat, which
//! suspends the VU's continuation. No instrumentation of the guest.
//!
//! `ssprobe GUEST-PLAIN.wasm SCHED.wat SCRIPT.js [--vus N] [--duration S]`

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use wasmtime::{Caller, Engine, Linker, Module, Store, TypedFunc, Val};

struct Drv {
    memory: Option<wasmtime::Memory>,
    current: usize,
}

fn add_wasi(linker: &mut Linker<Drv>) -> Result<()> {
    const W: &str = "wasi_snapshot_preview1";
    const EBADF: i32 = 8;
    linker.func_wrap(
        W,
        "clock_time_get",
        |mut caller: Caller<'_, Drv>, id: i32, _p: i64, out: i32| -> wasmtime::Result<i32> {
            let ns: u64 = if id == 0 {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
            } else {
                monotonic_ns()
            };
            let mem = caller
                .data()
                .memory
                .ok_or_else(|| wasmtime::format_err!("no memory"))?;
            mem.write(&mut caller, out as usize, &ns.to_le_bytes())?;
            Ok(0)
        },
    )?;
    linker.func_wrap(
        W,
        "fd_write",
        |mut caller: Caller<'_, Drv>,
         _fd: i32,
         iovs: i32,
         n: i32,
         out: i32|
         -> wasmtime::Result<i32> {
            let mem = caller
                .data()
                .memory
                .ok_or_else(|| wasmtime::format_err!("no memory"))?;
            let mut total = 0u32;
            for i in 0..n.clamp(0, 64) as usize {
                let mut iov = [0u8; 8];
                mem.read(&caller, iovs as usize + 8 * i, &mut iov)?;
                let ptr = u32::from_le_bytes([iov[0], iov[1], iov[2], iov[3]]);
                let len = u32::from_le_bytes([iov[4], iov[5], iov[6], iov[7]]).min(1 << 16);
                let mut bytes = vec![0; len as usize];
                mem.read(&caller, ptr as usize, &mut bytes)?;
                eprint!("{}", String::from_utf8_lossy(&bytes));
                total += len;
            }
            mem.write(&mut caller, out as usize, &total.to_le_bytes())?;
            Ok(0)
        },
    )?;
    linker.func_wrap(W, "fd_close", |_: i32| -> i32 { EBADF })?;
    linker.func_wrap(W, "fd_fdstat_get", |_: i32, _: i32| -> i32 { EBADF })?;
    linker.func_wrap(W, "fd_seek", |_: i32, _: i64, _: i32, _: i32| -> i32 {
        EBADF
    })?;
    linker.func_wrap(
        "host",
        "log",
        |mut caller: Caller<'_, Drv>, ptr: u32, len: u32| -> wasmtime::Result<()> {
            let mem = caller
                .data()
                .memory
                .ok_or_else(|| wasmtime::format_err!("no memory"))?;
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

fn monotonic_ns() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

fn typed<P: wasmtime::WasmParams, R: wasmtime::WasmResults>(
    i: &wasmtime::Instance,
    s: &mut Store<Drv>,
    name: &str,
) -> Result<TypedFunc<P, R>> {
    let f = i
        .get_func(&mut *s, name)
        .with_context(|| format!("no export {name}"))?;
    Ok(f.typed(&*s)?)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let mut vus = 1u32;
    let mut duration = 10.0f64;
    let mut pos = Vec::new();
    let mut it = args.iter().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--vus" => vus = it.next().context("--vus N")?.parse()?,
            "--duration" => duration = it.next().context("--duration S")?.parse()?,
            _ => pos.push(x.clone()),
        }
    }
    let [guest, sched, script] = <[String; 3]>::try_from(pos).map_err(|_| {
        anyhow::anyhow!("usage: ssprobe GUEST SCHED.wat SCRIPT [--vus N] [--duration S]")
    })?;
    let mut config = wasmtime::Config::new();
    config.wasm_stack_switching(true);
    config.wasm_function_references(true);
    config.wasm_exceptions(true);
    config.max_wasm_stack(4 << 20);
    config.async_stack_size(5 << 20);
    let engine = Engine::new(&config)?;
    let cwasm = format!("{guest}.ss.cwasm");
    let module = match unsafe { Module::deserialize_file(&engine, &cwasm) } {
        Ok(m) => m,
        Err(_) => {
            let m = Module::from_file(&engine, &guest)?;
            std::fs::write(&cwasm, m.serialize()?)?;
            m
        }
    };
    let sched = Module::from_file(&engine, &sched)?;
    let mut store = Store::new(
        &engine,
        Drv {
            memory: None,
            current: 0,
        },
    );
    let mut linker = Linker::new(&engine);
    add_wasi(&mut linker)?;
    let si = linker.instantiate(&mut store, &sched)?;
    let sleep = si
        .get_func(&mut store, "sleep")
        .context("sched exports no sleep")?;
    linker.define(&store, "host", "sleep", sleep)?;
    let gi = linker.instantiate(&mut store, &module)?;
    store.data_mut().memory = gi.get_memory(&mut store, "memory");
    let fns = si.get_table(&mut store, "fns").context("no fns")?;
    let iterate = gi
        .get_func(&mut store, "mv_iterate")
        .context("no mv_iterate")?;
    fns.set(&mut store, 0, wasmtime::Ref::Func(Some(iterate)))?;
    let wait = si.get_global(&mut store, "wait").context("no wait")?;
    let start: TypedFunc<u32, i32> = typed(&si, &mut store, "start")?;
    let resume: TypedFunc<u32, i32> = typed(&si, &mut store, "resume")?;
    typed::<(), ()>(&gi, &mut store, "_initialize")?.call(&mut store, ())?;
    let get_sp: TypedFunc<(), u32> = typed(&gi, &mut store, "mv_get_sp")?;
    let set_sp: TypedFunc<u32, ()> = typed(&gi, &mut store, "mv_set_sp")?;
    let enter: TypedFunc<(u32, u32), ()> = typed(&gi, &mut store, "mv_enter")?;
    let leave: TypedFunc<(), ()> = typed(&gi, &mut store, "mv_leave")?;
    let text = std::fs::read(&script)?;
    let alloc: TypedFunc<u32, u32> = typed(&gi, &mut store, "mv_alloc")?;
    let ptr = alloc.call(&mut store, text.len() as u32 + 1)?;
    let mem = store.data().memory.context("no memory")?;
    mem.write(&mut store, ptr as usize, &text)?;
    mem.write(&mut store, ptr as usize + text.len(), &[0])?;
    let init: TypedFunc<(u32, u32, u32, u32, u32), u32> = typed(&gi, &mut store, "mv_init")?;
    if init.call(&mut store, (vus, ptr, text.len() as u32, 64, 1))? != 0 {
        bail!("init failed");
    }
    let top: TypedFunc<u32, u32> = typed(&gi, &mut store, "mv_vu_stack_top")?;
    let n = vus as usize;
    let mut tops = Vec::new();
    for i in 0..vus {
        tops.push(top.call(&mut store, i)?);
    }
    let mut sps = vec![0u32; n];
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs_f64(duration);
    let mut due: BinaryHeap<Reverse<(Instant, usize)>> = (0..n).map(|i| Reverse((t0, i))).collect();
    let mut waiting = vec![false; n];
    let mut iterations = vec![0u64; n];
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
        .with_context(|| format!("VU {} trapped", i + 1))?;
        switches += 1;
        if r == -1 {
            sps[i] = get_sp.call(&mut store, ())?;
            leave.call(&mut store, ())?;
            let Val::F64(bits) = wait.get(&mut store) else {
                bail!("wait is not f64")
            };
            let s = f64::from_bits(bits).clamp(0.0, 86_400.0);
            waiting[i] = true;
            due.push(Reverse((Instant::now() + Duration::from_secs_f64(s), i)));
        } else {
            iterations[i] += 1;
            waiting[i] = false;
            due.push(Reverse((Instant::now(), i)));
        }
    }
    let total: u64 = iterations.iter().sum();
    println!(
        "vus {n} iterations {total} (per VU {}..{}) switches {switches}",
        iterations.iter().min().unwrap_or(&0),
        iterations.iter().max().unwrap_or(&0)
    );
    Ok(())
}
