//! The compile cache, as `host inspect` reports it: a plugin compiled once loads from
//! the cache afterwards, and an entry whose bytes changed is compiled again, never run.

use crate::support::{output_text, plugin};
use std::path::Path;
use std::process::{Command, Output};

fn inspect(cache: &Path, plugin: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_host"))
        .env("HOST_CACHE_DIR", cache)
        .arg("inspect")
        .arg(plugin)
        .output()
        .expect("the host binary runs")
}

/// What `inspect` said of the compile: "cache" or "compiled".
fn compile_line(out: &Output) -> &'static str {
    let text = output_text(out);
    assert!(out.status.success(), "{text}");
    if text.contains("compile:     loaded from the compile cache") {
        "cache"
    } else if text.contains("compile:     compiled now") {
        "compiled"
    } else {
        panic!("no compile line in\n{text}")
    }
}

#[test]
fn a_compiled_plugin_loads_from_the_cache_and_a_corrupt_entry_is_compiled_again() {
    let cache = tempfile::tempdir().unwrap();
    let hello = plugin("hello");
    assert_eq!(compile_line(&inspect(cache.path(), &hello)), "compiled");
    assert_eq!(compile_line(&inspect(cache.path(), &hello)), "cache");

    let entries: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    assert_eq!(entries.len(), 1, "one compiled entry: {entries:?}");
    // A byte of the machine code flipped: wasmtime's own checks (format, version,
    // settings) would still accept the file.
    let mut bytes = std::fs::read(&entries[0]).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&entries[0], &bytes).unwrap();
    assert_eq!(compile_line(&inspect(cache.path(), &hello)), "compiled");
    // ... and the compile rewrote the entry, which loads again.
    assert_eq!(compile_line(&inspect(cache.path(), &hello)), "cache");
}
