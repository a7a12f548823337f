//! A plugin that fails is stopped, counted and reported with its message; the run goes on.

use crate::support as common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panics_every_third_iteration_are_counted_with_their_message() {
    let config = r#"
        [scenarios.p]
        executor = "per-vu-iterations"
        vus = 2
        iterations = 9
    "#;
    let run = common::run("misbehave", config, &[("MODE", "panic-every-3")])
        .await
        .unwrap();
    // Iterations 2, 5 and 8 of each VU panic; the VU gets a fresh instance each time.
    assert_eq!(run.scenario("p", "completed"), 18);
    assert_eq!(run.scenario("p", "failed"), 6);
    assert_eq!(run.json["status"], "completed");
    let errors = run.json["plugin_errors"].as_array().unwrap();
    let total: u64 = errors.iter().map(|e| e["count"].as_u64().unwrap()).sum();
    assert_eq!(total, 6);
    for e in errors {
        assert_eq!(e["kind"], "panic");
        let message = e["message"].as_str().unwrap();
        assert!(message.contains("boom at iteration"), "{message}");
        assert!(
            !message.contains("unreachable"),
            "the panic text, not the trap: {message}"
        );
    }
    // The iteration numbers restart with the fresh instance only in the guest's memory;
    // the host's numbering goes on, so the messages name iterations 2, 5 and 8.
    let text = std::fs::read_to_string(run.outcome.results_dir.join("summary.txt")).unwrap();
    assert!(text.contains("boom at iteration 2"), "{text}");
    assert_eq!(run.metric("plugin_errors", "count"), 6.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_returned_by_the_plugin_are_counted() {
    let config = r#"
        [scenarios.f]
        executor = "shared-iterations"
        vus = 1
        iterations = 5
    "#;
    let run = common::run("misbehave", config, &[("MODE", "fail")])
        .await
        .unwrap();
    assert_eq!(run.scenario("f", "failed"), 5);
    let errors = run.json["plugin_errors"].as_array().unwrap();
    assert_eq!(errors[0]["kind"], "error");
    assert_eq!(errors[0]["message"], "always failing");
    assert_eq!(errors[0]["count"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_every_iteration_aborts_after_the_configured_streak() {
    let config = r#"
        [scenarios.f]
        executor = "constant-vus"
        vus = 1
        duration = "30s"
        [limits]
        abort_after_failures = 20
    "#;
    let run = common::run("misbehave", config, &[("MODE", "fail")])
        .await
        .unwrap();
    assert_eq!(run.json["status"], "aborted");
    assert_eq!(run.outcome.exit_code, host::exit_code::PLUGIN_ABORT);
    let reason = run.json["stop_reason"]["reason"].as_str().unwrap();
    assert!(reason.contains("always failing"), "{reason}");
    assert!(run.json["duration_s"].as_f64().unwrap() < 10.0);
}
