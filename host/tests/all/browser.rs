//! k6 browser scripts run by `host run script.js`, the host driving Debian's Chromium
//! (`./dev test` installs it): a sign-in through the demo target's form (the sign-ins
//! the server recorded equal the iterations), k6's browser metrics in the summary, a
//! page request to an origin the run does not allow (counted denied, never contacted),
//! a missing browser (an error before the run), a page that never loads (the iteration
//! times out and is counted), and no Chromium left behind.

use crate::support as common;
use common::output_text as text;
use common::turns::BROWSER as BROWSER_TURN;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const SIGN_IN: &str = r#"
import { browser } from 'k6/browser';
import { check } from 'k6';

export const options = {
  scenarios: {
    ui: {
      executor: 'per-vu-iterations', vus: 2, iterations: 3,
      options: { browser: { type: 'chromium' } },
    },
  },
  thresholds: { checks: ['rate==1.0'], browser_http_req_duration: ['p(95)<10000'] },
};

export default async function () {
  const page = await browser.newPage();
  try {
    await page.goto(`${__ENV.BASE}/survey/login`);
    await page.locator('input[name="user"]').type(`user${__VU}`);
    await page.locator('input[name="password"]').type('demo');
    await Promise.all([page.waitForNavigation(), page.locator('button').click()]);
    const who = await page.locator('#user').textContent();
    const title = await page.title();
    check(page, {
      'signed in as this VU': () => who === `user${__VU}`,
      'the survey page': () => title.length > 0,
      'its URL': (p) => p.url().endsWith('/survey'),
    });
  } finally {
    await page.close();
  }
}
"#;

/// The host binary in `dir` with `args` and `env`; its browsers' profiles go under
/// `tmp` (TMPDIR), so the test can find any it left.
pub(crate) async fn host(dir: &Path, tmp: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let (dir, tmp) = (dir.to_path_buf(), tmp.to_path_buf());
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_host"))
            .current_dir(dir)
            .args(args)
            .envs(env)
            .env("TMPDIR", tmp)
            .output()
            .expect("the host binary runs")
    })
    .await
    .unwrap()
}

/// Processes whose command line names a profile under `tmp` (the host's browsers).
fn browsers_under(tmp: &Path) -> Vec<String> {
    let needle = tmp.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&needle) && cmdline.contains("host-browser-") {
            found.push(cmdline.chars().take(120).collect());
        }
    }
    found
}

/// `name` from the demo's `/metrics` text at `addr`.
fn demo_counter(addr: &str, name: &str) -> u64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_k6_sign_in_script_runs_and_reports_k6s_browser_metrics() {
    let _turn = BROWSER_TURN.lock().await;
    let demo = common::demo_target(std::time::Duration::ZERO).await;
    let addr = demo.addr().to_string();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("signin.js"), SIGN_IN).unwrap();
    let out = tmp.path().join("results");
    let base = format!("BASE=http://{addr}");
    let ran = host(
        tmp.path(),
        tmp.path(),
        &[
            "run",
            "signin.js",
            "-e",
            &base,
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
        &[],
    )
    .await;
    assert!(ran.status.success(), "{}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(
        summary["plugin_errors"].as_array().map_or(0, Vec::len),
        0,
        "{}",
        summary["plugin_errors"]
    );
    for check in ["signed in as this VU", "the survey page", "its URL"] {
        assert_eq!(common::check_counts(&summary, check), (6, 0), "{check}");
    }
    // Counted on the server's side: one sign-in per iteration.
    assert_eq!(demo_counter(&addr, "demo_survey_logins_total"), 6);
    let metrics = &summary["metrics"];
    for name in [
        "browser_web_vital_fcp",
        "browser_web_vital_ttfb",
        "browser_web_vital_lcp",
        "browser_web_vital_cls",
        "browser_http_req_duration",
        "browser_http_req_failed",
        "browser_data_received",
        "browser_data_sent",
    ] {
        assert!(metrics.get(name).is_some(), "{name} missing from {metrics}");
    }
    // Two documents per iteration (the form, the survey page), each loaded once.
    assert!(
        common::metric_count(&summary, "browser_web_vital_ttfb") >= 12.0,
        "{metrics}"
    );
    assert!(
        common::metric_count(&summary, "browser_http_req_duration") >= 12.0,
        "{metrics}"
    );
    assert!(
        browsers_under(tmp.path()).is_empty(),
        "Chromium left running: {:?}",
        browsers_under(tmp.path())
    );
}

