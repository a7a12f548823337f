//! WebSockets end to end: real plugins (`sockets`, `ws_probe`) run in-process by
//! `host::run` against the embedded demo target and against tiny misbehaving
//! servers written here with tokio-tungstenite, all on 127.0.0.1.

use crate::support::metric_count as count;
use demo_target::{DemoConfig, DemoServer};
use futures::StreamExt;
use host::{run, RunOutcome, RunRequest};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

fn plugin(name: &str) -> PathBuf {
    Path::new(host::PLUGINS_DIR).join(format!("{name}.wasm"))
}

/// Runs `plugin` with the run config `toml`; returns the outcome and summary.json.
async fn run_plugin(
    dir: &tempfile::TempDir,
    name: &str,
    toml: &str,
) -> (RunOutcome, serde_json::Value) {
    let config = dir.path().join(format!("{name}.toml"));
    std::fs::write(&config, toml).unwrap();
    let outcome = run(RunRequest {
        plugin: plugin(name),
        config: Some(config),
        out: dir.path().join("results"),
        quiet: true,
        handle_signals: false,
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| panic!("run of {name} failed: {e:#}"));
    let text = std::fs::read_to_string(outcome.results_dir.join("summary.json")).unwrap();
    (outcome, serde_json::from_str(&text).unwrap())
}

/// Every plugin error message, for assertion messages.
fn errors(outcome: &RunOutcome) -> String {
    outcome
        .summary
        .plugin_errors
        .iter()
        .map(|e| format!("{} x{}", e.message, e.count))
        .collect::<Vec<_>>()
        .join("; ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holds_200_sockets_across_iterations_and_counts_every_push() {
    let server = DemoServer::start(
        "127.0.0.1:0".parse().unwrap(),
        DemoConfig {
            // Server pings during the run, which the host must answer.
            ws_ping_interval: Duration::from_millis(500),
            ws_idle_timeout: Duration::from_secs(5),
            ..DemoConfig::default()
        },
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        r#"
[scenarios.listeners]
executor = "constant-vus"
vus = 10
duration = "7s"
exec = "listeners"

[scenarios.writer]
executor = "constant-vus"
vus = 1
start_time = "2s"
duration = "3s"
exec = "writer"

[env]
BASE_URL = "{}"
TABS = "20"
DRAIN_MS = "500"

[websocket]
ping_interval = "1s"
"#,
        server.base_url()
    );
    let (outcome, summary) = run_plugin(&dir, "sockets", &toml).await;
    let received = count(&summary, "pushes_received");
    let expected = count(&summary, "pushes_expected");
    assert_eq!(
        count(&summary, "ws_sessions"),
        200.0,
        "{}",
        errors(&outcome)
    );
    // Each write is a create and a delete; at least one pair reached all 200 sockets.
    assert!(expected >= 400.0, "expected pushes {expected}");
    assert_eq!(received, expected, "pushes received vs expected");
    assert_eq!(count(&summary, "ws_errors"), 0.0, "{}", errors(&outcome));
    assert!(count(&summary, "ws_msgs_received") >= received);
    // 200 subscriptions sent, and the host's pings were answered by the demo target.
    assert_eq!(count(&summary, "ws_msgs_sent"), 200.0);
    assert!(summary["metrics"]["ws_ping"]["count"].as_u64().unwrap_or(0) >= 200);
    assert_eq!(summary["metrics"]["ws_session_duration"]["count"], 200);
    // Sockets outlived iterations: each listener ran several iterations on one set.
    let listeners = &summary["scenarios"]["listeners"];
    assert!(
        listeners["completed"].as_u64().unwrap() >= 30,
        "{listeners}"
    );
    assert_eq!(listeners["failed"], 0, "{}", errors(&outcome));
    // Every socket was closed when its VU ended.
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.live_sockets() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(server.live_sockets(), 0, "sockets left open after the run");
    server.shutdown().await;
}

/// A WebSocket server on 127.0.0.1 whose every connection is handled by `behave`.
async fn tiny_server<F, Fut>(behave: F) -> String
where
    F: Fn(tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            if let Ok(ws) = tokio_tungstenite::accept_async(tcp).await {
                tokio::spawn(behave(ws));
            }
        }
    });
    url
}

