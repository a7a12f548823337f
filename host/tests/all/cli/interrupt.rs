//! Ctrl-C on the real binary: the first SIGINT stops the run gracefully, a second one
//! interrupts running iterations at once; either way every results file is written
//! with what was gathered and the exit code is 105.

use crate::support as common;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The binary running a plugin, with its stderr lines arriving on a channel.
struct Running {
    child: Child,
    stderr: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    fn start(plugin: &str, config: &Path, env: &[&str], out: &Path) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_host"));
        cmd.arg("run")
            .arg(common::plugin(plugin))
            .arg("--config")
            .arg(config)
            .arg("--out")
            .arg(out);
        for e in env {
            cmd.args(["-e", e]);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stderr: rx,
            seen: Vec::new(),
        }
    }

    /// Waits (at most `limit`) for a stderr line containing `text`.
    fn wait_for(&mut self, text: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(line) = self.stderr.recv_timeout(Duration::from_millis(100)) {
                let found = line.contains(text);
                self.seen.push(line);
                if found {
                    return;
                }
            }
        }
        let _ = self.child.kill();
        panic!(
            "no `{text}` on stderr within {limit:?}; saw:\n{}",
            self.seen.join("\n")
        );
    }

    fn sigint(&self) {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits (at most `limit`) for the exit; returns the code and stdout.
    fn finish(mut self, limit: Duration) -> (i32, String) {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let mut stdout = String::new();
                self.child
                    .stdout
                    .take()
                    .unwrap()
                    .read_to_string(&mut stdout)
                    .unwrap();
                let code = status.code().expect("exited, not killed by the signal");
                return (code, stdout);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the run did not end within {limit:?} of the signal");
            }
            while let Ok(line) = self.stderr.try_recv() {
                self.seen.push(line);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Every file of a results folder exists and is not empty, and so do the histogram
/// logs of `trends`.
fn assert_all_results(dir: &Path, trends: &[&str]) {
    let files = [
        "summary.json",
        "summary.txt",
        "timeseries.jsonl",
        "junit.xml",
        "report.html",
    ];
    let logs = trends.iter().map(|t| format!("histograms/{t}.hlog"));
    for file in files.into_iter().map(String::from).chain(logs) {
        let len = std::fs::metadata(dir.join(&file))
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .len();
        assert!(len > 0, "{file} is empty");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.matches("<svg").count() >= 5,
        "the report has its charts"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_stops_gracefully_and_writes_every_file() {
    let server = common::demo_target(Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 2\nduration = \"120s\"\ngraceful_stop = \"5s\"\n[thresholds]\nhttp_req_failed = [\"rate<0.5\"]\n",
    );
    let out = dir.path().join("out");
    let base = format!("BASE_URL={}", server.base_url());
    let (code, stdout, results) = tokio::task::spawn_blocking(move || {
        let mut run = Running::start("hello", &config, &[&base], &out);
        // Progress lines come from the tick loop, which starts after the signal handler.
        run.wait_for("default: ", Duration::from_secs(120));
        run.wait_for("default: ", Duration::from_secs(30));
        run.sigint();
        let (code, stdout) = run.finish(Duration::from_secs(60));
        (code, stdout, common::only_results_dir(&out))
    })
    .await
    .unwrap();
    server.shutdown().await;

    assert_eq!(code, host::exit_code::INTERRUPTED, "{stdout}");
    assert!(stdout.contains("status: interrupted"), "{stdout}");
    assert_all_results(&results, &["http_req_duration", "iteration_duration"]);
    let summary = common::summary_json(&results);
    common::assert_http_counts_add_up(&summary);
    assert_eq!(summary["status"], "interrupted");
    assert_eq!(summary["stop_reason"]["by"], "interrupted");
    assert!(
        stdout.contains("stopped by: the operator (Ctrl-C or SIGTERM)"),
        "in words: {stdout}"
    );
    assert!(summary["duration_s"].as_f64().unwrap() < 60.0);
    assert!(summary["metrics"]["http_reqs"]["count"].as_f64().unwrap() > 0.0);
    assert_eq!(
        summary["thresholds"][0]["ok"], true,
        "thresholds are judged too"
    );
}

#[test]
fn a_second_sigint_interrupts_running_iterations_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // One VU in a 10-minute sleep with a 10-minute graceful stop: only the second
    // signal can end this run soon.
    let config = common::write_config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"600s\"\ngraceful_stop = \"600s\"\n",
    );
    let out = dir.path().join("out");
    let mut run = Running::start(
        "misbehave",
        &config,
        &["MODE=sleep", "SLEEP_MS=600000"],
        &out,
    );
    run.wait_for("default: ", Duration::from_secs(120));
    run.sigint();
    run.wait_for("stopping", Duration::from_secs(30));
    run.sigint();
    let (code, stdout) = run.finish(Duration::from_secs(60));

    assert_eq!(code, host::exit_code::INTERRUPTED, "{stdout}");
    let results = common::only_results_dir(&out);
    // The only iteration was interrupted, so no trend got a sample.
    assert_all_results(&results, &[]);
    let summary = common::summary_json(&results);
    assert_eq!(summary["status"], "interrupted");
    assert_eq!(summary["scenarios"]["default"]["interrupted"], 1);
    assert_eq!(summary["scenarios"]["default"]["completed"], 0);
    assert!(summary["duration_s"].as_f64().unwrap() < 300.0);
}
