//! The demo target's gRPC face (`also_grpc`, the `--grpc-listen` of `demo-target` and
//! `host target`), started in-process on 127.0.0.1, loaded through the host: the
//! bundled `grpc-call` plugin with descriptors from the face's reflection service, and
//! the `starter` scenario's gRPC variant. What the server counted (its `/metrics`) is
//! compared with what the host recorded: unary calls and `grpc_reqs`, streams and
//! `grpc_streams`, the stream's messages each way, and the instances both sides saw.

use crate::support as common;

use std::time::Duration;

use demo_target::{DemoConfig, DemoServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The demo target on a free loopback port with its gRPC face on another; returns the
/// face's `host:port`.
async fn start(config: DemoConfig) -> (DemoServer, String) {
    let mut server = DemoServer::start("127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("demo target starts");
    let grpc = server
        .also_grpc("127.0.0.1:0".parse().unwrap())
        .expect("the gRPC face starts");
    (server, grpc.to_string())
}

/// One HTTP/1.1 request to the demo target's REST API; the answer's status and body.
async fn rest(
    server: &DemoServer,
    method: &str,
    path: &str,
    token: &str,
    body: &str,
) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let auth = if token.is_empty() {
        String::new()
    } else {
        format!("Authorization: Bearer {token}\r\n")
    };
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: demo\r\nConnection: close\r\n{auth}\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
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

/// The gRPC face's calls of `method`, from the server's own counters.
fn calls(text: &str, method: &str) -> u64 {
    sample(
        text,
        &format!("demo_grpc_calls_total{{method=\"{method}\"}}"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_call_against_the_gateway_matches_what_the_server_counted() {
    // No worker: the instances stay queued for ActivateJobs to claim.
    let (server, target) = start(DemoConfig {
        in_process_worker: false,
        ..DemoConfig::default()
    })
    .await;
    // Twelve instances made over REST: both faces share one state.
    let (status, body) = rest(&server, "POST", "/auth/token", "", r#"{"user":"t"}"#).await;
    assert_eq!(status, 200, "{body}");
    let token: serde_json::Value = serde_json::from_str(&body).unwrap();
    let token = token["token"].as_str().unwrap().to_string();
    for _ in 0..12 {
        let (status, body) = rest(
            &server,
            "POST",
            "/commands",
            &token,
            r#"{"kind":"export","group":3}"#,
        )
        .await;
        assert_eq!(status, 202, "{body}");
    }

    let scenario = |name: &str, vus: u32, iterations: u32, env: &str| {
        format!(
            "[scenarios.{name}]\nexecutor = \"shared-iterations\"\nvus = {vus}\niterations = {iterations}\n\
             max_duration = \"20s\"\nenv = {{ GRPC_TARGET = \"{target}\", {env} }}\n"
        )
    };
    let mut config = String::new();
    // Unary calls, descriptors by reflection: Topology answers OK, GetProcessInstance
    // without a token UNAUTHENTICATED (16, expected here).
    config += &scenario(
        "topology",
        2,
        25,
        r#"GRPC_METHOD = "demo.gateway.v1.Gateway/Topology""#,
    );
    config += &scenario(
        "unsigned",
        1,
        4,
        r#"GRPC_METHOD = "demo.gateway.v1.Gateway/GetProcessInstance", GRPC_REQUEST = '{"id":"1"}', GRPC_EXPECT = "16""#,
    );
    // The server stream of activated jobs: 4 calls of at most 5 jobs, each waiting
    // 300 ms at most, claim the 12 queued.
    config += &scenario(
        "activate",
        1,
        4,
        r#"GRPC_METHOD = "demo.gateway.v1.Gateway/ActivateJobs", GRPC_REQUEST = '{"maxJobsToActivate":5,"requestTimeoutMs":"300"}'"#,
    );
    config += "[thresholds]\n\"grpc_reqs{scenario:unsigned,status:16}\" = [\"count>=0\"]\n";
    let run = common::run("grpc_call", &config, &[]).await.unwrap();
    assert_eq!(run.outcome.exit_code, 0, "{}", run.json["metrics"]);
    let text = server.metrics_text();

    // Every unary call the server answered is a grpc_reqs, and no more.
    assert_eq!(calls(&text, "Topology"), 25, "{text}");
    assert_eq!(calls(&text, "GetProcessInstance"), 4, "{text}");
    assert_eq!(
        run.metric("grpc_reqs", "count"),
        29.0,
        "{}",
        run.json["metrics"]
    );
    assert_eq!(server.grpc_counters().calls("Topology"), 25);
    let unsigned = run.json["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["metric"] == "grpc_reqs{scenario:unsigned,status:16}")
        .unwrap()["observed"]
        .as_f64();
    assert_eq!(unsigned, Some(4.0), "{}", run.json["thresholds"]);
    assert_eq!(run.metric("grpc_req_failed", "rate"), 0.0);

    // The stream: calls, and its messages as the server sent them.
    assert_eq!(calls(&text, "ActivateJobs"), 4, "{text}");
    assert_eq!(run.metric("grpc_streams", "count"), 4.0);
    let sent = sample(&text, "demo_grpc_stream_messages_sent_total");
    assert!(
        sent >= 3,
        "12 jobs in batches of at most 5: {sent} messages"
    );
    assert_eq!(
        run.metric("grpc_streams_msgs_received", "count"),
        sent as f64
    );
    assert_eq!(run.metric("grpc_streams_msgs_sent", "count"), 4.0);
    assert_eq!(
        sample(&text, "demo_grpc_jobs_activated_total"),
        12,
        "{text}"
    );

    // The same state: the claimed instances are running on the REST face, and the
    // instances made there are counted once.
    let (status, body) = rest(&server, "GET", "/commands/7", &token, "").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"status\":\"running\""), "{body}");
    assert_eq!(sample(&text, "demo_commands_submitted_total"), 12, "{text}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_starters_grpc_variant_runs_clean_on_the_gateway() {
    let (server, target) = start(DemoConfig {
        command_work: Duration::from_millis(20),
        ..DemoConfig::default()
    })
    .await;
    let config = r#"
[scenarios.start]
executor = "constant-arrival-rate"
exec = "start_grpc"
rate = 20
time_unit = "1s"
duration = "3s"
pre_allocated_vus = 5
max_vus = 20
"#;
    let run = common::run(
        "starter",
        config,
        &[
            ("BASE_URL", &server.base_url()),
            ("GRPC_TARGET", &target),
            ("POLL_MS", "20"),
        ],
    )
    .await
    .unwrap();
    let text = server.metrics_text();
    // The plugin's default thresholds (checks, dropped starts, p99) passed.
    assert_eq!(run.outcome.exit_code, 0, "{}", run.json["thresholds"]);
    assert_eq!(run.metric("checks", "rate"), 1.0, "{}", run.json["metrics"]);
    assert!(run.outcome.summary.plugin_errors.is_empty());
    let sent = run.metric("instances_sent", "count") as u64;
    assert!((55..=61).contains(&sent), "20/s for 3 s: {sent}");
    assert_eq!(run.metric("instances_received", "count") as u64, sent);
    // Over gRPC only: the server's instances are the plugin's, and every call it
    // answered is a grpc_reqs.
    assert_eq!(calls(&text, "CreateProcessInstance"), sent, "{text}");
    assert_eq!(
        sample(&text, "demo_commands_submitted_total"),
        sent,
        "{text}"
    );
    assert_eq!(
        sample(&text, "demo_commands_finished_total{status=\"done\"}"),
        sent
    );
    let answered = calls(&text, "CreateProcessInstance") + calls(&text, "GetProcessInstance");
    assert_eq!(run.metric("grpc_reqs", "count") as u64, answered, "{text}");
    assert!(calls(&text, "GetProcessInstance") >= sent);
    server.shutdown().await;
}
