//! Every request is counted once, by its fate, against purpose-built servers: a request
//! cut short with its iteration is a failed request of kind `interrupted` (with its
//! `http_req_failed` sample and its duration so far), a refused connection is never
//! `sent`, a redirect loop warns, and a redirect hop that is denied fails the hop that
//! led to it. `common::run` checks `sent = received + failed + in flight` in every run.

use crate::support as common;

use common::servers;
use host::exit_code;

fn summary_txt(run: &common::Finished) -> String {
    std::fs::read_to_string(run.outcome.results_dir.join("summary.txt")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_cut_by_the_iteration_timeout_are_failed_and_interrupted() {
    // The issue's case: a server that accepts and never answers, 5 VUs for 4 s with a
    // 1 s iteration timeout. Each iteration's request is cut off after 1 s.
    let server = servers::silent().await;
    let config = r#"
        [scenarios.default]
        executor = "constant-vus"
        vus = 5
        duration = "4s"
        [limits]
        iteration_timeout = "1s"
        [thresholds]
        http_req_failed = ["rate<0.01"]
    "#;
    let run = common::run("hello", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let h = &run.json["http"];
    let sent = h["sent"].as_u64().unwrap();
    // Four 1 s iterations per VU; one more may start on a loaded machine.
    assert!((20..=25).contains(&sent), "{h}");
    assert_eq!(sent, server.accepted(), "one connection per request");
    assert_eq!(h["received"], 0);
    assert_eq!(h["failed"].as_u64(), Some(sent));
    assert_eq!(h["errors"]["interrupted"].as_u64(), Some(sent), "{h}");
    assert_eq!(h["in_flight"], 0);
    assert_eq!(
        run.scenario("default", "failed"),
        sent,
        "every iteration timed out"
    );
    // Each has its http_req_failed sample and its duration so far (about the 1 s).
    assert_eq!(run.metric("http_req_failed", "fails") as u64, 0);
    assert_eq!(run.metric("http_req_failed", "passes") as u64, sent);
    assert_eq!(run.metric("http_req_duration", "count") as u64, sent);
    let p50 = run.metric("http_req_duration", "med");
    assert!((900.0..1500.0).contains(&p50), "median {p50} ms");
    // So the threshold fails, and the run, in which no iteration succeeded, exits 110.
    assert_eq!(run.json["thresholds"][0]["ok"], false);
    assert_eq!(run.json["thresholds"][0]["observed"], 1.0);
    assert_eq!(run.outcome.exit_code, exit_code::MEASURED_NOTHING);
    let text = summary_txt(&run);
    assert!(
        text.contains(&format!(
            "http: sent {sent}, received 0 (succeeded 0), failed {sent} (interrupted={sent}), in flight at end 0; denied 0"
        )),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_cut_by_the_graceful_stop_are_failed_and_interrupted() {
    let server = servers::silent().await;
    let config = r#"
        [scenarios.default]
        executor = "constant-vus"
        vus = 3
        duration = "1s"
        graceful_stop = "500ms"
    "#;
    let run = common::run("hello", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let h = &run.json["http"];
    assert_eq!(h["sent"], 3, "{h}");
    assert_eq!(h["failed"], 3);
    assert_eq!(h["errors"]["interrupted"], 3);
    assert_eq!(run.scenario("default", "interrupted"), 3);
    assert_eq!(run.metric("http_req_duration", "count"), 3.0);
    let max = run.metric("http_req_duration", "max");
    assert!((1400.0..2500.0).contains(&max), "cut at 1.5 s: {max} ms");
    assert_eq!(run.outcome.exit_code, exit_code::MEASURED_NOTHING);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_request_is_failed_with_its_duration() {
    let server = servers::silent().await;
    let config = r#"
        [scenarios.default]
        executor = "shared-iterations"
        vus = 1
        iterations = 2
        [limits]
        request_timeout = "300ms"
    "#;
    let run = common::run("hello", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let h = &run.json["http"];
    assert_eq!(h["sent"], 2, "{h}");
    assert_eq!(h["failed"], 2);
    assert_eq!(h["errors"]["timeout"], 2);
    assert_eq!(run.metric("http_req_duration", "count"), 2.0);
    let med = run.metric("http_req_duration", "med");
    assert!((250.0..600.0).contains(&med), "cut at 300 ms: {med} ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_not_sent() {
    let dead = servers::dead_port();
    let config = r#"
        [scenarios.default]
        executor = "shared-iterations"
        vus = 1
        iterations = 3
    "#;
    let run = common::run("hello", config, &[("BASE_URL", &format!("http://{dead}"))])
        .await
        .unwrap();
    let h = &run.json["http"];
    assert_eq!(h["sent"], 0, "{h}");
    assert_eq!(h["failed"], 0);
    assert_eq!(h["not_sent"]["connect"], 3);
    assert_eq!(run.metric("http_reqs", "count"), 3.0);
    assert_eq!(run.metric("http_req_failed", "passes"), 3.0);
    assert_eq!(run.metric("http_reqs_unsent", "count"), 3.0);
    assert!(
        summary_txt(&run).contains("http: sent 0, received 0 (succeeded 0), failed 0, in flight at end 0; not sent 3 (connect=3); denied 0"),
        "{}",
        summary_txt(&run)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_loop_returns_the_last_redirect_with_a_warning() {
    let server =
        servers::canned(|_| servers::response("301 Moved Permanently", "location: /again\r\n", ""))
            .await;
    let config = r#"
        [scenarios.default]
        executor = "shared-iterations"
        vus = 1
        iterations = 2
    "#;
    let base = server.base_url();
    let run = common::run("hello", config, &[("BASE_URL", &base)])
        .await
        .unwrap();
    // Each GET / is followed 10 times, then the 11th 301 is what the plugin gets.
    let h = &run.json["http"];
    assert_eq!(h["sent"], 22, "{h}");
    assert_eq!(h["received"], 22);
    assert_eq!(server.answered(), 22);
    let warnings = run.json["warnings"].as_array().unwrap();
    let warning = warnings
        .iter()
        .filter_map(|w| w.as_str())
        .find(|w| w.contains("redirect"))
        .unwrap_or_else(|| panic!("no redirect warning in {warnings:?}"));
    assert_eq!(
        warning,
        format!("2 requests were still redirected after 10 redirects and returned the last redirect (first: {base}/again); a redirect loop?")
    );
    assert!(summary_txt(&run).contains(warning));
    // hello's check wanted a 200.
    assert_eq!(run.json["checks"][0]["fails"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_redirect_hop_fails_the_hop_that_led_to_it() {
    // 192.0.2.0/24 is for documentation: not loopback, so denied before any packet.
    let server = servers::canned(|_| {
        servers::response("302 Found", "location: http://192.0.2.1/elsewhere\r\n", "")
    })
    .await;
    let config = r#"
        [scenarios.default]
        executor = "shared-iterations"
        vus = 1
        iterations = 3
    "#;
    let run = common::run("hello", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let h = &run.json["http"];
    assert_eq!(h["sent"], 3, "{h}");
    assert_eq!(h["succeeded"], 0, "the first hop is no success: {h}");
    assert_eq!(h["failed"], 3);
    assert_eq!(h["errors"]["denied"], 3);
    assert_eq!(h["denied"], 3);
    assert_eq!(run.metric("http_req_failed", "passes"), 3.0);
    assert_eq!(run.metric("http_req_failed", "fails"), 0.0);
    assert_eq!(run.scenario("default", "failed"), 3);
}
