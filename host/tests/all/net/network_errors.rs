//! What the plugin and the summary see when the network misbehaves or a target is not
//! allowed: each failure has its own clear message, and nothing reaches a denied target.

use crate::support as common;

use demo_target::{DemoConfig, DemoServer};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

fn errors_of(run: &common::Finished, scenario: &str) -> Vec<String> {
    run.json["plugin_errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["scenario"] == scenario)
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect()
}

fn scenario(name: &str, mode: &str, url: &str) -> String {
    format!(
        r#"
        [scenarios.{name}]
        executor = "per-vu-iterations"
        vus = 1
        iterations = 2
        env = {{ MODE = "{mode}", URL = "{url}" }}
        "#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_allowed_targets_are_reached() {
    let allowed = DemoServer::start("127.0.0.1:0".parse().unwrap(), DemoConfig::default())
        .await
        .unwrap();
    let other = DemoServer::start("127.0.0.1:0".parse().unwrap(), DemoConfig::default())
        .await
        .unwrap();
    // A redirect from an allowed origin to the other one is denied too.
    let other_url = format!("{}/health", other.base_url());
    let redirector = common::servers::raw_server(move |mut s| {
        let location = other_url.clone();
        async move {
            common::servers::read_head(&mut s).await;
            let reply =
                format!("HTTP/1.1 302 Found\r\nlocation: {location}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
            let _ = s.write_all(reply.as_bytes()).await;
        }
    })
    .await;
    let config = format!(
        "{}{}{}\n[targets]\nallow = [\"{}\", \"{}\"]\n",
        scenario(
            "allowed",
            "request",
            &format!("{}/health", allowed.base_url())
        ),
        scenario("denied", "request", &format!("{}/health", other.base_url())),
        scenario("redirected", "request", &redirector),
        allowed.base_url(),
        redirector.trim_end_matches('/'),
    );
    let run = common::run("misbehave", &config, &[]).await.unwrap();

    assert_eq!(
        other.connections_accepted(),
        0,
        "a denied target was contacted"
    );
    assert_eq!(allowed.requests_served(), 2);
    assert_eq!(run.scenario("allowed", "failed"), 0);
    assert_eq!(run.scenario("denied", "failed"), 2);
    assert_eq!(run.scenario("redirected", "failed"), 2);
    assert_eq!(run.json["http"]["denied"].as_u64(), Some(4));
    for message in errors_of(&run, "denied")
        .iter()
        .chain(&errors_of(&run, "redirected"))
    {
        assert!(message.starts_with("request denied:"), "{message}");
        assert!(message.contains("not an allowed target"), "{message}");
        assert!(
            message.contains(&other.base_url().replace("http://", "")),
            "{message}"
        );
    }
    allowed.shutdown().await;
    other.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_network_failure_has_its_own_message() {
    // Nothing listens on a port just released.
    let refused = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        format!("http://{}/", l.local_addr().unwrap())
    };
    let reset = common::servers::raw_server(|mut s| async move {
        common::servers::read_head(&mut s).await;
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\npartial body")
            .await;
        // Close abruptly mid-body with a reset.
        let _ = s.set_zero_linger();
    })
    .await;
    let silent = common::servers::raw_server(|mut s| async move {
        common::servers::read_head(&mut s).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let huge = common::servers::raw_server(|mut s| async move {
        common::servers::read_head(&mut s).await;
        let size = 3 << 20;
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {size}\r\n\r\n");
        let _ = s.write_all(head.as_bytes()).await;
        let _ = s.write_all(&vec![b'x'; size]).await;
    })
    .await;
    let config = format!(
        "{}{}{}{}{}{}{}\n[limits]\nrequest_timeout = \"500ms\"\nmax_body_mb = 1\n[targets]\nallow = [\"{}\", \"{}\", \"{}\", \"{}\", \"http://nothing.invalid:80\"]\n",
        scenario("refused", "request", &refused),
        scenario("reset", "request", &reset),
        scenario("silent", "request", &silent),
        scenario("huge", "request", &huge),
        scenario("unresolvable", "request", "http://nothing.invalid/"),
        scenario("injection", "bad-header", &huge),
        scenario("malformed", "request", "http//no-scheme"),
        refused.trim_end_matches('/'),
        reset.trim_end_matches('/'),
        silent.trim_end_matches('/'),
        huge.trim_end_matches('/'),
    );
    let run = common::run("misbehave", &config, &[]).await.unwrap();
    let expect = |name: &str, needles: &[&str]| {
        let messages = errors_of(&run, name);
        assert!(!messages.is_empty(), "{name}: no error recorded");
        for m in &messages {
            for needle in needles {
                assert!(m.contains(needle), "{name}: {m:?} lacks {needle:?}");
            }
        }
        assert_eq!(run.scenario(name, "failed"), 2, "{name}");
    };
    expect("refused", &["connection failed:", "Connection refused"]);
    expect("reset", &["protocol error:"]);
    expect("silent", &["request timed out:", "500ms"]);
    expect("huge", &["larger than the host's cap of 1048576 bytes"]);
    expect(
        "unresolvable",
        &["connection failed:", "cannot resolve nothing.invalid"],
    );
    expect("injection", &["invalid request:", "x-injected", "CR, LF"]);
    expect("malformed", &["invalid request:"]);
    // Refused and unresolvable requests never reached a connection: not sent.
    let http = &run.json["http"];
    assert_eq!(http["errors"]["timeout"].as_u64(), Some(2), "{http}");
    assert_eq!(http["errors"].get("connect"), None, "{http}");
    assert_eq!(http["not_sent"]["connect"].as_u64(), Some(4), "{http}");
    // The run went on: every scenario ran both its iterations.
    for name in [
        "refused",
        "reset",
        "silent",
        "huge",
        "unresolvable",
        "injection",
        "malformed",
    ] {
        assert_eq!(run.scenario(name, "completed"), 2, "{name}");
    }
}

/// Responses stay on the host until the plugin reads or drops them, so a plugin that
/// keeps every one is stopped at the cap with a clear error, not by the host's memory;
/// the request past the cap is not sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_keeps_every_response_is_stopped_at_the_cap() {
    let server = common::demo_target(Duration::ZERO).await;
    let url = format!("http://{}/health", server.addr());
    let run = common::run("misbehave", &scenario("hoard", "hoard", &url), &[])
        .await
        .unwrap();
    assert_eq!(run.scenario("hoard", "failed"), 2);
    let messages = errors_of(&run, "hoard");
    assert!(!messages.is_empty());
    for m in &messages {
        assert!(m.contains("this VU holds 10000 responses"), "{m}");
        assert!(
            m.contains("kept 10000; the first is application/json"),
            "{m}"
        );
    }
    // The first iteration's responses were dropped with it, so the second could
    // send as many again.
    assert_eq!(run.metric("http_reqs", "count"), 20_000.0);
    assert_eq!(server.requests_served(), 20_000);
}
