//! A broken run must not pass: a threshold whose metric got no sample fails (unless
//! `[thresholds] allow_missing = true`, k6's behaviour), and a run in which every
//! iteration failed, or every request was denied, exits 110 with the reason, with or
//! without thresholds; so does a run whose target was killed during it (most
//! requests could not connect), with the target named, not the generator.

use crate::support as common;

use host::exit_code;

fn summary_txt(run: &common::Finished) -> String {
    std::fs::read_to_string(run.outcome.results_dir.join("summary.txt")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_threshold_that_got_no_sample_fails_unless_allow_missing() {
    // The plugin records no check: a check threshold would test nothing.
    let config = r#"
        [scenarios.s]
        executor = "shared-iterations"
        vus = 1
        iterations = 5
        [thresholds]
        "checks{check:signed in}" = ["rate>0.99"]
        iterations = ["count==5"]
    "#;
    let run = common::run("misbehave", config, &[]).await.unwrap();
    assert_eq!(run.outcome.exit_code, exit_code::THRESHOLDS);
    let t = &run.json["thresholds"];
    assert_eq!(t[0]["ok"], false);
    assert!(t[0]["observed"].is_null());
    assert_eq!(t[1]["ok"], true, "the other threshold is judged as usual");
    let text = summary_txt(&run);
    assert!(
        text.contains("✗ checks{check:signed in}: rate>0.99 (rate=-) — metric `checks{check:signed in}` got no samples"),
        "{text}"
    );

    let allowed = format!("{config}\n        allow_missing = true\n");
    let run = common::run("misbehave", &allowed, &[]).await.unwrap();
    assert_eq!(
        run.outcome.exit_code,
        exit_code::OK,
        "{}",
        run.json["thresholds"]
    );
    let t = &run.json["thresholds"];
    assert_eq!(t[0]["ok"], true);
    assert!(t[0]["note"]
        .as_str()
        .unwrap()
        .contains("allow_missing = true"));
    assert!(summary_txt(&run).contains("✓ checks{check:signed in}"));

    let bad = format!("{config}\n        allow_missing = \"yes\"\n");
    let err = common::run("misbehave", &bad, &[]).await.err().unwrap();
    assert!(
        format!("{err:#}").contains("thresholds.allow_missing: must be true or false"),
        "{err:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_iteration_failing_exits_110_with_or_without_thresholds() {
    let config = r#"
        [scenarios.s]
        executor = "shared-iterations"
        vus = 1
        iterations = 5
    "#;
    for thresholds in ["", "[thresholds]\niterations = [\"count==5\"]\n"] {
        let run = common::run(
            "misbehave",
            &format!("{config}{thresholds}"),
            &[("MODE", "fail")],
        )
        .await
        .unwrap();
        assert_eq!(
            run.outcome.exit_code,
            exit_code::MEASURED_NOTHING,
            "{thresholds}"
        );
        assert_eq!(run.json["status"], "failed");
        assert_eq!(
            run.json["failure"],
            "every iteration failed (5 of 5); most frequent error (5 × error): always failing"
        );
        let text = summary_txt(&run);
        assert!(text.contains("status: failed"), "{text}");
        // A CI job that reads only junit.xml sees the failure too.
        let junit = std::fs::read_to_string(run.outcome.results_dir.join("junit.xml")).unwrap();
        assert!(
            junit.contains("<testcase classname=\"run\" name=\"measured something\">"),
            "{junit}"
        );
        assert!(junit.contains("failures=\"1\""), "{junit}");
        assert!(
            text.contains("measured nothing: every iteration failed (5 of 5)"),
            "{text}"
        );
        if !thresholds.is_empty() {
            assert_eq!(
                run.json["thresholds"][0]["ok"], true,
                "thresholds alone would pass"
            );
        }
    }
    // One success is enough for the run to have measured something.
    let run = common::run("misbehave", config, &[("MODE", "panic-every-3")])
        .await
        .unwrap();
    assert_eq!(run.outcome.exit_code, exit_code::OK);
    assert!(run.json["failure"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_denied_exits_110_and_names_the_allowlist() {
    let config = r#"
        [scenarios.s]
        executor = "shared-iterations"
        vus = 1
        iterations = 4
    "#;
    // 192.0.2.0/24 is for documentation: not loopback, so denied before any packet.
    let run = common::run("hello", config, &[("BASE_URL", "http://192.0.2.1:8080")])
        .await
        .unwrap();
    assert_eq!(run.outcome.exit_code, exit_code::MEASURED_NOTHING);
    assert_eq!(run.json["http"]["denied"], 4);
    let failure = run.json["failure"].as_str().unwrap();
    assert!(
        failure.starts_with("every request was denied by the allowlist (4); allow the target with [targets] allow or --allow URL; and every iteration failed (4 of 4)"),
        "{failure}"
    );
}

/// Issue 29, item 5: a 30 s run whose every request was denied went on for its whole
/// duration, said so four times, and its thresholds advised to "make the plugin record
/// it". It now stops after 3 s, exits 110, and says why once.
#[test]
fn a_run_whose_every_request_is_denied_stops_early_and_says_so_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("run.toml");
    std::fs::write(
        &config,
        r#"
        [scenarios.s]
        executor = "constant-vus"
        vus = 2
        duration = "30s"
        [thresholds]
        http_req_duration = ["p(95)<500"]
        checks = ["rate>0.9"]
        "#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let started = std::time::Instant::now();
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_host"))
        .args(["run", "--config"])
        .arg(&config)
        .args(["-e", "BASE_URL=http://192.0.2.1:8080", "--out"])
        .arg(&out)
        .arg(common::plugin("hello"))
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&run.stderr);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        run.status.code(),
        Some(exit_code::MEASURED_NOTHING),
        "{stderr}"
    );
    assert!(
        took < std::time::Duration::from_secs(12),
        "a 30 s run that can measure nothing took {took:?}"
    );
    // The warning at the first denial names the origin; the error at the end counts.
    assert_eq!(
        stderr.matches("not an allowed target").count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("denied by the allowlist").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("error: the run measured nothing: every request was denied"),
        "{stderr}"
    );
    assert!(!stderr.contains("make the plugin record it"), "{stderr}");
    assert!(!stdout.contains("make the plugin record it"), "{stdout}");
    let json = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(json["status"], "failed");
    assert_eq!(
        json["stop_reason"]["by"], "cannot_measure",
        "{}",
        json["stop_reason"]
    );
    let note = json["thresholds"][0]["note"].as_str().unwrap();
    assert!(note.contains("the run measured nothing"), "{note}");
}

/// An HTTP server on 127.0.0.1 that answers `200 ok` (keep-alive) until `serve_for`
/// has passed, then dies as a killed process does: its connections are closed and its
/// port refuses new ones. Returns its base URL.
fn target_killed_after(serve_for: std::time::Duration) -> String {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let dead = Arc::new(AtomicBool::new(false));
    let until = std::time::Instant::now() + serve_for;
    std::thread::spawn(move || {
        while std::time::Instant::now() < until {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let dead = dead.clone();
                    std::thread::spawn(move || {
                        stream.set_nonblocking(false).unwrap();
                        stream
                            .set_read_timeout(Some(std::time::Duration::from_millis(50)))
                            .unwrap();
                        let mut buf = Vec::new();
                        let mut chunk = [0u8; 4096];
                        while !dead.load(Ordering::Relaxed) {
                            match stream.read(&mut chunk) {
                                Ok(0) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                                Err(_) => continue,
                            }
                            while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                buf.drain(..end + 4);
                                let _ = stream
                                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
                            }
                        }
                    });
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
            }
        }
        // Killed: every connection closed, the port closed with the listener.
        dead.store(true, Ordering::Relaxed);
    });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_killed_mid_run_fails_the_run_and_is_named_as_the_cause() {
    let base = target_killed_after(std::time::Duration::from_millis(1200));
    let config = r#"
        [scenarios.load]
        executor = "constant-arrival-rate"
        rate = 200
        time_unit = "1s"
        duration = "4s"
        pre_allocated_vus = 10
        max_vus = 20
    "#;
    let run = common::run("hello", config, &[("BASE_URL", base.as_str())])
        .await
        .unwrap();
    let json = &run.json;
    let shown = summary_txt(&run);
    assert_eq!(
        run.outcome.exit_code,
        exit_code::MEASURED_NOTHING,
        "{shown}\n{}",
        json["http"]
    );
    assert_eq!(json["status"], "failed", "{}", json["status"]);
    let failure = json["failure"].as_str().unwrap_or_default();
    assert!(
        failure.contains("the target stopped answering") && failure.contains("could not be sent"),
        "{failure}"
    );
    assert_eq!(
        json["bottleneck"]["who"], "target_unreachable",
        "{}",
        json["bottleneck"]
    );
    // What was served is what succeeded: the failed iterations are not in it.
    let load = &json["scenarios"]["load"];
    let good = load["completed"].as_f64().unwrap() - load["failed"].as_f64().unwrap();
    let served = json["bottleneck"]["figures"]["served_per_s"]
        .as_f64()
        .unwrap();
    let duration = json["duration_s"].as_f64().unwrap();
    assert!(
        (served - good / duration).abs() < 0.01,
        "{served} vs {good} in {duration} s"
    );
    assert!(shown.contains("the target stopped answering"), "{shown}");
    assert!(
        !shown.contains("load generator was the bottleneck"),
        "{shown}"
    );
}
