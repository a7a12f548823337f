//! `host run DIR`: a plugin project is built before it runs, and only when its
//! sources changed since the last build. What was built from which sources is kept in
//! `DIR/target/host-build.stamp` (a hash of every source file, and the component's
//! path), so a second run of an unchanged project starts at once instead of running
//! cargo or componentize-py (half a minute for Python) again.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Folders that hold what builds and runs write, not sources.
const NOT_SOURCES: &[&str] = &["target", "results", ".git", "__pycache__"];

/// Most files a project's sources may count before the stamp gives up (and the
/// project is built every time, as cargo would decide).
const MAX_FILES: usize = 20_000;

/// The stamp's file under the project.
fn stamp_path(dir: &Path) -> PathBuf {
    dir.join("target").join("host-build.stamp")
}

/// The component to run for `plugin`: itself when it is a file; for a project
/// folder, its component, built first if its sources changed since the last build.
pub(crate) fn component_for(plugin: &Path, quiet: bool) -> Result<PathBuf> {
    if !plugin.is_dir() {
        return Ok(plugin.to_path_buf());
    }
    let before = fingerprint(plugin)?;
    let stamp = stamp_path(plugin);
    if let (Some(sum), Some(stamp)) = (&before, read_stamp(&stamp)) {
        if stamp.0 == *sum && stamp.1.is_file() {
            if !quiet {
                eprintln!(
                    "{}: sources unchanged since the last build; running {}",
                    plugin.display(),
                    stamp.1.display()
                );
            }
            return Ok(stamp.1);
        }
    }
    eprintln!(
        "building {} ({}) ...",
        plugin.display(),
        if read_stamp(&stamp).is_some() {
            "its sources changed since the last build"
        } else {
            "first build by `host run`; a new Rust project's first build compiles its \
             dependencies, which takes minutes on a small machine"
        }
    );
    let t = Instant::now();
    let component = super::build::build(plugin)?;
    eprintln!(
        "built {} in {:.1}s",
        component.display(),
        t.elapsed().as_secs_f64()
    );
    // Taken again after the build: cargo may have written Cargo.lock.
    if let Some(sum) = fingerprint(plugin)? {
        write_stamp(&stamp, &sum, &component)?;
    }
    Ok(component)
}

/// A hash of every source file of the project (its relative path and bytes), in
/// path order; `None` past [`MAX_FILES`].
fn fingerprint(dir: &Path) -> Result<Option<String>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries = std::fs::read_dir(&folder)
            .with_context(|| format!("cannot read {}", folder.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot read {}", folder.display()))?;
            let kind = entry.file_type()?;
            let name = entry.file_name();
            if kind.is_dir() {
                if !NOT_SOURCES.iter().any(|n| name == *n) {
                    pending.push(entry.path());
                }
            } else if kind.is_file() {
                files.push(entry.path());
                if files.len() > MAX_FILES {
                    return Ok(None);
                }
            }
        }
    }
    files.sort();
    let mut hash = Sha256::new();
    for file in &files {
        let relative = file.strip_prefix(dir).unwrap_or(file);
        hash.update(relative.to_string_lossy().as_bytes());
        hash.update([0]);
        let bytes =
            std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    }
    Ok(Some(hex::encode(hash.finalize())))
}

/// The stamp's source hash and component, if it is there and readable.
fn read_stamp(path: &Path) -> Option<(String, PathBuf)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let sum = lines.next()?.trim().to_string();
    let component = PathBuf::from(lines.next()?.trim());
    Some((sum, component))
}

fn write_stamp(path: &Path, sum: &str, component: &Path) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, format!("{sum}\n{}\n", component.display()))
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_follows_sources_and_ignores_build_output() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("app.py"), "x = 1\n").unwrap();
        std::fs::create_dir_all(dir.path().join("target")).unwrap();
        let first = fingerprint(dir.path()).unwrap().unwrap();
        // What builds and runs write does not count.
        std::fs::write(dir.path().join("target/app.wasm"), "built").unwrap();
        std::fs::create_dir_all(dir.path().join("results/r1")).unwrap();
        std::fs::write(dir.path().join("results/r1/summary.json"), "{}").unwrap();
        assert_eq!(fingerprint(dir.path()).unwrap().unwrap(), first);
        // An edit does, and so does a new source file.
        std::fs::write(dir.path().join("app.py"), "x = 2\n").unwrap();
        let edited = fingerprint(dir.path()).unwrap().unwrap();
        assert_ne!(edited, first);
        std::fs::write(dir.path().join("run.toml"), "").unwrap();
        assert_ne!(fingerprint(dir.path()).unwrap().unwrap(), edited);
    }

    #[test]
    fn a_stamp_reads_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = stamp_path(dir.path());
        write_stamp(&path, "abc", Path::new("/x/y.wasm")).unwrap();
        assert_eq!(
            read_stamp(&path),
            Some(("abc".to_string(), PathBuf::from("/x/y.wasm")))
        );
    }
}
