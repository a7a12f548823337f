//! One compiled component in the cache, and the checks made before it is trusted.
//!
//! wasmtime runs a deserialised component's machine code as it finds it
//! (`Component::deserialize` is `unsafe`): it checks the file's format, wasmtime version
//! and engine settings, not that the code is what the compiler wrote. So an entry is
//! loaded only when
//! - the file belongs to this user and no one else may write it (on Unix): a cache
//!   folder shared with others (`HOST_CACHE_DIR=/tmp/...`) cannot slip code into this
//!   user's runs, and
//! - its sha256 matches the digest written beside it (`<entry>.sha256`) when the host
//!   compiled it: a truncated, corrupted or hand-edited entry is compiled again.
//!
//! After the check the file is mapped (`deserialize_file`), as before the check
//! existed: its pages stay shared with the page cache. Deserialising the bytes read for
//! the check instead would close the window between check and map, but cost the
//! 300-VU capacity run ~13-24 MiB of peak RSS (two copies of a 7 MB entry); the window
//! only matters to someone who can write this user's files, whom the ownership check
//! already trusts. Why not an HMAC: its key would live in the same per-user folder, so
//! it would add nothing to the ownership check; the digest is there for corruption,
//! the ownership for other users.

use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use wasmtime::component::Component;
use wasmtime::Engine;

/// Where an entry's digest is kept: beside it.
fn digest_path(entry: &Path) -> PathBuf {
    let mut name = entry.as_os_str().to_os_string();
    name.push(".sha256");
    PathBuf::from(name)
}

/// Whether `meta` is this user's and writable by no one else.
#[cfg(unix)]
fn owned_by_us(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    meta.uid() == me && meta.mode() & 0o022 == 0
}

#[cfg(not(unix))]
fn owned_by_us(_meta: &std::fs::Metadata) -> bool {
    true
}

/// Whether the entry at `entry` passes the checks above (this user's, writable by no
/// one else, its digest matching): also what the JS build cache trusts a built script
/// by, as a planted component would run with the script's secrets and allowlist.
pub(crate) fn verified(entry: &Path) -> bool {
    let check = || -> Option<()> {
        let mut file = std::fs::File::open(entry).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || !owned_by_us(&meta) {
            return None;
        }
        let expected = std::fs::read_to_string(digest_path(entry)).ok()?;
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes).ok()?;
        (hex::encode(Sha256::digest(&bytes)) == expected.trim()).then_some(())
    };
    check().is_some()
}

/// The compiled component at `entry`, if it passes the checks above; `None` sends the
/// caller to the compiler (which then overwrites the entry).
pub(crate) fn load(engine: &Engine, entry: &Path) -> Option<Component> {
    if !verified(entry) {
        return None;
    }
    // SAFETY: the file is, by the digest, what `Engine::precompile_component` wrote,
    // and only this user may write it (see the module's doc); wasmtime still refuses
    // it if it was made by another version or engine setting.
    unsafe { Component::deserialize_file(engine, entry) }.ok()
}

/// Makes `path` writable by its owner alone.
#[cfg(unix)]
fn private(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).is_ok()
}

#[cfg(not(unix))]
fn private(_path: &Path) -> bool {
    true
}

/// Writes `compiled` to `entry` with its digest. Best effort: a cache that cannot be
/// written only costs the next run a compile.
pub(crate) fn store(entry: &Path, compiled: &[u8]) {
    let Some(dir) = entry.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let digest = hex::encode(Sha256::digest(compiled));
    // Each file is written under a name of this process's, then renamed, so a reader
    // never sees half of one. The digest goes first: an entry whose digest is older
    // (a concurrent writer's) fails the check and is compiled again, never trusted.
    let write = |path: &Path, bytes: &[u8]| {
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        // Not writable by others whatever the umask: the load check demands it.
        let ok = std::fs::write(&tmp, bytes).is_ok()
            && private(&tmp)
            && std::fs::rename(&tmp, path).is_ok();
        if !ok {
            let _ = std::fs::remove_file(&tmp);
        }
        ok
    };
    if write(&digest_path(entry), digest.as_bytes()) {
        write(entry, compiled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Engine {
        Engine::default()
    }

    /// The smallest component there is (`(component)` in binary: magic, version 0xd,
    /// layer 1): what the checks guard does not depend on size.
    fn compiled(engine: &Engine) -> Vec<u8> {
        let wasm = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        engine.precompile_component(&wasm).unwrap()
    }

    #[test]
    fn an_entry_loads_only_while_it_matches_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let entry = dir.path().join("x.cwasm");
        assert!(load(&engine, &entry).is_none(), "nothing stored yet");
        let bytes = compiled(&engine);
        store(&entry, &bytes);
        assert!(load(&engine, &entry).is_some(), "the stored entry loads");

        // One byte changed in the middle: the digest no longer matches.
        let mut bad = bytes.clone();
        let mid = bad.len() / 2;
        bad[mid] ^= 0x40;
        std::fs::write(&entry, &bad).unwrap();
        assert!(
            load(&engine, &entry).is_none(),
            "a corrupted entry is not loaded"
        );

        // Truncated, and without its digest.
        std::fs::write(&entry, &bytes[..bytes.len() / 2]).unwrap();
        assert!(load(&engine, &entry).is_none());
        store(&entry, &bytes);
        std::fs::remove_file(digest_path(&entry)).unwrap();
        assert!(
            load(&engine, &entry).is_none(),
            "an entry without digest is not loaded"
        );
    }

    #[cfg(unix)]
    #[test]
    fn an_entry_others_may_write_is_not_loaded() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let entry = dir.path().join("x.cwasm");
        store(&entry, &compiled(&engine));
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(load(&engine, &entry).is_none());
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(load(&engine, &entry).is_some());
    }
}
