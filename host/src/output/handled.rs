//! Delivers what a plugin's own summary (k6's `handleSummary`) returned: `stdout` and
//! `stderr` are printed, any other key is a file name written into the run's results
//! folder. A scenario is untrusted code, so a name that would leave that folder (an
//! absolute path, `..`) is refused and reported, not written: k6 writes such paths
//! relative to the working directory, this host does not let a shared script choose
//! where on the operator's disk it writes. Nor does it replace the host's own results
//! (`summary.json`, `junit.xml`, `summary.txt`, `report.html`, the time series and
//! histogram logs, anything already in the folder): k6's common
//! `return { 'summary.json': ... }` would leave a failed run with a passing junit.xml
//! and break `host compare`; such a file goes into the `handleSummary/` subfolder
//! instead, with a warning saying where. At most [`MAX_FILES`] files and
//! [`MAX_BYTES`] in all are written (k6 sets no bound; a script returning 20,000
//! names would otherwise fill the folder): the rest are left out, with one warning.

use crate::files::WriteFailure;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// Why a file `handleSummary` returned was not written; the report puts the name first.
#[derive(Debug, thiserror::Error)]
enum NotWritten {
    /// The folder for it cannot be made.
    #[error("cannot make {}: {reason}", .dir.display())]
    MakeDir {
        /// The folder.
        dir: PathBuf,
        /// The system's reason.
        reason: std::io::Error,
    },
    /// The name ends in no file name.
    #[error("names no file")]
    NoFile,
    /// Writing failed.
    #[error("{0}")]
    Write(std::io::Error),
    /// A name that would leave the results folder.
    #[error(
        "is outside the run's results folder; handleSummary may return \
         \"stdout\", \"stderr\" or a relative file name without \"..\" (it is \
         written into the results folder)"
    )]
    Outside,
    /// An empty name.
    #[error("is an empty file name")]
    Empty,
    /// A name holding terminal controls, line breaks or bidirectional overrides:
    /// listing the folder would replay them on the operator's terminal.
    #[error(
        "holds control characters (escapes, line breaks or bidirectional overrides); \
         name the file with printable characters"
    )]
    Controls,
}

/// The subfolder of the results folder that takes a file `handleSummary` named after
/// one of the host's own results.
pub(crate) const ASIDE: &str = "handleSummary";

/// The host's own results, by name at the top of the results folder: never replaced
/// by what a script returns, even when one is missing (not written yet, or failed).
const HOST_FILES: &[&str] = &[
    "summary.json",
    "summary.txt",
    "junit.xml",
    "report.html",
    "timeseries.jsonl",
    "endpoints.md",
    "stats.jsonl",
    "stats.md",
    "histograms",
];

/// Most files one `handleSummary` writes (k6's own examples write two or three).
pub(crate) const MAX_FILES: usize = 64;

/// Most bytes one `handleSummary` writes, over all of its files.
pub(crate) const MAX_BYTES: u64 = 64 << 20;

