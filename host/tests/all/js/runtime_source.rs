//! The QuickJS runtime built from source (plugins/js-runtime, issue #53): the default
//! of a host built with clang (the embedded component; `host --version` and `host
//! build` say so), and selectable by path with `LOADTEST_JS_RUNTIME`: a k6 script with a GET, a check, `sleep`, custom metrics (a fraction kept) and
//! `__VU` runs on it against the demo target with the counts k6 would give, and an
//! exception fails its iteration with its message, as on the vendored runtime, which
//! `LOADTEST_JS_RUNTIME=vendored` still selects.

use crate::support as common;

use common::output_text as text;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// The runtime component host/build.rs built (it needs clang and wasi-libc, which
/// `./dev` installs).
fn runtime() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release/js_runtime.wasm");
    assert!(
        path.exists(),
        "{} was not built: plugins/js-runtime needs clang and wasi-libc (Debian: \
         apt-get install clang llvm-14 wasi-libc; ./dev installs them), then build the host again",
        path.display()
    );
    path
}

/// `host run SCRIPT` on the runtime built from source.
async fn run_on_source_runtime(dir: &Path, script: &str, base: &str, out: &Path) -> Output {
    run_on(runtime().into_os_string(), dir, script, base, out).await
}

/// `host run SCRIPT` with `LOADTEST_JS_RUNTIME=rt` (a runtime's path, or `vendored`).
async fn run_on(
    rt: std::ffi::OsString,
    dir: &Path,
    script: &str,
    base: &str,
    out: &Path,
) -> Output {
    let args = [
        "run",
        script,
        "-e",
        &format!("BASE_URL={base}"),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ];
    host_on(rt, dir, args).await
}

/// The host binary with `args` in `dir`, with `LOADTEST_JS_RUNTIME=rt`.
async fn host_on<S: Into<String>>(
    rt: std::ffi::OsString,
    dir: &Path,
    args: impl IntoIterator<Item = S>,
) -> Output {
    let dir = dir.to_path_buf();
    let args: Vec<String> = args.into_iter().map(Into::into).collect();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_host"))
            .current_dir(dir)
            .args(args)
            .env("LOADTEST_JS_RUNTIME", rt)
            .output()
            .expect("the host binary runs")
    })
    .await
    .unwrap()
}

const SCRIPT: &str = r#"
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';

const visits = new Counter('visits');
const fractions = new Trend('fractions');
const BASE = __ENV.BASE_URL.replace(/\/$/, '');

export const options = {
  scenarios: { s: { executor: 'shared-iterations', vus: 2, iterations: 6 } },
};

export default function () {
  const res = http.get(`${BASE}/`, { tags: { name: 'home' } });
  check(res, {
    'status is 200': (r) => r.status === 200,
    'a VU of two': () => __VU >= 1 && __VU <= 2,
    'a body': (r) => r.body.length > 0,
  });
  visits.add(1);
  fractions.add(1.25);
  sleep(0.02);
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_runs_on_the_runtime_built_from_source() {
    runs_as_k6_would(runtime().into_os_string()).await;
}

/// The vendored runtime, the one a host built without clang builds scripts on, is
/// still a working route: `LOADTEST_JS_RUNTIME=vendored` selects it on this host, and
/// the same script gives the same counts on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_runs_on_the_vendored_runtime_a_host_without_clang_uses() {
    runs_as_k6_would("vendored".into()).await;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("script.js"), SCRIPT).unwrap();
    let built = host_on("vendored".into(), tmp.path(), ["build", "script.js"]).await;
    assert!(built.status.success(), "{}", text(&built));
    assert!(
        String::from_utf8_lossy(&built.stderr).contains("vendored componentize-qjs"),
        "{}",
        text(&built)
    );
}

