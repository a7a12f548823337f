//! What the two multi-VU prototype drivers (`js_multivu`: Asyncify, `js_multivu_ss`:
//! stack switching) share: the few WASI preview 1 calls the QuickJS-ng guest's libc
//! makes, a typed export lookup, and the guest compiled once into a cache file.

use std::time::Instant;

use anyhow::{Context, Result};
use wasmtime::{Caller, Engine, Linker, Memory, Module, Store, TypedFunc};

/// A driver's store data: the guest's memory, once the guest is instantiated.
pub trait GuestMemory {
    /// None until the driver has instantiated the guest.
    fn guest_memory(&self) -> Option<Memory>;
}

/// The guest's memory, or a trap when a call comes before instantiation ended.
pub fn memory<T: GuestMemory>(caller: &Caller<'_, T>) -> wasmtime::Result<Memory> {
    caller
        .data()
        .guest_memory()
        .ok_or_else(|| wasmtime::format_err!("no memory yet"))
}

/// The WASI preview 1 calls wasi-libc makes here: the clocks, stdout and stderr, and
/// refusals of the file calls (the guest opens no file).
pub fn add_wasi<T: GuestMemory + 'static>(linker: &mut Linker<T>) -> Result<()> {
    const W: &str = "wasi_snapshot_preview1";
    const EBADF: i32 = 8;
    linker.func_wrap(
        W,
        "clock_time_get",
        |mut caller: Caller<'_, T>, id: i32, _precision: i64, out: i32| -> wasmtime::Result<i32> {
            let ns: u64 = if id == 0 {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
            } else {
                monotonic_ns()
            };
            let mem = memory(&caller)?;
            mem.write(&mut caller, out as usize, &ns.to_le_bytes())?;
            Ok(0)
        },
    )?;
    linker.func_wrap(
        W,
        "fd_write",
        |mut caller: Caller<'_, T>,
         fd: i32,
         iovs: i32,
         n: i32,
         out: i32|
         -> wasmtime::Result<i32> {
            let mem = memory(&caller)?;
            let mut total = 0u32;
            for i in 0..n.clamp(0, 64) as usize {
                let mut iov = [0u8; 8];
                mem.read(&caller, iovs as usize + 8 * i, &mut iov)?;
                let ptr = u32::from_le_bytes([iov[0], iov[1], iov[2], iov[3]]);
                let len = u32::from_le_bytes([iov[4], iov[5], iov[6], iov[7]]).min(1 << 16);
                let mut bytes = vec![0; len as usize];
                mem.read(&caller, ptr as usize, &mut bytes)?;
                if fd == 1 || fd == 2 {
                    eprint!("{}", String::from_utf8_lossy(&bytes));
                }
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
    Ok(())
}

/// Nanoseconds since the driver's first reading (WASI's monotonic clock).
fn monotonic_ns() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// The export `name` of `instance`, typed.
pub fn typed<T, P: wasmtime::WasmParams, R: wasmtime::WasmResults>(
    instance: &wasmtime::Instance,
    store: &mut Store<T>,
    name: &str,
) -> Result<TypedFunc<P, R>> {
    let f = instance
        .get_func(&mut *store, name)
        .with_context(|| format!("the guest exports no {name}"))?;
    Ok(f.typed(&*store)?)
}

/// The guest compiled for `engine`, read from `cwasm` when that cache is not older than
/// the guest and deserializes under this engine's settings (a cache of other settings
/// fails to and is rebuilt); else compiled and the cache written.
pub fn load(engine: &Engine, guest: &str, cwasm: &str) -> Result<Module> {
    let modified = |p: &str| std::fs::metadata(p).ok()?.modified().ok();
    if let (Some(cache), Some(source)) = (modified(cwasm), modified(guest)) {
        if cache >= source {
            // SAFETY: the file was written by `Module::serialize` of these drivers;
            // wasmtime checks it was made by this version with these settings.
            if let Ok(m) = unsafe { Module::deserialize_file(engine, cwasm) } {
                return Ok(m);
            }
        }
    }
    let module = Module::from_file(engine, guest)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("cannot compile {guest}"))?;
    std::fs::write(cwasm, module.serialize().map_err(anyhow::Error::from)?)?;
    Ok(module)
}
