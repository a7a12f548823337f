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
    // Every plugin folder (not the build output): a plugin added to the workspace
    // rebuilds without being named here too.
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&plugins)
        .expect("plugins/ is readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name != "target" && !name.starts_with('.')
        })
        .collect();
    dirs.sort();
    for dir in dirs {
        watch(&dir);
    }
    // The seeds' scenarios (issue 19).
    for dir in ["demo-visitor", "rest-mix", "capacity"] {
        watch(&plugins.join(dir));
    }
    for file in ["Cargo.toml", "Cargo.lock", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", plugins.join(file).display());
    }
    watch(&root.join("wit"));
    check_sdk_wit(&root);
    embed_sdk(&plugins);

    ensure_wasm_target();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&plugins).args([
        "build",
        "--release",
        "--target",
        "wasm32-wasip2",
        "--workspace",
    ]);
    // The JavaScript runtime built from source (plugins/js-runtime, issue #53) compiles
    // QuickJS's C with clang and wasi-libc's headers (Debian's `clang` and `wasi-libc`;
    // `./dev` installs them): without them it is left out and the other plugins build.
    // `cfg(js_runtime_built)` tells the host it may embed the component (the k6
    // route's default then, issue #53); without it, the vendored runtime is used.
    println!("cargo:rustc-check-cfg=cfg(js_runtime_built)");
    let js_runtime = js_runtime_toolchain();
    if !js_runtime {
        println!(
            "cargo:warning=plugins/js-runtime is not built: it needs clang and wasi-libc \
             (Debian: apt-get install clang llvm-14 wasi-libc; ./dev installs them)"
        );
        cmd.args(["--exclude", "js-runtime"]);
    }
    // The outer build's settings are for the host, not for the guest target. Under
    // `cargo clippy` the outer build sets RUSTC_WORKSPACE_WRAPPER (clippy-driver) and
    // CLIPPY_ARGS: passed on, they compiled the plugins through clippy into other bytes
    // than a plain build's, so a host tested after `./dev lint` embedded a runtime that
    // was no longer the one on disk (and every lint rebuilt every plugin).
    for (key, _) in std::env::vars() {
        if key == "RUSTFLAGS"
            || key == "CARGO_ENCODED_RUSTFLAGS"
            || key == "CARGO_TARGET_DIR"
            || key == "CARGO_BUILD_TARGET"
            || key.starts_with("CARGO_PROFILE_")
            || key == "RUSTC_WRAPPER"
            || key == "RUSTC_WORKSPACE_WRAPPER"
            || key == "CLIPPY_ARGS"
        {
            cmd.env_remove(key);
        }
    }
    let status = cmd.status().expect("cannot run cargo to build plugins/");
    if !status.success() {
        panic!(
            "building plugins/ for wasm32-wasip2 failed (its errors are above); if the \
             target is missing, run `rustup target add wasm32-wasip2` and build again"
        );
    }
    let built = plugins.join("target/wasm32-wasip2/release");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    for name in ["notes", "hello"] {
        let from = built.join(format!("{name}.wasm"));
        let to = out.join(format!("{name}.wasm"));
        std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("cannot copy {}: {e}", from.display()));
    }
    if js_runtime {
        let from = built.join("js_runtime.wasm");
        let to = out.join("js_runtime.wasm");
        std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("cannot copy {}: {e}", from.display()));
        println!("cargo:rustc-cfg=js_runtime_built");
        println!(
            "cargo:rustc-env=HOST_JS_RUNTIME=quickjs-ng built from source (plugins/js-runtime)"
        );
    } else {
        println!("cargo:rustc-env=HOST_JS_RUNTIME=vendored componentize-qjs 0.4.5 runtime (built without clang)");
    }
    println!("cargo:rustc-env=HOST_PLUGINS_DIR={}", built.display());
}

/// Whether clang and wasi-libc's headers are here (what plugins/js-runtime's C needs,
/// as plugins/.cargo/config.toml points at them).
fn js_runtime_toolchain() -> bool {
    let runs = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    runs("clang") && runs("llvm-ar-14") && Path::new("/usr/include/wasm32-wasi/stdlib.h").exists()
}

/// The one command that installs the guest target, for messages.
const ADD_TARGET: &str = "rustup target add wasm32-wasip2";

