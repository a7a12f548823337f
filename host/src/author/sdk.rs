//! The Rust SDK's sources, embedded in the host binary at build time (see build.rs), so
//! `host new` can vendor the SDK into a new project without this checkout.

use anyhow::{Context, Result};
use std::path::Path;

include!(concat!(env!("OUT_DIR"), "/sdk_files.rs"));

/// Writes the Python SDK (`loadtest/`) and the contract (`wit/scenario.wit`) into `dir`:
/// what componentize-py needs besides the app.
pub(crate) fn write_python_sdk(dir: &Path) -> Result<()> {
    let wit = SDK_FILES
        .iter()
        .find(|(n, _)| *n == "wit/scenario.wit")
        .expect("build.rs embeds the SDK's WIT")
        .1;
    let mut files = vec![("wit/scenario.wit".to_string(), wit)];
    for (rel, text) in PY_SDK_FILES {
        files.push((format!("loadtest/{rel}"), text));
    }
    for (rel, text) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdk_is_embedded_whole() {
        let names: Vec<&str> = SDK_FILES.iter().map(|(n, _)| *n).collect();
        for needed in [
            "Cargo.toml",
            "src/lib.rs",
            "src/http.rs",
            "wit/scenario.wit",
        ] {
            assert!(names.contains(&needed), "{needed} missing from {names:?}");
        }
        let manifest = SDK_FILES
            .iter()
            .find(|(n, _)| *n == "Cargo.toml")
            .unwrap()
            .1;
        // A vendored copy must not need the plugins workspace.
        assert!(!manifest.contains(".workspace"), "{manifest}");
        assert!(PLUGINS_LOCK.contains("name = \"wit-bindgen\""));
    }
}
