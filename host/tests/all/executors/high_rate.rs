//! Very high arrival rates: a rate past what one process can start is refused with the
//! limit named; a rate at that limit, against a server that never answers, ends on
//! time with every due iteration counted (started or dropped) and obeys SIGTERM.

use crate::support as common;

use common::servers;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn arrival_config(rate: &str, duration: &str, graceful_stop: &str) -> String {
    format!(
        "[scenarios.default]\nexecutor = \"constant-arrival-rate\"\nrate = {rate}\nduration = \"{duration}\"\n\
         graceful_stop = \"{graceful_stop}\"\npre_allocated_vus = 4\nmax_vus = 4\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_beyond_one_process_is_refused_naming_the_limit() {
    let err = common::run("hello", &arrival_config("1e9", "2s", "1s"), &[])
        .await
        .err()
        .expect("a billion iterations a second is refused");
    let message = format!("{err:#}");
    assert!(message.contains("scenarios.default.rate"), "{message}");
    assert!(message.contains("1000000000 iterations/s"), "{message}");
    assert!(message.contains("1000000/s"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_per_second_against_a_silent_server_ends_on_time_with_exact_counts() {
    let _turn = common::turns::MEASURING.lock().await;
    let server = servers::silent().await;
    let base = server.base_url();
    let started = Instant::now();
    let run = common::run(
        "hello",
        &arrival_config("1000000", "2s", "1s"),
        &[("BASE_URL", &base)],
    )
    .await
    .unwrap();
    let wall = started.elapsed();
    // 2 s of schedule and 1 s of graceful stop; the rest is start-up (compiling the
    // plugin in a debug build) and writing results.
    let ran = run.json["duration_s"].as_f64().unwrap();
    assert!((2.9..4.5).contains(&ran), "ran {ran} s for 2 s + 1 s");
    assert!(wall < Duration::from_secs(30), "{wall:?}");
    // Every due iteration was started or dropped: none lost, none counted twice.
    let started = run.scenario("default", "started");
    let dropped = run.scenario("default", "dropped");
    assert_eq!(started + dropped, 2_000_000, "{}", run.json["scenarios"]);
    // The 4 VUs each started one iteration, which waited on the silent server until the
    // graceful stop ended it.
    assert_eq!(started, 4, "{}", run.json["scenarios"]);
    assert_eq!(run.scenario("default", "interrupted"), 4);
    assert_eq!(run.metric("dropped_iterations", "count"), dropped as f64);
    assert_eq!(server.accepted(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ramp_to_a_million_per_second_counts_every_due_iteration_per_stage() {
    let _turn = common::turns::MEASURING.lock().await;
    let server = servers::silent().await;
    let config = r#"
        [scenarios.ramp]
        executor = "ramping-arrival-rate"
        start_rate = 0
        stages = [{ duration = "1s", target = 1000000 }, { duration = "1s", target = 1000000 }]
        pre_allocated_vus = 2
        graceful_stop = "500ms"
    "#;
    let run = common::run("hello", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    // 0 → 1,000,000/s over 1 s, then 1 s flat: 500,000 + 1,000,000 due.
    let started = run.scenario("ramp", "started");
    let dropped = run.scenario("ramp", "dropped");
    assert_eq!(started + dropped, 1_500_000, "{}", run.json["scenarios"]);
    assert_eq!(started, 2);
    let ran = run.json["duration_s"].as_f64().unwrap();
    assert!((2.4..4.0).contains(&ran), "ran {ran} s for 2 s + 0.5 s");
    // Each stage reached next to nothing of its target: the rate at its end is the
    // target scaled by the share started, and all but 2 of 1.5 million were dropped.
    let stages = run.json["scenarios"]["ramp"]["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 2);
    for stage in stages {
        assert_eq!(stage["target"], 1_000_000);
        assert!(stage["at_end"].as_u64().unwrap() <= 4, "{stage}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_per_second_obeys_sigterm() {
    let _turn = common::turns::MEASURING.lock().await;
    let server = servers::silent().await;
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(dir.path(), &arrival_config("1000000", "120s", "1s"));
    let out = dir.path().join("out");
    let base = format!("BASE_URL={}", server.base_url());
    let out_dir = out.clone();
    let (code, after_signal) = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_host"))
            .args(["run", common::plugin("hello").to_str().unwrap(), "--config"])
            .arg(&config)
            .arg("--out")
            .arg(&out_dir)
            .args(["-e", &base])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Two progress lines: the run is past its start and the scheduler is busy.
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut progress = 0;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if line.contains("default: ") {
                progress += 1;
                if progress == 2 {
                    break;
                }
            }
        }
        assert_eq!(progress, 2, "the run printed its progress");
        std::thread::spawn(move || lines.for_each(drop));
        let signalled = Instant::now();
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return (status.code(), signalled.elapsed());
            }
            if signalled.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                panic!("still running 30 s after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    })
    .await
    .unwrap();
    assert_eq!(code, Some(host::exit_code::INTERRUPTED));
    // The graceful stop is 1 s; the rest is writing the results.
    assert!(after_signal < Duration::from_secs(8), "{after_signal:?}");
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(summary["status"], "interrupted");
    let scenario = &summary["scenarios"]["default"];
    let due = scenario["started"].as_u64().unwrap() + scenario["dropped"].as_u64().unwrap();
    // Stopped after at least 2 s of a 1,000,000/s schedule, long before its end.
    assert!(
        (1_000_000..60_000_000).contains(&due),
        "{due} iterations were due: {scenario}"
    );
}
