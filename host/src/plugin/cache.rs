//! On-disk cache of compiled components, keyed by the engine's compatibility hash and
//! the plugin's sha256, so a plugin is compiled once per host build and engine setting.
//! What is read back is checked first ([`cache_entry`](super::cache_entry)): compiled
//! code is run as is, so an entry that is not the one this user's host wrote is
//! compiled again rather than loaded.

use super::cache_entry;
use anyhow::Result;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;
use wasmtime::component::Component;
use wasmtime::Engine;

/// Where compiled plugins are kept: `$HOST_CACHE_DIR`, else `$XDG_CACHE_HOME/loadtest-host`,
/// else `~/.cache/loadtest-host`, else a folder in the temp dir.
pub(crate) fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("HOST_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("loadtest-host");
    }
    if let Some(home) = std::env::var_os("HOME") {
        return PathBuf::from(home).join(".cache").join("loadtest-host");
    }
    std::env::temp_dir().join("loadtest-host-cache")
}

/// Compiles `bytes` or loads the compiled form from the cache; returns whether the
/// cache was used.
pub(crate) fn load_or_compile(
    engine: &Engine,
    bytes: &[u8],
    sha256: &str,
) -> Result<(Component, bool)> {
    // The compatibility hash covers wasmtime's version, the compiler's target and
    // flags and the engine's tunables: a host of another version or setting looks
    // for another file.
    let mut hasher = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let file = cache_dir().join(format!("{sha256}-{:016x}.cwasm", hasher.finish()));
    if let Some(component) = cache_entry::load(engine, &file) {
        return Ok((component, true));
    }
    let compiled = engine.precompile_component(bytes)?;
    // SAFETY: the bytes were just produced by this engine.
    let component = unsafe { Component::deserialize(engine, &compiled)? };
    cache_entry::store(&file, &compiled);
    Ok((component, false))
}
