//! Builds the plugins workspace (`plugins/`, for wasm32-wasip2) so the host can bundle
//! the example plugin `host demo` runs, and tests find every plugin built from source.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest
        .parent()
        .expect("host/ is inside the workspace")
        .to_path_buf();
    let plugins = root.join("plugins");
    for dir in ["sdk", "hello", "notes", "sockets", "survey", "fixtures"] {
        watch(&plugins.join(dir));
    }
    for file in ["Cargo.toml", "Cargo.lock", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", plugins.join(file).display());
    }
    watch(&root.join("wit"));

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&plugins).args([
        "build",
        "--release",
        "--target",
        "wasm32-wasip2",
        "--workspace",
    ]);
    // The outer build's settings are for the host, not for the guest target.
    for (key, _) in std::env::vars() {
        if key == "RUSTFLAGS"
            || key == "CARGO_ENCODED_RUSTFLAGS"
            || key == "CARGO_TARGET_DIR"
            || key == "CARGO_BUILD_TARGET"
            || key.starts_with("CARGO_PROFILE_")
            || key == "RUSTC_WRAPPER"
        {
            cmd.env_remove(key);
        }
    }
    let status = cmd.status().expect("cannot run cargo to build plugins/");
    if !status.success() {
        panic!(
            "building plugins/ for wasm32-wasip2 failed; is the target installed? \
             Run `rustup target add wasm32-wasip2` (or ./dev setup) and build again"
        );
    }
    let built = plugins.join("target/wasm32-wasip2/release");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    for name in ["notes", "hello"] {
        let from = built.join(format!("{name}.wasm"));
        let to = out.join(format!("{name}.wasm"));
        std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("cannot copy {}: {e}", from.display()));
    }
    println!("cargo:rustc-env=HOST_PLUGINS_DIR={}", built.display());
}

fn watch(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        if path.is_dir() {
            watch(&path);
        } else {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}
