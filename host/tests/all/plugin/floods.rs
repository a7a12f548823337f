//! The host's memory and liveness when something floods it: a WebSocket server that
//! sends 16 MiB frames as fast as loopback carries them, and a plugin that logs 10 KB
//! per iteration with stderr a pipe nobody reads. Each runs the `host` binary as a user
//! would and watches its RSS, its exit code and its summary.

use crate::support as common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_host"))
}

/// A process's peak resident memory so far (VmHWM), in MiB.
fn peak_rss_mib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// Waits for `child` up to `limit`, noting its peak RSS on the way; kills it past the
/// limit (the test then fails on the missing exit code).
fn wait_watching(child: &mut Child, limit: Duration) -> (Option<i32>, u64, Duration) {
    let started = Instant::now();
    let mut peak = 0;
    loop {
        if let Some(rss) = peak_rss_mib(child.id()) {
            peak = peak.max(rss);
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code(), peak, started.elapsed());
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return (None, peak, started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A WebSocket server on 127.0.0.1 that greets each client with `hello`, then sends
/// 16 MiB binary frames until the client goes away. Runs on a thread of its own.
fn flooding_server() -> String {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            // One payload shared by every frame: the server's memory stays small.
            let payload = bytes::Bytes::from(vec![0x5au8; 16 << 20]);
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let payload = payload.clone();
                tokio::spawn(async move {
                    let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                        return;
                    };
                    if ws.send(Message::text("hello")).await.is_err() {
                        return;
                    }
                    while ws.send(Message::Binary(payload.clone())).await.is_ok() {}
                });
            }
        });
    });
    url
}

