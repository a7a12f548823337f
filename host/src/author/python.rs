//! Python plugins: `host build` on a folder with an `app.py` runs componentize-py (from
//! PyPI) against the contract, and writes `target/<folder name>.wasm`.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The componentize-py version the Python SDK is tested with.
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

/// The componentize-py to run: `$COMPONENTIZE_PY`, else the one on PATH.
pub(crate) fn componentize_py() -> PathBuf {
    std::env::var_os("COMPONENTIZE_PY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("componentize-py"))
}

/// Builds `dir/app.py` into `dir/target/<name>.wasm`. The folder's own `wit/` and
/// `loadtest/` are used when it has them (as `host new` writes them); otherwise this
/// host's SDK and contract are written under `target/sdk/` and used.
pub(crate) fn build(dir: &Path) -> Result<PathBuf> {
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot read {}", dir.display()))?;
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .context("the plugin's folder has no name")?
        .replace('-', "_");
    let target = dir.join("target");
    let mut search = vec![dir.clone()];
    let wit = if dir.join("wit/scenario.wit").is_file() && dir.join("loadtest").is_dir() {
        dir.join("wit")
    } else {
        let sdk = target.join("sdk");
        super::sdk::write_python_sdk(&sdk)?;
        search.push(sdk.clone());
        sdk.join("wit")
    };
    std::fs::create_dir_all(&target)
        .with_context(|| format!("cannot create {}", target.display()))?;
    let out = target.join(format!("{name}.wasm"));
    let tool = componentize_py();
    let mut cmd = Command::new(&tool);
    cmd.current_dir(&dir)
        .arg("-d")
        .arg(&wit)
        .args(["-w", "scenario", "componentize"]);
    for path in &search {
        cmd.arg("-p").arg(path);
    }
    cmd.arg("app").arg("-o").arg(&out);
    // componentize-py talks on stdout; the component's path is this command's output.
    cmd.stdout(std::process::Stdio::null());
    let status = cmd.status().with_context(|| {
        format!(
            "cannot run {}; install it with `pip install componentize-py=={COMPONENTIZE_PY_VERSION}` \
             (or set COMPONENTIZE_PY to its path)",
            tool.display()
        )
    })?;
    if !status.success() {
        bail!(
            "componentize-py failed on {} ({status}); see its messages above",
            dir.join("app.py").display()
        );
    }
    Ok(out)
}
