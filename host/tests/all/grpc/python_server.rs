//! gRPC end to end: the bundled `grpc-call` plugin, run in-process by `host::run`,
//! against a gRPC server this project did not write: Python's grpcio with
//! grpcio-reflection (tests/fixtures/grpc/server.py, from a venv that `./dev test`
//! makes in target/grpc-venv), on 127.0.0.1. What the server counts is compared with
//! what the host recorded: calls and `grpc_reqs`, stream messages each way, and the
//! failures (a deadline, INVALID_ARGUMENT, a refused TLS handshake) with their kind
//! and status; a denied target gets no packet.

use crate::support as common;
use crate::support::grpc_server;

use grpc_server::Server;

use std::path::Path;

/// The observed value of the threshold on `metric` (0 when it got no samples).
fn observed(run: &common::Finished, metric: &str) -> f64 {
    run.json["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["metric"] == metric || t["name"] == metric)
        .unwrap_or_else(|| panic!("no threshold on {metric}: {}", run.json["thresholds"]))
        ["observed"]
        .as_f64()
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_streams_and_failures_match_what_a_grpcio_server_counted() {
    let dir = tempfile::tempdir().unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let mut server = Server::start(&cert, &key);
    // A target the run does not allow: it must see no connection.
    let denied = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    denied.set_nonblocking(true).unwrap();
    let denied_port = denied.local_addr().unwrap().port();

    let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/grpc/counter.proto");
    let (plain, tls) = (server.plain, server.tls);
    let target = format!("127.0.0.1:{plain}");
    let at = |name: &str, iterations: u32, target: &str, env: &str| {
        format!(
            "[scenarios.{name}]\nexecutor = \"shared-iterations\"\nvus = 2\niterations = {iterations}\n\
             max_duration = \"20s\"\nenv = {{ GRPC_TARGET = \"{target}\", {env} }}\n"
        )
    };
    let scenario = |name: &str, iterations: u32, env: &str| at(name, iterations, &target, env);
    let mut config = String::new();
    // Unary calls, descriptors by reflection, then from the .proto in [data].
    config += &scenario(
        "echo",
        20,
        r#"GRPC_METHOD = "loadtest.test.Counter/Echo", GRPC_REQUEST = '{"text":"hi"}'"#,
    );
    config += &scenario(
        "ping",
        10,
        r#"GRPC_METHOD = "loadtest.test.Counter/Ping", GRPC_PROTO = "counter""#,
    );
    // A server stream of 5 per call, a client stream of 3, a bidi stream of 4.
    config += &scenario(
        "watch",
        4,
        r#"GRPC_METHOD = "loadtest.test.Counter/Watch", GRPC_REQUEST = '{"count":5}'"#,
    );
    config += &scenario(
        "upload",
        4,
        r#"GRPC_METHOD = "loadtest.test.Counter/Upload", GRPC_MESSAGES = "3", GRPC_PROTO = "counter""#,
    );
    config += &scenario(
        "chat",
        3,
        r#"GRPC_METHOD = "loadtest.test.Counter/Chat", GRPC_MESSAGES = "4""#,
    );
    // Failures: a deadline, INVALID_ARGUMENT, a TLS handshake the host refuses (the
    // server's certificate is not trusted), a denied target.
    config += &scenario(
        "slow",
        3,
        r#"GRPC_METHOD = "loadtest.test.Counter/Slow", GRPC_REQUEST = '{"delay_ms":400}', GRPC_TIMEOUT_MS = "100""#,
    );
    config += &scenario(
        "fail",
        5,
        r#"GRPC_METHOD = "loadtest.test.Counter/Fail", GRPC_REQUEST = '{"text":"x"}'"#,
    );
    let echo = r#"GRPC_METHOD = "loadtest.test.Counter/Echo", GRPC_PROTO = "counter""#;
    config += &at(
        "tls",
        2,
        &format!("127.0.0.1:{tls}"),
        &format!(r#"{echo}, GRPC_TLS = "1""#),
    );
    config += &at("denied", 2, &format!("127.0.0.1:{denied_port}"), echo);
    config += &format!(
        "[data]\ncounter = {proto:?}\n[targets]\nallow = [\"http://127.0.0.1:{plain}\", \"https://127.0.0.1:{tls}\"]\n\
         [thresholds]\n\
         \"grpc_reqs{{scenario:echo,status:0}}\" = [\"count>=0\"]\n\
         \"grpc_reqs{{status:4,error:deadline}}\" = [\"count>=0\"]\n\
         \"grpc_reqs{{status:3,error:status}}\" = [\"count>=0\"]\n\
         \"grpc_reqs{{status:14,error:tls}}\" = [\"count>=0\"]\n\
         \"grpc_req_failed{{scenario:echo}}\" = [\"rate>=0\"]\n\
         \"grpc_req_failed{{scenario:fail}}\" = [\"rate>=0\"]\n"
    );
    let run = common::run("grpc_call", &config, &[]).await.unwrap();
    let served = server.stats();
    let calls = |m: &str| served["calls"][m].as_f64().unwrap_or(0.0);

    // Every unary call the server answered is a grpc_reqs, and no more.
    let unary = calls("Echo") + calls("Ping") + calls("Slow") + calls("Fail");
    assert_eq!(calls("Echo"), 20.0, "{served}");
    assert_eq!(calls("Ping"), 10.0, "{served}");
    assert_eq!(calls("Fail"), 5.0, "{served}");
    assert_eq!(calls("Slow"), 3.0, "{served}");
    // The TLS calls failed at the handshake: counted, never served.
    assert_eq!(
        run.metric("grpc_reqs", "count"),
        unary + 2.0,
        "{}",
        run.json["metrics"]
    );
    assert_eq!(observed(&run, "grpc_reqs{scenario:echo,status:0}"), 20.0);
    assert_eq!(observed(&run, "grpc_req_failed{scenario:echo}"), 0.0);

    // Streams: messages each way match the server's counts.
    assert_eq!(
        calls("Watch") + calls("Upload") + calls("Chat"),
        11.0,
        "{served}"
    );
    assert_eq!(run.metric("grpc_streams", "count"), 11.0);
    assert_eq!(
        run.metric("grpc_streams_msgs_sent", "count"),
        served["stream_received"].as_f64().unwrap()
    );
    assert_eq!(
        run.metric("grpc_streams_msgs_received", "count"),
        served["stream_sent"].as_f64().unwrap()
    );
    assert_eq!(
        run.metric("grpc_streams_msgs_sent", "count"),
        4.0 + 12.0 + 12.0
    );
    assert_eq!(
        run.metric("grpc_streams_msgs_received", "count"),
        20.0 + 4.0 + 12.0
    );

    // Failures, each with its kind and status.
    assert_eq!(observed(&run, "grpc_reqs{status:4,error:deadline}"), 3.0);
    assert_eq!(observed(&run, "grpc_reqs{status:3,error:status}"), 5.0);
    assert_eq!(observed(&run, "grpc_req_failed{scenario:fail}"), 1.0);
    assert_eq!(observed(&run, "grpc_reqs{status:14,error:tls}"), 2.0);
    // The summary names each failed status with what the server said (issue 49 item
    // 17: only `grpc_req_failed` said anything).
    let failures = &run.outcome.summary.grpc_failures;
    let status = |name: &str| {
        failures
            .iter()
            .find(|f| f.status == name)
            .unwrap_or_else(|| panic!("no {name} in {failures:?}"))
    };
    assert_eq!(status("INVALID_ARGUMENT").count, 5);
    assert_eq!(status("INVALID_ARGUMENT").message, "text must not be x");
    assert_eq!(status("DEADLINE_EXCEEDED").count, 3);
    assert_eq!(status("UNAVAILABLE").count, 2);
    assert!(
        status("UNAVAILABLE").message.starts_with("tls: "),
        "{failures:?}"
    );

    // The denied target: the plugin was told, and nothing reached the port.
    let errors: Vec<String> = run
        .outcome
        .summary
        .plugin_errors
        .iter()
        .map(|e| e.message.clone())
        .collect();
    assert!(errors.iter().any(|e| e.contains("denied")), "{errors:?}");
    assert!(
        errors.iter().all(|e| e.contains("denied")),
        "only the denied scenario fails: {errors:?}"
    );
    assert!(
        matches!(denied.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a denied target got a connection"
    );
}

/// A plugin built against contract 0.3.3 (fixtures/wit_033) opens its channel with
/// `channel.connect`, beside which 0.3.5 added `channel.open`: it still links and its
/// calls reach the server, each counted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_built_against_0_3_3_still_connects_with_its_channel_options() {
    let mut server = Server::plaintext();
    let target = format!("127.0.0.1:{}", server.plain);
    let config = "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 2\niterations = 3\n";
    let run = common::run("wit_033", config, &[("GRPC_TARGET", &target)])
        .await
        .unwrap();
    let served = server.stats()["calls"]["Echo"].as_f64().unwrap_or(0.0);
    assert_eq!(served, 6.0);
    assert_eq!(run.metric("grpc_reqs", "count"), served);
    let checks = &run.json["checks"];
    let echo = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "grpc echo answered")
        .unwrap_or_else(|| panic!("{checks}"));
    assert_eq!(
        (echo["passes"].as_u64(), echo["fails"].as_u64()),
        (Some(6), Some(0))
    );
}

/// Prepared calls (contract 0.3.6, fixtures/grpc_prepared) against grpcio: each
/// iteration a prepared `Echo`, the same `Echo` by `invoke` (the two answers read the
/// same), and a prepared `Fail` expecting INVALID_ARGUMENT. What the server served is
/// what the host counted, the expected status under its code, none failed; a call
/// prepared on a dropped channel is refused without a packet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_calls_answer_as_invoke_and_count_as_grpcio_served_them() {
    let mut server = Server::plaintext();
    let target = format!("127.0.0.1:{}", server.plain);
    let config = "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 2\niterations = 5\n\
                  [thresholds]\n\
                  \"grpc_reqs{status:3}\" = [\"count>=0\"]\n\
                  \"grpc_req_failed{status:3}\" = [\"rate>=0\"]\n\
                  \"grpc_reqs{name:prepared-echo}\" = [\"count>=0\"]\n";
    let run = common::run("grpc_prepared", config, &[("GRPC_TARGET", &target)])
        .await
        .unwrap();
    let served = server.stats();
    let calls = |m: &str| served["calls"][m].as_f64().unwrap_or(0.0);
    assert_eq!((calls("Echo"), calls("Fail")), (20.0, 10.0), "{served}");
    assert_eq!(
        run.metric("grpc_reqs", "count"),
        calls("Echo") + calls("Fail"),
        "{}",
        run.json["metrics"]
    );
    assert_eq!(observed(&run, "grpc_reqs{status:3}"), 10.0);
    assert_eq!(observed(&run, "grpc_req_failed{status:3}"), 0.0);
    assert_eq!(observed(&run, "grpc_reqs{name:prepared-echo}"), 10.0);
    assert_eq!(run.metric("grpc_req_failed", "rate"), 0.0);
    for (check, passes) in [
        ("a prepared answer reads as invoke's", 10),
        ("a prepared answer has its metadata", 10),
        ("an expected status is a prepared response", 10),
        ("a call prepared on a dropped channel is refused", 2),
    ] {
        assert_eq!(
            common::check_counts(&run.json, check),
            (passes, 0),
            "{}",
            run.json["checks"]
        );
    }
    assert!(
        run.outcome.summary.plugin_errors.is_empty(),
        "{:?}",
        run.outcome.summary.plugin_errors
    );
}
