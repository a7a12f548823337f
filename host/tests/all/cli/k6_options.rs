//! k6's command line over a k6 script's options, side by side with k6 1.1.0: the same
//! script run by both with the same flags against the demo target, iterations, VUs and
//! the scenario that ran compared (docs/commands.md has the table). And `-q`, `-v` and
//! `--http-debug`, whose output is compared with k6's.

use crate::support as common;

use common::k6::k6_in;
use common::{host_in as host, output_text as text};
use std::collections::BTreeSet;
use std::process::Output;

/// What a run did: iterations (`IT` lines), distinct VUs, scenario names, exit code.
#[derive(Debug, PartialEq)]
struct Ran {
    iterations: usize,
    vus: usize,
    scenarios: BTreeSet<String>,
}

/// Reads the `IT <vu> <scenario>` lines the script logs, in either tool's log format
/// (the host's `[s vu 1] info: IT 1 s`, k6's `msg="IT 1 s"`).
fn ran(out: &Output) -> Ran {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut iterations = 0;
    let mut vus = BTreeSet::new();
    let mut scenarios = BTreeSet::new();
    for line in stderr.lines() {
        let Some(at) = line.find("IT ") else { continue };
        let mut words = line[at + 3..].split(|c: char| c.is_whitespace() || c == '"');
        let (Some(vu), Some(scenario)) = (words.next(), words.next()) else {
            continue;
        };
        iterations += 1;
        vus.insert(vu.to_string());
        scenarios.insert(scenario.to_string());
    }
    Ran {
        iterations,
        vus: vus.len(),
        scenarios,
    }
}

/// A script with `options`, whose iterations each GET the demo target, log
/// `IT <vu> <scenario>` and sleep `sleep_s`.
fn script(options: &str, sleep_s: f64) -> String {
    format!(
        r#"import http from 'k6/http';
import exec from 'k6/execution';
import {{ sleep }} from 'k6';
export const options = {options};
export default function () {{
  http.get(`${{__ENV.BASE_URL}}/health`);
  console.log(`IT ${{__VU}} ${{exec.scenario.name}}`);
  sleep({sleep_s});
}}
"#
    )
}

/// Runs `script` with `flags` in the host and in k6 1.1.0, each against the demo
/// target; what each did, and the requests the target served each.
async fn both(script_text: &str, flags: &[&str]) -> ((Ran, u64, Output), (Ran, u64, Output)) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("script.js"), script_text).unwrap();
    let target = common::demo_target(std::time::Duration::ZERO).await;
    let base = format!("BASE_URL={}", target.base_url());
    let mut args: Vec<String> = ["run", "script.js", "-q", "-e", &base, "--out"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(dir.path().join("results").display().to_string());
    args.extend(flags.iter().map(|s| s.to_string()));
    let before = target.requests_served();
    let h = host(dir.path(), &args).await;
    let host_served = target.requests_served() - before;
    let mut args: Vec<String> = ["script.js", "-q", "-e", &base]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(flags.iter().map(|s| s.to_string()));
    let before = target.requests_served();
    let k = k6_in(dir.path(), args).await;
    let k6_served = target.requests_served() - before;
    ((ran(&h), host_served, h), (ran(&k), k6_served, k))
}

const SCENARIOS: &str =
    "{ scenarios: { a: { executor: 'per-vu-iterations', vus: 3, iterations: 2 } } }";
const SCENARIOS_AND_VUS: &str =
    "{ vus: 2, scenarios: { a: { executor: 'per-vu-iterations', vus: 3, iterations: 2 } } }";
const SHORTCUTS: &str = "{ vus: 2, duration: '2s' }";

