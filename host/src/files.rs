//! Results files written whole or not at all, and how a write that failed is
//! reported. A leaf: the samplers (stats.md) and the outputs (summary.json, report)
//! both write through it.

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
            let mut file = std::fs::File::create(&temp)?;
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

/// A new folder `OUT/<UTC time>-<name>` (`-1`, `-2`… when taken), `name` made safe
/// for a file name; `what` names the folder in errors (`results`, `sweep`).
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
        match std::fs::create_dir(&dir) {
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
