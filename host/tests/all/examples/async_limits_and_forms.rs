//! The seeds' scenarios of the second half (command-burst, rate-limits, invoke, outbox,
//! survey, starter): a short run of each plugin against the embedded demo system,
//! checking that what the plugin counted is what the server counted, read from the
//! server's own `/metrics`.

use crate::support as common;

use std::time::Duration;

use demo_target::{Cidr, DemoConfig, DemoServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The demo system with `config` on a free loopback port.
async fn start(config: DemoConfig) -> DemoServer {
    DemoServer::start("127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("demo target starts")
}

/// `GET /metrics` of the server, over a plain TCP connection.
async fn scrape(server: &DemoServer) -> String {
    let mut stream = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: demo\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    text
}

/// The value of the sample `series` (a name with its labels, as written) in `text`.
fn sample(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse::<f64>().ok())?
        })
        .unwrap_or_else(|| panic!("no {series} in /metrics:\n{text}")) as u64
}

/// A counter's total in summary.json (0 when it got no sample).
fn count(run: &common::Finished, metric: &str) -> u64 {
    run.metric(metric, "count") as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survey_replays_are_refused_and_conflicts_agree() {
    let server = start(DemoConfig::default()).await;
    let config = r#"
[scenarios.answer]
executor = "constant-arrival-rate"
exec = "answer"
rate = 10
time_unit = "1s"
duration = "2s"
pre_allocated_vus = 5
max_vus = 20
"#;
    let run = common::run("survey", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let metrics = scrape(&server).await;
    let accepted = count(&run, "survey_answers_accepted");
    let conflicts = count(&run, "survey_conflicts");
    assert!(accepted >= 15, "about 20 arrivals in 2 s: {accepted}");
    assert_eq!(count(&run, "survey_replays_accepted"), 0);
    assert_eq!(
        sample(&metrics, "demo_survey_answers_total{verdict=\"accepted\"}"),
        accepted,
        "every accepted answer is a first answer: no replay was accepted"
    );
    assert_eq!(
        sample(&metrics, "demo_survey_answers_total{verdict=\"conflict\"}"),
        conflicts
    );
    assert_eq!(conflicts, accepted, "each answer's replay was refused");
    assert_eq!(sample(&metrics, "demo_survey_logins_total"), accepted);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_burst_follows_every_command_to_its_final_status() {
    let server = start(DemoConfig {
        command_work: Duration::from_millis(20),
        ..DemoConfig::default()
    })
    .await;
    let config = r#"
[scenarios.burst]
executor = "ramping-arrival-rate"
exec = "burst"
start_rate = 2
time_unit = "1s"
pre_allocated_vus = 5
max_vus = 50
stages = [{ duration = "1s", target = 5 }, { duration = "1s", target = 20 }]
"#;
    let run = common::run(
        "command_burst",
        config,
        &[
            ("BASE_URL", &server.base_url()),
            ("FAIL_EVERY", "4"),
            ("POLL_MS", "10"),
        ],
    )
    .await
    .unwrap();
    let metrics = scrape(&server).await;
    let submitted = count(&run, "commands_submitted");
    assert!(submitted >= 10, "{submitted} commands");
    assert_eq!(count(&run, "commands_followed"), submitted);
    assert_eq!(
        run.metric("command_submit_to_done", "count") as u64,
        submitted
    );
    assert!(
        run.metric("command_submit_to_done", "min") >= 20.0,
        "no command finishes before its work: {}",
        run.json["metrics"]["command_submit_to_done"]
    );
    assert_eq!(sample(&metrics, "demo_commands_submitted_total"), submitted);
    let done = sample(&metrics, "demo_commands_finished_total{status=\"done\"}");
    let failed = sample(&metrics, "demo_commands_finished_total{status=\"failed\"}");
    assert_eq!(done + failed, submitted, "{metrics}");
    assert!(failed >= 1 && done > failed, "done {done}, failed {failed}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_429s_counted_by_the_plugin_are_the_servers() {
    let server = start(DemoConfig {
        rate_limit: Some(10),
        trusted_proxies: vec![Cidr::parse("127.0.0.1/32").unwrap()],
        ..DemoConfig::default()
    })
    .await;
    // 4 VUs every 50 ms from one address (~80/s against 10/s), then 4 VUs at 5/s each
    // from an address each (under the limit).
    let config = r#"
[scenarios.one_address]
executor = "constant-vus"
exec = "one_address"
vus = 4
duration = "2s"
env = { PACE_MS = "50" }

[scenarios.per_vu_address]
executor = "constant-vus"
exec = "per_vu_address"
vus = 4
duration = "2s"
start_time = "2s"

[thresholds]
"rate_limited{addresses:per_vu}" = ["rate==0"]
"rate_limited{addresses:one}" = ["rate>0.3"]
"#;
    let run = common::run("rate_limits", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let metrics = scrape(&server).await;
    let limited = count(&run, "http_429");
    assert!(limited > 20, "{limited} 429s");
    assert_eq!(sample(&metrics, "demo_rate_limited_total"), limited);
    assert_eq!(server.responses(429), limited);
    assert_eq!(
        run.outcome.exit_code, 0,
        "thresholds: 429s from one address, none from an address each: {}",
        run.json["thresholds"]
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invoke_sheds_are_counted_alike_on_both_sides() {
    // 2 slots of 20 ms: 100 invocations a second, offered 200.
    let server = start(DemoConfig {
        invoke_concurrency: 2,
        invoke_work: Duration::from_millis(20),
        ..DemoConfig::default()
    })
    .await;
    let config = r#"
[scenarios.invoke]
executor = "constant-arrival-rate"
exec = "invoke"
rate = 200
time_unit = "1s"
duration = "2s"
pre_allocated_vus = 20
max_vus = 50
"#;
    let run = common::run("invoke", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let metrics = scrape(&server).await;
    let shed = count(&run, "invoke_shed");
    let ok = count(&run, "invoke_ok");
    assert!(shed > 50 && ok > 50, "shed {shed}, ok {ok}");
    assert_eq!(
        sample(&metrics, "demo_invoke_total{outcome=\"shed\"}"),
        shed
    );
    assert_eq!(sample(&metrics, "demo_invoke_total{outcome=\"ok\"}"), ok);
    assert_eq!(server.responses(503), shed);
    // setup()'s one request without the key.
    assert_eq!(
        sample(&metrics, "demo_invoke_total{outcome=\"unauthorized\"}"),
        1
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_drains_to_zero_and_every_webhook_verifies() {
    // Delivered at 50/s, offered 100/s for 2 s: a backlog of about 100 to drain. It
    // counts what started on time, so it takes the measuring turn: beside the swarm
    // test (containers loading both cores) 53, then with 60 VUs 83, of its 200 due
    // iterations were dropped.
    let _turn = common::turns::MEASURING.lock().await;
    let server = start(DemoConfig {
        webhook_rate: 50,
        ..DemoConfig::default()
    })
    .await;
    let config = r#"
[scenarios.events]
executor = "constant-arrival-rate"
exec = "events"
rate = 6000
time_unit = "1m"
duration = "2s"
pre_allocated_vus = 5
max_vus = 60

[http]
count_setup = true
"#;
    let run = common::run("outbox", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let metrics = scrape(&server).await;
    let sent = count(&run, "outbox_events_sent");
    let dropped = count(&run, "dropped_iterations");
    assert!(sent >= 150, "{sent} events, {dropped} iterations dropped");
    assert_eq!(sample(&metrics, "demo_outbox_pending"), 0, "drained");
    assert_eq!(sample(&metrics, "demo_outbox_events_total"), sent);
    assert_eq!(sample(&metrics, "demo_outbox_delivered_total"), sent);
    assert_eq!(sample(&metrics, "demo_webhooks_received_total"), sent);
    assert_eq!(sample(&metrics, "demo_webhooks_rejected_total"), 0);
    let drain = &run.json["metrics"]["outbox_drain_time"];
    assert_eq!(drain["count"].as_f64(), Some(1.0), "{drain}");
    assert!(
        drain["max"].as_f64().unwrap() > 500.0,
        "a backlog of ~100 at 50/s takes a while: {drain}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starter_counts_received_apart_from_sent_and_bounds_in_flight() {
    // Each instance takes about 100 ms of work plus a poll; 2 in flight at most
    // serve about 10 a second, offered 20.
    let server = start(DemoConfig {
        command_work: Duration::from_millis(100),
        ..DemoConfig::default()
    })
    .await;
    let config = r#"
[scenarios.start]
executor = "constant-arrival-rate"
exec = "start"
rate = 20
time_unit = "1s"
duration = "2s"
pre_allocated_vus = 2
max_vus = 2
"#;
    let run = common::run(
        "starter",
        config,
        &[("BASE_URL", &server.base_url()), ("POLL_MS", "50")],
    )
    .await
    .unwrap();
    let metrics = scrape(&server).await;
    let sent = count(&run, "instances_sent");
    let received = count(&run, "instances_received");
    let dropped = count(&run, "dropped_iterations");
    assert!(sent >= 5, "{sent} sent");
    assert!(
        dropped >= 5,
        "the bound of 2 in flight drops starts: {dropped}"
    );
    assert_eq!(sample(&metrics, "demo_commands_submitted_total"), sent);
    assert_eq!(
        sample(&metrics, "demo_commands_finished_total{status=\"done\"}"),
        received
    );
    assert_eq!(received, sent, "every started instance completed");
    let offered = sent + dropped;
    assert!((36..=42).contains(&offered), "20/s for 2 s: {offered}");
    server.shutdown().await;
}