/// A case: the script's options, the flags, and what both must do (iterations, VUs,
/// scenario).
type Case<'a> = (&'a str, &'a [&'a str], (usize, usize, &'a str));

/// The iteration-counted cases: host and k6 run the same iterations on the same VUs in
/// the same scenario, and the target served one request per iteration to each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iteration_flags_replace_or_keep_the_scripts_scenarios_as_k6() {
    let _turn = common::turns::MEASURING.lock().await;
    // (options, flags, what both must do: iterations, VUs, scenario)
    let cases: &[Case] = &[
        (SCENARIOS, &[], (6, 3, "a")),
        // --vus alone leaves the script's scenarios as they are.
        (SCENARIOS, &["--vus", "2"], (6, 3, "a")),
        // --iterations replaces them: shared iterations on 1 VU...
        (SCENARIOS, &["--iterations", "5"], (5, 1, "default")),
        // ... on the script's top-level vus ...
        (SCENARIOS_AND_VUS, &["--iterations", "5"], (5, 2, "default")),
        // ... or on --vus: 6 in total, not 6 per VU.
        (
            SCENARIOS,
            &["--vus", "2", "--iterations", "6"],
            (6, 2, "default"),
        ),
        (SHORTCUTS, &["--iterations", "3"], (3, 2, "default")),
    ];
    for (options, flags, (iterations, vus, scenario)) in cases {
        // Each iteration sleeps, so every VU of a shared-iterations scenario takes one
        // while the others sleep: without it, one VU could run them all before another
        // started (seen on a loaded machine: 3 iterations, all VU 2's), in either tool.
        let ((h, h_served, h_out), (k, k_served, k_out)) = both(&script(options, 0.5), flags).await;
        let want = Ran {
            iterations: *iterations,
            vus: *vus,
            scenarios: [scenario.to_string()].into(),
        };
        assert!(
            h_out.status.success(),
            "{options} {flags:?}\n{}",
            text(&h_out)
        );
        assert_eq!(
            k,
            want,
            "k6 1.1.0 with {options} {flags:?}\n{}",
            text(&k_out)
        );
        assert_eq!(
            h,
            k,
            "host vs k6 with {options} {flags:?}\n{}",
            text(&h_out)
        );
        assert_eq!(
            (h_served, k_served),
            (*iterations as u64, *iterations as u64),
            "{options} {flags:?}"
        );
        if flags.contains(&"--iterations") && options.contains("scenarios") {
            // k6 warns that the scenarios were replaced; so does the host.
            let stderr = String::from_utf8_lossy(&h_out.stderr);
            assert!(
                stderr.contains("replaced the script's scenarios (a)"),
                "{stderr}"
            );
        }
    }
}

/// `--iterations` with `--duration`: the duration is the shared iterations'
/// max_duration (1 VU, 0.6 s per iteration, 2 s: 4 iterations start, in both).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_with_iterations_is_their_max_duration_as_k6() {
    let _turn = common::turns::MEASURING.lock().await;
    let ((h, _, h_out), (k, _, k_out)) = both(
        &script(SCENARIOS, 0.6),
        &["--iterations", "10", "--duration", "2s"],
    )
    .await;
    assert_eq!(k.iterations, 4, "{}", text(&k_out));
    assert_eq!(h, k, "{}", text(&h_out));
}

/// `--duration` alone makes a constant-vus scenario, `--stage` a ramping-vus one,
/// starting at the script's `vus`; `--vus` on a script of shortcuts sets its VUs.
/// Iterations run for a time, so their counts are not compared; VUs and scenario are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_and_stages_replace_the_scenarios_as_k6() {
    let _turn = common::turns::MEASURING.lock().await;
    let cases: &[(&str, &[&str], usize)] = &[
        (SCENARIOS, &["--duration", "1s"], 1),
        (SCENARIOS_AND_VUS, &["--duration", "1s"], 2),
        (SCENARIOS, &["--vus", "2", "--duration", "1s"], 2),
        (SHORTCUTS, &["--vus", "3"], 3),
        // Ramping from the script's 2 VUs (not 1) and staying there.
        (SHORTCUTS, &["-s", "2s:2"], 2),
    ];
    for (options, flags, vus) in cases {
        // 0.2 s per iteration: 5 log lines a second per VU, within the host's budget.
        let ((h, h_served, h_out), (k, _, k_out)) = both(&script(options, 0.2), flags).await;
        assert!(
            h_out.status.success(),
            "{options} {flags:?}\n{}",
            text(&h_out)
        );
        assert_eq!(
            (k.vus, k.scenarios.clone()),
            (*vus, ["default".to_string()].into()),
            "k6 1.1.0 with {options} {flags:?}\n{}",
            text(&k_out)
        );
        assert_eq!(
            (h.vus, h.scenarios.clone()),
            (k.vus, k.scenarios.clone()),
            "{options} {flags:?}\n{}",
            text(&h_out)
        );
        assert!(
            h.iterations >= *vus && h_served as usize == h.iterations,
            "{h:?} {h_served}"
        );
    }
}

