//! The seeds' scenarios of issue 19, first half: `demo-visitor`, `rest-mix` and
//! `capacity`, each run briefly in-process against the embedded demo system on
//! 127.0.0.1. Every test compares what the plugin counted with what the server says
//! it served (its Prometheus `/metrics`), so a request lost, doubled or miscounted on
//! either side fails it.

use crate::support as common;

use std::collections::HashMap;
use std::time::Duration;

use demo_target::{DemoConfig, DemoServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn target(config: DemoConfig) -> DemoServer {
    DemoServer::start("127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("demo target starts")
}

/// The server's `/metrics`, as metric name (with labels) → value.
async fn scrape(server: &DemoServer) -> HashMap<String, f64> {
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: demo\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// One value of the scrape; a missing metric fails the test, naming it.
fn served(metrics: &HashMap<String, f64>, name: &str) -> f64 {
    *metrics
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in /metrics: {metrics:?}"))
}

/// A plugin counter's total (0 when it has no samples).
fn plugin(run: &common::Finished, name: &str) -> f64 {
    run.metric(name, "count")
}

/// Every check passed and no iteration failed.
fn clean(run: &common::Finished) {
    for c in run.json["checks"].as_array().expect("checks") {
        assert_eq!(c["fails"].as_u64(), Some(0), "check failed: {c}");
    }
    let errors: Vec<String> = run
        .outcome
        .summary
        .plugin_errors
        .iter()
        .map(|e| format!("{} x{}", e.message, e.count))
        .collect();
    assert!(errors.is_empty(), "plugin errors: {errors:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_visitor_loads_every_asset_and_the_server_agrees() {
    let server = target(DemoConfig::default()).await;
    let base = server.base_url();
    let run = common::run(
        "demo_visitor",
        r#"
        [scenarios.visitors]
        executor = "per-vu-iterations"
        vus = 2
        iterations = 2
        max_duration = "60s"
        exec = "visit"
        "#,
        &[
            ("BASE_URL", &base),
            ("LIVE_MS", "1200"),
            ("PING_MS", "300"),
            ("INBOX_MS", "500"),
        ],
    )
    .await
    .expect("the run completes");
    clean(&run);
    let m = scrape(&server).await;

    assert_eq!(plugin(&run, "visits"), 4.0);
    assert_eq!(
        served(&m, "demo_app_shell_total"),
        4.0,
        "one page per visit"
    );
    // A first visit with an empty cache: every asset comes with its body, none 304.
    assert_eq!(plugin(&run, "assets_loaded"), 4.0 * 40.0);
    assert_eq!(
        served(&m, "demo_assets_served_total"),
        plugin(&run, "assets_loaded")
    );
    assert_eq!(served(&m, "demo_assets_not_modified_total"), 0.0);
    assert_eq!(
        served(&m, "demo_asset_bytes_total"),
        plugin(&run, "asset_bytes")
    );
    // The live view: pings answered, polls made, one socket per visitor.
    let pings = plugin(&run, "app_pings");
    assert!(pings >= 4.0 * 3.0, "about four pings per visitor: {pings}");
    assert_eq!(plugin(&run, "app_pongs"), pings);
    assert_eq!(served(&m, "demo_ws_app_pings_total"), pings);
    let polls = plugin(&run, "inbox_polls");
    assert!(polls >= 4.0, "two polls per visitor: {polls}");
    assert_eq!(served(&m, "demo_inbox_polls_total"), polls);
    assert_eq!(served(&m, "demo_ws_accepted_total"), 4.0);
    assert_eq!(served(&m, "demo_api_me_total"), 4.0);
    // Every request the host made reached the server (the scrape is the one extra).
    let http_reqs = run.metric("http_reqs", "count");
    assert_eq!(
        served(&m, "demo_requests_total"),
        http_reqs + 4.0 + 1.0,
        "+ 4 upgrades + 1 scrape"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_mix_refreshes_tokens_and_deletes_every_account_it_made() {
    let server = target(DemoConfig {
        access_token_ttl: Duration::from_millis(700),
        large_groups: 1,
        large_group_notes: 2_000,
        ..DemoConfig::default()
    })
    .await;
    let base = server.base_url();
    let run = common::run(
        "rest_mix",
        r#"
        [scenarios.api]
        executor = "per-vu-iterations"
        vus = 3
        iterations = 2
        max_duration = "60s"
        exec = "api_user"
        "#,
        &[
            ("BASE_URL", &base),
            ("PAGES", "8"),
            ("THINK_MIN_MS", "150"),
            ("THINK_MAX_MS", "300"),
            ("REFRESH_MARGIN_MS", "100"),
        ],
    )
    .await
    .expect("the run completes");
    clean(&run);
    let m = scrape(&server).await;

    assert_eq!(plugin(&run, "signups"), 6.0);
    assert_eq!(served(&m, "demo_signups_total"), 6.0);
    assert_eq!(plugin(&run, "deletions"), 6.0);
    assert_eq!(served(&m, "demo_account_deletions_total"), 6.0);
    assert_eq!(served(&m, "demo_accounts"), 0.0, "no account left behind");
    let refreshes = plugin(&run, "refreshes");
    assert!(
        refreshes >= 6.0,
        "pages outlive a 700 ms token: {refreshes}"
    );
    assert_eq!(served(&m, "demo_token_refreshes_total"), refreshes);
    assert_eq!(served(&m, "demo_token_refresh_refused_total"), 0.0);
    assert_eq!(
        served(&m, "demo_access_expired_total"),
        plugin(&run, "expired_401")
    );
    let searches = plugin(&run, "searches");
    assert!(searches > 0.0);
    assert_eq!(served(&m, "demo_searches_total"), searches);
    assert_eq!(
        served(&m, "demo_search_hits_total"),
        plugin(&run, "search_hits")
    );
    assert_eq!(
        served(&m, "demo_notes_created_total"),
        plugin(&run, "notes_created")
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_runs_three_scenarios_and_every_write_and_push_is_counted() {
    let server = target(DemoConfig::default()).await;
    let notes_before = served(&scrape(&server).await, "demo_notes");
    let base = server.base_url();
    // The writers start after the sockets subscribed and stop (graceful stop included)
    // before the sockets' last drain, so every push is received.
    let run = common::run(
        "capacity",
        r#"
        [scenarios.sockets]
        executor = "constant-vus"
        vus = 3
        duration = "4s"
        exec = "sockets"

        [scenarios.write]
        executor = "constant-vus"
        vus = 2
        start_time = "1s"
        duration = "2s"
        graceful_stop = "1s"
        exec = "write"

        [scenarios.browse]
        executor = "constant-vus"
        vus = 2
        duration = "3s"
        exec = "browse"
        "#,
        &[
            ("BASE_URL", &base),
            ("PAUSE_MIN_MS", "50"),
            ("PAUSE_MAX_MS", "150"),
            ("DRAIN_MS", "300"),
        ],
    )
    .await
    .expect("the run completes");
    clean(&run);
    let m = scrape(&server).await;

    let created = plugin(&run, "notes_created");
    assert!(
        created >= 4.0,
        "a write loop takes under half a second: {created}"
    );
    assert_eq!(served(&m, "demo_notes_created_total"), created);
    assert_eq!(
        served(&m, "demo_notes_updated_total"),
        plugin(&run, "notes_updated")
    );
    assert_eq!(plugin(&run, "notes_updated"), created);
    assert_eq!(
        served(&m, "demo_notes_deleted_total"),
        plugin(&run, "notes_deleted")
    );
    assert_eq!(plugin(&run, "notes_deleted"), created);
    assert_eq!(
        served(&m, "demo_notes"),
        notes_before,
        "every note made was deleted"
    );
    assert_eq!(plugin(&run, "sockets_opened"), 3.0);
    assert_eq!(served(&m, "demo_ws_accepted_total"), 3.0);
    // Three subscribers see each of three changes per write loop.
    let pushes = served(&m, "demo_ws_pushes_total");
    assert_eq!(pushes, created * 3.0 * 3.0);
    assert_eq!(plugin(&run, "pushes_expected"), pushes);
    assert_eq!(plugin(&run, "pushes_received"), pushes);
    assert!(run.scenario("browse", "completed") >= 2);
    assert_eq!(run.scenario("write", "interrupted"), 0);
    server.shutdown().await;
}
