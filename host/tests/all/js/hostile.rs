//! Hostile k6 scripts at build time (issue 49): a file that closes the bundle's wrapper
//! to run code during the build is refused naming its line, at once.

use crate::support as common;

use common::{host_in as host, output_text as text};
use std::time::{Duration, Instant};

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A `}` that closes the wrapper, then a loop and a 600 MB allocation: the build hung
/// (killed at 150 s) or the host panicked; now it is refused before anything runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_escapes_its_wrapper_is_refused_at_once_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("escape.js"),
        "export default function () {}\n}\nconst big = new Uint8Array(600 * 1024 * 1024);\nwhile (true) {}\n{\n",
    )
    .unwrap();
    let started = Instant::now();
    let built = host(tmp.path(), args(&["build", "escape.js"])).await;
    let took = started.elapsed();
    assert_eq!(built.status.code(), Some(1), "{}", text(&built));
    let err = String::from_utf8_lossy(&built.stderr);
    assert!(
        err.contains("escape.js:2: this `}` closes a bracket the file never opened"),
        "{}",
        text(&built)
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(!tmp.path().join("escape.wasm").exists());
}

/// `host build NAME` in `dir` with the cache in `cache`.
fn build_with_cache(dir: &std::path::Path, cache: &std::path::Path, name: &str) -> Vec<u8> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_host"))
        .current_dir(dir)
        .env("HOST_CACHE_DIR", cache)
        .args(["build", name])
        .output()
        .expect("the host binary runs");
    assert!(out.status.success(), "{}", text(&out));
    std::fs::read(dir.join(name).with_extension("wasm")).unwrap()
}

/// A component planted under a script's cache name (another script's build, mode 0666
/// with its own digest beside it; then mode 0644 without a matching digest) ran in
/// place of the script; now the script is built again and its own build is used.
#[cfg(unix)]
#[test]
fn a_component_planted_in_the_js_build_cache_is_not_run() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    std::fs::write(
        tmp.path().join("own.js"),
        "export default function () { console.log('own'); }\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("planted.js"),
        "export default function () { console.log('planted'); }\n",
    )
    .unwrap();
    let planted = build_with_cache(tmp.path(), &cache, "planted.js");
    let own = build_with_cache(tmp.path(), &cache, "own.js");
    assert!(own != planted, "two scripts, two builds");
    let entry = std::fs::read_dir(cache.join("js"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with("own-") && n.ends_with(".wasm")
        })
        .expect("own.js's build is cached");
    let digest = |bytes: &[u8]| {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(bytes))
    };
    let mut sha = entry.clone().into_os_string();
    sha.push(".sha256");

    // Writable by others, with a digest that matches the planted bytes.
    std::fs::write(&entry, &planted).unwrap();
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::write(&sha, digest(&planted)).unwrap();
    assert!(
        build_with_cache(tmp.path(), &cache, "own.js") != planted,
        "the planted component (mode 0666) was used"
    );
    let mode = std::fs::metadata(&entry).unwrap().permissions().mode();
    assert_eq!(mode & 0o022, 0, "{mode:o}");

    // Not writable by others, but not what the host wrote.
    std::fs::write(&entry, &planted).unwrap();
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(
        build_with_cache(tmp.path(), &cache, "own.js") != planted,
        "the planted component (digest not the host's) was used"
    );
    assert!(
        std::fs::read(&entry).unwrap() != planted,
        "the entry is rebuilt"
    );
}

