//! Who owns a Compose project name on this machine, so a second `host up` or
//! `run --stack` with the name of a running stack is refused instead of removing the
//! first one's containers (which made the first run abort, blaming its worker).
//!
//! The owner holds an exclusive lock on `TMP/host-stack-PROJECT.lock` for as long as
//! it uses the stack (`run --stack` and `sweep --stack` until their teardown), and
//! writes in it who it is. A stack that `host up` (or `--keep`) leaves running is
//! marked kept: the lock is free then, but the stack is still someone's. A lock that is
//! free while the file says `run` belonged to a host that died mid-run: what it left
//! behind may be removed.

use anyhow::{anyhow, Context, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::PathBuf;
use std::sync::Mutex;

/// What the lock file says about the project's stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mark {
    /// No file, or nothing in it: nobody of this machine has said anything.
    Unknown,
    /// A run or sweep is using it (pid); stale when the lock is free.
    Run(u32),
    /// Left running on purpose (`host up`, `--keep`).
    Kept,
}

/// The lock of a project, held while this process uses its stack.
#[derive(Debug)]
pub(crate) struct Claim {
    project: String,
    file: Mutex<File>,
    /// What the file said before this process took it.
    previous: Mark,
}

/// The lock file of `project`.
fn lock_path(project: &str) -> PathBuf {
    std::env::temp_dir().join(format!("host-stack-{project}.lock"))
}

fn parse_mark(text: &str) -> Mark {
    let text = text.trim();
    if text == "kept" {
        Mark::Kept
    } else if let Some(pid) = text.strip_prefix("run ").and_then(|p| p.parse().ok()) {
        Mark::Run(pid)
    } else {
        Mark::Unknown
    }
}

impl Claim {
    /// Takes the project's lock, or says who holds it.
    pub(crate) fn take(project: &str) -> Result<Claim> {
        let path = lock_path(project);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let mut text = String::new();
        let _ = file.read_to_string(&mut text);
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let who = match parse_mark(&text) {
                    Mark::Run(pid) => format!(" (pid {pid})"),
                    _ => String::new(),
                };
                return Err(anyhow!(
                    "project {project} is in use: another host{who} is running a load test \
                     against its stack; give this one another name (--project NAME or \
                     [stack] project), or wait until the other one ends"
                ));
            }
            Err(TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("cannot lock {}", path.display()))
            }
        }
        let claim = Claim {
            project: project.to_string(),
            file: Mutex::new(file),
            previous: parse_mark(&text),
        };
        claim.write(&format!("run {}", std::process::id()))?;
        Ok(claim)
    }

    /// What the file said before this process took the lock.
    pub(crate) fn previous(&self) -> &Mark {
        &self.previous
    }

    /// Marks the stack as left running on purpose, so a later `up` with its name is
    /// refused while it runs.
    pub(crate) fn mark_kept(&self) {
        if let Err(e) = self.write("kept") {
            eprintln!(
                "warning: project {}: cannot mark the stack as kept: {e:#}",
                self.project
            );
        }
    }

    fn write(&self, text: &str) -> Result<()> {
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        file.set_len(0)?;
        file.rewind()?;
        file.write_all(format!("{text}\n").as_bytes())?;
        Ok(())
    }
}

/// Forgets the project's lock file (after `down`): nothing of the stack is left.
pub(crate) fn forget(project: &str) {
    let _ = std::fs::remove_file(lock_path(project));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique(name: &str) -> String {
        format!("claimtest{}-{name}", std::process::id())
    }

    #[test]
    fn a_second_claim_of_a_held_project_is_refused_with_the_owner() {
        let project = unique("held");
        let first = Claim::take(&project).unwrap();
        // A second open file description conflicts with the first one's lock, as a
        // second process would.
        let e = Claim::take(&project).unwrap_err().to_string();
        assert!(
            e.contains(&format!("project {project} is in use"))
                && e.contains(&format!("pid {}", std::process::id()))
                && e.contains("--project NAME"),
            "{e}"
        );
        drop(first);
        let again = Claim::take(&project).unwrap();
        // The first owner did not mark it kept: it is a run's, whose lock is free now.
        assert_eq!(*again.previous(), Mark::Run(std::process::id()));
        again.mark_kept();
        drop(again);
        let third = Claim::take(&project).unwrap();
        assert_eq!(*third.previous(), Mark::Kept);
        drop(third);
        forget(&project);
        assert_eq!(*Claim::take(&project).unwrap().previous(), Mark::Unknown);
        forget(&project);
    }
}
