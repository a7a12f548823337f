//! Who saturated: a run made to saturate the generator (an arrival rate far beyond what
//! one core can start, the host pinned to that core, with VUs enough for the target's
//! latency even on a loaded CI machine: with 20, a target slowed to 4 ms by the
//! machine's other work ran the pool out first, and the verdict rightly named the pool)
//! says its figures are a lower bound
//! of the target's capacity; a run against a target of known capacity (2 workers of
//! 50 ms: 40/s) offered more than it serves keeps every VU busy while the target's
//! latency rises, and names the target, not the idle generator; a light run names
//! neither.

use crate::support as common;

use std::process::Command;

const LOWER_BOUND: &str = "lower bound of the target's capacity, not its ceiling";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturated_generator_says_its_figures_are_a_lower_bound() {
    let _turn = common::turns::MEASURING.lock().await;
    let server = common::demo_target(std::time::Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(
        dir.path(),
        r#"
        [scenarios.flood]
        executor = "constant-arrival-rate"
        rate = 50000
        duration = "6s"
        pre_allocated_vus = 50
        max_vus = 400
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
    assert_eq!(
        summary["bottleneck"]["who"], "generator",
        "{}",
        summary["bottleneck"]
    );
    assert_eq!(summary["target_saturated"]["saturated"], false);
    let evidence = verdict["evidence"].as_array().unwrap();
    assert!(!evidence.is_empty());
    for e in evidence {
        let signal = e["signal"].as_str().unwrap();
        // Only the generator's own evidence names it.
        assert!(["cpu", "start_lag"].contains(&signal), "{e}");
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
        let text = std::fs::read_to_string(results.join(file)).unwrap_or_else(|e| {
            let held: Vec<_> = std::fs::read_dir(&results)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            panic!(
                "{file}: {e}; the folder holds {held:?}; the host said:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        // The page escapes the apostrophe.
        let text = text.replace("&apos;", "'");
        assert!(text.contains(LOWER_BOUND), "{file} says it");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturated_target_is_named_not_the_idle_generator() {
    let _turn = common::turns::MEASURING.lock().await;
    // The truth: 2 workers of 50 ms serve 40/s; 100/s are offered to 10 VUs. The VUs
    // wait in the target's queue (10 in flight at 40/s: 250 ms each, from 50 ms at the
    // start) and the iterations due while all ten wait are dropped.
    let server = demo_target::DemoServer::start(
        "127.0.0.1:0".parse().unwrap(),
        demo_target::DemoConfig {
            faults: demo_target::Faults {
                capacity: Some(demo_target::Capacity::new(
                    2,
                    std::time::Duration::from_millis(50),
                )),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let config = r#"
        [scenarios.open]
        executor = "constant-arrival-rate"
        rate = 100
        duration = "4s"
        pre_allocated_vus = 10
        max_vus = 10
        graceful_stop = "2s"
    "#;
    let run = common::run("hello", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    server.shutdown().await;
    let s = &run.json;
    assert_eq!(s["generator_saturated"]["saturated"], false, "{s}");
    assert_eq!(s["generator_saturated"]["evidence"], serde_json::json!([]));
    assert_eq!(s["target_saturated"]["saturated"], true, "{s}");
    assert_eq!(s["bottleneck"]["who"], "target", "{}", s["bottleneck"]);
    let e = &s["target_saturated"]["evidence"][0];
    assert_eq!(e["signal"], "vus_exhausted", "{e}");
    assert_eq!(e["latency_rose"], true, "{e}");
    let dropped = run.scenario("open", "dropped");
    assert!(dropped > 100, "{dropped} dropped");
    assert_eq!(e["dropped"], dropped, "one count of drops: {e}");
    // The figures: the target served its 40/s (over the run's 4 s and its drain) at a
    // latency far above its 50 ms; the generator idled.
    let f = &s["bottleneck"]["figures"];
    let served = f["served_per_s"].as_f64().unwrap();
    assert!((25.0..=42.0).contains(&served), "served {served}/s: {f}");
    assert!(f["latency_p50_ms"].as_f64().unwrap() > 150.0, "{f}");
    assert!(f["latency_min_ms"].as_f64().unwrap() < 100.0, "{f}");
    let warnings: Vec<&str> = s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        !warnings.iter().any(|w| w.contains(LOWER_BOUND)),
        "the generator is not blamed: {warnings:?}"
    );
    let verdict = warnings
        .iter()
        .find(|w| w.starts_with("the target saturated, not the load generator"))
        .unwrap_or_else(|| panic!("{warnings:?}"));
    assert!(verdict.contains("capacity at this latency"), "{verdict}");
    assert!(verdict.contains("Raise max_vus"), "{verdict}");
    // Both warnings count the same drops.
    let counted = format!("{dropped} of ");
    assert!(verdict.contains(&counted), "{verdict}");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("ran out of VUs") && w.contains(&counted)),
        "{warnings:?}"
    );
    let text = std::fs::read_to_string(run.outcome.results_dir.join("summary.txt")).unwrap();
    assert!(text.contains("bottleneck: the target"), "{text}");
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
    assert_eq!(run.json["target_saturated"]["saturated"], false);
    assert_eq!(run.json["bottleneck"]["who"], "none");
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
