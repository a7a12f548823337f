//! The generator watches itself: a run made to saturate it (an arrival rate far beyond
//! what one core can start, the host pinned to that core) says its figures are a lower
//! bound of the target's capacity; a light run does not.

mod common;

use std::process::Command;

const LOWER_BOUND: &str = "lower bound of the target's capacity, not its ceiling";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturated_generator_says_its_figures_are_a_lower_bound() {
    let server = common::demo_target(std::time::Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(
        dir.path(),
        r#"
        [scenarios.flood]
        executor = "constant-arrival-rate"
        rate = 50000
        duration = "6s"
        pre_allocated_vus = 20
        max_vus = 20
        graceful_stop = "2s"
        "#,
    );
    // The host on one core; the target (this test process) may use any.
    let out = tokio::task::spawn_blocking({
        let (config, out_dir, base) = (
            config.clone(),
            dir.path().join("results"),
            server.base_url(),
        );
        move || {
            Command::new("taskset")
                .args([
                    "-c",
                    "0",
                    env!("CARGO_BIN_EXE_host"),
                    "run",
                    "--quiet",
                    "--config",
                ])
                .arg(&config)
                .arg("-e")
                .arg(format!("BASE_URL={base}"))
                .arg("--out")
                .arg(&out_dir)
                .arg(common::plugin("hello"))
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    server.shutdown().await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(LOWER_BOUND),
        "the printed summary says it: {stdout}"
    );

    let results = common::only_results_dir(&dir.path().join("results"));
    let summary = common::summary_json(&results);
    let verdict = &summary["generator_saturated"];
    assert_eq!(verdict["saturated"], true, "{verdict}");
    let evidence = verdict["evidence"].as_array().unwrap();
    assert!(!evidence.is_empty());
    for e in evidence {
        let signal = e["signal"].as_str().unwrap();
        assert!(
            ["cpu", "vus_exhausted", "start_lag"].contains(&signal),
            "{e}"
        );
        assert!(
            e["observed"].as_f64().unwrap() > e["limit"].as_f64().unwrap(),
            "{e}"
        );
    }
    // One core allowed, so its CPU is judged against one core.
    let generator = summary["stack"]["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["service"] == "generator")
        .unwrap();
    assert_eq!(generator["cpus"], 1.0, "{generator}");
    assert!(summary["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains(LOWER_BOUND)));
    for file in ["report.html", "stats.md", "summary.txt"] {
        let text = std::fs::read_to_string(results.join(file)).unwrap();
        // The page escapes the apostrophe.
        let text = text.replace("&apos;", "'");
        assert!(text.contains(LOWER_BOUND), "{file} says it");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_light_run_has_no_saturation_warning() {
    let server = common::demo_target(std::time::Duration::ZERO).await;
    let config = r#"
        [scenarios.light]
        executor = "constant-vus"
        vus = 1
        duration = "4s"
        exec = "browse"
    "#;
    let run = common::run("notes", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    server.shutdown().await;
    let verdict = &run.json["generator_saturated"];
    assert_eq!(verdict["saturated"], false, "{verdict}");
    assert_eq!(verdict["evidence"], serde_json::json!([]));
    assert!(!run.json["warnings"].to_string().contains(LOWER_BOUND));
    let html = std::fs::read_to_string(run.outcome.results_dir.join("report.html")).unwrap();
    assert!(!html.replace("&apos;", "'").contains(LOWER_BOUND));
    let generator_lines = std::fs::read_to_string(run.outcome.results_dir.join("stats.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"service\":\"generator\""))
        .count();
    assert!(generator_lines >= 2, "the generator was sampled");
}
