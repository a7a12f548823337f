//! Thresholds in real runs against the demo target: a crossed one exits 99 and shows in
//! junit.xml, `abort_on_fail` stops the run early, thresholds work on custom metrics and
//! tagged sub-metrics, and a bad expression is refused before anything runs.

use crate::support as common;

use common::{demo_target, only_results_dir, run_at, summary_json, write_config};
use host::exit_code;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crossed_threshold_exits_99_and_junit_shows_the_failure() {
    let server = demo_target(Duration::from_millis(20)).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        r#"
        [scenarios.default]
        executor = "per-vu-iterations"
        vus = 2
        iterations = 15
        [thresholds]
        http_req_duration = ["p(95)<10"]
        "http_req_duration{name:/}" = ["avg>=20"]
        http_req_failed = ["rate<0.01"]
        "checks{check:status is 200}" = ["rate>0.99"]
        "#,
    );
    let out = dir.path().join("out");
    let base = server.base_url();
    let outcome = run_at("hello", &config, &[("BASE_URL", &base)], &out).await;
    server.shutdown().await;

    assert_eq!(outcome.exit_code, exit_code::THRESHOLDS);
    let results = only_results_dir(&out);
    assert_eq!(outcome.results_dir, results);
    let summary = summary_json(&results);
    assert_eq!(summary["status"], "completed");
    let thresholds = summary["thresholds"].as_array().unwrap();
    assert_eq!(thresholds.len(), 4);
    let failed: Vec<&serde_json::Value> = thresholds.iter().filter(|t| t["ok"] == false).collect();
    assert_eq!(failed.len(), 1, "{thresholds:?}");
    assert_eq!(failed[0]["metric"], "http_req_duration");
    assert_eq!(failed[0]["threshold"], "p(95)<10");
    assert_eq!(failed[0]["unit"], "ms");
    let observed = failed[0]["observed"].as_f64().unwrap();
    assert!(observed >= 20.0, "every request waited 20 ms: {observed}");
    assert_eq!(
        summary["metrics"]["http_reqs"]["count"], 30.0,
        "2 VUs × 15 iterations × 1 request"
    );

    let junit = std::fs::read_to_string(results.join("junit.xml")).unwrap();
    assert!(junit.starts_with("<?xml"), "{junit}");
    assert_eq!(junit.matches("<testcase ").count(), 4, "{junit}");
    assert_eq!(junit.matches("<failure ").count(), 1, "{junit}");
    assert!(junit.contains("tests=\"4\" failures=\"1\""), "{junit}");
    let failure = &junit[junit.find("<failure ").unwrap()..];
    assert!(failure.contains("p(95)&lt;10"), "{failure}");
    assert!(failure.contains("observed p(95)="), "{failure}");

    let text = std::fs::read_to_string(results.join("summary.txt")).unwrap();
    assert!(text.contains("✗ http_req_duration: p(95)<10"), "{text}");
    assert!(text.contains("✓ http_req_failed: rate<0.01"), "{text}");
    assert!(
        text.contains("✓ checks{check:status is 200}: rate>0.99"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_on_fail_stops_the_run_long_before_its_end() {
    let server = demo_target(Duration::from_millis(20)).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        r#"
        [scenarios.default]
        executor = "constant-vus"
        vus = 2
        duration = "60s"
        [thresholds]
        http_req_duration = [
            "p(99)<10000",
            { threshold = "p(95)<10", abort_on_fail = true, delay_abort_eval = "1s" },
        ]
        "#,
    );
    let out = dir.path().join("out");
    let base = server.base_url();
    let outcome = run_at("hello", &config, &[("BASE_URL", &base)], &out).await;
    server.shutdown().await;

    assert_eq!(outcome.exit_code, exit_code::THRESHOLDS);
    let summary = summary_json(&only_results_dir(&out));
    let duration = summary["duration_s"].as_f64().unwrap();
    assert!(
        (1.0..20.0).contains(&duration),
        "stopped after the 1 s delay, long before 60 s: {duration}"
    );
    assert_eq!(summary["status"], "aborted");
    assert_eq!(summary["stop_reason"]["by"], "threshold");
    let reason = summary["stop_reason"]["reason"].as_str().unwrap();
    assert!(reason.contains("p(95)<10"), "{reason}");
    let t = &summary["thresholds"];
    assert_eq!(t[0]["ok"], true);
    assert_eq!(t[0]["aborted_run"], false);
    assert_eq!(t[1]["ok"], false);
    assert_eq!(t[1]["aborted_run"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thresholds_on_custom_metrics_and_tagged_sub_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        r#"
        [scenarios.default]
        executor = "per-vu-iterations"
        vus = 1
        iterations = 20
        [thresholds]
        iterations = ["count==20"]
        orders = ["count==20", "rate>0"]
        "orders{kind:test}" = ["count==20"]
        queue_depth = ["value==19", "max==19"]
        cache_hit = ["rate==0.5"]
        order_ms = ["p(95)>12", "p(99.9)<13", "avg<13", "max<1"]
        "checks{check:custom ok}" = ["rate==1"]
        never_recorded = ["count>0"]
        "#,
    );
    let out = dir.path().join("out");
    let outcome = run_at("misbehave", &config, &[("MODE", "metrics")], &out).await;

    assert_eq!(
        outcome.exit_code,
        exit_code::THRESHOLDS,
        "order_ms max<1 fails"
    );
    let summary = summary_json(&only_results_dir(&out));
    let thresholds = summary["thresholds"].as_array().unwrap();
    let verdict = |metric: &str, threshold: &str| {
        thresholds
            .iter()
            .find(|t| t["metric"] == metric && t["threshold"] == threshold)
            .unwrap_or_else(|| panic!("{metric} {threshold} in {thresholds:?}"))
            .clone()
    };
    for (metric, threshold) in [
        ("iterations", "count==20"),
        ("orders", "count==20"),
        ("orders", "rate>0"),
        ("orders{kind:test}", "count==20"),
        ("queue_depth", "value==19"),
        ("queue_depth", "max==19"),
        ("cache_hit", "rate==0.5"),
        ("order_ms", "p(95)>12"),
        ("order_ms", "p(99.9)<13"),
        ("order_ms", "avg<13"),
        ("checks{check:custom ok}", "rate==1"),
    ] {
        let v = verdict(metric, threshold);
        assert_eq!(v["ok"], true, "{v}");
        assert!(v["observed"].is_number(), "{v}");
    }
    let max = verdict("order_ms", "max<1");
    assert_eq!(max["ok"], false);
    assert!(
        (max["observed"].as_f64().unwrap() - 12.5).abs() < 0.05,
        "{max}"
    );
    assert!(
        max.get("unit").is_none(),
        "custom trends keep the plugin's unit"
    );
    // A threshold that tested nothing fails (k6 passes it; allow_missing = true does).
    let never = verdict("never_recorded", "count>0");
    assert_eq!(never["ok"], false);
    assert!(never["observed"].is_null());
    let note = never["note"].as_str().unwrap();
    assert!(
        note.contains("got no samples") && note.contains("allow_missing"),
        "{note}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_threshold_is_refused_with_a_caret_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "[thresholds]\nhttp_req_duration = [\"p(95)<>500\"]\n",
    );
    let request = host::RunRequest {
        plugin: common::plugin("misbehave"),
        config: Some(config),
        out: dir.path().join("out"),
        quiet: true,
        ..Default::default()
    };
    let err = match host::run(request).await {
        Ok(_) => panic!("a bad threshold must not run"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("thresholds.http_req_duration[0]"), "{err}");
    assert!(err.contains("unknown operator"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    let text_line = lines.iter().position(|l| l.trim() == "p(95)<>500").unwrap();
    let carets = lines[text_line + 1];
    let text_col = lines[text_line].find('p').unwrap();
    assert_eq!(carets.find('^').unwrap() - text_col, 5, "{err}");
    assert_eq!(carets.trim(), "^^", "{err}");
    assert!(!dir.path().join("out").exists(), "nothing ran");
}

/// Issue 29, item 6: a plugin declares its custom metrics and tags from `describe()`
/// (`metrics.declare`, contract 0.3.2), and a threshold on a metric or a tag value
/// that nothing records is refused before the first VU starts, with the nearest name;
/// the thresholds that fit it run. (A plugin that declares nothing, misbehave above,
/// keeps its `never_recorded` threshold until the end.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thresholds_nothing_can_record_are_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        r#"
        [scenarios.default]
        executor = "per-vu-iterations"
        vus = 1
        iterations = 3
        [thresholds]
        ordrs = ["count>0"]
        "orders{kind:retial}" = ["count>0"]
        "orders{knid:retail}" = ["count>0"]
        order_ms = ["rate>0"]
        "iterations{scenario:defualt}" = ["count>0"]
        http_req_duration = ["p(95)<500"]
        "#,
    );
    let request = host::RunRequest {
        plugin: common::plugin("declared"),
        config: Some(config),
        out: dir.path().join("out"),
        quiet: true,
        ..Default::default()
    };
    let err = match host::run(request).await {
        Ok(_) => panic!("thresholds nothing records must not run"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("5 mistakes"), "{err}");
    for needle in [
        "thresholds.ordrs: nothing records the metric `ordrs`",
        "did you mean `orders`?",
        "no sample has kind `retial`: the plugin declares the values retail, bulk; did you mean `retail`?",
        "no sample has the tag `knid`",
        "did you mean `kind`?",
        "`order_ms` is a trend metric (as the plugin declares it): rate does not apply",
        "no sample has scenario `defualt`: the run's scenarios are default; did you mean `default`?",
    ] {
        assert!(err.contains(needle), "{needle:?} in {err}");
    }
    assert!(
        !err.contains("http_req_duration"),
        "built-ins are known: {err}"
    );
    assert!(!dir.path().join("out").exists(), "no VU started: {err}");

    let config = write_config(
        dir.path(),
        r#"
        [scenarios.default]
        executor = "per-vu-iterations"
        vus = 1
        iterations = 3
        [thresholds]
        orders = ["count==3"]
        "orders{kind:retail}" = ["count==3"]
        order_ms = ["p(95)>12"]
        "#,
    );
    let out = dir.path().join("out2");
    let outcome = run_at("declared", &config, &[], &out).await;
    let summary = summary_json(&only_results_dir(&out));
    assert_eq!(outcome.exit_code, 0, "{}", summary["thresholds"]);
}