/// `open('/etc/passwd')` and an `import` by `../` were bundled without a word (the
/// file then travels inside the component); now both are refused, naming the file and
/// the flag, and with `--allow-outside-files` they are bundled and named on stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_outside_the_scripts_folder_need_a_flag_and_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("script");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(tmp.path().join("secret.txt"), "SECRET-OUTSIDE-0123456789\n").unwrap();
    std::fs::write(
        tmp.path().join("lib.js"),
        "export const v = 'LIB-OUTSIDE-9876543210';\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("reads.js"),
        "const s = open('../secret.txt');\nexport default function () { console.log(s); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("imports.js"),
        "import { v } from '../lib.js';\nexport default function () { console.log(v); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("absolute.js"),
        "const p = open('/etc/passwd');\nexport default function () { console.log(p); }\n",
    )
    .unwrap();
    for (script, named) in [
        ("reads.js", "secret.txt"),
        ("imports.js", "lib.js"),
        ("absolute.js", "/etc/passwd"),
    ] {
        let built = host(&dir, args(&["build", script])).await;
        assert_eq!(built.status.code(), Some(1), "{}", text(&built));
        let err = String::from_utf8_lossy(&built.stderr);
        assert!(
            err.contains(script)
                && err.contains(named)
                && err.contains("outside the script's folder")
                && err.contains("--allow-outside-files"),
            "{}",
            text(&built)
        );
        assert!(!dir.join(script).with_extension("wasm").exists());
    }
    // Allowed: bundled, and named.
    let built = host(&dir, args(&["build", "--allow-outside-files", "reads.js"])).await;
    assert!(built.status.success(), "{}", text(&built));
    let err = String::from_utf8_lossy(&built.stderr);
    assert!(
        err.contains("secret.txt") && err.contains("outside the script's folder"),
        "{}",
        text(&built)
    );
    let wasm = std::fs::read(dir.join("reads.wasm")).unwrap();
    assert!(wasm
        .windows(b"SECRET-OUTSIDE-0123456789".len())
        .any(|w| w == b"SECRET-OUTSIDE-0123456789"));
}

/// Init code that loops: the error said "describe() failed: wasm trap: interrupt" of a
/// file in the build cache; now it names the script and what to look for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_code_that_loops_is_named_by_its_script() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("loops.js"),
        "let n = 0;\nwhile (true) { n++; }\nexport default function () {}\n",
    )
    .unwrap();
    let ran = host(
        tmp.path(),
        args(&["run", "loops.js", "--iterations", "1", "--quiet"]),
    )
    .await;
    assert!(!ran.status.success(), "{}", text(&ran));
    let err = String::from_utf8_lossy(&ran.stderr);
    assert!(
        err.contains(
            "loops.js: the script's init code (its top level, outside any function) ran past"
        ),
        "{}",
        text(&ran)
    );
    assert!(!err.contains(".cache"), "{}", text(&ran));
}

/// A thrown Proxy whose traps throw and an Error whose `stack` getter throws ended the
/// VU in "wasm trap: unreachable ... RUST_BACKTRACE" (issue 49 item 17); now each fails
/// its iteration with a message that says what was thrown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_that_throw_when_read_fail_their_iteration_with_a_message() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("throws.js"),
        r#"const trap = () => { throw new Error('trap'); };
export const options = {
  scenarios: {
    proxy: { executor: 'per-vu-iterations', vus: 1, iterations: 2, exec: 'proxy' },
    stack: { executor: 'per-vu-iterations', vus: 1, iterations: 2, exec: 'stack' },
  },
};
export function proxy() {
  throw new Proxy({}, { get: trap, getPrototypeOf: trap, ownKeys: trap, has: trap });
}
export function stack() {
  const e = new Error('boom');
  Object.defineProperty(e, 'stack', { get: trap });
  throw e;
}
"#,
    )
    .unwrap();
    let out = tmp.path().join("results");
    let ran = host(
        tmp.path(),
        args(&[
            "run",
            "throws.js",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]),
    )
    .await;
    let all = text(&ran);
    assert!(!all.contains("wasm trap"), "{all}");
    assert!(!all.contains("RUST_BACKTRACE"), "{all}");
    let summary = common::summary_json(&common::only_results_dir(&out));
    let errors = summary["plugin_errors"].to_string();
    assert!(
        errors.contains("[object that throws when read]"),
        "{errors}"
    );
    assert!(errors.contains("Error: boom"), "{errors}");
    for scenario in ["proxy", "stack"] {
        let s = &summary["scenarios"][scenario];
        assert_eq!(s["failed"], 2, "{scenario}: {s}");
    }
}

/// A k6 script's WebSocket send past `[websocket] max_message` read "Error: [object
/// Object]" and was not counted in `ws_errors` (issue 49 item 17).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_websocket_send_says_why_and_is_counted() {
    use futures::StreamExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                    return;
                };
                while let Some(Ok(_)) = ws.next().await {}
            });
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("big.js"),
        r#"import ws from 'k6/ws';
