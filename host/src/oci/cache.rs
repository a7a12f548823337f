//! Pulled artifacts kept by digest under the user's cache folder (`oci/` beside the
//! compiled plugins): components as `blobs/sha256/HEX.wasm`, manifests as
//! `manifests/sha256/HEX.json`. Content is checked against its name on every read, so
//! a damaged file is fetched again, never run; a digest names its content, so a
//! pinned plugin runs from here with the registry out of reach.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The folder of the cache.
pub(crate) fn root() -> PathBuf {
    crate::plugin::cache::cache_dir().join("oci")
}

/// Where the component with layer digest `digest` (`sha256:…`) is kept.
pub(crate) fn blob_path(digest: &str) -> PathBuf {
    root()
        .join("blobs")
        .join("sha256")
        .join(format!("{}.wasm", hex_of(digest)))
}

fn manifest_path(digest: &str) -> PathBuf {
    root()
        .join("manifests")
        .join("sha256")
        .join(format!("{}.json", hex_of(digest)))
}

fn hex_of(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}

/// The cached component of digest `digest`, if it is there and intact.
pub(crate) fn blob(digest: &str) -> Option<PathBuf> {
    let path = blob_path(digest);
    read_checked(&path, digest).map(|_| path)
}

/// The cached manifest of digest `digest`, if it is there and intact.
pub(crate) fn manifest(digest: &str) -> Option<Vec<u8>> {
    read_checked(&manifest_path(digest), digest)
}

fn read_checked(path: &Path, digest: &str) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    if super::artifact::digest(&bytes) == digest {
        Some(bytes)
    } else {
        // Damaged (or written by something else): fetched again next time.
        let _ = std::fs::remove_file(path);
        None
    }
}

/// Keeps a verified component; returns its path.
pub(crate) fn put_blob(digest: &str, bytes: &[u8]) -> Result<PathBuf> {
    let path = blob_path(digest);
    write(&path, bytes)?;
    Ok(path)
}

/// Keeps a verified manifest.
pub(crate) fn put_manifest(digest: &str, bytes: &[u8]) -> Result<()> {
    write(&manifest_path(digest), bytes)
}

/// Writes through a temporary file and a rename, so a reader never sees half a file.
fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot make the cache folder {}", dir.display()))?;
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("blob"),
        std::process::id()
    ));
    std::fs::write(&temp, bytes).with_context(|| format!("cannot write {}", temp.display()))?;
    std::fs::rename(&temp, path).with_context(|| format!("cannot write {}", path.display()))
}