fn probe_config(url: &str, iterations: u32, extra: &str) -> String {
    format!(
        r#"
[scenarios.default]
executor = "per-vu-iterations"
vus = 1
iterations = {iterations}

[env]
URL = "{url}"
{extra}
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_close_reaches_the_plugin_is_counted_and_the_run_goes_on() {
    let url = tiny_server(|mut ws| async move {
        let _ = ws.next().await;
        let frame = CloseFrame {
            code: CloseCode::from(4000),
            reason: "go away".into(),
        };
        let _ = ws.close(Some(frame)).await;
        while ws.next().await.is_some() {}
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (outcome, summary) = run_plugin(&dir, "ws_probe", &probe_config(&url, 4, "")).await;
    let scenario = &summary["scenarios"]["default"];
    assert_eq!(scenario["completed"], 4, "{scenario}");
    assert_eq!(scenario["failed"], 4, "{scenario}");
    assert_eq!(count(&summary, "probe_closed"), 4.0, "{}", errors(&outcome));
    assert_eq!(count(&summary, "ws_sessions"), 4.0);
    assert_eq!(count(&summary, "ws_errors"), 4.0);
    let message = &outcome.summary.plugin_errors[0].message;
    assert!(
        message.contains("4000") && message.contains("go away"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_is_a_protocol_error_and_the_run_goes_on() {
    let url = tiny_server(|mut ws| async move {
        let _ = ws.next().await;
        // Gone without a close frame, as a crashed server or a cut cable.
        drop(ws);
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (outcome, summary) = run_plugin(&dir, "ws_probe", &probe_config(&url, 3, "")).await;
    assert_eq!(summary["scenarios"]["default"]["completed"], 3);
    assert_eq!(
        count(&summary, "probe_protocol"),
        3.0,
        "{}",
        errors(&outcome)
    );
    assert_eq!(count(&summary, "ws_errors"), 3.0);
    assert_eq!(count(&summary, "ws_sessions"), 3.0);
}

/// Accepts sockets and never reads or answers them again.
async fn silent_server() -> String {
    tiny_server(|ws| async move {
        // Held open but never polled: no reads, no pongs.
        let _held = ws;
        std::future::pending::<()>().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_times_out_recv_and_keeps_the_socket_across_iterations() {
    let url = silent_server().await;
    let dir = tempfile::tempdir().unwrap();
    let env = "RECV_MS = \"200\"";
    let (outcome, summary) = run_plugin(&dir, "ws_probe", &probe_config(&url, 3, env)).await;
    assert_eq!(
        count(&summary, "probe_timeouts"),
        3.0,
        "{}",
        errors(&outcome)
    );
    // One socket served all three iterations.
    assert_eq!(count(&summary, "ws_sessions"), 1.0);
    assert_eq!(count(&summary, "ws_msgs_sent"), 3.0);
    assert_eq!(count(&summary, "ws_errors"), 0.0);
    assert_eq!(summary["scenarios"]["default"]["failed"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_pings_without_pongs_end_the_socket_and_the_run_goes_on() {
    let url = silent_server().await;
    let dir = tempfile::tempdir().unwrap();
    let extra = "RECV_MS = \"10000\"\n[websocket]\nping_interval = \"200ms\"";
    let (outcome, summary) = run_plugin(&dir, "ws_probe", &probe_config(&url, 2, extra)).await;
    assert_eq!(summary["scenarios"]["default"]["completed"], 2);
    assert_eq!(
        count(&summary, "probe_protocol"),
        2.0,
        "{}",
        errors(&outcome)
    );
    assert_eq!(count(&summary, "ws_errors"), 2.0);
    assert_eq!(count(&summary, "ws_sessions"), 2.0);
    let message = &outcome.summary.plugin_errors[0].message;
    assert!(message.contains("no pong"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_to_other_hosts_or_of_another_scheme_are_refused_before_any_packet() {
    let dir = tempfile::tempdir().unwrap();
    for (url, expect) in [
        ("ws://192.0.2.1:80/", "not an allowed target"),
        // wss:// passes the same allowlist (it is tested over TLS in tls.rs).
        ("wss://192.0.2.1:443/", "not an allowed target"),
        ("http://127.0.0.1:9/", "ws:// or wss://"),
    ] {
        let (outcome, summary) = run_plugin(&dir, "ws_probe", &probe_config(url, 1, "")).await;
        assert_eq!(count(&summary, "probe_connect_errors"), 1.0, "{url}");
        assert_eq!(count(&summary, "ws_errors"), 1.0, "{url}");
        assert_eq!(count(&summary, "ws_sessions"), 0.0, "{url}");
        let message = &outcome.summary.plugin_errors[0].message;
        assert!(message.contains(expect), "{url}: {message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_leave_from_each_vus_local_ip() {
    use futures::SinkExt;
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};
    // An echo server that notes the source address of every connection.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let peers = Arc::new(Mutex::new(BTreeSet::new()));
    let seen = peers.clone();
    tokio::spawn(async move {
        while let Ok((tcp, addr)) = listener.accept().await {
            seen.lock().unwrap().insert(addr.ip().to_string());
            tokio::spawn(async move {
                if let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await {
                    while let Some(Ok(message)) = ws.next().await {
                        if message.is_text() && ws.send(message).await.is_err() {
                            break;
                        }
                    }
                }
            });
        }
    });
    let config = probe_config(&url, 2, "[http]\nlocal_ips = [\"127.0.0.20-127.0.0.23\"]")
        .replace("vus = 1", "vus = 4");
    let dir = tempfile::tempdir().unwrap();
    let (outcome, summary) = run_plugin(&dir, "ws_probe", &config).await;
    assert_eq!(
        count(&summary, "probe_messages"),
        8.0,
        "{}",
        errors(&outcome)
    );
    let peers = peers.lock().unwrap().clone();
    let expected: BTreeSet<String> = (20..=23).map(|i| format!("127.0.0.{i}")).collect();
    assert_eq!(peers, expected, "one source address per VU, as for HTTP");
}
