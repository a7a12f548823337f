//! k6 scripts run by `host run script.js` against the demo target: the requests the
//! target served equal `http_reqs`, checks, custom metrics, setup/teardown, thresholds
//! and exit codes come out as k6 would give them; an exception fails its iteration with
//! the JavaScript stack; an infinite loop is stopped by the sandbox; a refused API fails
//! the build naming the API and the line.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs the host binary in `dir` (off the async runtime: it blocks).
async fn host(dir: &Path, args: Vec<String>) -> Output {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_host"))
            .current_dir(dir)
            .args(args)
            .output()
            .expect("the host binary runs")
    })
    .await
    .unwrap()
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// `host run SCRIPT -e BASE_URL=... --out OUT --quiet` plus `extra`.
async fn run_script(
    dir: &Path,
    script: &str,
    base: &str,
    extra: &[&str],
) -> (Output, std::path::PathBuf) {
    let out = dir.join(format!("results-{}", rand_suffix()));
    let mut a = args(&["run", script, "-e"]);
    a.push(format!("BASE_URL={base}"));
    a.extend(args(&["--out", out.to_str().unwrap(), "--quiet"]));
    a.extend(args(extra));
    (host(dir, a).await, out)
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed).to_string()
}

fn check<'a>(summary: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    summary["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name:?}: {}", summary["checks"]))
}

const LIFECYCLE: &str = r#"
import http from 'k6/http';
import { check, group, sleep } from 'k6';
import { Counter, Trend, Rate, Gauge } from 'k6/metrics';
import exec from 'k6/execution';
import { BASE, path } from './lib/base.js';

const visits = new Counter('visits');
const bodyLen = new Trend('body_len');
const okRate = new Rate('ok_rate');
const lastVu = new Gauge('last_vu');
const users = JSON.parse(open('./users.json'));

export const options = {
  scenarios: {
    browse: { executor: 'shared-iterations', vus: 2, iterations: 12, exec: 'browse' },
  },
  thresholds: { checks: ['rate>0.99'], 'http_req_duration{name:home}': ['p(95)<5000'] },
};

export function setup() {
  const res = http.post(`${BASE}/auth/token`, JSON.stringify({ user: 'js-setup' }),
    { headers: { 'Content-Type': 'application/json' }, tags: { name: 'token' } });
  return { token: res.json('token'), status: res.status };
}

export function browse(data) {
  group('home page', () => {
    const res = http.get(`${BASE}${path('/')}`, { tags: { name: 'home' } });
    check(res, {
      'status is 200': (r) => r.status === 200,
      'has a body': (r) => r.body.length > 0,
      'setup data arrived': () => data.status === 200 && typeof data.token === 'string',
      'env and vu': () => __ENV.BASE_URL === BASE && __VU >= 1 && __VU <= 2 && exec.vu.idInTest === __VU,
      'open() bundled the file': () => users.length === 2 && users[1].name === 'b',
      'headers are canonical': (r) => typeof r.headers['Content-Type'] === 'string',
    });
    visits.add(1, { vu: String(__VU) });
    bodyLen.add(res.body.length);
    okRate.add(res.status === 200);
    lastVu.add(__VU);
  });
  console.log(`iteration ${__ITER} of VU ${__VU}`);
  sleep(0.01);
}

