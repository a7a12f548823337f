//! On-disk cache of compiled components, keyed by the engine's compatibility hash and
//! the plugin's sha256, so a plugin is compiled once per host build and engine setting.

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
    let mut hasher = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let file = cache_dir().join(format!("{sha256}-{:016x}.cwasm", hasher.finish()));
    if file.exists() {
        // SAFETY: the file was written by `Engine::precompile_component` of an engine
        // with the same compatibility hash, in a folder of this user's; deserialising
        // it is what wasmtime's own cache does.
        if let Ok(component) = unsafe { Component::deserialize_file(engine, &file) } {
            return Ok((component, true));
        }
    }
    let compiled = engine.precompile_component(bytes)?;
    // SAFETY: the bytes were just produced by this engine.
    let component = unsafe { Component::deserialize(engine, &compiled)? };
    if std::fs::create_dir_all(cache_dir()).is_ok() {
        // Write then rename so a concurrent reader never sees half a file.
        let tmp = file.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, &compiled).is_ok() {
            let _ = std::fs::rename(&tmp, &file);
        }
    }
    Ok((component, false))
}
