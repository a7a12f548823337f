//! `host compare`: two runs against the demo target, the second with 20 ms of injected
//! latency; the comparison flags the regression and exits non-zero, while a run
//! compared with itself passes.

use crate::support as common;

use common::{demo_target, run_at, write_config};
use demo_target::Faults;
use std::process::Command;
use std::time::Duration;

const CONFIG: &str = r#"
[scenarios.default]
executor = "per-vu-iterations"
vus = 2
iterations = 40
"#;

fn compare(a: &std::path::Path, b: &std::path::Path) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_host"))
        .arg("compare")
        .arg(a)
        .arg(b)
        .args(["--tolerance", "10%"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.is_empty(), "{stderr}");
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_flags_an_injected_latency_regression() {
    let server = demo_target(Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), CONFIG);
    let base = server.base_url();
    let env = [("BASE_URL", base.as_str())];
    let baseline = run_at("hello", &config, &env, &dir.path().join("a")).await;
    server.set_faults(Faults {
        latency: Duration::from_millis(20),
        ..Faults::default()
    });
    let slower = run_at("hello", &config, &env, &dir.path().join("b")).await;
    server.shutdown().await;
    assert_eq!(baseline.exit_code, 0);
    assert_eq!(slower.exit_code, 0);

    let (code, table) = compare(&baseline.results_dir, &slower.results_dir);
    assert_eq!(code, host::exit_code::REGRESSION, "{table}");
    let flagged = |metric: &str, stat: &str| {
        table.lines().any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.first() == Some(&metric)
                && words.get(1) == Some(&stat)
                && l.contains("✗ regression (latency up)")
        })
    };
    // p99 of a short baseline can hold one slow outlier on a busy machine; the median
    // and p95 cannot hide a 20 ms shift.
    for stat in ["p50", "p95"] {
        assert!(flagged("http_req_duration", stat), "{stat}:\n{table}");
    }
    assert!(flagged("http_req_waiting", "p50"), "{table}");
    assert!(
        !table
            .lines()
            .any(|l| l.trim_start().starts_with("http_req_failed") && l.contains("regression")),
        "no request failed in either run:\n{table}"
    );
    assert!(table.contains("regressions beyond 10%"), "{table}");

    let (code, table) = compare(
        &baseline.results_dir,
        &baseline.results_dir.join("summary.json"),
    );
    assert_eq!(code, 0, "{table}");
    assert!(table.contains("no regression beyond 10%"), "{table}");
}

#[test]
fn compare_explains_a_missing_run() {
    let output = Command::new(env!("CARGO_BIN_EXE_host"))
        .args(["compare", "/nonexistent/a", "/nonexistent/b"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot read /nonexistent/a"), "{stderr}");
}

/// Compare reads summary.json back into its type: a file of another shape (a k6
/// summary export, or a host summary missing a field) is refused with what it is,
/// never compared as zeros.
#[test]
fn compare_refuses_a_summary_of_another_shape() {
    let dir = tempfile::tempdir().unwrap();
    let k6 = dir.path().join("k6.json");
    std::fs::write(
        &k6,
        r#"{"root_group": {}, "metrics": {"http_reqs": {"count": 3}}}"#,
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_host"))
        .arg("compare")
        .arg(&k6)
        .arg(&k6)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("is not a summary.json this host can read (schema missing"),
        "{stderr}"
    );
    assert!(
        stderr.contains("compare runs written by the same version of host"),
        "{stderr}"
    );
}