import { WebSocket } from 'k6/experimental/websockets';
export const options = { iterations: 1 };
export default function () {
  ws.connect(__ENV.URL, {}, (socket) => {
    socket.on('open', () => socket.send('x'.repeat(2 * 1024 * 1024)));
    socket.on('error', (e) => console.error(`k6/ws error: ${e.error()}`));
  });
  const s = new WebSocket(__ENV.URL);
  s.onopen = () => s.send('y'.repeat(2 * 1024 * 1024));
  s.onerror = (e) => console.error(`websockets error: ${e.error}`);
}
"#,
    )
    .unwrap();
    let out = tmp.path().join("results");
    let env = format!("URL={url}");
    let ran = host(
        tmp.path(),
        args(&[
            "run",
            "big.js",
            "-e",
            &env,
            "--allow",
            &url.replace("ws://", "http://"),
            "--out",
            out.to_str().unwrap(),
        ]),
    )
    .await;
    let all = text(&ran);
    assert!(!all.contains("[object Object]"), "{all}");
    for api in ["k6/ws error", "websockets error"] {
        assert!(
            all.contains(&format!(
                "{api}: invalid: a message of 2 MiB is larger than [websocket] max_message = 1 MiB"
            )),
            "{api}: {all}"
        );
    }
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(
        summary["metrics"]["ws_errors"]["count"].as_f64(),
        Some(2.0),
        "{}",
        summary["metrics"]
    );
}

/// Init code that loops only in VUs (not when the host describes the script) held the
/// start for a whole CPU budget per VU and core, and the summary said only the run's
/// 3.0 s (issue 49 item 16). Now the first VU runs out of its budget alone, the others
/// give up before the start (each then runs `init` in the run, cut off at its end), and
/// the summary says how long the VUs took before the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_code_that_loops_in_vus_holds_the_start_for_one_budget_and_says_so() {
    let _turn = common::turns::MEASURING.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("vuloop.js"),
        "if (__VU > 0) { let n = 0; while (true) { n++; } }\n\
         export const options = { vus: 16, duration: '2s' };\n\
         export default function () {}\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("run.toml"),
        "[limits]\ncpu_per_call = \"2s\"\n",
    )
    .unwrap();
    let out = tmp.path().join("results");
    let started = Instant::now();
    let ran = host(
        tmp.path(),
        args(&[
            "run",
            "vuloop.js",
            "--config",
            "run.toml",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]),
    )
    .await;
    let took = started.elapsed();
    assert!(!ran.status.success(), "{}", text(&ran));
    let results = common::only_results_dir(&out);
    let summary = common::summary_json(&results);
    let init = summary["vus_init_s"].as_f64().unwrap();
    // One budget of CPU (2 s) on a core of its own; 16 VUs begun together took 16 s of
    // CPU on two cores before the start.
    assert!((1.9..8.0).contains(&init), "VUs initialised in {init} s");
    assert!(took < Duration::from_secs(30), "{took:?}: {}", text(&ran));
    let errors = summary["plugin_errors"].to_string();
    assert!(errors.contains("init() of VU"), "{errors}");
    let txt = std::fs::read_to_string(results.join("summary.txt")).unwrap();
    assert!(txt.contains("VUs initialised in"), "{txt}");
}

/// Four `host build`s of one script at the same moment, sharing one cache (two runs
/// of a script, or a distributed run's workers on one machine): each used to be able
/// to remove or re-pair the entry another was checking and fail with "cannot write the
/// build"; now each succeeds, and each writes the same script's build.
#[test]
fn builds_of_one_script_at_once_all_succeed() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let script = "import { sleep } from 'k6';\nexport default function () { sleep(0.01); }\n";
    let dirs: Vec<std::path::PathBuf> = (0..4)
        .map(|i| {
            let dir = tmp.path().join(format!("d{i}"));
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("same.js"), script).unwrap();
            dir
        })
        .collect();
    let builds: Vec<std::process::Child> = dirs
        .iter()
        .map(|dir| {
            std::process::Command::new(env!("CARGO_BIN_EXE_host"))
                .current_dir(dir)
                .env("HOST_CACHE_DIR", &cache)
                .args(["build", "same.js"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("the host binary runs")
        })
        .collect();
    for (child, dir) in builds.into_iter().zip(&dirs) {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let wasm = std::fs::read(dir.join("same.wasm")).unwrap();
        assert!(
            wasm.starts_with(b"\0asm"),
            "{} is a component",
            dir.display()
        );
    }
}