/// SCRIPT on runtime `rt` against the demo target: the counts k6 gives.
async fn runs_as_k6_would(rt: std::ffi::OsString) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("script.js"), SCRIPT).unwrap();
    let target = common::demo_target(Duration::ZERO).await;
    let before = target.requests_served();
    let out = tmp.path().join("results");
    let ran = run_on(rt, tmp.path(), "script.js", &target.base_url(), &out).await;
    assert!(ran.status.success(), "{}", text(&ran));
    assert_eq!(target.requests_served() - before, 6, "{}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(
        summary["metrics"]["http_reqs"]["count"].as_f64(),
        Some(6.0),
        "{}",
        summary["metrics"]
    );
    assert_eq!(
        summary["metrics"]["visits"]["count"].as_f64(),
        Some(6.0),
        "{}",
        summary["metrics"]
    );
    // A number with a fraction crosses into the host whole (an f64 of the contract).
    assert_eq!(
        summary["metrics"]["fractions"]["max"].as_f64(),
        Some(1.25),
        "{}",
        summary["metrics"]
    );
    for name in ["status is 200", "a VU of two", "a body"] {
        assert_eq!(common::check_counts(&summary, name), (6, 0), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exception_fails_its_iteration_with_its_message_on_the_runtime_built_from_source() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("script.js"),
        "export const options = { iterations: 2, vus: 1 };\n\
         export default function () { throw new Error('no such page ' + __ITER); }\n",
    )
    .unwrap();
    let out = tmp.path().join("results");
    let ran = run_on_source_runtime(tmp.path(), "script.js", "http://127.0.0.1:1", &out).await;
    let summary = common::summary_json(&common::only_results_dir(&out));
    let errors = summary["plugin_errors"].to_string();
    assert!(
        errors.contains("no such page 0"),
        "{errors}\n{}",
        text(&ran)
    );
    assert_eq!(summary["scenarios"]["default"]["failed"], 2, "{summary}");
}

/// A host built with clang builds scripts on the embedded runtime built from source and
/// says so (`host --version`, `host build`'s stderr); `LOADTEST_JS_RUNTIME` overrides it
/// and a build on the override is another cache entry (the runtime's digest is in the
/// key): a runtime file that is not a component fails the build instead of reusing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_runtime_is_the_one_built_from_source_and_is_named() {
    runtime(); // This test's premise: the host was built with clang.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("script.js"),
        "export default function () {}\n",
    )
    .unwrap();
    let version = common::host_in(tmp.path(), ["--version"]).await;
    assert!(version.status.success(), "{}", text(&version));
    let version = String::from_utf8_lossy(&version.stdout).into_owned();
    assert!(
        version.contains("k6 scripts on quickjs-ng built from source"),
        "{version}"
    );
    let built = common::host_in(tmp.path(), ["build", "script.js"]).await;
    assert!(built.status.success(), "{}", text(&built));
    assert!(
        String::from_utf8_lossy(&built.stderr)
            .contains("built on the JavaScript runtime: quickjs-ng built from source"),
        "{}",
        text(&built)
    );
    // The embedded runtime is plugins/js-runtime's component: a build on it by path
    // gives the same component (same digest, same cache entry).
    let first = std::fs::read(tmp.path().join("script.wasm")).unwrap();
    let by_path = host_on(
        runtime().into_os_string(),
        tmp.path(),
        ["build", "script.js"],
    )
    .await;
    assert!(by_path.status.success(), "{}", text(&by_path));
    assert!(
        String::from_utf8_lossy(&by_path.stderr).contains("LOADTEST_JS_RUNTIME="),
        "{}",
        text(&by_path)
    );
    assert_eq!(
        std::fs::read(tmp.path().join("script.wasm")).unwrap(),
        first
    );
    // Another runtime file is another key: not the cached build, so it is read and
    // refused (it is no component).
    std::fs::write(tmp.path().join("other.wasm"), b"not a runtime").unwrap();
    let other = host_on(
        tmp.path().join("other.wasm").into_os_string(),
        tmp.path(),
        ["build", "script.js"],
    )
    .await;
    assert!(!other.status.success(), "{}", text(&other));
}