/// The plugins are built for wasm32-wasip2, which a fresh rustup toolchain lacks:
/// `cargo install --path host` (or a first build) installs it with rustup, for the
/// toolchain building the host (rustup's proxies set RUSTUP_TOOLCHAIN), instead of
/// failing with an error deep in the plugins' build. Without rustup, the message names
/// the one command to run.
fn ensure_wasm_target() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = |sysroot: &Path| {
        std::fs::read_dir(sysroot.join("lib/rustlib/wasm32-wasip2/lib")).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("libstd-"))
        })
    };
    let Some(sysroot) = sysroot else {
        return; // The build below says what is wrong.
    };
    if installed(&sysroot) {
        return;
    }
    println!(
        "cargo:warning=the wasm32-wasip2 target (for the bundled plugins) is missing; running `{ADD_TARGET}`"
    );
    let added = Command::new("rustup")
        .args(["target", "add", "wasm32-wasip2"])
        .status();
    match added {
        Ok(status) if status.success() && installed(&sysroot) => {}
        Ok(_) => panic!(
            "`{ADD_TARGET}` failed (see its output above); the host embeds plugins built \
             for that target: run it again once it can reach the network, then build again"
        ),
        Err(_) => panic!(
            "the host embeds plugins built for wasm32-wasip2, which {} lacks, and rustup is \
             not there to add it: install Rust with rustup (https://rustup.rs) and run \
             `{ADD_TARGET}`, or add that target to this toolchain, then build again",
            sysroot.display()
        ),
    }
}

/// The SDK carries its own copy of the WIT (so the crate builds alone, wherever it is
/// copied); it must be the contract this host implements, byte for byte. Checked here,
/// at every build of the host, so the two copies cannot drift even for one commit.
fn check_sdk_wit(root: &Path) {
    let ours = root.join("wit/scenario.wit");
    let sdk = root.join("plugins/sdk/wit/scenario.wit");
    let read =
        |p: &Path| std::fs::read(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
    if read(&ours) != read(&sdk) {
        panic!(
            "{} differs from {}: the SDK must carry the contract this host implements. \
             After editing wit/scenario.wit, copy it: cp wit/scenario.wit plugins/sdk/wit/scenario.wit",
            sdk.display(),
            ours.display()
        );
    }
}

/// Writes `sdk_files.rs` to OUT_DIR: every file of the SDK crate (manifest, sources,
/// WIT) and the plugins' Cargo.lock, as `include_str!`s, so `host new` can vendor the
/// SDK into a new project wherever the host binary is, without this checkout.
fn embed_sdk(plugins: &Path) {
    let sdk = plugins.join("sdk");
    let mut files = Vec::new();
    collect(&sdk, &sdk, &mut files);
    files.sort();
    let mut code = String::from(
        "/// The SDK crate's files: (path inside the crate, contents).\n\
         pub(crate) const SDK_FILES: &[(&str, &str)] = &[\n",
    );
    for rel in &files {
        let abs = sdk.join(rel);
        code.push_str(&format!(
            "    ({rel:?}, include_str!({:?})),\n",
            abs.display().to_string()
        ));
    }
    code.push_str("];\n");
    code.push_str(&format!(
        "/// The plugins workspace's Cargo.lock: the dependency versions the SDK is tested with.\n\
         pub(crate) const PLUGINS_LOCK: &str = include_str!({:?});\n",
        plugins.join("Cargo.lock").display().to_string()
    ));
    // The Python SDK (a package of .py files) and its example app, for `--lang python`.
    let python = plugins.join("python");
    let mut py_files = Vec::new();
    collect(
        &python.join("loadtest"),
        &python.join("loadtest"),
        &mut py_files,
    );
    py_files.sort();
    code.push_str(
        "/// The Python SDK package's files: (path inside `loadtest/`, contents).\n\
         pub(crate) const PY_SDK_FILES: &[(&str, &str)] = &[\n",
    );
    for rel in &py_files {
        let abs = python.join("loadtest").join(rel);
        code.push_str(&format!(
            "    ({rel:?}, include_str!({:?})),\n",
            abs.display().to_string()
        ));
    }
    code.push_str("];\n");
    code.push_str(&format!(
        "/// The example Python plugin (plugins/python/hello_py/app.py), the template of `host new --lang python`.\n\
         pub(crate) const PY_EXAMPLE_APP: &str = include_str!({:?});\n",
        python.join("hello_py/app.py").display().to_string()
    ));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    std::fs::write(out.join("sdk_files.rs"), code).expect("cannot write sdk_files.rs");
}

/// Paths (relative to `base`, with `/`) of the SDK's files worth vendoring.
fn collect(base: &Path, dir: &Path, files: &mut Vec<String>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "target" || name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect(base, &path, files);
        } else if name.ends_with(".rs")
            || name.ends_with(".py")
            || name.ends_with(".wit")
            || name.ends_with(".toml")
            || name.ends_with(".md")
        {
            let rel = path.strip_prefix(base).expect("under base");
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            files.push(parts.join("/"));
        }
    }
}

fn watch(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path
            .file_name()
            .is_some_and(|n| n == "target" || n == "__pycache__")
        {
            continue;
        }
        if path.is_dir() {
            watch(&path);
        } else {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}
