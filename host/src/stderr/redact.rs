//! Secret values kept out of what the host writes, as k6 keeps a `k6/secrets` value out
//! of its output: once a script got a secret, every occurrence of its value is written
//! `***SECRET_REDACTED***` in each line written to stderr (the script's console lines,
//! errors, warnings), in the summary printed and exported, and in every text file of
//! the run's results folder. The set is process-wide (a process runs one test) and
//! bounded.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

/// What a secret value is written as (k6's words).
pub(crate) const REDACTED: &str = "***SECRET_REDACTED***";

/// Most secret values kept; more are refused (a script that gets thousands of
/// distinct secrets is not one this was made for).
pub(crate) const MAX_SECRETS: usize = 4096;

static ANY: AtomicBool = AtomicBool::new(false);
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Redacts `value` from now on; `false` when the set is full (the caller refuses the
/// secret then, rather than hand out a value it cannot keep out of the output).
pub(crate) fn add(value: &str) -> bool {
    if value.is_empty() {
        return true;
    }
    let mut list = SECRETS.write().unwrap_or_else(|p| p.into_inner());
    if list.iter().any(|v| v == value) {
        return true;
    }
    if list.len() >= MAX_SECRETS {
        return false;
    }
    list.push(value.to_string());
    // The longest first: a secret that holds another is replaced whole.
    list.sort_by_key(|v| std::cmp::Reverse(v.len()));
    ANY.store(true, Ordering::Release);
    true
}

/// Whether any secret was handed out (nothing to redact otherwise).
pub(crate) fn active() -> bool {
    ANY.load(Ordering::Acquire)
}

/// `text` with every secret value written [`REDACTED`].
pub(crate) fn redact(text: &str) -> Cow<'_, str> {
    if !active() {
        return Cow::Borrowed(text);
    }
    let list = SECRETS.read().unwrap_or_else(|p| p.into_inner());
    if !list.iter().any(|v| text.contains(v.as_str())) {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    for v in list.iter() {
        if out.contains(v.as_str()) {
            out = out.replace(v.as_str(), REDACTED);
        }
    }
    Cow::Owned(out)
}

/// `bytes` redacted if they are UTF-8 text; as they are otherwise.
pub(crate) fn redact_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    match std::str::from_utf8(bytes).map(redact) {
        Ok(Cow::Owned(clean)) => Cow::Owned(clean.into_bytes()),
        _ => Cow::Borrowed(bytes),
    }
}

/// Redacts every UTF-8 text file under `dir` in place (binary files, such as a
/// compressed histogram log, are left: a value in them is not written as text). Files
/// are replaced through a temporary beside them, keeping their permissions.
pub(crate) fn redact_files(dir: &std::path::Path) -> std::io::Result<()> {
    if !active() {
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry?.path();
        let kind = std::fs::symlink_metadata(&path)?.file_type();
        if kind.is_dir() {
            redact_files(&path)?;
        } else if kind.is_file() {
            redact_file(&path)?;
        }
    }
    Ok(())
}

/// Redacts one text file in place; anything else is left.
pub(crate) fn redact_file(path: &std::path::Path) -> std::io::Result<()> {
    if !active() {
        return Ok(());
    }
    let bytes = std::fs::read(path)?;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Ok(());
    };
    if let Cow::Owned(clean) = redact(text) {
        let tmp = path.with_extension("redacting");
        std::fs::write(&tmp, clean)?;
        std::fs::set_permissions(&tmp, std::fs::metadata(path)?.permissions())?;
        std::fs::rename(&tmp, path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_redacted_longest_first_and_files_rewritten() {
        assert!(add("s3cr3t-value"));
        assert!(add("s3cr3t"));
        assert_eq!(
            redact("a s3cr3t-value and s3cr3t"),
            format!("a {REDACTED} and {REDACTED}")
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.txt"), "x s3cr3t-value y").unwrap();
        std::fs::write(dir.path().join("b.bin"), [0xffu8, b's', b'3']).unwrap();
        redact_files(dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("sub/a.txt")).unwrap(),
            format!("x {REDACTED} y")
        );
        assert_eq!(
            std::fs::read(dir.path().join("b.bin")).unwrap(),
            [0xff, b's', b'3']
        );
    }
}
