//! The open model end to end: arrival-rate scenarios of the `hello` plugin run in this
//! process against the embedded demo target, judged by counts in `summary.json` (how
//! many iterations were due, started, completed, interrupted, dropped), not by timing.

use crate::support as common;

use demo_target::{DemoConfig, DemoServer, Faults};
use host::Overrides;
use host::{run, RunOutcome, RunRequest};
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Each run loads the machine for seconds; one at a time keeps their counts apart on a
/// small, shared CI machine (with every other test that measures).
use common::turns::MEASURING as ONE_AT_A_TIME;

/// A run of `hello` (one `GET /` per iteration) with `config` (a run.toml) against
/// `target`, and its summary.json.
async fn run_hello(target: &DemoServer, config: &str) -> (RunOutcome, Value) {
    run_plugin("hello", vec![("BASE_URL", target.base_url())], config).await
}

/// A run of plugin `name` with `env` and `config` (a run.toml), and its summary.json.
async fn run_plugin(name: &str, env: Vec<(&str, String)>, config: &str) -> (RunOutcome, Value) {
    let dir = tempfile::tempdir().expect("temp dir");
    let config_path = dir.path().join("run.toml");
    std::fs::write(&config_path, config).expect("write run.toml");
    let outcome = run(RunRequest {
        plugin: PathBuf::from(host::PLUGINS_DIR).join(format!("{name}.wasm")),
        config: Some(config_path),
        overrides: Overrides {
            env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            ..Default::default()
        },
        out: dir.path().join("results"),
        quiet: true,
        handle_signals: false,
        watch: None,
        live: Default::default(),
        remote: None,
    })
    .await
    .expect("the run completes");
    let json = std::fs::read_to_string(outcome.results_dir.join("summary.json"))
        .expect("summary.json written");
    let summary: Value = serde_json::from_str(&json).expect("summary.json is JSON");
    common::assert_http_counts_add_up(&summary);
    (outcome, summary)
}

async fn target(faults: Faults) -> DemoServer {
    DemoServer::start(
        "127.0.0.1:0".parse().unwrap(),
        DemoConfig {
            faults,
            ..DemoConfig::default()
        },
    )
    .await
    .expect("demo target starts")
}

/// A number at `path` (keys separated by `/`) of the summary.
fn num(summary: &Value, path: &str) -> f64 {
    let mut v = summary;
    for key in path.split('/') {
        v = &v[key];
    }
    v.as_f64()
        .unwrap_or_else(|| panic!("summary.json has no number at {path}: {v}"))
}