export function teardown(data) {
  http.get(`${BASE}/?from=teardown`, { tags: { name: 'teardown' } });
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_k6_script_runs_with_its_options_lifecycle_and_metrics() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("lib")).unwrap();
    std::fs::write(tmp.path().join("script.js"), LIFECYCLE).unwrap();
    std::fs::write(
        tmp.path().join("lib/base.js"),
        "export const BASE = (__ENV.BASE_URL || 'http://127.0.0.1:1').replace(/\\/$/, '');\nexport function path(p) { return p; }\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("users.json"),
        r#"[{"name":"a"},{"name":"b"}]"#,
    )
    .unwrap();
    let target = common::demo_target(Duration::ZERO).await;
    let before = target.requests_served();
    let (ran, out) = run_script(tmp.path(), "script.js", &target.base_url(), &[]).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let served = target.requests_served() - before;
    // 12 iterations, one request each, plus setup's and teardown's (which http_reqs
    // leaves out unless [http] count_setup, as k6 tags them apart).
    assert_eq!(served, 14, "{}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(
        summary["metrics"]["http_reqs"]["count"].as_f64(),
        Some(12.0),
        "{}",
        summary["metrics"]["http_reqs"]
    );
    for name in [
        "status is 200",
        "has a body",
        "setup data arrived",
        "env and vu",
        "open() bundled the file",
        "headers are canonical",
    ] {
        let c = check(&summary, name);
        assert_eq!(
            (c["passes"].as_u64(), c["fails"].as_u64()),
            (Some(12), Some(0)),
            "{c}"
        );
    }
    assert_eq!(
        summary["metrics"]["visits"]["count"].as_f64(),
        Some(12.0),
        "{}",
        summary["metrics"]
    );
    assert_eq!(summary["metrics"]["body_len"]["count"].as_f64(), Some(12.0));
    assert_eq!(
        summary["metrics"]["iterations"]["count"].as_f64(),
        Some(12.0)
    );
    assert!(
        summary["metrics"]["group_duration"]["count"].as_f64() == Some(12.0),
        "{}",
        summary["metrics"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crossed_threshold_and_an_exception_set_the_exit_code_and_the_stack() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("fails.js"),
        r#"import http from 'k6/http';
import { check } from 'k6';

export const options = { vus: 1, iterations: 6, thresholds: { checks: ['rate>0.9'] } };

function deep(n) {
  if (n === 3) throw new Error(`iteration ${n} went wrong`);
}

export default function () {
  const res = http.get(`${__ENV.BASE_URL}/nowhere`);
  check(res, { 'found': (r) => r.status === 200 });
  deep(__ITER);
}
"#,
    )
    .unwrap();
    let target = common::demo_target(Duration::ZERO).await;
    let before = target.requests_served();
    let (ran, out) = run_script(tmp.path(), "fails.js", &target.base_url(), &[]).await;
    // The threshold fails (exit code 99, as k6's), and the run still completes.
    assert_eq!(ran.status.code(), Some(99), "{}", text(&ran));
    assert_eq!(target.requests_served() - before, 6);
    let summary = common::summary_json(&common::only_results_dir(&out));
    let c = check(&summary, "found");
    assert_eq!(
        (c["passes"].as_u64(), c["fails"].as_u64()),
        (Some(0), Some(6)),
        "{c}"
    );
    let errors = summary["plugin_errors"].to_string();
    assert!(errors.contains("iteration 3 went wrong"), "{errors}");
    // The stack names the user's file and lines (deep at 7, its caller at 13).
    assert!(errors.contains("fails.js:7"), "{errors}");
    assert!(errors.contains("fails.js:13"), "{errors}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infinite_loop_is_stopped_by_the_sandbox() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("spin.js"),
        "export const options = { vus: 1, iterations: 1 };\nexport default function () { for (;;) {} }\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("run.toml"),
        "[limits]\niteration_timeout = \"1s\"\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let (ran, out) = run_script(
        tmp.path(),
        "spin.js",
        "http://127.0.0.1:9",
        &["--config", "run.toml"],
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    let summary = common::summary_json(&common::only_results_dir(&out));
    let errors = summary["plugin_errors"].to_string();
    assert!(errors.contains("timeout"), "{errors}\n{}", text(&ran));
}

/// Math.random differs between VUs (the engine's own generator was seeded once, in the
/// build's snapshot, so every VU drew the same numbers), and `randomSeed(n)` gives
/// every VU the same sequence, as in k6.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn math_random_differs_between_vus_and_random_seed_repeats() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("dice.js"),
        r#"import { randomSeed } from 'k6';
const atInit = Math.random();
export const options = { scenarios: { dice: { executor: 'per-vu-iterations', vus: 4, iterations: 1 } } };
export default function () {
  console.warn(`free ${__VU} ${atInit} ${Math.random()}`);
  randomSeed(7);
  console.warn(`seeded ${__VU} ${Math.random()} ${Math.random()}`);
}
"#,
    )
    .unwrap();
    let (ran, _) = run_script(tmp.path(), "dice.js", "http://127.0.0.1:9", &[]).await;
    let shown = text(&ran);
    assert_eq!(ran.status.code(), Some(0), "{shown}");
    let stderr = String::from_utf8_lossy(&ran.stderr);
    // "[dice vu 3] warn: free 3 0.12 0.34": what follows the marker, by VU.
    let lines = |marker: &str| -> Vec<String> {
        stderr
            .lines()
            .filter_map(|l| l.split_once(&format!("warn: {marker} ")).map(|(_, v)| v))
            .map(|v| v.split_once(' ').unwrap().1.to_string())
            .collect()
    };
    let free = lines("free");
    assert_eq!(free.len(), 4, "{shown}");
    let mut distinct = free.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "each VU draws its own numbers: {free:?}");
    for pair in &free {
        for v in pair.split(' ') {
            let v: f64 = v.parse().unwrap();
            assert!((0.0..1.0).contains(&v), "{v}");
        }
    }
    let seeded = lines("seeded");
    assert_eq!(seeded.len(), 4, "{shown}");
    assert!(
        seeded.iter().all(|s| s == &seeded[0]),
        "randomSeed(7) gives every VU one sequence: {seeded:?}"
    );
    let (a, b) = seeded[0].split_once(' ').unwrap();
    assert_ne!(a, b, "a sequence, not one number: {seeded:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_api_fails_the_build_with_its_name_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("browser.js"),
        "import http from 'k6/http';\nimport { browser } from 'k6/browser';\nexport default function () {}\n",
    )
    .unwrap();
    let built = host(tmp.path(), args(&["build", "browser.js"])).await;
    assert!(!built.status.success(), "{}", text(&built));
    let err = String::from_utf8_lossy(&built.stderr);
    assert!(
        err.contains("browser.js:2") && err.contains("k6/browser"),
        "{}",
        text(&built)
    );
    assert!(!tmp.path().join("browser.wasm").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_new_lang_js_starts_a_project_that_builds_and_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let made = host(tmp.path(), args(&["new", "shop", "--lang", "js"])).await;
    assert!(made.status.success(), "{}", text(&made));
    let project = tmp.path().join("shop");
    let built = host(&project, args(&["build", "script.js"])).await;
    assert!(built.status.success(), "{}", text(&built));
    let wasm = project.join("script.wasm");
    assert!(wasm.is_file(), "{}", text(&built));
    let inspected = host(&project, args(&["inspect", "script.wasm"])).await;
    assert!(inspected.status.success(), "{}", text(&inspected));
    assert!(
        String::from_utf8_lossy(&inspected.stdout).contains("script"),
        "{}",
        text(&inspected)
    );
    let target = common::demo_target(Duration::ZERO).await;
    let before = target.requests_served();
    let (ran, out) = run_script(
        &project,
        "script.js",
        &target.base_url(),
        &["--iterations", "5", "--vus", "1"],
    )
    .await;
    assert!(ran.status.success(), "{}", text(&ran));
    let served = target.requests_served() - before;
    common::counted_and_served(&out, served, 5);
}
