//! Limits that bite must say how to lift them: the body cap names `max_body_mb` (and
//! a `Content-Length` beyond it is refused from the header, without downloading the
//! body), and running out of file descriptors names `ulimit -n`, after the host has
//! raised its soft limit to the hard one as servers do, and a response with more
//! header fields than the parser takes names `[http] max_headers`.

use crate::support as common;

use std::process::Command;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

fn scenario(name: &str, url: &str) -> String {
    format!(
        "[scenarios.{name}]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 3\n\
         env = {{ MODE = \"request\", URL = \"{url}\" }}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_body_cap_names_max_body_mb_and_a_long_content_length_is_refused_at_once() {
    // Announces 17 MiB, sends 1 KiB, then nothing: waiting for the body would take
    // the whole request_timeout (10 s) per request.
    let announced = common::servers::raw_server(|mut s| async move {
        common::servers::read_head(&mut s).await;
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", 17 << 20);
        let _ = s.write_all(head.as_bytes()).await;
        let _ = s.write_all(&[b'x'; 1024]).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    // No length announced: 17 MiB in chunks, found too large while reading.
    let chunked = common::servers::raw_server(|mut s| async move {
        common::servers::read_head(&mut s).await;
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
            .await;
        let chunk = format!("10000\r\n{}\r\n", "y".repeat(0x10000));
        for _ in 0..(17 * 16) {
            if s.write_all(chunk.as_bytes()).await.is_err() {
                return;
            }
        }
        let _ = s.write_all(b"0\r\n\r\n").await;
    })
    .await;
    let config = format!(
        "{}{}[limits]\nrequest_timeout = \"10s\"\n",
        scenario("announced", &announced),
        scenario("chunked", &chunked),
    );
    let run = common::run("misbehave", &config, &[]).await.unwrap();
    for name in ["announced", "chunked"] {
        assert_eq!(run.scenario(name, "failed"), 3, "{name}");
    }
    let messages: Vec<&str> = run.json["plugin_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    for m in &messages {
        assert!(
            m.contains("cap of 16777216 bytes; raise [limits] max_body_mb"),
            "{m}"
        );
    }
    assert_eq!(
        run.json["http"]["errors"]["body_too_large"].as_u64(),
        Some(6)
    );
    // The announced body was never waited for: its requests ended at their head.
    let slowest = run.metric("iteration_duration", "max");
    assert!(
        slowest < 5_000.0,
        "an iteration took {slowest} ms: a body was waited for"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_header_fields_name_max_headers_and_raising_it_accepts_them() {
    // 150 header fields: past hyper's default of 100.
    let crowded = common::servers::raw_server(|mut s| async move {
        common::servers::read_head(&mut s).await;
        let mut head = String::from("HTTP/1.1 200 OK\r\nconnection: close\r\n");
        for i in 0..150 {
            head.push_str(&format!("x-field-{i}: {i}\r\n"));
        }
        head.push_str("content-length: 2\r\n\r\nok");
        let _ = s.write_all(head.as_bytes()).await;
    })
    .await;
    let run = common::run("misbehave", &scenario("crowded", &crowded), &[])
        .await
        .unwrap();
    assert_eq!(run.scenario("crowded", "failed"), 3);
    let message = run.json["plugin_errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("raise [http] max_headers"), "{message}");
    assert!(message.contains("more than 100 header fields"), "{message}");

    let raised = format!(
        "{}[http]\nmax_headers = 200\n",
        scenario("crowded", &crowded)
    );
    let run = common::run("misbehave", &raised, &[]).await.unwrap();
    assert_eq!(run.scenario("crowded", "failed"), 0, "{}", run.json);
    assert_eq!(run.scenario("crowded", "completed"), 3, "{}", run.json);
}

/// The host under `ulimit -n`: `soft` and `hard` descriptor limits, 100 VUs each
/// holding a connection to a demo target for 2 s.
fn run_under_ulimit(soft: u64, hard: u64, url: &str) -> (Option<i32>, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 100\nduration = \"2s\"\n",
    );
    let out = dir.path().join("results");
    let script = format!("ulimit -Sn {soft} && ulimit -Hn {hard} && exec \"$0\" \"$@\"",);
    let status = Command::new("bash")
        .args(["-c", &script])
        .arg(env!("CARGO_BIN_EXE_host"))
        .args(["run", "--quiet", "-e", "MODE=request", "-e"])
        .arg(format!("URL={url}"))
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .arg(common::plugin("misbehave"))
        .output()
        .unwrap();
    let summary = common::summary_json(&common::only_results_dir(&out));
    (status.status.code(), summary)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_descriptor_limit_is_raised_and_named_when_still_too_low() {
    let target = common::demo_target(Duration::ZERO).await;
    let url = format!("http://{}/health", target.addr());

    // A soft limit of 64 under a hard one of 4096: raised at start, so 100 VUs connect.
    let (code, summary) = tokio::task::block_in_place(|| run_under_ulimit(64, 4096, &url));
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(
        summary["http"]["errors"],
        serde_json::json!({}),
        "{summary}"
    );
    assert!(summary["http"]["succeeded"].as_u64() > Some(100));
    assert!(!summary["warnings"].to_string().contains("ulimit"));

    // A hard limit of 64 cannot be raised: the failures and the summary say how to lift it.
    let (_, summary) = tokio::task::block_in_place(|| run_under_ulimit(64, 64, &url));
    // Refused before anything was sent: counted under not_sent since faults-a item 11.
    let connect = summary["http"]["not_sent"]["connect"].as_u64().unwrap_or(0);
    assert!(connect > 0, "{summary}");
    let errors = summary["plugin_errors"].to_string();
    assert!(errors.contains("Too many open files"), "{errors}");
    assert!(errors.contains("ulimit -n"), "{errors}");
    let warnings = summary["warnings"].to_string();
    assert!(
        warnings.contains("could not be opened: too many open files")
            && warnings.contains("ulimit -n"),
        "{warnings}"
    );
    target.shutdown().await;
}
