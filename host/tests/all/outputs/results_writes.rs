//! Results that cannot be written: a disk that fills up during the run, and a results
//! folder that is read-only from the start. On a full disk the run used to exit 1 with
//! nothing printed, a 0-byte summary.json and a truncated report.html.
//!
//! The full disk is a real tmpfs (mounted by the test, which runs as root here, as CI
//! does); without the right to mount, the same end-of-run failures are made with a
//! folder whose permissions forbid writing.

use crate::support as common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_host"))
}

/// A small tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Self(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fills the file system holding `dir` until it has no room left.
fn fill(dir: &Path) {
    use std::io::Write;
    let mut filler = std::fs::File::create(dir.join("filler")).unwrap();
    let block = vec![0u8; 4096];
    while filler.write_all(&block).is_ok() {}
    let _ = filler.sync_all();
}

/// Waits for the run's folder to appear under `out`.
fn run_folder(out: &Path) -> PathBuf {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(dir) = std::fs::read_dir(out)
            .ok()
            .and_then(|mut d| d.find_map(|e| e.ok().map(|e| e.path()).filter(|p| p.is_dir())))
        {
            return dir;
        }
        assert!(
            Instant::now() < until,
            "no run folder under {}",
            out.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A run whose disk fills up while it goes on: the summary is printed, each failed file
/// is named, no file is left truncated, and the run's own exit code (99: a threshold was
/// crossed) is kept and named beside the failure.
#[test]
fn a_disk_that_fills_up_loses_no_summary_and_keeps_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let tmpfs = Tmpfs::mount(&out, "2m");
    if tmpfs.is_none() {
        std::fs::create_dir_all(&out).unwrap();
    }
    let config = common::write_config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 2\nduration = \"3s\"\n\
         [thresholds]\niterations = [\"count<1\"]\n",
    );
    let child = host()
        .args([
            "run",
            "-e",
            "MODE=sleep",
            "-e",
            "SLEEP_MS=5",
            "--quiet",
            "--config",
        ])
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .arg(common::plugin("misbehave"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let folder = run_folder(&out);
    // The disk fills up (or the folder turns read-only) while the run goes on.
    if tmpfs.is_some() {
        fill(&out);
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let result = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(99), "{stdout}\n{stderr}");
    // The summary was printed in full, with the crossed threshold.
    assert!(stdout.contains("iterations"), "{stdout}");
    assert!(stdout.contains("count<1"), "{stdout}");
    // Each file that failed is named with its error, and the run's own code beside it.
    let why = if tmpfs.is_some() {
        "No space left on device"
    } else {
        "Permission denied"
    };
    for file in ["summary.json", "summary.txt", "junit.xml", "report.html"] {
        assert!(
            stderr.contains(&format!("error: cannot write {file}: {why}")),
            "{file}: {stderr}"
        );
    }
    assert!(
        stderr.contains("The run itself ended with exit code 99 (a threshold was crossed)"),
        "{stderr}"
    );
    // Nothing truncated, no temporary file left behind.
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "{name} left behind");
        assert!(
            !["summary.json", "summary.txt", "junit.xml", "report.html"].contains(&name.as_str()),
            "{name} written on a full disk: must be whole or absent"
        );
    }
    drop(tmpfs);
}

/// A results folder that cannot be written at all is refused before any load is sent.
#[test]
fn a_read_only_results_folder_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let tmpfs = Tmpfs::mount(&out, "1m");
    let read_only = match &tmpfs {
        Some(t) => Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&t.0)
            .status()
            .unwrap()
            .success(),
        None => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::create_dir_all(&out).unwrap();
            std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o555)).is_ok()
        }
    };
    assert!(read_only);
    let result = host()
        .args(["run", "--quiet", "--iterations", "3", "--out"])
        .arg(&out)
        .arg(common::plugin("misbehave"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot create"), "{stderr}");
    assert!(stderr.contains(&out.display().to_string()), "{stderr}");
    assert!(stderr.contains("--out"), "{stderr}");
    // No iteration ran: nothing was printed as a summary.
    assert!(
        result.stdout.is_empty() || !String::from_utf8_lossy(&result.stdout).contains("iterations")
    );
    drop(tmpfs);
}
