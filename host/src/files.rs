//! Results files written whole or not at all, and how a write that failed is
//! reported. A leaf: the samplers (stats.md) and the outputs (summary.json, report)
//! both write through it. Results are private to the user who ran the test: folders
//! are made 0700 and files 0600, whatever the umask (a summary names the targets, a
//! report shows the errors the target gave).

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A results file that could not be written, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFailure {
    /// The file (`summary.json`, `histograms/`).
    pub file: String,
    /// The error, with what to do when it is a known limit.
    pub error: String,
}

/// Writes `dir/name` whole or not at all: to a temporary name first, then renamed
/// over. Running out of descriptors is waited out briefly (the VUs' connections are
/// closing as the run ends).
pub(crate) fn write_whole(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let temp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    let mut attempt = 0;
    loop {
        let result = (|| {
            let mut file = create_private(&temp)?;
            std::io::Write::write_all(&mut file, bytes)?;
            file.sync_all()?;
            std::fs::rename(&temp, &path)
        })();
        match result {
            Ok(()) => return Ok(()),
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                let transient = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
                attempt += 1;
                if !transient || attempt >= 5 {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(100 * attempt));
            }
        }
    }
}

/// Creates (or truncates) `path` for writing, readable and writable by its owner only.
pub(crate) fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // `mode` applies only when the file is new: an older file keeps its bits otherwise.
    set_mode(path, 0o600)?;
    Ok(file)
}

/// Creates `path` and its missing parents; the last folder is made 0700 (an existing
/// one is made 0700 too), the parents as the umask says.
pub(crate) fn create_private_dir_all(path: &Path) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match private_dir(path) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => set_mode(path, 0o700),
        other => other,
    }
}

/// Creates the folder `path` (not its parents), 0700; fails if it exists.
pub(crate) fn private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(path)
}

/// A new private temporary folder (0700, a random name, removed when dropped): under
/// `$XDG_RUNTIME_DIR` when set (a per-user folder), else the system's temporary folder.
pub(crate) fn private_temp_dir(prefix: &str) -> Result<tempfile::TempDir> {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&base)
        .with_context(|| format!("cannot create a private folder in {}", base.display()))?;
    // Made with the umask's bits; closed before anything is written in it.
    set_mode(dir.path(), 0o700)
        .with_context(|| format!("cannot make {} private", dir.path().display()))?;
    Ok(dir)
}

/// Makes `path` a folder only this user can enter: created 0700 when missing; when it
/// exists, it must be a real folder (not a link) owned by this user, and is made 0700.
/// A folder another user made first is refused: they could swap what is written in it.
pub(crate) fn own_private_dir(path: &Path) -> Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    match private_dir(path) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", path.display())),
    }
    let meta = std::fs::symlink_metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !meta.file_type().is_dir() || meta.uid() != uid {
        anyhow::bail!(
            "{} exists but is {} (uid {}, this user is uid {uid}): someone else made it, and \
             could change the files written there; remove it, or set XDG_RUNTIME_DIR to a \
             folder of your own",
            path.display(),
            if meta.file_type().is_dir() {
                "another user's folder"
            } else {
                "not a folder"
            },
            meta.uid()
        );
    }
    if meta.permissions().mode() & 0o077 != 0 {
        set_mode(path, 0o700).with_context(|| format!("cannot make {} private", path.display()))?;
    }
    Ok(())
}

fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// A new folder `OUT/<UTC time>-<name>` (`-1`, `-2`… when taken, made 0700), `name`
/// made safe for a file name; `what` names the folder in errors (`results`, `sweep`).
pub(crate) fn new_dated_dir(out: &Path, name: &str, what: &str) -> Result<PathBuf> {
    let now = time::OffsetDateTime::now_utc();
    let stamp = now
        .format(&time::macros::format_description!(
            "[year][month][day]T[hour][minute][second]Z"
        ))
        .unwrap_or_else(|_| "run".into());
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create {}; pick another with --out", out.display()))?;
    for n in 0..1000 {
        let name = if n == 0 {
            format!("{stamp}-{safe}")
        } else {
            format!("{stamp}-{safe}-{n}")
        };
        let dir = out.join(name);
        match private_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "cannot create {}; pick another folder with --out",
                        dir.display()
                    )
                })
            }
        }
    }
    anyhow::bail!(
        "cannot find a free {what} folder name under {}",
        out.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn results_are_private_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let made = new_dated_dir(dir.path(), "x y", "results").unwrap();
        assert_eq!(mode(&made), 0o700);
        write_whole(&made, "summary.json", b"{}").unwrap();
        assert_eq!(mode(&made.join("summary.json")), 0o600);
        // An older file with open bits is closed when written again.
        let old = made.join("old.txt");
        std::fs::write(&old, "x").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(create_private(&old).unwrap());
        assert_eq!(mode(&old), 0o600);
        let nested = made.join("level-01").join("histograms");
        create_private_dir_all(&nested).unwrap();
        assert_eq!(mode(&nested), 0o700);
    }

    #[test]
    fn a_shared_folder_is_made_private_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        // Missing: made 0700.
        let fresh = dir.path().join("fresh");
        own_private_dir(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
        // Ours but open to others: closed.
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        own_private_dir(&open).unwrap();
        assert_eq!(mode(&open), 0o700);
        // A link where the folder should be (to a folder someone chose): refused.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fresh, &link).unwrap();
        let e = own_private_dir(&link).unwrap_err().to_string();
        assert!(
            e.contains("not a folder") && e.contains("someone else made it"),
            "{e}"
        );
        // Another user's folder: refused (chown needs root, which CI has; as another
        // user the link case above still shows the refusal).
        let theirs = dir.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        let c = std::ffi::CString::new(theirs.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string; chown has no other preconditions.
        if unsafe { libc::chown(c.as_ptr(), 65534, 65534) } == 0 {
            let e = own_private_dir(&theirs).unwrap_err().to_string();
            assert!(e.contains("another user's folder (uid 65534"), "{e}");
        }
    }

    #[test]
    fn private_temp_dirs_are_0700_and_go_away() {
        let made = private_temp_dir("host-test-").unwrap();
        let path = made.path().to_path_buf();
        assert_eq!(mode(&path), 0o700);
        drop(made);
        assert!(!path.exists());
    }
}