/// The runtime freezes the heap its snapshot holds (plugins/js-runtime/c/snapshot.c:
/// immortal counts, frozen objects off the cycle collector's list): a VU's own cycles
/// are still collected (their FinalizationRegistry callbacks run), and objects a
/// frozen one holds (a module-level array made at build time) survive every collection
/// intact, their cycles included.
const CYCLES: &str = r#"
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const finalizedMetric = new Counter('finalized');
const kept = [];
let finalized = 0;
const registry = new FinalizationRegistry(() => { finalized++; });

export const options = {
  scenarios: { s: { executor: 'per-vu-iterations', vus: 2, iterations: 6 } },
};

export default function () {
  // About 1.5 MB of cycles per iteration, unreachable at once: past the collector's
  // threshold, so it runs during the VU's iterations.
  for (let i = 0; i < 2000; i++) {
    const a = { pad: new Array(64).fill(i) };
    const b = { a };
    a.b = b;
    registry.register(a, i);
  }
  const o = { n: kept.length };
  o.self = o;
  kept.push(o);
  check(null, {
    'kept objects intact': () => kept.every((x, k) => x.n === k && x.self === x),
    'cycles collected': () => __ITER < 2 || finalized > 0,
  });
  if (__ITER === 5) finalizedMetric.add(finalized);
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vus_cycles_are_collected_and_what_the_frozen_snapshot_holds_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("script.js"), CYCLES).unwrap();
    let out = tmp.path().join("results");
    let ran = run_on_source_runtime(tmp.path(), "script.js", "http://127.0.0.1:1", &out).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    for name in ["kept objects intact", "cycles collected"] {
        assert_eq!(
            common::check_counts(&summary, name),
            (12, 0),
            "{name}\n{}",
            text(&ran)
        );
    }
    // Most of the 12,000 cycles made before each VU's last check were collected.
    let finalized = summary["metrics"]["finalized"]["count"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(finalized > 5_000.0, "{finalized}\n{}", summary["metrics"]);
}

/// The atoms a VU makes after the snapshot go to free slots the freeze put on pages of
/// their own (plugins/js-runtime/c/snapshot.c, step 6): more of them than those slots
/// (the atom array then grows), made, freed and made again, all name what they were
/// made for; atoms the build-time code made and let go (their slots free in the
/// snapshot, on no list since) take nothing from them.
const ATOMS: &str = r#"
import { check } from 'k6';

// Atoms made and let go at build time: their slots are free in the snapshot.
let snapshotSum = 0;
{
  const o = {};
  for (let i = 0; i < 600; i++) o['built' + i] = i;
  for (const k of Object.keys(o)) snapshotSum += o[k];
}
const keptAtBuild = { first: 1, second: 2 };

export const options = {
  scenarios: { s: { executor: 'per-vu-iterations', vus: 2, iterations: 3 } },
};

export default function () {
  const o = {};
  // 3,000 names new to this VU each iteration: past the free slots the freeze left.
  for (let i = 0; i < 3000; i++) o[`vu${__VU}_it${__ITER}_${i}`] = i;
  const syms = [];
  for (let i = 0; i < 200; i++) syms.push(Symbol(`s${__ITER}_${i}`));
  const bySym = {};
  syms.forEach((s, i) => { bySym[s] = i; });
  check(null, {
    'new names read back': () => Object.keys(o).every((k, i) => o[k] === i
      && k === `vu${__VU}_it${__ITER}_${i}`),
    'symbols read back': () => syms.every((s, i) => bySym[s] === i
      && s.description === `s${__ITER}_${i}`),
    'build-time names intact': () => snapshotSum === 179700 && keptAtBuild.first === 1
      && keptAtBuild.second === 2 && Object.keys(keptAtBuild).join() === 'first,second',
  });
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vus_new_atoms_past_the_freezes_free_slots_all_work() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("script.js"), ATOMS).unwrap();
    let out = tmp.path().join("results");
    let ran = run_on_source_runtime(tmp.path(), "script.js", "http://127.0.0.1:1", &out).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    for name in [
        "new names read back",
        "symbols read back",
        "build-time names intact",
    ] {
        assert_eq!(
            common::check_counts(&summary, name),
            (6, 0),
            "{name}\n{}",
            text(&ran)
        );
    }
}