fn ws_run(dir: &Path, websocket: &str, url: &str) -> (Option<i32>, u64, PathBuf) {
    let config = common::write_config(
        dir,
        &format!(
            "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 4\nduration = \"3s\"\n\
             [limits]\nmemory_mb = 64\n[websocket]\n{websocket}\n"
        ),
    );
    let out = dir.join("results");
    let mut child = host()
        .args(["run", "--quiet", "-e", "RECV_MS=2000", "-e"])
        .arg(format!("URL={url}"))
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .arg(common::plugin("ws_probe"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (code, peak, _) = wait_watching(&mut child, Duration::from_secs(60));
    (code, peak, common::only_results_dir(&out))
}

/// Four sockets flooded with 16 MiB frames once reached 3.6 GB: each held 64 messages
/// whatever their size, and messages up to 16 MiB (`max_body_mb`) were accepted.
#[test]
fn a_websocket_flood_of_16_mib_frames_keeps_the_host_small() {
    let url = flooding_server();

    // Default max_message (1 MiB): each 16 MiB frame ends its socket from its header.
    let dir = tempfile::tempdir().unwrap();
    let (code, peak, results) = ws_run(dir.path(), "", &url);
    let summary = common::summary_json(&results);
    assert_eq!(code, Some(0), "{summary}");
    let errors = summary["plugin_errors"].to_string();
    assert!(
        errors.contains("larger than [websocket] max_message = 1 MiB"),
        "{errors}"
    );
    // The greeting arrives, then the socket fails: a new socket on the next iteration.
    assert!(summary["metrics"]["probe_messages"]["count"].as_f64() >= Some(4.0));
    assert!(summary["metrics"]["probe_protocol"]["count"].as_f64() >= Some(4.0));
    assert!(summary["metrics"]["ws_errors"]["count"].as_f64() >= Some(4.0));
    eprintln!("peak RSS refusing 16 MiB frames: {peak} MiB");
    assert!(peak < 300, "peak RSS {peak} MiB refusing 16 MiB frames");

    // Raised to 16 MiB: the sockets read them, but each holds at most its byte budget
    // (1 MiB) plus one message, not 64 messages (4 × 64 × 16 MiB = 4 GiB).
    let dir = tempfile::tempdir().unwrap();
    let (code, peak, results) = ws_run(dir.path(), "max_message = \"16MiB\"", &url);
    let summary = common::summary_json(&results);
    assert_eq!(code, Some(0), "{summary}");
    let received = summary["metrics"]["ws_msgs_received"]["count"]
        .as_f64()
        .unwrap();
    assert!(received >= 8.0, "{received} messages of 16 MiB received");
    assert!(
        summary["metrics"]["probe_protocol"]["count"].is_null(),
        "{summary}"
    );
    eprintln!("peak RSS reading 16 MiB frames: {peak} MiB, {received} received");
    assert!(
        peak < 600,
        "peak RSS {peak} MiB with 4 sockets flooded by 16 MiB frames"
    );
}

fn log_run(dir: &Path, extra_limits: &str, quiet: bool, stderr: Stdio) -> Child {
    let config = common::write_config(
        dir,
        &format!(
            "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 2\nduration = \"3s\"\n\
             [limits]\n{extra_limits}\n"
        ),
    );
    let mut command = host();
    command.args(["run", "-e", "MODE=log", "-e", "LOG_BYTES=10000"]);
    if quiet {
        command.arg("--quiet");
    }
    command
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(dir.join("results"))
        .arg(common::plugin("misbehave"))
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// With stderr a pipe nobody read, a 3 s run of two VUs logging 10 KB per iteration
/// took 15 s and ignored signals; it wrote 587 MB in 2 s when stderr was read.
#[test]
fn logging_into_a_pipe_nobody_reads_neither_freezes_nor_floods() {
    let dir = tempfile::tempdir().unwrap();
    // The pipe is never read while the run goes on: once its 64 KiB fill, every
    // write to it blocks.
    let mut child = log_run(dir.path(), "", false, Stdio::piped());
    let mut stderr = child.stderr.take().unwrap();
    let (code, _, took) = wait_watching(&mut child, Duration::from_secs(60));
    assert_eq!(code, Some(0), "exit after {took:?}");
    let summary = common::summary_json(&common::only_results_dir(&dir.path().join("results")));
    // VUs never waited on the pipe: thousands of iterations, not a handful.
    let iterations = summary["metrics"]["iterations"]["count"].as_f64().unwrap();
    assert!(iterations > 1000.0, "{iterations} iterations in 3 s");
    let duration = summary["duration_s"].as_f64().unwrap();
    assert!(duration < 4.0, "the 3 s run took {duration} s");
    let log = &summary["log"];
    let n = |k: &str| log[k].as_u64().unwrap();
    // Budget: 10 lines/s per VU, a second's worth at once: at most 2 × (10 + 3 × 10).
    assert!(n("written") <= 80, "{log}");
    assert!(n("written") >= 2, "{log}");
    assert_eq!(
        n("truncated"),
        n("written"),
        "every 10 KB line is cut to 4 KiB"
    );
    assert_eq!(
        n("written") + n("dropped_over_budget") + n("dropped_stderr_blocked"),
        iterations as u64,
        "{log}"
    );
    let warnings = summary["warnings"].to_string();
    assert!(warnings.contains("log_lines_per_s"), "{warnings}");
    // What reached the pipe is bounded by the budget, not by the plugin.
    let mut text = Vec::new();
    stderr.read_to_end(&mut text).unwrap();
    assert!(text.len() < 1 << 20, "{} bytes on stderr", text.len());
}

/// `--quiet` hides the progress only, as k6's -q: the plugin's info lines are still
/// written (they were hidden before, where k6 shows a script's `console.log`).
#[test]
fn quiet_keeps_info_lines_and_a_raised_budget_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let child = log_run(dir.path(), "", true, Stdio::piped());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("] info: "), "{stderr}");
    let summary = common::summary_json(&common::only_results_dir(&dir.path().join("results")));
    assert!(
        summary["log"]["written"].as_u64() > Some(0),
        "{}",
        summary["log"]
    );
    assert_eq!(summary["log"]["hidden_debug"], 0);

    let dir = tempfile::tempdir().unwrap();
    let child = log_run(
        dir.path(),
        "log_lines_per_s = 100\nlog_line_bytes = \"16KiB\"",
        false,
        Stdio::piped(),
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = stderr.lines().filter(|l| l.contains("] info: ")).count() as u64;
    let summary = common::summary_json(&common::only_results_dir(&dir.path().join("results")));
    let log = &summary["log"];
    assert_eq!(log["written"].as_u64(), Some(lines), "{log}");
    assert_eq!(log["truncated"], 0, "10 KB lines fit in 16 KiB");
    // 2 VUs × (100 at once + 3 s × 100), read as fast as written.
    assert!((200..=800).contains(&lines), "{lines} lines");
}
