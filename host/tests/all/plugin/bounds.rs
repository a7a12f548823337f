//! What a hostile plugin cannot grow: the `hostile` fixture makes a new metric name,
//! tag value, check name or multi-MiB error message on every step, sends a URL of
//! 200 KB or a WebSocket message of 50 MB, and the host (a real `host run` child) keeps
//! its peak RSS under 200 MiB and its results folder under 20 MB, printing a bounded
//! number of warnings and counting the rest in the summary.

use crate::support as common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Peak RSS the host may reach (its own baseline, the plugin's instances and what the
/// plugin makes it keep).
const MAX_RSS_KIB: u64 = 200 * 1024;

/// Most bytes a results folder may hold.
const MAX_RESULTS_BYTES: u64 = 20 << 20;

/// What one hostile run left.
struct Hostile {
    peak_rss_kib: u64,
    results_bytes: u64,
    summary: serde_json::Value,
    stderr: String,
    _dir: tempfile::TempDir,
}

/// `host run hostile` with `MODE=mode` for `seconds`, `vus` VUs, extra `env` and
/// config `extra`; its peak RSS read from /proc while it runs.
fn hostile(mode: &str, seconds: u32, vus: u32, env: &[(&str, &str)], extra: &str) -> Hostile {
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(
        dir.path(),
        &format!(
            "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = {vus}\nduration = \"{seconds}s\"\n{extra}"
        ),
    );
    let out = dir.path().join("out");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_host"));
    cmd.arg("run")
        .arg(common::plugin("hostile"))
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .args(["--quiet", "-e"])
        .arg(format!("MODE={mode}"));
    for (k, v) in env {
        cmd.arg("-e").arg(format!("{k}={v}"));
    }
    let stderr_path = dir.path().join("stderr.txt");
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let status_file = PathBuf::from(format!("/proc/{}/status", child.id()));
    let mut peak = 0;
    let deadline = Instant::now() + Duration::from_secs(u64::from(seconds) + 60);
    loop {
        // VmHWM is the high-water mark: the last reading before the exit is the peak.
        if let Some(hwm) = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|s| kib(&s, "VmHWM:"))
        {
            peak = peak.max(hwm);
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "the run did not end");
        std::thread::sleep(Duration::from_millis(100));
    }
    let results = common::only_results_dir(&out);
    eprintln!(
        "MODE={mode}: peak RSS {} MiB, results folder {} KiB",
        peak / 1024,
        size_of(&results) / 1024
    );
    Hostile {
        peak_rss_kib: peak,
        results_bytes: size_of(&results),
        summary: common::summary_json(&results),
        stderr: std::fs::read_to_string(&stderr_path).unwrap(),
        _dir: dir,
    }
}

fn kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

