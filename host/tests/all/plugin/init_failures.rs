//! A VU whose `init()` fails no longer ends the run: the failure is counted with its
//! message, the run goes on with the VUs that started, and the VU tries `init` again
//! with a back-off; `[limits] init_failures = "abort"` ends the run instead, with every
//! results file written.

use crate::support as common;

use common::servers;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The `init` entries of summary.json's plugin errors: (count, message) each.
fn init_errors(json: &serde_json::Value) -> Vec<(u64, String)> {
    json["plugin_errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "init")
        .map(|e| {
            (
                e["count"].as_u64().unwrap(),
                e["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_vu_failing_init_leaves_the_others_running() {
    let config = r#"
        [scenarios.s]
        executor = "constant-vus"
        vus = 3
        duration = "2s"
    "#;
    let run = common::run("misbehave", config, &[("INIT", "fail-vu-2")])
        .await
        .unwrap();
    assert_eq!(run.outcome.exit_code, 0, "{}", run.json);
    assert_eq!(run.json["status"], "completed");
    // VUs 1 and 3 ran back-to-back iterations; VU 2 failed its init at the start and
    // on each retry, its waits doubling from 100 ms: about 5 tries in 2 s.
    let errors = init_errors(&run.json);
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (count, message) = &errors[0];
    assert_eq!(message, "init() of VU 2 failed: init refused");
    assert!((3..=8).contains(count), "{count} tries of init in 2 s");
    // Each try during the run took a turn of VU 2, counted as a failed iteration.
    assert_eq!(run.scenario("s", "failed"), count - 1);
    assert!(
        run.scenario("s", "completed") > 100,
        "{}",
        run.json["scenarios"]
    );
    assert_eq!(
        run.json["metrics"]["plugin_errors"]["count"].as_f64(),
        Some(*count as f64)
    );
    let text = std::fs::read_to_string(run.outcome.results_dir.join("summary.txt")).unwrap();
    assert!(
        text.contains("init in s: init() of VU 2 failed: init refused"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_is_retried_until_the_target_lets_the_vu_in() {
    // Sign-in refused three times, then accepted.
    let calls = Arc::new(AtomicU64::new(0));
    let seen = calls.clone();
    let server = servers::canned(move |_| {
        if seen.fetch_add(1, Ordering::Relaxed) < 3 {
            servers::response("503 Service Unavailable", "", "busy")
        } else {
            servers::response("200 OK", "", "welcome")
        }
    })
    .await;
    let config = r#"
        [scenarios.s]
        executor = "constant-vus"
        vus = 1
        duration = "3s"
    "#;
    let url = format!("{}/signin", server.base_url());
    let run = common::run(
        "misbehave",
        config,
        &[("INIT", "request"), ("INIT_URL", &url)],
    )
    .await
    .unwrap();
    assert_eq!(run.outcome.exit_code, 0, "{}", run.json);
    let errors = init_errors(&run.json);
    assert_eq!(
        errors,
        vec![(3, format!("init() of VU 1 failed: GET {url} answered 503"))]
    );
    assert_eq!(calls.load(Ordering::Relaxed), 4, "no more sign-ins once in");
    // The first try was before the start; the two retries were turns of the VU.
    assert_eq!(run.scenario("s", "failed"), 2);
    assert!(
        run.scenario("s", "completed") > 100,
        "{}",
        run.json["scenarios"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_failures_abort_ends_the_run_with_every_results_file() {
    let config = r#"
        [scenarios.s]
        executor = "constant-vus"
        vus = 2
        duration = "30s"
        [limits]
        init_failures = "abort"
    "#;
    let run = common::run("misbehave", config, &[("INIT", "fail-vu-2")])
        .await
        .unwrap();
    assert_eq!(run.outcome.exit_code, host::exit_code::PLUGIN_ABORT);
    assert_eq!(run.json["status"], "aborted");
    assert_eq!(run.json["stop_reason"]["by"], "plugin_abort");
    let reason = run.json["stop_reason"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("init() of VU 2 failed: init refused")
            && reason.contains("init_failures = \"abort\""),
        "{reason}"
    );
    assert!(run.json["duration_s"].as_f64().unwrap() < 5.0);
    let dir = &run.outcome.results_dir;
    for file in [
        "summary.json",
        "summary.txt",
        "timeseries.jsonl",
        "junit.xml",
        "report.html",
    ] {
        let len = std::fs::metadata(dir.join(file)).unwrap().len();
        assert!(len > 0, "{file} is empty");
    }
    let text = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
    assert!(
        text.contains("stopped by: the plugin: init() of VU 2 failed: init refused"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_vu_failing_init_is_a_run_that_measured_nothing() {
    let config = r#"
        [scenarios.s]
        executor = "constant-vus"
        vus = 2
        duration = "2s"
    "#;
    let run = common::run("misbehave", config, &[("INIT", "panic")])
        .await
        .unwrap();
    assert_eq!(run.outcome.exit_code, host::exit_code::MEASURED_NOTHING);
    assert_eq!(run.json["status"], "failed");
    let failure = run.json["failure"].as_str().unwrap();
    assert!(failure.starts_with("every iteration failed"), "{failure}");
    assert!(failure.contains("init() of VU"), "{failure}");
    assert!(failure.contains("init boom"), "the panic text: {failure}");
    // It ran to its end: the VUs kept trying.
    assert!(run.json["duration_s"].as_f64().unwrap() >= 2.0);
    assert!(init_errors(&run.json).iter().map(|e| e.0).sum::<u64>() >= 4);
}

/// Issue 29, item 7: an `init` that loops made a 3 s run last 20 s and more, the
/// progress past its duration. The VU's instance is lost at every iteration (a stack
/// overflow), so each iteration makes it again; once the run is under way its `init`
/// spins (`INIT=loop-late`), held only by the 10 s CPU budget. It is now cut off at
/// the scenario's end, and the VU is reported as interrupted in `init`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_init_that_loops_is_cut_off_at_the_end_of_the_run() {
    let config = r#"
        [scenarios.s]
        executor = "constant-vus"
        vus = 1
        duration = "2s"
        graceful_stop = "1s"
    "#;
    let started = std::time::Instant::now();
    let run = common::run(
        "misbehave",
        config,
        &[
            ("INIT", "loop-late"),
            ("INIT_LATE_MS", "300"),
            ("MODE", "recurse"),
        ],
    )
    .await
    .unwrap();
    // From the executors' start: before, the spinning init held the VU (and the run)
    // until the CPU budget stopped it, 10 s in.
    let ran = run.json["duration_s"].as_f64().unwrap();
    assert!(
        ran < 3.0,
        "a 2 s run with a graceful stop of 1 s ran {ran} s"
    );
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(9),
        "the whole run, the plugin's compilation included, took {took:?}"
    );
    let errors = init_errors(&run.json);
    assert!(
        errors.iter().any(|(n, m)| *n == 1
            && m.starts_with("init() of VU 1 was interrupted at the end of the scenario")),
        "{errors:?}"
    );
    assert_eq!(
        run.scenario("s", "interrupted"),
        1,
        "{}",
        run.json["scenarios"]
    );
    assert!(
        run.scenario("s", "failed") >= 1,
        "the stack overflows counted"
    );
}
