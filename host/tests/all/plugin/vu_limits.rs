//! Per-VU limits: a runaway loop, a memory bomb and a deep recursion each stop only
//! that VU's iteration, are counted with a reason, and the other VUs carry on.

use crate::support as common;

/// Runs a misbehaving scenario beside a well-behaved one and returns the summary.
async fn beside_good_vus(mode: &str, limits: &str) -> common::Finished {
    let config = format!(
        r#"
        [scenarios.bad]
        executor = "per-vu-iterations"
        vus = 1
        iterations = 3
        env = {{ MODE = "{mode}" }}

        [scenarios.good]
        executor = "per-vu-iterations"
        vus = 2
        iterations = 20
        env = {{ MODE = "sleep", SLEEP_MS = "10" }}

        [limits]
        {limits}
        "#
    );
    common::run("misbehave", &config, &[]).await.unwrap()
}

fn single_error(run: &common::Finished) -> (String, String, u64) {
    let errors = run.json["plugin_errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = &errors[0];
    (
        e["kind"].as_str().unwrap().to_string(),
        e["message"].as_str().unwrap().to_string(),
        e["count"].as_u64().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runaway_loop_is_stopped_by_the_cpu_budget() {
    let run = beside_good_vus("loop", "cpu_per_call = \"300ms\"").await;
    assert_eq!(run.scenario("bad", "failed"), 3);
    assert_eq!(run.scenario("good", "completed"), 40);
    assert_eq!(run.scenario("good", "failed"), 0);
    let (kind, message, count) = single_error(&run);
    assert_eq!(kind, "cpu_limit");
    assert!(message.contains("CPU budget (300ms)"), "{message}");
    assert_eq!(count, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bomb_is_stopped_by_the_memory_cap() {
    let run = beside_good_vus("oom", "memory_mb = 16").await;
    assert_eq!(run.scenario("bad", "failed"), 3);
    assert_eq!(run.scenario("good", "completed"), 40);
    let (kind, message, _) = single_error(&run);
    assert_eq!(kind, "memory_limit", "{message}");
    assert!(message.contains("memory allocation"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_recursion_is_stopped_by_the_stack_limit() {
    let run = beside_good_vus("recurse", "").await;
    assert_eq!(run.scenario("bad", "failed"), 3);
    assert_eq!(run.scenario("good", "completed"), 40);
    let (kind, message, _) = single_error(&run);
    assert_eq!(kind, "stack_overflow", "{message}");
    assert!(
        message.contains("`misbehave::recurse` recursed"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_iteration_is_stopped_by_the_wall_clock_timeout() {
    let run = beside_good_vus(
        "sleep\", SLEEP_MS = \"60000",
        "iteration_timeout = \"300ms\"",
    )
    .await;
    assert_eq!(run.scenario("bad", "failed"), 3);
    assert_eq!(run.scenario("good", "completed"), 40);
    let (kind, message, _) = single_error(&run);
    assert_eq!(kind, "timeout");
    assert!(message.contains("300ms"), "{message}");
    assert!(run.json["duration_s"].as_f64().unwrap() < 10.0);
}

#[test]
fn a_sleep_past_an_hour_is_cut_to_it_and_said_once_per_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 3\nduration = \"1s\"\n\
         graceful_stop = \"0s\"\nenv = { MODE = \"sleep\", SLEEP_MS = \"7200000\" }\n",
    );
    let out = dir.path().join("results");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_host"))
        .args([
            "run",
            common::plugin("misbehave").to_str().unwrap(),
            "--config",
        ])
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Three VUs asked for two hours: one line says so.
    let said = "the plugin asked to sleep 7200 s; a sleep lasts at most 3600 s";
    assert_eq!(stderr.matches(said).count(), 1, "{stderr}");
    let summary = common::summary_json(&common::only_results_dir(&out));
    let warnings: Vec<&str> = summary["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains("longer than the longest allowed (3600 s)"))
        .collect();
    assert_eq!(
        warnings,
        ["3 sleeps longer than the longest allowed (3600 s) were cut to it (the longest asked: 7200 s)"]
    );
}
