//! What a shared k6 script cannot do to the run's own results: take the built-in
//! metrics' names to fake passing thresholds, replace the host's results files from
//! handleSummary, write any number of files there, reach the operator's terminal with
//! escapes (in its errors or its file names), or leak what setup() returned through
//! --summary-export.

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handle_summary_cannot_replace_the_hosts_results_and_goes_beside_them() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("own.js"),
        r#"import http from 'k6/http';

export const options = { vus: 1, iterations: 3, thresholds: { http_req_failed: ['rate<0.1'] } };

export default function () {
  http.get(`${__ENV.BASE_URL}/nowhere`);
}

export function handleSummary(data) {
  return {
    'summary.json': JSON.stringify({ passed: true }),
    'junit.xml': '<testsuites tests="1" failures="0"></testsuites>',
    'summary.txt': 'all good',
    'report.html': '<p>all good</p>',
  };
}
"#,
    )
    .unwrap();
    let target = common::demo_target(Duration::ZERO).await;
    let (ran, out) = run_script(tmp.path(), "own.js", &target.base_url(), &[]).await;
    assert_eq!(ran.status.code(), Some(99), "{}", text(&ran));
    let dir = common::only_results_dir(&out);
    // The host's own results are the run's: a failed threshold, 3 requests.
    let summary = common::summary_json(&dir);
    assert_eq!(
        common::metric_count(&summary, "http_reqs"),
        3.0,
        "{summary}"
    );
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains("failures=\"1\""), "{junit}");
    assert_ne!(
        std::fs::read_to_string(dir.join("summary.txt")).unwrap(),
        "all good"
    );
    assert_ne!(
        std::fs::read_to_string(dir.join("report.html")).unwrap(),
        "<p>all good</p>"
    );
    // The script's files are beside them, and the operator was told where.
    let aside = dir.join("handleSummary");
    assert_eq!(
        std::fs::read_to_string(aside.join("summary.json")).unwrap(),
        r#"{"passed":true}"#
    );
    assert!(aside.join("junit.xml").exists() && aside.join("report.html").exists());
    let shown = text(&ran);
    assert!(
        shown.contains("\"junit.xml\", which is one of the host's own results")
            && shown.contains("handleSummary/junit.xml instead"),
        "{shown}"
    );
}

/// Files under `dir`, folders walked.
fn files_under(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                files_under(&e.path())
            } else {
                1
            }
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handle_summary_writes_a_bounded_number_of_files() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("many.js"),
        r#"import http from 'k6/http';

export const options = { vus: 1, iterations: 1 };

export default function () {
  http.get(`${__ENV.BASE_URL}/`);
}

export function handleSummary(data) {
  const out = {};
  for (let i = 0; i < 5000; i++) out[`d${i % 200}/f${i}.txt`] = 'x';
  return out;
}
"#,
    )
    .unwrap();
    let target = common::demo_target(Duration::ZERO).await;
    let (ran, out) = run_script(tmp.path(), "many.js", &target.base_url(), &[]).await;
    let dir = common::only_results_dir(&out);
    let written: usize = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_string_lossy().starts_with('d'))
        .map(|p| files_under(&p))
        .sum();
    let shown = text(&ran);
    assert!(
        shown.contains("handleSummary returned 5000 files; 4936 of them"),
        "{shown}"
    );
    // The host's own files and at most 64 of the script's.
    let hosts = ["summary.json", "summary.txt", "junit.xml", "report.html"]
        .iter()
        .filter(|f| dir.join(f).exists())
        .count();
    assert_eq!(hosts, 4);
    assert_eq!(written, 64, "handleSummary's files written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_escapes_from_a_script_are_shown_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("escapes.js"),
        r#"import http from 'k6/http';

export const options = { vus: 1, iterations: 2 };

export default function () {
  http.get(`${__ENV.BASE_URL}/`);
  throw new Error('boom\x1b[2J\x1b]0;pwned\x07\n  fake summary line \u202etxt.exe');
}

export function handleSummary(data) {
  return { '\x1b[2Jwiped.txt': 'x', 'fine.txt': 'y' };
}
"#,
    )
    .unwrap();
    let target = common::demo_target(Duration::ZERO).await;
    let (ran, out) = run_script(tmp.path(), "escapes.js", &target.base_url(), &[]).await;
    let dir = common::only_results_dir(&out);
    let summary_txt = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
    let stdout = String::from_utf8_lossy(&ran.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&ran.stderr).into_owned();
    for (what, text) in [
        ("summary.txt", &summary_txt),
        ("stdout", &stdout),
        ("stderr", &stderr),
    ] {
        for raw in ['\x1b', '\x07', '\u{202e}'] {
            assert!(!text.contains(raw), "{what} holds {raw:?} raw: {text}");
        }
    }
    assert!(
        summary_txt.contains("boom\\x1b[2J\\x1b]0;pwned\\x07\\n"),
        "{summary_txt}"
    );
    assert!(
        !summary_txt
            .lines()
            .any(|l| l.trim_start().starts_with("fake summary line")),
        "{summary_txt}"
    );
    // The file name with an escape is refused, and named escaped.
    assert!(
        stderr.contains("\\x1b[2Jwiped.txt (from handleSummary)"),
        "{stderr}"
    );
    assert!(dir.join("fine.txt").exists());
    assert_eq!(
        std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| e
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("wiped"))
            .count(),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_export_masks_what_setup_returned() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("secret.js"),
        r#"import http from 'k6/http';

export const options = { vus: 1, iterations: 1 };

export function setup() {
  return { token: __ENV.API_TOKEN, users: [{ name: 'ann', password: 'hunter2' }], n: 7 };
}

export default function (data) {
  http.get(`${__ENV.BASE_URL}/`);
}
"#,
    )
    .unwrap();
    let target = common::demo_target(Duration::ZERO).await;
    let (ran, out) = run_script(
        tmp.path(),
        "secret.js",
        &target.base_url(),
        &[
            "-e",
            "API_TOKEN=s3cret-token",
            "--summary-export",
            "export.json",
        ],
    )
    .await;
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
    let raw = std::fs::read_to_string(tmp.path().join("export.json")).unwrap();
    assert!(
        !raw.contains("s3cret-token") && !raw.contains("hunter2"),
        "{raw}"
    );
    let export: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(
        export["setup_data"],
        serde_json::json!({"token": "***", "users": [{"name": "***", "password": "***"}], "n": "***"})
    );
    // The results folder has no copy either.
    let dir = common::only_results_dir(&out);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains("s3cret-token"), "{}", path.display());
        }
    }
}