/// Fewer iterations than VUs is refused by both, naming both numbers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fewer_iterations_than_vus_is_refused_as_k6() {
    let ((h, _, h_out), (k, _, k_out)) = both(
        &script(SCENARIOS, 0.0),
        &["--vus", "3", "--iterations", "2"],
    )
    .await;
    assert_eq!(k_out.status.code(), Some(104), "{}", text(&k_out));
    assert!(!h_out.status.success(), "{}", text(&h_out));
    assert_eq!((h.iterations, k.iterations), (0, 0));
    let stderr = String::from_utf8_lossy(&h_out.stderr);
    assert!(
        stderr.contains("2 iterations cannot keep 3 VUs busy"),
        "{stderr}"
    );
}

/// `-q` hides the progress, not `console.log` (k6's -q); `console.debug` is written
/// only with `-v`, in both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_keeps_console_lines_and_debug_needs_verbose_as_k6() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("log.js"),
        "export default function () { console.log('LOG-LINE'); console.debug('DEBUG-LINE'); }\n",
    )
    .unwrap();
    let out = dir.path().join("results").display().to_string();
    for verbose in [false, true] {
        let mut args = vec!["run", "log.js", "-q", "--out", &out];
        let mut k6_args = vec!["log.js".to_string(), "-q".to_string()];
        if verbose {
            args.push("-v");
            k6_args.push("-v".into());
        }
        let h = host(dir.path(), &args).await;
        let k = k6_in(dir.path(), k6_args).await;
        assert!(h.status.success(), "{}", text(&h));
        for (who, o) in [("host", &h), ("k6", &k)] {
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(stderr.contains("LOG-LINE"), "{who}: {stderr}");
            assert_eq!(
                stderr.contains("DEBUG-LINE"),
                verbose,
                "{who} -v {verbose}: {stderr}"
            );
        }
        // No progress lines with -q.
        let stderr = String::from_utf8_lossy(&h.stderr);
        assert!(!stderr.contains(" vus="), "{stderr}");
    }
}

/// `--http-debug` prints request and response heads; `=full` their bodies too; a
/// target's terminal escapes arrive escaped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_debug_prints_requests_and_responses_as_k6() {
    let server = common::servers::canned(|_| {
        common::servers::response("200 OK", "X-Test: yes\r\n", "body-\x1b]0;title\x07-end")
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("debug.js"),
        format!(
            "import http from 'k6/http';\nexport default function () {{ http.post('http://{}/path?q=1', 'sent-body'); }}\n",
            server.addr
        ),
    )
    .unwrap();
    let out = dir.path().join("results").display().to_string();
    for full in [false, true] {
        let flag = if full {
            "--http-debug=full"
        } else {
            "--http-debug"
        };
        let h = host(dir.path(), ["run", flag, "debug.js", "-q", "--out", &out]).await;
        let k = k6_in(
            dir.path(),
            vec!["debug.js".into(), "-q".into(), flag.into()],
        )
        .await;
        assert!(h.status.success(), "{}", text(&h));
        let hs = String::from_utf8_lossy(&h.stderr);
        let ks = String::from_utf8_lossy(&k.stderr);
        for (who, s) in [("host", &hs), ("k6", &ks)] {
            for want in [
                "Request:",
                "POST /path?q=1 HTTP/1.1",
                "Response:",
                "HTTP/1.1 200 OK",
                "X-Test: yes",
            ] {
                assert!(s.contains(want), "{who} {flag}: no {want:?} in {s}");
            }
            assert_eq!(s.contains("sent-body"), full, "{who} {flag}: {s}");
            assert_eq!(s.contains("body-"), full, "{who} {flag}: {s}");
        }
        // The body's escapes (which would retitle the terminal) arrive escaped.
        assert!(!hs.contains('\x1b') && !hs.contains('\x07'), "{hs:?}");
        assert_eq!(hs.contains("body-\\x1b]0;title\\x07-end"), full, "{hs:?}");
    }
}