/// A server on 127.0.0.1 that answers every request with `body` (or never, when
/// `None`), counting the connections it accepted.
pub(crate) fn server(body: Option<String>) -> (u16, Arc<AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            count.fetch_add(1, Ordering::SeqCst);
            let body = body.clone();
            std::thread::spawn(move || {
                if common::servers::head_text_blocking(&mut s).is_none() {
                    return;
                }
                let Some(body) = body else {
                    let _ = s.read(&mut [0u8; 4096]);
                    return;
                };
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    (port, accepted)
}

const VISIT: &str = r#"
import { browser } from 'k6/browser';

export const options = {
  scenarios: {
    ui: {
      executor: 'per-vu-iterations', vus: 1, iterations: 2,
      options: { browser: { type: 'chromium' } },
    },
  },
};

export default async function () {
  const page = await browser.newPage();
  await page.goto(__ENV.URL, { timeout: Number(__ENV.TIMEOUT || 30000) });
  await page.waitForTimeout(300);
  await page.close();
}
"#;

/// Runs [`VISIT`] from `tmp` (results in `tmp/out_name`, `extra` flags, `env` set)
/// against a page whose image, fetch and WebSocket go to an origin the run does not
/// allow, and checks what every such run must show: it succeeds, the three requests of
/// each of its two iterations are counted in `http_reqs_denied` (the WebSocket fails at
/// the dead-end proxy and is counted from the page's events), and the denied origin is
/// never contacted. Returns the run's output.
async fn visit_a_page_reaching_a_denied_origin(
    tmp: &Path,
    out_name: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let (denied_port, contacted) = server(Some("x".into()));
    let page = format!(
        "<!doctype html><title>t</title><img src='http://127.0.0.1:{denied_port}/a.png'>\
         <script>fetch('http://127.0.0.1:{denied_port}/api').catch(() => {{}});\
         try {{ new WebSocket('ws://127.0.0.1:{denied_port}/ws'); }} catch (e) {{}}</script>"
    );
    let (port, _) = server(Some(page));
    std::fs::write(tmp.join("visit.js"), VISIT).unwrap();
    let out = tmp.join(out_name);
    let url = format!("URL=http://127.0.0.1:{port}/");
    let allow = format!("http://127.0.0.1:{port}");
    let mut args = vec![
        "run",
        "visit.js",
        "-e",
        &url,
        "--allow",
        &allow,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let ran = host(tmp, tmp, &args, env).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    let denied = common::metric_count(&summary, "http_reqs_denied");
    assert_eq!(denied, 6.0, "http_reqs_denied: {}", summary["metrics"]);
    assert_eq!(
        contacted.load(Ordering::SeqCst),
        0,
        "the denied server was contacted"
    );
    ran
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_request_to_a_denied_origin_is_counted_and_never_sent() {
    let _turn = BROWSER_TURN.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    let ran = visit_a_page_reaching_a_denied_origin(tmp.path(), "results", &["--quiet"], &[]).await;
    assert!(
        text(&ran).contains("a browser page tried to reach"),
        "{}",
        text(&ran)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_browser_is_an_error_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("visit.js"), VISIT).unwrap();
    let out = tmp.path().join("results");
    let ran = host(
        tmp.path(),
        tmp.path(),
        &[
            "run",
            "visit.js",
            "-e",
            "URL=http://127.0.0.1:9/",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
        &[("K6_BROWSER_EXECUTABLE_PATH", "/nonexistent")],
    )
    .await;
    assert!(!ran.status.success(), "{}", text(&ran));
    let shown = text(&ran);
    assert!(shown.contains("/nonexistent"), "{shown}");
    assert!(shown.contains("apt-get install chromium"), "{shown}");
    assert!(
        !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
        "no run started"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_never_loads_times_out_and_is_counted() {
    let _turn = BROWSER_TURN.lock().await;
    let (port, accepted) = server(None);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("visit.js"), VISIT).unwrap();
    let out = tmp.path().join("results");
    let url = format!("URL=http://127.0.0.1:{port}/");
    let started = std::time::Instant::now();
    let ran = host(
        tmp.path(),
        tmp.path(),
        &[
            "run",
            "visit.js",
            "-e",
            &url,
            "-e",
            "TIMEOUT=1000",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
        &[],
    )
    .await;
    // k6 exits 0 when iterations throw; the host fails a run in which no iteration
    // succeeded (it measured nothing), with the reason.
    assert_eq!(ran.status.code(), Some(110), "{}", text(&ran));
    assert!(
        text(&ran).contains("every iteration failed (2 of 2)"),
        "{}",
        text(&ran)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    let summary = common::summary_json(&common::only_results_dir(&out));
    let errors = summary["plugin_errors"].to_string();
    assert!(errors.contains("timed out after 1000 ms"), "{errors}");
    assert_eq!(
        common::metric_count(&summary, "iterations"),
        2.0,
        "{}",
        summary["metrics"]
    );
    assert!(accepted.load(Ordering::SeqCst) >= 2, "each iteration asked");
    assert!(
        browsers_under(tmp.path()).is_empty(),
        "Chromium left running: {:?}",
        browsers_under(tmp.path())
    );
}

const FORM_PAGE: &str = r#"<!doctype html><html><head><title>Form</title></head><body>
<label for="name">Name</label><input id="name" placeholder="Your name" value="">
<input id="agree" type="checkbox"><label for="agree">Agree</label>
<select id="size"><option value="s">Small</option><option value="l">Large</option></select>
<button id="go" data-testid="go-button" disabled>Go</button>
<ul><li class="item">one</li><li class="item">two</li><li class="item" style="display:none">three</li></ul>
<p id="out"></p><a id="link" href="/next" title="Next page">next</a>
<script>
  const name = document.getElementById('name');
  name.addEventListener('input', () => { document.getElementById('go').disabled = !name.value; });
  document.getElementById('go').addEventListener('click', () => {
    document.getElementById('out').textContent = name.value + ':' + document.getElementById('agree').checked + ':' + document.getElementById('size').value;
  });
  document.addEventListener('keydown', (e) => { if (e.key === 'Enter') document.getElementById('out').dataset.enter = 'yes'; });
</script></body></html>"#;

const LOCATORS: &str = r#"
import { browser } from 'k6/browser';
import { check } from 'k6';

export const options = {
  scenarios: { ui: { executor: 'per-vu-iterations', vus: 1, iterations: 2, options: { browser: { type: 'chromium' } } } },
};

export default async function () {
  const context = await browser.newContext({ viewport: { width: 800, height: 600 }, userAgent: 'host-test/1.0' });
  await context.addCookies([{ name: 'k', value: 'v', url: __ENV.URL }]);
  const page = await context.newPage();
  const res = await page.goto(__ENV.URL, { waitUntil: 'load' });
  const go = page.getByTestId('go-button');
  const before = await go.isEnabled();
  await page.getByPlaceholder('Your name').fill('ann');
  await page.getByLabel('Agree').check();
  await page.locator('#size').selectOption('l');
  await go.click();
  await page.locator('#name').press('Enter');
  const cookies = await context.cookies();
  const out = await page.locator('#out').textContent();
  const entered = await page.locator('#out').getAttribute('data-enter');
  const value = await page.locator('#name').inputValue();
  const checked = await page.locator('#agree').isChecked();
  const items = await page.locator('li.item').count();
  const second = await page.locator('li.item').nth(1).innerText();
  const lastShown = await page.locator('li.item').last().isVisible();
  const buttons = await page.getByRole('button', { name: 'Go' }).count();
  const twos = await page.getByText('two').count();
  const link = await page.getByTitle('Next page').innerHTML();
  const doubled = await page.evaluate((n) => n * 2, 21);
  const seen = await page.evaluate(() => innerWidth + ' ' + navigator.userAgent);
  const html = await page.content();
  const list = page.locator('ul');
  await list.locator('li.item').first().waitFor();
  const nested = await list.locator('li.item').nth(1).textContent();
  const withTwo = await page.locator('li.item').filter({ hasText: 'two' }).count();
  const noT = await page.locator('li.item').filter({ hasNotText: /t/ }).textContent();
  const lists = await page.locator('body *').filter({ has: page.locator('.item') }).count();
  const inList = await list.getByText('two').count();
  check(page, {
    'nested locators and filter': () => nested === 'two' && withTwo === 1 && noT === 'one' && lists === 1 && inList === 1,
    'goto answers 200': () => res.status() === 200,
    'a button enables on input': () => before === false,
    'fill, check, selectOption and a real click': () => out === 'ann:true:l',
    'press reaches the page': () => entered === 'yes',
    'inputValue': () => value === 'ann',
    'isChecked': () => checked === true,
    'count, nth and last': () => items === 3 && second === 'two' && lastShown === false,
    'getByRole and getByText': () => buttons === 1 && twos === 1,
    'getByTitle and innerHTML': () => link === 'next',
    'evaluate with an argument': () => doubled === 42,
    'viewport and user agent': () => seen === '800 host-test/1.0',
    'cookies': () => cookies.length === 1 && cookies[0].name === 'k',
    'content': () => html.includes('data-testid="go-button"'),
  });
  await page.screenshot({ path: `shots/form-${__ITER}.png` });
  await context.close();
}
"#;

/// Serves `page`, saves `script` as `name` and runs it against the page (`URL` set,
/// results in `results/`, `extra` flags after); the run must succeed. Returns the
/// temporary folder (alive while held), the output and the run's results folder.
async fn run_against_page(
    page: &str,
    name: &str,
    script: &str,
    extra: &[&str],
) -> (tempfile::TempDir, Output, PathBuf) {
    let (port, _) = server(Some(page.into()));
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(name), script).unwrap();
    let out = tmp.path().join("results");
    let url = format!("URL=http://127.0.0.1:{port}/");
    let mut args = vec!["run", name, "-e", &url, "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let ran = host(tmp.path(), tmp.path(), &args, &[]).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let dir = common::only_results_dir(&out);
    (tmp, ran, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locators_act_and_read_as_k6s() {
    let _turn = BROWSER_TURN.lock().await;
    let (_tmp, _ran, dir) = run_against_page(FORM_PAGE, "form.js", LOCATORS, &["--quiet"]).await;
    let summary = common::summary_json(&dir);
    assert_eq!(
        summary["plugin_errors"].as_array().map_or(0, Vec::len),
        0,
        "{}",
        summary["plugin_errors"]
    );
    for c in summary["checks"].as_array().unwrap() {
        assert_eq!(c["fails"].as_u64(), Some(0), "check failed: {c}");
        assert_eq!(c["passes"].as_u64(), Some(2), "{c}");
    }
    assert_eq!(summary["checks"].as_array().unwrap().len(), 14);
    // Screenshots are PNGs inside the results folder.
    for i in 0..2 {
        let png = std::fs::read(dir.join(format!("shots/form-{i}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_apis_not_built_are_refused_at_build_with_their_line() {
    let tmp = tempfile::tempdir().unwrap();
    let script = "import { browser } from 'k6/browser';\nexport const options = {};\nexport default async function () {\n  const page = await browser.newPage();\n  await page.setInputFiles('#f', []);\n}\n";
    std::fs::write(tmp.path().join("files.js"), script).unwrap();
    let ran = host(tmp.path(), tmp.path(), &["build", "files.js"], &[]).await;
    assert!(!ran.status.success(), "{}", text(&ran));
    assert!(text(&ran).contains("files.js:5"), "{}", text(&ran));
    assert!(text(&ran).contains("`setInputFiles()`"), "{}", text(&ran));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_without_a_browser_type_fails_as_k6s_does() {
    let tmp = tempfile::tempdir().unwrap();
    let script = "import { browser } from 'k6/browser';\nexport const options = { iterations: 1 };\nexport default async function () {\n  await browser.newPage();\n}\n";
    std::fs::write(tmp.path().join("untyped.js"), script).unwrap();
    let out = tmp.path().join("results");
    let ran = host(
        tmp.path(),
        tmp.path(),
        &[
            "run",
            "untyped.js",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
        &[],
    )
    .await;
    assert!(!ran.status.success(), "{}", text(&ran));
    assert!(
        text(&ran).contains("make sure to set browser type option in scenario definition"),
        "{}",
        text(&ran)
    );
    // No browser was started for a run without a browser scenario.
    assert!(browsers_under(tmp.path()).is_empty());
}

const CRASH: &str = r#"
import { browser } from 'k6/browser';
import { check } from 'k6';

export const options = {
  scenarios: {
    ui: {
      executor: 'per-vu-iterations', vus: 1, iterations: 2,
      options: { browser: { type: 'chromium' } },
    },
  },
};

export default async function () {
  const page = await browser.newPage();
  await page.goto(`${__ENV.BASE}/survey/login`);
  if (__ITER === 0) {
    // The test kills the browser while this waits.
    await page.waitForSelector('#never-there', { timeout: 60000 });
  }
  await page.locator('input[name="user"]').type('user1');
  await page.locator('input[name="password"]').type('demo');
  await Promise.all([page.waitForNavigation(), page.locator('button').click()]);
  check(await page.locator('#user').textContent(), { 'signed in': (w) => w === 'user1' });
  await page.close();
}
"#;

/// The pids of the browsers' main processes (not their helpers) under `tmp`.
fn browser_mains_under(tmp: &Path) -> Vec<i32> {
    let needle = tmp.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.contains(&needle)
            && cmdline.contains("host-browser-")
            && cmdline.contains("--remote-debugging-pipe")
            && !cmdline.contains("--type=")
        {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_that_crashes_fails_its_iteration_and_the_next_gets_a_new_one() {
    let _turn = BROWSER_TURN.lock().await;
    let demo = common::demo_target(std::time::Duration::ZERO).await;
    let addr = demo.addr().to_string();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("crash.js"), CRASH).unwrap();
    let out = tmp.path().join("results");
    let base = format!("BASE=http://{addr}");
    let run = {
        let (dir, out) = (tmp.path().to_path_buf(), out.clone());
        tokio::spawn(async move {
            host(
                &dir,
                &dir,
                &[
                    "run",
                    "crash.js",
                    "-e",
                    &base,
                    "--out",
                    out.to_str().unwrap(),
                    "--quiet",
                ],
                &[],
            )
            .await
        })
    };
    // The first iteration waits for an element that never comes: once its page has
    // the form (the goto is done), the browser is killed under it.
    let started = std::time::Instant::now();
    let first = loop {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no browser started"
        );
        let mains = browser_mains_under(tmp.path());
        if let [pid] = mains[..] {
            break pid;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    // SAFETY: kill has no memory preconditions; the pid is the test's own browser.
    assert_eq!(unsafe { libc::kill(first, libc::SIGKILL) }, 0);
    let ran = run.await.unwrap();
    // One iteration failed, one succeeded: the run itself completes.
    assert!(ran.status.success(), "{}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    let errors = summary["plugin_errors"].to_string();
    assert!(
        errors.contains("the browser closed its DevTools connection"),
        "the failed iteration says why: {errors}"
    );
    assert_eq!(common::metric_count(&summary, "iterations"), 2.0);
    // The second iteration signed in, in a new browser.
    assert_eq!(common::check_counts(&summary, "signed in"), (1, 0));
    assert_eq!(demo_counter(&addr, "demo_survey_logins_total"), 1);
    assert!(
        browsers_under(tmp.path()).is_empty(),
        "Chromium left running: {:?}",
        browsers_under(tmp.path())
    );
}

/// A Chromium the test starts itself with a DevTools port on 127.0.0.1 (a remote
/// browser for `K6_BROWSER_WS_URL`), killed with its helpers when dropped.
struct RemoteChromium {
    child: std::process::Child,
    ws_url: String,
    _profile: tempfile::TempDir,
}

impl RemoteChromium {
    fn start() -> RemoteChromium {
        use std::os::unix::process::CommandExt;
        let profile = tempfile::tempdir().unwrap();
        let child = Command::new("/usr/bin/chromium")
            .args([
                "--headless=new",
                "--no-sandbox",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("Debian's chromium is installed");
        // With port 0 Chromium writes the port it took, and the browser's path.
        let active = profile.path().join("DevToolsActivePort");
        let started = std::time::Instant::now();
        let ws_url = loop {
            if let Ok(text) = std::fs::read_to_string(&active) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break format!("ws://127.0.0.1:{port}{path}");
                }
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "chromium wrote no DevToolsActivePort"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        RemoteChromium {
            child,
            ws_url,
            _profile: profile,
        }
    }
}

impl Drop for RemoteChromium {
    fn drop(&mut self) {
        // SAFETY: kill has no memory preconditions; the group is the test's browser.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_browser_from_k6_browser_ws_url_runs_the_script_within_the_allowlist() {
    let _turn = BROWSER_TURN.lock().await;
    let remote = RemoteChromium::start();
    let demo = common::demo_target(std::time::Duration::ZERO).await;
    let addr = demo.addr().to_string();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("signin.js"), SIGN_IN).unwrap();
    let out = tmp.path().join("results");
    let base = format!("BASE=http://{addr}");
    let env = [("K6_BROWSER_WS_URL", remote.ws_url.as_str())];
    let ran = host(
        tmp.path(),
        tmp.path(),
        &[
            "run",
            "signin.js",
            "-e",
            &base,
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
        &env,
    )
    .await;
    assert!(ran.status.success(), "{}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(
        common::check_counts(&summary, "signed in as this VU"),
        (6, 0)
    );
    assert_eq!(demo_counter(&addr, "demo_survey_logins_total"), 6);
    assert!(common::metric_count(&summary, "browser_web_vital_ttfb") >= 12.0);
    // The host started no browser of its own, and the remote one still runs.
    assert!(browsers_under(tmp.path()).is_empty());
    let alive = std::path::Path::new(&format!("/proc/{}", remote.child.id())).exists();
    assert!(alive, "the host closed a browser it did not start");

    // The allowlist holds in it: the image, the fetch and the WebSocket to a denied
    // origin are counted and never reach it (the WebSocket fails at the context's
    // proxy, the host's switches being out of reach).
    visit_a_page_reaching_a_denied_origin(tmp.path(), "results-visit", &["--quiet"], &env).await;
}

const POINTER_PAGE: &str = r#"<!doctype html><html><head><title>Pointer</title></head><body style="margin:0">
<div id="box" style="position:absolute;left:0;top:0;width:300px;height:300px"></div>
<p id="log" style="position:absolute;top:400px"></p>
<script>
  const box = document.getElementById('box');
  const log = (s) => { document.getElementById('log').textContent += s + ';'; };
  box.addEventListener('mousedown', (e) => log('down' + e.button));
  box.addEventListener('mouseup', (e) => log('up' + e.button));
  box.addEventListener('click', () => log('click'));
  box.addEventListener('dblclick', () => log('dbl'));
  box.addEventListener('touchstart', (e) => log('touch' + Math.round(e.touches[0].clientX)));
</script></body></html>"#;

const POINTER: &str = r#"
import { browser } from 'k6/browser';
import { check } from 'k6';

export const options = {
  scenarios: { ui: { executor: 'per-vu-iterations', vus: 1, iterations: 1, options: { browser: { type: 'chromium' } } } },
};

const where = (page) => page.evaluate(() => new Promise((resolve, reject) => navigator.geolocation.getCurrentPosition(
  (p) => resolve([p.coords.latitude, p.coords.longitude]), (e) => reject(new Error(e.message)))));
const permission = (page) => page.evaluate(() => navigator.permissions.query({ name: 'geolocation' }).then((s) => s.state));

export default async function () {
  const context = await browser.newContext({
    permissions: ['geolocation'], geolocation: { latitude: 52.52, longitude: 13.4, accuracy: 5 },
  });
  const page = await context.newPage();
  await page.goto(__ENV.URL);
  await page.mouse.click(50, 50);
  await page.mouse.dblclick(60, 60);
  await page.mouse.move(70, 70);
  await page.mouse.down({ button: 'right' });
  await page.mouse.up({ button: 'right' });
  await page.touchscreen.tap(80, 80);
  const log = await page.locator('#log').textContent();
  const first = await where(page);
  await context.setGeolocation({ latitude: 48.14, longitude: 11.58 });
  const second = await where(page);
  const granted = await permission(page);
  await context.clearPermissions();
  const cleared = await permission(page);
  check(log, {
    'mouse click, dblclick, down and up': (l) => l.startsWith('down0;up0;click;down0;up0;click;down0;up0;click;dbl;down2;up2;'),
    'touchscreen tap': (l) => l.includes('touch80;'),
  });
  check(null, {
    'newContext geolocation and permissions': () => first[0] === 52.52 && first[1] === 13.4 && granted === 'granted',
    'setGeolocation': () => second[0] === 48.14 && second[1] === 11.58,
    'clearPermissions': () => cleared === 'prompt',
  });
  console.log(`log=${log} first=${first} second=${second} granted=${granted} cleared=${cleared}`);
  await context.close();
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mouse_touchscreen_permissions_and_geolocation_act_as_k6s() {
    let _turn = BROWSER_TURN.lock().await;
    let (_tmp, ran, dir) = run_against_page(POINTER_PAGE, "pointer.js", POINTER, &[]).await;
    let summary = common::summary_json(&dir);
    for c in summary["checks"].as_array().unwrap() {
        assert_eq!(
            c["fails"].as_u64(),
            Some(0),
            "check failed: {c}\n{}",
            text(&ran)
        );
    }
    assert_eq!(summary["checks"].as_array().unwrap().len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_sdk_signs_in_through_a_page() {
    let _turn = BROWSER_TURN.lock().await;
    let demo = common::demo_target(std::time::Duration::ZERO).await;
    let config = r#"
        [scenarios.ui]
        executor = "per-vu-iterations"
        vus = 2
        iterations = 2
        exec = "browser"
    "#;
    let run = common::run("survey", config, &[("BASE_URL", &demo.base_url())])
        .await
        .unwrap();
    for name in [
        "browser: the form loads",
        "browser: signed in as this VU",
        "browser: on the survey page",
        "browser: routes, events and handles",
        "browser: emulation and input",
    ] {
        assert_eq!(common::check_counts(&run.json, name), (4, 0), "{name}");
    }
    // Counted on the server's side: one sign-in per iteration.
    assert_eq!(demo.survey_counts().logins, 4);
    assert!(run.metric("browser_web_vital_ttfb", "count") >= 8.0);
}