/// The figures that explain a failed assertion.
fn brief(summary: &Value) -> String {
    let metrics = &summary["metrics"];
    format!(
        "scenarios: {}; iteration_duration: {}; iteration_start_lag: {}; vus: {}; http: {}",
        summary["scenarios"],
        metrics["iteration_duration"],
        metrics["iteration_start_lag"],
        metrics["vus"],
        summary["http"]
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn constant_rate_of_2000_per_second_starts_every_iteration_when_vus_suffice() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let target = target(Faults::default()).await;
    // `GET /health` (the smallest answer) keeps the debug build's cost per iteration low.
    let env = vec![
        ("MODE", "request".to_string()),
        ("URL", format!("{}/health", target.base_url())),
    ];
    let (_, s) = run_plugin(
        "misbehave",
        env,
        r#"
[scenarios.open]
executor = "constant-arrival-rate"
rate = 2000
duration = "5s"
pre_allocated_vus = 1000
max_vus = 2000
graceful_stop = "5s"
"#,
    )
    .await;
    target.shutdown().await;

    let started = num(&s, "scenarios/open/started");
    let dropped = num(&s, "scenarios/open/dropped");
    assert_eq!(
        dropped,
        0.0,
        "no iteration dropped while VUs were free; {}",
        brief(&s)
    );
    assert!(
        (started - 10_000.0).abs() <= 100.0,
        "{started} iterations started, 10,000 were due"
    );
    assert_eq!(
        num(&s, "scenarios/open/completed") + num(&s, "scenarios/open/interrupted"),
        started
    );
    // Every started iteration measured its lag and its latency from when it was due.
    assert_eq!(num(&s, "metrics/iteration_start_lag/count"), started);
    assert_eq!(num(&s, "metrics/iteration_latency/count"), started);
    // `vus` is busy VUs, below the 1,000 allocated (`vus_max`).
    assert_eq!(num(&s, "metrics/vus_max/max"), 1000.0);
    assert!(
        num(&s, "metrics/vus/max") < 1000.0,
        "vus counts busy VUs only"
    );
    // No warning but one: on a CI machine whose two cores other test binaries share,
    // this process may start iterations late, and then the run rightly names the
    // generator (sweep/saturation.rs tests that verdict); nothing may blame the target or
    // the VU pool.
    let others: Vec<_> = s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| {
            !w.as_str()
                .unwrap()
                .contains("iterations started late on idle VUs")
        })
        .collect();
    assert!(others.is_empty(), "{others:?}");
    assert_ne!(s["bottleneck"]["who"], "target", "{}", s["bottleneck"]);
    assert_ne!(s["bottleneck"]["who"], "vu_pool", "{}", s["bottleneck"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_target_makes_the_scenario_drop_what_it_cannot_start_and_end_on_time() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let target = target(Faults {
        latency: Duration::from_secs(2),
        ..Faults::default()
    })
    .await;
    let began = Instant::now();
    let (outcome, s) = run_hello(
        &target,
        r#"
[scenarios.overload]
executor = "constant-arrival-rate"
rate = 500
duration = "10s"
pre_allocated_vus = 10
max_vus = 50
graceful_stop = "3s"
"#,
    )
    .await;
    let wall = began.elapsed();
    target.shutdown().await;

    let count = |key: &str| num(&s, &format!("scenarios/overload/{key}"));
    let (started, completed, interrupted, dropped) = (
        count("started"),
        count("completed"),
        count("interrupted"),
        count("dropped"),
    );
    assert_eq!(
        completed + interrupted + dropped,
        5000.0,
        "every due iteration is accounted for: {completed} completed, {interrupted} interrupted, {dropped} dropped"
    );
    assert_eq!(started + dropped, 5000.0);
    // 50 VUs busy 2 s per iteration start at most 50 × 6 in 10 s (plus one round).
    assert!(started <= 50.0 * 6.0, "{started} started");
    assert!(dropped >= 4_650.0, "{dropped} dropped");
    assert_eq!(num(&s, "metrics/dropped_iterations/count"), dropped);
    assert_eq!(count("vus_allocated"), 50.0, "grew from 10 to max_vus");
    assert_eq!(num(&s, "metrics/vus_max/max"), 50.0);
    assert_eq!(num(&s, "metrics/vus/max"), 50.0, "all 50 busy at some tick");
    // Latency counted from when each was due is at least the target's 2 s (less the
    // histogram's 0.1 % resolution).
    assert!(
        num(&s, "metrics/iteration_latency/min") >= 1998.0,
        "{}; iteration_latency: {}; http_req_duration: {}",
        brief(&s),
        s["metrics"]["iteration_latency"],
        s["metrics"]["http_req_duration"]
    );
    // Two warnings: the drops, and the verdict on who ran out. Every VU was busy waiting
    // on a target that answers in 2 s throughout: the VU pool was too small for its
    // latency (500/s × 2 s = 1,000 VUs, of 50), not the generator, which idled. Both
    // warnings give the same count of drops.
    let warnings = s["warnings"].as_array().expect("warnings list");
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    let counted = format!("{dropped} of 5000");
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.contains("overload") && warning.contains(&counted),
        "{warning}"
    );
    assert_eq!(s["generator_saturated"]["saturated"], false, "{s}");
    assert_eq!(s["generator_saturated"]["evidence"], serde_json::json!([]));
    assert_eq!(s["target_saturated"]["saturated"], true);
    let evidence = &s["target_saturated"]["evidence"][0];
    assert_eq!(evidence["signal"], "vus_exhausted", "{evidence}");
    assert_eq!(evidence["dropped"].as_f64().unwrap(), dropped, "{evidence}");
    assert_eq!(evidence["latency_rose"], false, "{evidence}");
    assert_eq!(evidence["limit"], 50.0, "{evidence}");
    // 500/s offered (over the run's whole length) × 2 s an iteration.
    assert!(evidence["observed"].as_f64().unwrap() > 300.0, "{evidence}");
    assert_eq!(s["bottleneck"]["who"], "vu_pool", "{}", s["bottleneck"]);
    let verdict = warnings[1].as_str().unwrap();
    assert!(!verdict.contains("lower bound"), "{verdict}");
    assert!(verdict.contains("not the load generator"), "{verdict}");
    assert!(verdict.contains(&counted), "{verdict}");
    assert!(verdict.contains("Raise max_vus"), "{verdict}");
    // The schedule ends at 10 s and running iterations get 3 s more, not a queue's worth.
    assert!(
        outcome.summary.duration_s < 10.0 + 3.0 + 2.0,
        "the run took {:.1}s",
        outcome.summary.duration_s
    );
    assert!(wall < Duration::from_secs(45), "{wall:?} in all");
    assert_eq!(num(&s, "http/in_flight"), 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iterations_still_running_after_graceful_stop_are_interrupted_and_leave_no_request_in_flight(
) {
    let _serial = ONE_AT_A_TIME.lock().await;
    let target = target(Faults {
        latency: Duration::from_secs(5),
        ..Faults::default()
    })
    .await;
    let (outcome, s) = run_hello(
        &target,
        r#"
[scenarios.stuck]
executor = "constant-arrival-rate"
rate = 10
duration = "2s"
pre_allocated_vus = 5
max_vus = 5
graceful_stop = "1s"
"#,
    )
    .await;
    target.shutdown().await;

    let count = |key: &str| num(&s, &format!("scenarios/stuck/{key}"));
    // 5 VUs take the first 5 iterations, which wait 5 s for the target; the other 15
    // of the 20 due find no idle VU.
    assert_eq!(count("started"), 5.0, "{}", brief(&s));
    assert_eq!(count("dropped"), 15.0);
    assert_eq!(
        count("interrupted"),
        5.0,
        "stopped at 2 s + 1 s of graceful stop"
    );
    assert_eq!(count("completed"), 0.0);
    assert_eq!(num(&s, "metrics/interrupted_iterations/count"), 5.0);
    assert_eq!(
        num(&s, "http/in_flight"),
        0.0,
        "abandoned requests are not in flight"
    );
    assert!(
        outcome.summary.duration_s < 2.0 + 1.0 + 1.5,
        "the run took {:.1}s",
        outcome.summary.duration_s
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramp_from_0_to_1000_per_second_over_4s_starts_about_2000() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let target = target(Faults::default()).await;
    let env = vec![
        ("MODE", "request".to_string()),
        ("URL", format!("{}/health", target.base_url())),
    ];
    let (_, s) = run_plugin(
        "misbehave",
        env,
        r#"
[scenarios.ramp]
executor = "ramping-arrival-rate"
start_rate = 0
stages = [{ duration = "4s", target = 1000 }]
pre_allocated_vus = 1000
max_vus = 2000
graceful_stop = "5s"
"#,
    )
    .await;
    target.shutdown().await;

    let started = num(&s, "scenarios/ramp/started");
    assert!(
        (started - 2000.0).abs() <= 40.0,
        "{started} iterations started, 2,000 were due"
    );
    assert_eq!(
        started + num(&s, "scenarios/ramp/dropped"),
        2000.0,
        "the schedule holds 2,000"
    );
    // The stage reached its target rate at its end unless iterations were dropped.
    let stage = &s["scenarios"]["ramp"]["stages"][0];
    assert_eq!(stage["target"], 1000);
    if num(&s, "scenarios/ramp/dropped") == 0.0 {
        assert_eq!(stage["at_end"], 1000, "{stage}");
    }
    assert!(stage["peak"].as_u64().unwrap() >= 1, "{stage}");
}

/// k6's rule: per-second rates are over the run's duration. At 2/s for 3 s the last
/// iteration is due at 2.5 s and done soon after; the scenario still lasts 3 s, so
/// `http_reqs` reads 2/s, not 6 / 2.5 s = 2.4/s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rates_are_over_the_whole_duration_not_the_time_to_the_last_iteration() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let target = target(Faults::default()).await;
    let (_, s) = run_hello(
        &target,
        r#"
[scenarios.open]
executor = "constant-arrival-rate"
rate = 2
duration = "3s"
pre_allocated_vus = 2
"#,
    )
    .await;
    target.shutdown().await;
    let duration = num(&s, "duration_s");
    let count = num(&s, "metrics/http_reqs/count");
    let rate = num(&s, "metrics/http_reqs/rate");
    assert_eq!(count, 6.0, "{}", brief(&s));
    assert!(
        (3.0..4.0).contains(&duration),
        "the run lasts its 3 s: {duration}"
    );
    assert!(
        (rate - count / duration).abs() < 1e-6 && rate <= 2.0,
        "{rate}/s over {duration} s"
    );
}

/// Checks the accounting of scenario `name` in `s` against `due` iterations and the
/// requests `served` by the target (one per iteration): every due iteration started or
/// dropped once, every started one completed, and each made the one request the server
/// counted. Returns (started, dropped).
fn assert_exact(s: &Value, name: &str, due: f64, served: u64) -> (f64, f64) {
    let count = |key: &str| num(s, &format!("scenarios/{name}/{key}"));
    let (started, dropped) = (count("started"), count("dropped"));
    assert_eq!(
        started + dropped,
        due,
        "due = started + dropped; {}",
        brief(s)
    );
    assert_eq!(num(s, "metrics/dropped_iterations/count"), dropped);
    assert_eq!(count("completed"), started, "{}", brief(s));
    assert_eq!(count("interrupted") + count("failed"), 0.0, "{}", brief(s));
    assert_eq!(num(s, "metrics/http_reqs/count"), started);
    assert_eq!(
        served as f64, started,
        "the server saw one request per iteration"
    );
    assert_eq!(num(s, "metrics/iteration_start_lag/count"), started);
    (started, dropped)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saturated_and_at_a_fixed_rate_every_due_iteration_is_counted_once_and_seen_by_the_server()
{
    let _serial = ONE_AT_A_TIME.lock().await;
    // Saturated: 100,000/s offered to 20 VUs, far more than they can do, so nearly all
    // are dropped: due = started + dropped all the same, and the server counts exactly
    // the started ones.
    let server = target(Faults::default()).await;
    let (_, s) = run_hello(
        &server,
        r#"
[scenarios.flood]
executor = "constant-arrival-rate"
rate = 100000
duration = "2s"
pre_allocated_vus = 20
max_vus = 20
graceful_stop = "5s"
"#,
    )
    .await;
    let served = server.requests_served();
    server.shutdown().await;
    let (started, dropped) = assert_exact(&s, "flood", 200_000.0, served);
    assert!(started >= 100.0, "{}", brief(&s));
    assert!(dropped >= 100_000.0, "{}", brief(&s));
    assert_eq!(num(&s, "metrics/vus_max/max"), 20.0, "never past max_vus");

    // A fixed rate against a target answering in 20 ms (10 VUs busy at 500/s), from
    // one VU: started on idle VUs, and on VUs made while it runs (the iterations due
    // while none is idle and one is made are dropped).
    let server = target(Faults {
        latency: Duration::from_millis(20),
        ..Faults::default()
    })
    .await;
    let (_, s) = run_hello(
        &server,
        r#"
[scenarios.steady]
executor = "constant-arrival-rate"
rate = 500
duration = "3s"
pre_allocated_vus = 1
max_vus = 200
graceful_stop = "5s"
"#,
    )
    .await;
    let served = server.requests_served();
    server.shutdown().await;
    let (started, _) = assert_exact(&s, "steady", 1_500.0, served);
    assert!(started >= 1_350.0, "{}", brief(&s));
    let made = num(&s, "scenarios/steady/vus_allocated");
    assert!((10.0..=200.0).contains(&made), "VUs made as needed: {made}");
}
