//! `host run` of the real example plugins against the embedded demo target: what the
//! server saw must match what the host reports.

use crate::support as common;

use demo_target::{DemoConfig, DemoServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notes_requests_seen_by_server_equal_http_reqs() {
    let server = DemoServer::start("127.0.0.1:0".parse().unwrap(), DemoConfig::default())
        .await
        .unwrap();
    let config = r#"
        [scenarios.browse]
        executor = "constant-vus"
        vus = 4
        duration = "3s"
        exec = "browse"
        graceful_stop = "10s"
    "#;
    let run = common::run("notes", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let served = server.requests_served();
    server.shutdown().await;

    let http_reqs = run.metric("http_reqs", "count");
    assert!(http_reqs > 0.0, "no requests were made: {}", run.json);
    assert_eq!(
        http_reqs as u64, served,
        "host counted {http_reqs}, server served {served}"
    );
    assert_eq!(run.json["http"]["sent"].as_u64(), Some(served));
    assert_eq!(run.json["http"]["received"].as_u64(), Some(served));
    assert_eq!(run.json["http"]["failed"].as_u64(), Some(0));
    // 4 sign-ins, then two requests per completed iteration.
    let completed = run.scenario("browse", "completed");
    assert!(completed >= 4, "every VU completes at least one iteration");
    assert_eq!(served, 4 + 2 * completed);
    for check in run.json["checks"].as_array().unwrap() {
        assert_eq!(check["fails"].as_u64(), Some(0), "check failed: {check}");
    }
    assert_eq!(run.json["plugin"]["name"], "notes");
    assert_eq!(run.json["status"], "completed");
    assert_eq!(run.outcome.exit_code, 0);
    let p95 = run.metric("http_req_duration", "p95");
    assert!(p95 > 0.0 && p95 < 1000.0, "p95 {p95} ms is implausible");
    assert!(run.outcome.results_dir.join("summary.txt").exists());

    // summary.json reads back into the host's own type, and writes out the same.
    let typed: host::Summary = serde_json::from_value(run.json.clone())
        .unwrap_or_else(|e| panic!("summary.json does not read back: {e}"));
    assert_eq!(typed.status, host::RunStatus::Completed);
    assert_eq!(serde_json::to_value(&typed).unwrap(), run.json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_runs_with_its_default_config() {
    let server = DemoServer::start("127.0.0.1:0".parse().unwrap(), DemoConfig::default())
        .await
        .unwrap();
    let run = common::run("hello", "", &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let served = server.requests_served();
    server.shutdown().await;
    // The default config: 2 VUs for 5 s of back-to-back GETs.
    assert_eq!(run.json["config"]["scenarios"]["default"]["vus"], 2);
    assert!(
        run.metric("iterations", "count") > 100.0,
        "{}",
        run.json["metrics"]["iterations"]
    );
    assert_eq!(run.metric("http_reqs", "count") as u64, served);
    assert_eq!(run.metric("checks", "rate"), 1.0);
    let duration = run.json["duration_s"].as_f64().unwrap();
    assert!(
        (5.0..7.0).contains(&duration),
        "ran {duration}s for a 5s scenario"
    );
}
