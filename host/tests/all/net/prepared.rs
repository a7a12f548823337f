//! Prepared requests (WIT 0.3.1, `RequestBuilder::prepare`), against the demo target
//! on 127.0.0.1: a request prepared once and sent by handle counts, tags, times and
//! puts on the wire exactly what the same request built and sent every time does; the
//! jar of each send, redirects, the jar opt-out and the allowlist apply to it as to any
//! request; and plugins built against 0.3.0 and 0.3.3 still run on this 0.3.10 host.

use crate::support as common;

use serde_json::Value;
use std::time::Duration;

/// Runs `http_probe` in `mode` (2 VUs, `iterations` each) against `server`, its
/// requests prepared or not; the run and the requests the target served for it.
async fn probe(
    server: &demo_target::DemoServer,
    mode: &str,
    prepared: bool,
    iterations: u32,
    env: &[(&str, &str)],
) -> (common::Finished, u64) {
    let base = server.base_url();
    let mut all = vec![
        ("BASE_URL", base.as_str()),
        ("MODE", mode),
        ("PREPARED", if prepared { "1" } else { "0" }),
    ];
    all.extend_from_slice(env);
    let config = format!(
        "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 2\niterations = {iterations}\n"
    );
    let before = server.requests_served();
    let run = common::run("http_probe", &config, &all).await.unwrap();
    (run, server.requests_served() - before)
}

/// What two runs of the same requests must agree on: every counter of summary.json's
/// metrics (requests, bytes on the wire both ways, iterations, checks, denials), the
/// sample counts of every trend (one per request and phase), the HTTP counts, the
/// checks and the endpoints (method, name, requests, failures).
fn exact_parts(run: &common::Finished) -> Value {
    let metrics = run.json["metrics"].as_object().unwrap();
    let counted: serde_json::Map<String, Value> = metrics
        .iter()
        .filter(|(name, _)| !name.starts_with("vus") && *name != "iteration_duration")
        .map(|(name, m)| {
            // Counters' totals and trends' sample counts; not times or rates per second.
            let keep = ["count", "passes", "fails"];
            let fields: serde_json::Map<String, Value> = m
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| keep.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (name.clone(), Value::Object(fields))
        })
        .collect();
    let endpoints: Vec<Value> = run.json["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| serde_json::json!([e["method"], e["name"], e["count"], e["error_rate"]]))
        .collect();
    let mut http = run.json["http"].clone();
    http.as_object_mut().unwrap().remove("in_flight");
    serde_json::json!({
        "metrics": counted,
        "http": http,
        "checks": run.json["checks"],
        "endpoints": endpoints,
    })
}

fn all_checks_pass(run: &common::Finished) {
    let checks = run.json["checks"].as_array().unwrap();
    assert!(!checks.is_empty());
    for c in checks {
        assert_eq!(c["fails"].as_u64(), Some(0), "check failed: {c}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_sends_count_and_send_what_sends_do() {
    // Two cookies in the jar from init: each send must carry them (the bytes sent
    // would differ otherwise).
    let server = common::demo_target(Duration::ZERO).await;
    let env = [("COOKIES", "2")];
    let (sent, sent_served) = probe(&server, "bench", false, 25, &env).await;
    let (prepared, prepared_served) = probe(&server, "bench", true, 25, &env).await;
    server.shutdown().await;
    all_checks_pass(&prepared);
    assert_eq!(prepared_served, 50);
    assert_eq!(sent_served, prepared_served);
    assert_eq!(prepared.metric("http_reqs", "count"), 50.0);
    assert!(prepared.metric("data_sent", "count") > 50.0 * 64.0);
    assert_eq!(exact_parts(&prepared), exact_parts(&sent));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_requests_take_the_jar_of_each_send_redirects_and_the_allowlist() {
    let server = common::demo_target(Duration::ZERO).await;
    let (prepared, served) = probe(&server, "prepared", true, 3, &[]).await;
    all_checks_pass(&prepared);
    for name in [
        "no cookie the jar does not hold",
        "the jar's cookies of the moment are sent",
        "the redirect is followed and its cookie stored and sent",
        "a request can leave the jar out",
        "a target outside the allowlist is denied",
    ] {
        let c = prepared.json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name:?}"));
        assert_eq!(c["passes"].as_u64(), Some(6), "{c}");
    }
    // Per iteration: two sends of /cookies, the redirect's two hops, the jar-less one;
    // the denied one sent nothing but is counted each time.
    assert_eq!(served, 6 * 5);
    assert_eq!(prepared.metric("http_reqs", "count"), 30.0);
    assert_eq!(prepared.json["http"]["denied"].as_u64(), Some(6));
    // The same requests built and sent each time, against the same target (the
    // redirect hop is named by its URL, port included).
    let (sent, _) = probe(&server, "prepared", false, 3, &[]).await;
    server.shutdown().await;
    assert_eq!(exact_parts(&prepared), exact_parts(&sent));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_built_against_0_3_0_runs() {
    let info = host::inspect(&common::plugin("wit_030"), 64 << 20)
        .await
        .expect("a 0.3.0 plugin is accepted");
    assert_eq!(info.info.name, "wit_030");
    let server = common::demo_target(Duration::ZERO).await;
    let config = "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 2\niterations = 4\n";
    let run = common::run("wit_030", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let served = server.requests_served();
    server.shutdown().await;
    all_checks_pass(&run);
    assert_eq!(served, 8);
    assert_eq!(run.metric("http_reqs", "count"), 8.0);
    assert_eq!(run.scenario("default", "completed"), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_built_against_0_3_3_runs_its_send_prepare_and_batch() {
    // 0.3.4 added functions beside these three; their types are those of 0.3.3.
    let info = host::inspect(&common::plugin("wit_033"), 64 << 20)
        .await
        .expect("a 0.3.3 plugin is accepted");
    assert_eq!(info.info.name, "wit_033");
    let shown = std::process::Command::new(env!("CARGO_BIN_EXE_host"))
        .arg("inspect")
        .arg(common::plugin("wit_033"))
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("built against: 0.3.3"), "{shown}");
    let server = common::demo_target(Duration::ZERO).await;
    let config = "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 2\niterations = 2\n";
    let run = common::run("wit_033", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let served = server.requests_served();
    server.shutdown().await;
    all_checks_pass(&run);
    assert_eq!(run.scenario("default", "completed"), 4);
    assert_eq!(served, 16, "4 requests in each of 4 iterations");
    assert_eq!(run.metric("http_reqs", "count"), 16.0);
}
