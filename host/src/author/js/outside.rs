//! Files a script bundles from outside its own folder. `import` and `open()` read
//! files at build time and the bundle carries them inside the component (which
//! `host push` ships): an absolute path or a `../` in a shared script read
//! `/etc/passwd` into `script.wasm` without a word (issue 49). Such a file is refused
//! unless the operator passes `--allow-outside-files`, and then each one is named.

use anyhow::{bail, Result};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once from the command line (`--allow-outside-files`) before anything is built:
/// a flag of the process, as every command that builds a script honours it.
static ALLOWED: AtomicBool = AtomicBool::new(false);

/// Sets whether files outside a script's folder may be bundled.
pub(crate) fn allow(yes: bool) {
    ALLOWED.store(yes, Ordering::Relaxed);
}

/// Checks that `file` (what `what` names, in `shown`) lies inside `root`, the script's
/// folder (both resolved, symlinks followed); refuses it otherwise, or names it on
/// stderr when allowed.
pub(crate) fn check(root: &Path, file: &Path, shown: &str, what: &str) -> Result<()> {
    check_with(root, file, shown, what, ALLOWED.load(Ordering::Relaxed))
}

fn check_with(root: &Path, file: &Path, shown: &str, what: &str, allowed: bool) -> Result<()> {
    // A file that cannot be resolved is refused by its read, with its own error.
    let Ok(real) = file.canonicalize() else {
        return Ok(());
    };
    if real.starts_with(root) {
        return Ok(());
    }
    if allowed {
        crate::stderr::line(format_args!(
            "note: {shown}: {what} bundles {}, outside the script's folder {} (--allow-outside-files)",
            real.display(),
            root.display()
        ));
        return Ok(());
    }
    bail!(
        "{shown}: {what} reads {}, outside the script's folder {}; the build would carry it \
         inside the component. Move the file into the script's folder, or pass \
         --allow-outside-files to bundle it",
        real.display(),
        root.display()
    )
}

#[cfg(test)]
mod tests {
    use super::check_with;

    #[test]
    fn files_outside_the_folder_are_refused_unless_allowed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("script");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("in.txt"), "x").unwrap();
        std::fs::write(tmp.path().join("out.txt"), "x").unwrap();
        check_with(
            &root,
            &root.join("in.txt"),
            "a.js",
            "open(\"./in.txt\")",
            false,
        )
        .unwrap();
        let e = check_with(
            &root,
            &root.join("../out.txt"),
            "a.js",
            "open(\"../out.txt\")",
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("outside the script's folder"), "{e}");
        assert!(e.contains("--allow-outside-files"), "{e}");
        check_with(
            &root,
            &root.join("../out.txt"),
            "a.js",
            "open(\"../out.txt\")",
            true,
        )
        .unwrap();
    }
}
