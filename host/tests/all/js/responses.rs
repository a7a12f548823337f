//! Responses held on the host by slot (the k6 layer's `responses` interface): what a
//! script reads of a response is fetched when it reads it, so these tests read
//! responses late: after a later iteration, past the layer's bound of kept responses,
//! and after thousands of dropped ones (a slot that leaked would fill the VU's cap).

use super::scripts::run_script;
use crate::support as common;
use common::output_text as text;
use common::servers::{canned, response};

/// A server whose `/r/N` answers `body N` with the header fields the script compares
/// (`X-Seq: N`, `X-Multi` twice, a cookie), and `/moved/N` redirects to `/r/N`.
async fn server() -> common::servers::Server {
    canned(|path| {
        if let Some(n) = path.strip_prefix("/moved/") {
            return response("302 Found", &format!("location: /r/{n}\r\n"), "");
        }
        let n = path.strip_prefix("/r/").unwrap_or("0");
        response(
            "200 OK",
            &format!("x-seq: {n}\r\nx-multi: a\r\nx-multi: b\r\nset-cookie: seq={n}; Path=/\r\n"),
            &format!("body {n}"),
        )
    })
    .await
}

fn passes_all(summary: &serde_json::Value, shown: &str) {
    let checks = summary["checks"].as_array().expect("checks");
    assert!(!checks.is_empty(), "no checks ran\n{shown}");
    for c in checks {
        assert_eq!(c["fails"].as_u64(), Some(0), "{c}\n{shown}");
        assert!(c["passes"].as_u64() > Some(0), "{c}\n{shown}");
    }
}

/// A response kept in a global is read in the next iteration: its status, body,
/// header fields (as the server sent them), cookies, timings and redirected URL are
/// what they would have been in its own iteration; 200 responses kept at once (past
/// the layer's bound, so the oldest are read in full and their slots released) read
/// the same; a response dropped unread costs nothing later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_kept_past_its_iteration_reads_what_the_server_sent() {
    let srv = server().await;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("kept.js"),
        r#"import http from 'k6/http';
import { check } from 'k6';
export const options = { vus: 1, iterations: 4 };
let last = null;
let lastMoved = null;
let many = null;
function same(r, n) {
  const t = r.timings;
  return r.status === 200 && r.body === `body ${n}` && r.headers['X-Seq'] === String(n)
    && r.headers['X-Multi'] === 'a, b' && r.cookies.seq[0].value === String(n)
    && t.duration > 0 && Math.abs(t.duration - (t.sending + t.waiting + t.receiving)) < 0.01;
}
export default function () {
  const i = __ITER;
  if (last !== null) {
    const n = i - 1;
    check(last, { 'kept: read in a later iteration': (r) => same(r, n) });
    check(lastMoved, { 'kept: the redirected URL': (r) => r.url === `${__ENV.BASE_URL}/r/${n + 100}` && same(r, n + 100) });
  }
  if (many !== null) {
    check(many, { 'kept: 200 responses past the bound': (all) => all.every((r, k) => same(r, 1000 + k)) });
    many = null;
  }
  last = http.get(`${__ENV.BASE_URL}/r/${i}`);
  lastMoved = http.get(`${__ENV.BASE_URL}/moved/${i + 100}`);
  // Read in its own iteration: the lazy header fields equal what was sent.
  const now = http.get(`${__ENV.BASE_URL}/r/${i + 50}`);
  check(now, { 'read at once': (r) => same(r, i + 50) });
  if (i === 1) {
    many = [];
    for (let k = 0; k < 100; k++) many.push(http.get(`${__ENV.BASE_URL}/r/${1000 + k}`));
    const rest = http.batch(Array.from({ length: 100 }, (_, k) => `${__ENV.BASE_URL}/r/${1100 + k}`));
    for (const r of rest) many.push(r);
  }
}
"#,
    )
    .unwrap();
    let (ran, out) = run_script(tmp.path(), "kept.js", &srv.base_url(), &[]).await;
    let shown = text(&ran);
    assert_eq!(ran.status.code(), Some(0), "{shown}");
    let summary = common::summary_json(&common::only_results_dir(&out));
    passes_all(&summary, &shown);
    for name in [
        "kept: read in a later iteration",
        "kept: the redirected URL",
        "kept: 200 responses past the bound",
    ] {
        assert!(
            summary["checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == name && c["passes"].as_u64() > Some(0)),
            "{name} did not run\n{shown}"
        );
    }
}

/// 12,000 responses dropped by the script over 240 iterations: each iteration's
/// slots are released, so the VU never reaches its cap of 10,000 held responses
/// (a leak would fail the requests past it); errors still come back as k6 gives them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_responses_release_their_slots_and_errors_keep_their_codes() {
    let srv = server().await;
    let dead = common::servers::dead_port();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("drop.js"),
        format!(
            r#"import http from 'k6/http';
import {{ check }} from 'k6';
export const options = {{ vus: 1, iterations: 240 }};
export default function () {{
  let ok = 0;
  for (let k = 0; k < 50; k++) if (http.get(`${{__ENV.BASE_URL}}/r/${{k}}`).status === 200) ok++;
  check(ok, {{ 'every request answered': (n) => n === 50 }});
  if (__ITER === 0) {{
    const failed = http.get('http://{dead}/');
    check(failed, {{ 'a refused connection': (r) => r.status === 0 && r.error_code === 1212 && r.error.startsWith('connect: ') && r.body === null && r.timings.duration === 0 }});
    const missing = http.get(`${{__ENV.BASE_URL}}/moved/x`, {{ redirects: 0 }});
    check(missing, {{ 'a 302 not followed': (r) => r.status === 302 && r.headers.Location === '/r/x' }});
  }}
}}
"#
        ),
    )
    .unwrap();
    let (ran, out) = run_script(tmp.path(), "drop.js", &srv.base_url(), &[]).await;
    let shown = text(&ran);
    let summary = common::summary_json(&common::only_results_dir(&out));
    passes_all(&summary, &shown);
    assert!(srv.answered() >= 12_000, "{}\n{shown}", srv.answered());
}
