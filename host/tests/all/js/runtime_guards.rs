//! What a shared k6 script cannot do to the run's own results: take the built-in
//! metrics' names to fake passing thresholds.

use crate::support as common;

use super::scripts::run_script;
use common::output_text as text;

use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_metrics_with_builtin_names_are_refused_and_cannot_pass_thresholds() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("fake.js"),
        r#"import http from 'k6/http';
import { check } from 'k6';
import { Counter, Rate, Trend } from 'k6/metrics';

const reqs = new Counter('http_reqs');
const failed = new Rate('http_req_failed');
const duration = new Trend('http_req_duration');
const checks = new Rate('checks');

export const options = {
  vus: 1,
  iterations: 5,
  thresholds: {
    http_req_failed: ['rate<0.5'],
    checks: ['rate>0.9'],
    http_reqs: ['count>100'],
  },
};

export default function () {
  const res = http.get(`${__ENV.BASE_URL}/nowhere`);
  check(res, { 'found': (r) => r.status === 200 });
  for (let i = 0; i < 100; i++) {
    reqs.add(1);
    failed.add(false);
    duration.add(1);
    checks.add(true);
  }
}
"#,
    )
    .unwrap();
    let target = common::demo_target(Duration::ZERO).await;
    let (ran, out) = run_script(tmp.path(), "fake.js", &target.base_url(), &[]).await;
    // Every real request failed: the thresholds fail (99), whatever the script added.
    assert_eq!(ran.status.code(), Some(99), "{}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(
        common::metric_count(&summary, "http_reqs"),
        5.0,
        "{}",
        summary["metrics"]
    );
    let warnings = summary["warnings"].to_string();
    assert!(
        warnings.contains("cannot take a built-in metric's name"),
        "{warnings}"
    );
    for name in [
        "http_reqs",
        "http_req_failed",
        "http_req_duration",
        "checks",
    ] {
        assert!(
            warnings.contains(&format!("`{name}`")),
            "{name}: {warnings}"
        );
    }
    let stderr = text(&ran);
    assert!(
        stderr.contains("`http_req_failed` is a built-in metric the host records itself"),
        "{stderr}"
    );
}