fn size_of(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                size_of(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

impl Hostile {
    fn assert_bounded(&self) {
        assert!(
            self.peak_rss_kib < MAX_RSS_KIB,
            "peak RSS {} MiB\n{}",
            self.peak_rss_kib / 1024,
            self.stderr
        );
        assert!(
            self.results_bytes < MAX_RESULTS_BYTES,
            "results folder {} bytes",
            self.results_bytes
        );
        let warnings = self.stderr.matches("warning:").count();
        assert!(warnings < 300, "{warnings} warnings printed");
    }

    fn warnings(&self) -> Vec<String> {
        self.summary["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_string())
            .collect()
    }

    fn iterations(&self) -> f64 {
        self.summary["metrics"]["iterations"]["count"]
            .as_f64()
            .unwrap_or(0.0)
    }
}

#[test]
fn new_metric_names_past_the_cap_cost_one_warning_and_a_count() {
    let run = hostile("metric-names", 6, 2, &[("COUNT", "100000")], "");
    run.assert_bounded();
    assert!(
        run.iterations() >= 2.0,
        "{}",
        run.summary["metrics"]["iterations"]
    );
    let refused: Vec<String> = run
        .warnings()
        .into_iter()
        .filter(|w| w.contains("samples of custom metrics were ignored"))
        .collect();
    assert_eq!(refused.len(), 1, "{:?}", run.warnings());
    let n: u64 = refused[0].split(' ').next().unwrap().parse().unwrap();
    assert!(n > 100_000, "{n} refused");
    assert_eq!(
        run.stderr.matches("too many custom metrics").count(),
        1,
        "{}",
        run.stderr
    );
}

#[test]
fn new_tag_values_fold_into_an_other_series() {
    let run = hostile("tag-values", 6, 2, &[("COUNT", "10000")], "");
    run.assert_bounded();
    assert!(run.iterations() >= 4.0);
    assert!(
        run.warnings().iter().any(|w| w.contains("{series:other}")),
        "{:?}",
        run.warnings()
    );
    // Every sample is still counted, in its series or in `other`.
    let latency = run.summary["metrics"]["latency_ms"]["count"]
        .as_f64()
        .unwrap();
    assert_in_iterations(latency, &run, 2);
    assert_eq!(
        run.stderr.matches("metric series").count(),
        1,
        "{}",
        run.stderr
    );
}

#[test]
fn new_check_names_fold_into_one_other_check() {
    let run = hostile("check-names", 6, 2, &[("COUNT", "10000")], "");
    run.assert_bounded();
    let checks = run.summary["checks"].as_array().unwrap();
    assert!(checks.len() <= 10_001, "{} checks listed", checks.len());
    let other = checks
        .iter()
        .find(|c| c["name"] == "other")
        .expect("the folded checks are one row");
    assert!(other["passes"].as_u64().unwrap() > 0);
    let total: u64 = checks
        .iter()
        .map(|c| c["passes"].as_u64().unwrap() + c["fails"].as_u64().unwrap())
        .sum();
    assert_in_iterations(total as f64, &run, 2);
}

/// `samples` is 10,000 per iteration: of those counted, and at most one more per VU
/// (one cut off at the end).
fn assert_in_iterations(samples: f64, run: &Hostile, vus: u32) {
    let done = run.iterations() * 10_000.0;
    assert!(
        samples >= done && samples <= done + f64::from(vus) * 10_000.0,
        "{samples} samples for {} iterations",
        run.iterations()
    );
}

#[test]
fn huge_error_messages_are_kept_cut() {
    let run = hostile("errors", 6, 2, &[], "[limits]\nmemory_mb = 64\n");
    run.assert_bounded();
    let errors = run.summary["plugin_errors"].as_array().unwrap();
    assert!(!errors.is_empty());
    for e in errors {
        let message = e["message"].as_str().unwrap();
        assert!(message.len() < 5000, "{} bytes kept", message.len());
        assert!(
            message.ends_with("(cut: 4194304 bytes in all)"),
            "{}",
            &message[message.len() - 60..]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_kb_url_is_named_by_its_first_part() {
    let server = common::servers::canned(|_| common::servers::response("200 OK", "", "ok")).await;
    let url = server.base_url();
    let run = tokio::task::spawn_blocking(move || {
        hostile(
            "long-url",
            4,
            1,
            &[("URL", url.as_str())],
            &format!("[targets]\nallow = [\"{url}\"]\n"),
        )
    })
    .await
    .unwrap();
    run.assert_bounded();
    // 60 KB URLs are sent and named by their first part.
    let endpoints = run.summary["endpoints"].as_array().unwrap();
    assert!(!endpoints.is_empty(), "{}", run.summary["http"]);
    for e in endpoints {
        let name = e["name"].as_str().unwrap();
        assert!(
            name.len() < 400,
            "an endpoint named by {} bytes",
            name.len()
        );
    }
    // 200 KB ones are refused, and the error quoting them is kept cut.
    let errors = run.summary["plugin_errors"].as_array().unwrap();
    assert!(!errors.is_empty());
    for e in errors {
        assert!(e["message"].as_str().unwrap().len() < 5000, "{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_send_past_max_message_is_refused() {
    use futures::StreamExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let received = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = received.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                    return;
                };
                while let Some(Ok(m)) = ws.next().await {
                    counted.fetch_add(m.len() as u64, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    let allow = url.replace("ws://", "http://");
    let run = tokio::task::spawn_blocking(move || {
        hostile(
            "ws-send",
            4,
            1,
            &[("URL", url.as_str())],
            &format!("[targets]\nallow = [\"{allow}\"]\n[limits]\nmemory_mb = 128\n"),
        )
    })
    .await
    .unwrap();
    run.assert_bounded();
    let errors = run.summary["plugin_errors"].as_array().unwrap();
    assert!(
        errors.iter().any(|e| e["message"]
            .as_str()
            .unwrap()
            .contains("larger than [websocket] max_message = 1 MiB")),
        "{errors:?}"
    );
    assert!(received.load(std::sync::atomic::Ordering::Relaxed) < 1 << 20);
    // Each refused send is one of the run's socket errors (issue 49 item 17: it was
    // counted nowhere but in the plugin's errors).
    let ws_errors = run.summary["metrics"]["ws_errors"]["count"].as_f64();
    assert!(ws_errors >= Some(1.0), "{}", run.summary["metrics"]);
}

#[test]
fn log_lines_reach_the_terminal_with_control_characters_escaped() {
    let run = hostile("log-controls", 1, 1, &[], "");
    assert!(
        run.stderr
            .contains("before\\x1b[2J\\x1b]0;pwned\\x07\\rafter"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains('\u{1b}'),
        "a raw escape reached stderr"
    );
    assert!(!run.stderr.contains('\r'));
}
