//! The closed-model executors schedule exactly what their options say.

use crate::support as common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_vu_iterations_runs_exactly_vus_times_iterations() {
    let config = r#"
        [scenarios.each]
        executor = "per-vu-iterations"
        vus = 3
        iterations = 7
    "#;
    let run = common::run("misbehave", config, &[("MODE", "ok")])
        .await
        .unwrap();
    assert_eq!(run.scenario("each", "completed"), 21);
    assert_eq!(run.metric("iterations", "count"), 21.0);
    assert_eq!(run.scenario("each", "interrupted"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_iterations_runs_exactly_the_pool() {
    let config = r#"
        [scenarios.pool]
        executor = "shared-iterations"
        vus = 4
        iterations = 50
    "#;
    let run = common::run("misbehave", config, &[("MODE", "sleep"), ("SLEEP_MS", "5")])
        .await
        .unwrap();
    assert_eq!(run.scenario("pool", "started"), 50);
    assert_eq!(run.scenario("pool", "completed"), 50);
    assert_eq!(run.metric("iterations", "count"), 50.0);
}

/// Iteration numbers (`iteration-in-scenario`) are unique in the scenario and run
/// from 0 without gaps, with VUs on every VU thread taking them at once; an iteration
/// that asks twice gets its own number twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iteration_numbers_are_unique_and_without_gaps() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u64>::new()));
    let record = seen.clone();
    let server = common::servers::canned(move |path| {
        if let Some(n) = path.strip_prefix("/n/").and_then(|n| n.parse().ok()) {
            record.lock().unwrap().push(n);
        }
        common::servers::response("200 OK", "", "")
    })
    .await;
    let config = r#"
        [scenarios.pool]
        executor = "shared-iterations"
        vus = 8
        iterations = 400
    "#;
    let base = server.base_url();
    let env = [("BASE_URL", base.as_str()), ("MODE", "numbers")];
    let run = common::run("http_probe", config, &env).await.unwrap();
    assert_eq!(run.scenario("pool", "completed"), 400);
    assert_eq!(
        run.scenario("pool", "failed"),
        0,
        "two numbers in one iteration"
    );
    let mut numbers = seen.lock().unwrap().clone();
    numbers.sort_unstable();
    assert_eq!(numbers, (0..400).collect::<Vec<u64>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_duration_cuts_iterations_short() {
    // 100 iterations of 100 ms on one VU cannot fit in 1 s.
    let config = r#"
        [scenarios.slow]
        executor = "per-vu-iterations"
        vus = 1
        iterations = 100
        max_duration = "1s"
        graceful_stop = "0s"
    "#;
    let run = common::run(
        "misbehave",
        config,
        &[("MODE", "sleep"), ("SLEEP_MS", "100")],
    )
    .await
    .unwrap();
    let done = run.scenario("slow", "completed");
    assert!(
        (5..=11).contains(&done),
        "{done} iterations in 1 s of 100 ms each"
    );
    assert!(run.json["duration_s"].as_f64().unwrap() < 3.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramping_vus_reaches_each_stage_target() {
    let config = r#"
        [scenarios.ramp]
        executor = "ramping-vus"
        start_vus = 0
        graceful_ramp_down = "1s"
        stages = [
            { duration = "1s", target = 3 },
            { duration = "1s", target = 3 },
            { duration = "1s", target = 6 },
            { duration = "1s", target = 6 },
            { duration = "1s", target = 2 },
            { duration = "1s", target = 2 },
        ]
    "#;
    let run = common::run(
        "misbehave",
        config,
        &[("MODE", "sleep"), ("SLEEP_MS", "20")],
    )
    .await
    .unwrap();
    let stages = run.json["scenarios"]["ramp"]["stages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(stages.len(), 6);
    // At the end of each plateau the active VUs equal the target.
    for i in [1usize, 3, 5] {
        assert_eq!(
            stages[i]["at_end"], stages[i]["target"],
            "stage {i}: {}",
            stages[i]
        );
    }
    // The ramp to 6 climbs past the previous plateau (the 6th VU starts exactly at its
    // end), and 6 VUs were made up front.
    assert!(stages[2]["peak"].as_u64().unwrap() >= 5, "{}", stages[2]);
    assert_eq!(stages[3]["peak"].as_u64(), Some(6));
    // Ramping down to 2: k6 steps a VU down at i/4 of the stage, so the last step (3 to
    // 2) is at its end: the last sample inside it sees 3 or fewer, the plateau after 2.
    assert!(stages[4]["at_end"].as_u64().unwrap() <= 3, "{}", stages[4]);
    assert_eq!(stages[5]["at_end"].as_u64(), Some(2));
    assert_eq!(run.scenario("ramp", "vus_allocated"), 6);
    assert_eq!(run.metric("vus", "max"), 6.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_scenarios_run_at_once_with_start_times() {
    let config = r#"
        [scenarios.first]
        executor = "per-vu-iterations"
        vus = 2
        iterations = 3
        exec = "default"

        [scenarios.later]
        executor = "constant-vus"
        vus = 1
        duration = "1s"
        start_time = "1s"
        tags = { team = "b" }
    "#;
    let run = common::run(
        "misbehave",
        config,
        &[("MODE", "sleep"), ("SLEEP_MS", "50")],
    )
    .await
    .unwrap();
    assert_eq!(run.scenario("first", "completed"), 6);
    let later = run.scenario("later", "completed");
    assert!(
        (10..=21).contains(&later),
        "{later} iterations of 50 ms in 1 s"
    );
    // The later scenario started after the first: the run lasts start_time + duration.
    let duration = run.json["duration_s"].as_f64().unwrap();
    assert!(duration >= 2.0, "run lasted {duration}s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_stop_interrupts_iterations_that_overrun() {
    let config = r#"
        [scenarios.long]
        executor = "constant-vus"
        vus = 2
        duration = "500ms"
        graceful_stop = "200ms"
    "#;
    let run = common::run(
        "misbehave",
        config,
        &[("MODE", "sleep"), ("SLEEP_MS", "5000")],
    )
    .await
    .unwrap();
    assert_eq!(run.scenario("long", "interrupted"), 2);
    assert_eq!(run.scenario("long", "completed"), 0);
    assert!(run.json["duration_s"].as_f64().unwrap() < 2.0);
}