/// Prints and writes each rendering; returns what could not be written, and prints
/// where each file went. Files past [`MAX_FILES`] or [`MAX_BYTES`] are not written.
pub(crate) fn deliver(renderings: &[(String, Vec<u8>)], results_dir: &Path) -> Vec<WriteFailure> {
    let mut failures = Vec::new();
    let (mut files, mut bytes) = (0usize, 0u64);
    let (mut skipped, mut skipped_bytes) = (0u64, 0u64);
    for (to, content) in renderings {
        // A secret the script got is not printed (files are redacted with the folder).
        let redacted = crate::stderr::redact::redact_bytes(content);
        let content: &Vec<u8> = &redacted.into_owned();
        let is_file = !matches!(to.as_str(), "stdout" | "stderr");
        if is_file {
            let size = content.len() as u64;
            if files >= MAX_FILES || bytes + size > MAX_BYTES {
                skipped += 1;
                skipped_bytes += size;
                continue;
            }
            files += 1;
            bytes += size;
        }
        match to.as_str() {
            "stdout" => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(content).and_then(|()| out.flush());
            }
            "stderr" => {
                let _ = std::io::stderr().lock().write_all(content);
            }
            name => match write_inside(results_dir, name, content) {
                Ok(path) => println!("  handleSummary wrote {}", path.display()),
                Err(error) => failures.push(WriteFailure {
                    file: format!(
                        "{} (from handleSummary)",
                        crate::bounded::cut(
                            &crate::stderr::escape_controls(name, false),
                            crate::bounded::QUOTED_BYTES
                        )
                    ),
                    error: error.to_string(),
                }),
            },
        }
    }
    if skipped > 0 {
        crate::stderr::warn(format_args!(
            "handleSummary returned {} files; {skipped} of them ({skipped_bytes} bytes) were \
             not written: it may write at most {MAX_FILES} files and {} MiB in all",
            files as u64 + skipped,
            MAX_BYTES >> 20
        ));
    }
    failures
}

/// Writes `name` under `dir`, refusing a name that is not a plain relative path; a
/// name of the host's own results is written under [`ASIDE`] instead, with a warning.
fn write_inside(dir: &Path, name: &str, content: &[u8]) -> Result<PathBuf, NotWritten> {
    let mut relative = inside(name)?;
    if is_hosts(dir, &relative) {
        relative = Path::new(ASIDE).join(relative);
        crate::stderr::warn(format_args!(
            "handleSummary returned {name:?}, which is one of the host's own results; it was \
             written to {} instead (the host's summary.json, summary.txt, junit.xml and \
             report.html are never replaced: `host compare` and CI read them)",
            dir.join(&relative).display()
        ));
    }
    let path = dir.join(&relative);
    let parent = path.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(|reason| NotWritten::MakeDir {
        dir: parent.to_owned(),
        reason,
    })?;
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .ok_or(NotWritten::NoFile)?;
    crate::files::write_whole(parent, &file, content).map_err(NotWritten::Write)?;
    Ok(path)
}

/// Whether `relative` names one of the host's results in `dir`: a name of
/// [`HOST_FILES`] (or inside one, as `histograms/`), or anything already there (the
/// host wrote it before the plugin's summary ran).
fn is_hosts(dir: &Path, relative: &Path) -> bool {
    let first = relative
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    HOST_FILES.contains(&first.as_str()) || dir.join(relative).exists()
}

