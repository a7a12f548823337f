//! `host build`: builds a plugin project — a Rust crate for wasm32-wasip2 with cargo,
//! finding the component it wrote from cargo's JSON messages (so CARGO_TARGET_DIR and
//! renamed crates are followed rather than guessed), or a Python app (see `python`).

use anyhow::{bail, Context, Result};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `host build`: builds, then prints the component's path alone on stdout (scripts
/// take it from there); returns the exit code.
pub(crate) fn run(args: &super::BuildArgs) -> Result<i32> {
    super::js::remote::set_update(args.update);
    let component = build(&args.dir)?;
    if super::js::is_script(&args.dir) {
        // Which QuickJS runtime, for the user and for benchmarks (stdout is the path).
        eprintln!(
            "built on the JavaScript runtime: {}",
            super::js::componentize::runtime_name()
        );
    }
    println!("{}", component.display());
    Ok(0)
}

/// Builds the project in `dir` (a Rust crate, or a Python app) and returns the
/// component's path.
pub(crate) fn build(dir: &Path) -> Result<PathBuf> {
    if super::js::is_script(dir) {
        super::js::build_beside(dir)
    } else if dir.join("Cargo.toml").is_file() {
        build_rust(dir)
    } else if dir.join("app.py").is_file() {
        super::python::build(dir)
    } else if dir.is_file() {
        bail!(
            "{} is not a script host build knows: a k6 script is a .js, .mjs or .ts file \
             (`host build script.ts`), a plugin a folder with a Cargo.toml or an app.py",
            dir.display()
        )
    } else {
        bail!(
            "{} has neither a Cargo.toml nor an app.py; give the plugin's folder (`host build DIR`), or make one with `host new NAME`",
            dir.display()
        )
    }
}

/// `host vendor SCRIPT`: builds the script (fetching and pinning its remote modules),
/// then copies every pinned module into `vendor/` beside it, where a later build reads
/// them without the network (each checked against its pin in the lock file). Prints
/// the folder; returns the exit code.
pub(crate) fn vendor(args: &super::VendorArgs) -> Result<i32> {
    if !super::js::is_script(&args.script) {
        bail!(
            "{} is not a k6 script (.js, .mjs or .ts); `host vendor` writes a script's remote modules",
            args.script.display()
        );
    }
    super::js::remote::set_update(args.update);
    build(&args.script)?;
    let script = args
        .script
        .canonicalize()
        .with_context(|| format!("cannot read {}", args.script.display()))?;
    let lock = super::js::remote::Lock::beside(&script)?;
    let dir = lock.vendor_dir();
    let n = lock.vendor_into(&dir)?;
    eprintln!(
        "{n} remote module{} vendored into {}; a build beside it needs no network (the lock file pins each)",
        if n == 1 { "" } else { "s" },
        dir.display()
    );
    println!("{}", dir.display());
    Ok(0)
}

/// Builds a Rust plugin crate (release, wasm32-wasip2); cargo's own diagnostics go to
/// stderr as it prints them.
fn build_rust(dir: &Path) -> Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut child = Command::new(&cargo)
        .current_dir(dir)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--message-format=json-render-diagnostics",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!(
                "cannot run {}; is Rust installed (https://rustup.rs)?",
                Path::new(&cargo).display()
            )
        })?;
    let stdout = child.stdout.take().expect("piped");
    let mut components = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.context("cannot read cargo's output")?;
        components.extend(component_in(&line));
    }
    let status = child.wait().context("cargo did not finish")?;
    if !status.success() {
        bail!(
            "cargo build failed in {} ({status}); see its messages above. If it says the \
             wasm32-wasip2 target is not installed: rustup target add wasm32-wasip2",
            dir.display()
        );
    }
    match components.pop() {
        Some(path) => Ok(path),
        None => bail!(
            "cargo built {} but wrote no .wasm; a plugin crate needs `crate-type = [\"cdylib\"]` under [lib]",
            dir.display()
        ),
    }
}

/// The `.wasm` a cargo `compiler-artifact` message names, if the line is one.
fn component_in(line: &str) -> Option<PathBuf> {
    let message: serde_json::Value = serde_json::from_str(line).ok()?;
    if message["reason"] != "compiler-artifact" {
        return None;
    }
    message["filenames"]
        .as_array()?
        .iter()
        .filter_map(|f| f.as_str())
        .find(|f| f.ends_with(".wasm"))
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_read_from_cargo_messages() {
        let line = r#"{"reason":"compiler-artifact","filenames":["/t/wasm32-wasip2/release/x.wasm","/t/x.rlib"]}"#;
        assert_eq!(
            component_in(line),
            Some(PathBuf::from("/t/wasm32-wasip2/release/x.wasm"))
        );
        assert_eq!(
            component_in(r#"{"reason":"build-finished","success":true}"#),
            None
        );
        assert_eq!(component_in("not json"), None);
    }
}
