//! A hostile reflection service cannot grow the host: a `host run` child of the
//! bundled `grpc-call` plugin asks a grpcio server (tests/fixtures/grpc/
//! hostile_reflection.py) that answers each reflection question with endless 1 MiB
//! messages after a valid first one, or with one 12 MiB message. The host reads the
//! first answer only, bounded, and fails the lookup with a clear error; its peak RSS
//! (VmHWM, read from /proc while it runs) stays under 150 MiB. Before the fix every
//! message was kept until the deadline (~200 MiB/s); the child is killed past 600 MiB
//! so that a regression fails fast instead of filling the machine.

use crate::support as common;
use crate::support::grpc_server::python;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Peak RSS the host may reach while refusing the answers.
const MAX_RSS_KIB: u64 = 150 * 1024;

/// Past this the child is killed: the test has failed already.
const KILL_RSS_KIB: u64 = 600 * 1024;

/// The hostile server, killed when dropped.
struct Hostile {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    port: u16,
}

impl Hostile {
    fn start(mode: &str) -> Self {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/grpc/hostile_reflection.py");
        let mut child = Command::new(python())
            .arg(script)
            .arg(mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let port = line
            .strip_prefix("PORT ")
            .unwrap_or_else(|| panic!("server said {line:?}"))
            .trim()
            .parse()
            .unwrap();
        Self {
            child,
            stdin,
            stdout,
            port,
        }
    }

    /// MiB the server has sent so far.
    fn sent_mib(&mut self) -> u64 {
        writeln!(self.stdin).unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.trim().parse().unwrap()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the host run left: its peak RSS, its summary (none when it was killed) and
/// its stderr.
struct Outcome {
    peak_kib: u64,
    summary: Option<serde_json::Value>,
    stderr: String,
}

/// `host run grpc-call` with one VU, two iterations, asking `port` by reflection.
fn run_against(port: u16) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"shared-iterations\"\nvus = 1\niterations = 2\n\
         max_duration = \"20s\"\n",
    );
    let out = dir.path().join("out");
    let stderr_path = dir.path().join("stderr.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_host"))
        .arg("run")
        .arg(common::plugin("grpc_call"))
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .arg("-e")
        .arg(format!("GRPC_TARGET=127.0.0.1:{port}"))
        .args(["-e", "GRPC_METHOD=loadtest.test.Counter/Echo"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let status_file = PathBuf::from(format!("/proc/{}/status", child.id()));
    let (mut peak, mut killed) = (0, false);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(hwm) = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|s| vm_hwm_kib(&s))
        {
            peak = peak.max(hwm);
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if peak > KILL_RSS_KIB || Instant::now() > deadline {
            killed = true;
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    eprintln!("host peak RSS {} MiB", peak / 1024);
    Outcome {
        peak_kib: peak,
        summary: (!killed).then(|| common::summary_json(&common::only_results_dir(&out))),
        stderr,
    }
}

fn vm_hwm_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The plugin errors of the run, as one text.
fn errors(outcome: &Outcome) -> String {
    let summary = outcome.summary.as_ref().unwrap_or_else(|| {
        panic!(
            "the host was killed (peak RSS {} MiB)\n{}",
            outcome.peak_kib / 1024,
            outcome.stderr
        )
    });
    summary["plugin_errors"].to_string()
}

#[test]
fn an_endless_reflection_answer_is_read_to_its_first_message_only() {
    let mut server = Hostile::start("endless");
    let started = Instant::now();
    let run = run_against(server.port);
    let took = started.elapsed();
    let errors = errors(&run);
    assert!(
        errors.contains("reflection: hostile: nothing here (code 5)"),
        "{errors}\n{}",
        run.stderr
    );
    assert!(
        run.peak_kib < MAX_RSS_KIB,
        "peak RSS {} MiB",
        run.peak_kib / 1024
    );
    // Two lookups, each stopped at its first message: not a deadline's worth.
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let sent = server.sent_mib();
    eprintln!("the server sent {sent} MiB");
}

#[test]
fn an_oversized_reflection_answer_is_refused_by_its_length() {
    let server = Hostile::start("huge");
    let run = run_against(server.port);
    let errors = errors(&run);
    assert!(
        errors.contains("the reflection service's answer is 12582") && errors.contains("over"),
        "{errors}\n{}",
        run.stderr
    );
    assert!(
        run.peak_kib < MAX_RSS_KIB,
        "peak RSS {} MiB",
        run.peak_kib / 1024
    );
}