/// `name` as a path inside the results folder, or why it is not one.
fn inside(name: &str) -> Result<PathBuf, NotWritten> {
    if crate::stderr::escape_controls(name, false) != name {
        return Err(NotWritten::Controls);
    }
    let path = Path::new(name);
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => return Err(NotWritten::Outside),
        }
    }
    if out.as_os_str().is_empty() {
        return Err(NotWritten::Empty);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_own_results_are_never_replaced_and_the_scripts_go_aside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("junit.xml"), "host's").unwrap();
        std::fs::create_dir_all(dir.path().join("histograms")).unwrap();
        std::fs::write(
            dir.path().join("histograms/http_req_duration.hlog"),
            "host's",
        )
        .unwrap();
        let renderings = vec![
            ("summary.json".to_string(), b"script's json".to_vec()),
            ("./junit.xml".to_string(), b"script's junit".to_vec()),
            (
                "histograms/http_req_duration.hlog".to_string(),
                b"script's".to_vec(),
            ),
            ("stats.md".to_string(), b"script's stats".to_vec()),
            ("mine.json".to_string(), b"script's own".to_vec()),
        ];
        assert!(deliver(&renderings, dir.path()).is_empty());
        let read = |p: &str| std::fs::read_to_string(dir.path().join(p)).unwrap();
        assert_eq!(read("junit.xml"), "host's");
        assert_eq!(read("histograms/http_req_duration.hlog"), "host's");
        // Written after the plugin's summary, or not at all: still the host's name.
        assert!(!dir.path().join("stats.md").exists());
        assert_eq!(read("handleSummary/stats.md"), "script's stats");
        // Missing (not written, or failed) is still the host's name.
        assert!(!dir.path().join("summary.json").exists());
        assert_eq!(read("handleSummary/summary.json"), "script's json");
        assert_eq!(read("handleSummary/junit.xml"), "script's junit");
        assert_eq!(
            read("handleSummary/histograms/http_req_duration.hlog"),
            "script's"
        );
        assert_eq!(read("mine.json"), "script's own");
    }

    #[test]
    fn files_past_the_count_or_the_size_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let many: Vec<(String, Vec<u8>)> = (0..MAX_FILES + 500)
            .map(|i| (format!("d{}/f{i}.txt", i % 70), b"x".to_vec()))
            .collect();
        assert!(deliver(&many, dir.path()).is_empty());
        let written: usize = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|d| std::fs::read_dir(d.unwrap().path()).unwrap().count())
            .sum();
        assert_eq!(written, MAX_FILES);

        let dir = tempfile::tempdir().unwrap();
        let half = vec![0u8; (MAX_BYTES / 2) as usize + 1];
        let big = vec![
            ("a.bin".to_string(), half.clone()),
            ("b.bin".to_string(), half),
            ("c.txt".to_string(), b"small".to_vec()),
        ];
        assert!(deliver(&big, dir.path()).is_empty());
        assert!(dir.path().join("a.bin").exists());
        assert!(!dir.path().join("b.bin").exists());
        assert!(dir.path().join("c.txt").exists());
    }

    #[test]
    fn names_with_terminal_controls_are_refused_and_shown_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let renderings = vec![
            ("\x1b[2Jwiped.txt".to_string(), b"x".to_vec()),
            ("\u{202e}txt.exe".to_string(), b"x".to_vec()),
            ("a\nb.txt".to_string(), b"x".to_vec()),
        ];
        let failures = deliver(&renderings, dir.path());
        let shown: Vec<&str> = failures.iter().map(|f| f.file.as_str()).collect();
        assert_eq!(
            shown,
            [
                "\\x1b[2Jwiped.txt (from handleSummary)",
                "\\u{202e}txt.exe (from handleSummary)",
                "a\\nb.txt (from handleSummary)"
            ]
        );
        assert!(failures[0].error.contains("control characters"));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn names_that_leave_the_results_folder_are_refused_and_the_others_written_inside() {
        let dir = tempfile::tempdir().unwrap();
        let renderings = vec![
            ("custom.json".to_string(), b"{}".to_vec()),
            ("./reports/junit.xml".to_string(), b"<x/>".to_vec()),
            ("/etc/evil".to_string(), b"no".to_vec()),
            ("../evil".to_string(), b"no".to_vec()),
            ("a/../../evil".to_string(), b"no".to_vec()),
            ("".to_string(), b"no".to_vec()),
        ];
        let failures = deliver(&renderings, dir.path());
        assert_eq!(
            std::fs::read(dir.path().join("custom.json")).unwrap(),
            b"{}"
        );
        assert_eq!(
            std::fs::read(dir.path().join("reports/junit.xml")).unwrap(),
            b"<x/>"
        );
        let refused: Vec<&str> = failures.iter().map(|f| f.file.as_str()).collect();
        assert_eq!(
            refused,
            [
                "/etc/evil (from handleSummary)",
                "../evil (from handleSummary)",
                "a/../../evil (from handleSummary)",
                " (from handleSummary)"
            ]
        );
        assert_eq!(
            failures[0].error,
            "is outside the run's results folder; handleSummary may return \"stdout\", \
             \"stderr\" or a relative file name without \"..\" (it is written into the \
             results folder)"
        );
        assert_eq!(failures[3].error, "is an empty file name");
        assert!(!dir.path().parent().unwrap().join("evil").exists());
    }
}
