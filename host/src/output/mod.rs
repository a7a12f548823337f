//! Results of a run, written under `results/<UTC time>-<plugin name>/`.

pub mod text;

use crate::metrics::{Aggregator, Registry};
use crate::run::summary::Summary;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Makes the run's results folder under `out` and writes every file into it.
pub fn write_results(
    out: &Path,
    summary: &Summary,
    _aggregator: &Aggregator,
    _registry: &Registry,
) -> Result<PathBuf> {
    let dir = results_dir(out, &summary.plugin.name)?;
    let json = serde_json::to_string_pretty(summary)?;
    std::fs::write(dir.join("summary.json"), json + "\n")
        .with_context(|| format!("cannot write {}", dir.join("summary.json").display()))?;
    std::fs::write(dir.join("summary.txt"), text::render(summary))
        .with_context(|| format!("cannot write {}", dir.join("summary.txt").display()))?;
    Ok(dir)
}

/// A new folder named after the current UTC time and the plugin.
fn results_dir(out: &Path, plugin_name: &str) -> Result<PathBuf> {
    let now = time::OffsetDateTime::now_utc();
    let stamp = now
        .format(&time::macros::format_description!(
            "[year][month][day]T[hour][minute][second]Z"
        ))
        .unwrap_or_else(|_| "run".into());
    let safe: String = plugin_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
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
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
        }
    }
    anyhow::bail!(
        "cannot find a free results folder name under {}",
        out.display()
    )
}
