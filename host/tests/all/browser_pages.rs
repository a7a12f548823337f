//! k6 browser scripts beyond navigation and locators, run by `host run` against pages
//! a server of the test serves on 127.0.0.1 (it records every request it gets, so what
//! the page did or did not send is checked on the server's side): `page.on('console' |
//! 'request' | 'response' | 'metric')`, `page.route` (abort, continue, fulfill, a
//! continue to an origin the run does not allow: denied, counted, never contacted, and
//! a handler that throws),
//! frames and `frameLocator`, JS and element handles, `mouse.wheel`, `keyboard.down`/`up`,
//! `dispatchEvent`, `emulateMedia`, `setExtraHTTPHeaders`, `addInitScript`,
//! `context.setOffline` and `newContext({ offline })`.

use crate::browser::{host, server};
use crate::support as common;
use common::output_text as text;
use common::turns::BROWSER as BROWSER_TURN;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// The heads of the requests a [`site`] got, in order.
type Heads = Arc<Mutex<Vec<String>>>;

/// A server on 127.0.0.1 answering each request with `respond(path, head)` (a status
/// line's code and reason, a content type, a body), one request per connection; it
/// records every request head it reads. Returns its port and the heads.
fn site(respond: fn(&str, &str) -> (&'static str, &'static str, String)) -> (u16, Heads) {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads: Heads = Arc::default();
    let seen = heads.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let seen = seen.clone();
            std::thread::spawn(move || {
                let Some(head) = common::servers::head_text_blocking(&mut s) else {
                    return;
                };
                seen.lock().unwrap().push(head.clone());
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (status, kind, body) = respond(&path, &head);
                let _ = write!(
                    s,
                    "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\
                     cache-control: no-store\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    (port, heads)
}

/// The paths of `heads`.
fn paths(heads: &Heads) -> Vec<String> {
    heads
        .lock()
        .unwrap()
        .iter()
        .map(|h| h.split_whitespace().nth(1).unwrap_or("").to_owned())
        .collect()
}

/// Saves `script` as `name` and runs it (`URL` the site's root, `extra` flags after);
/// the run must succeed and every check pass. Returns the summary.
async fn run(port: u16, name: &str, script: &str, extra: &[&str]) -> serde_json::Value {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(name), script).unwrap();
    let out = tmp.path().join("results");
    let url = format!("URL=http://127.0.0.1:{port}/");
    let mut args = vec!["run", name, "-e", &url, "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let ran = host(tmp.path(), tmp.path(), &args, &[]).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let dir: PathBuf = common::only_results_dir(&out);
    let summary = common::summary_json(&dir);
    assert_eq!(
        summary["plugin_errors"].as_array().map_or(0, Vec::len),
        0,
        "{}\n{}",
        summary["plugin_errors"],
        text(&ran)
    );
    for c in summary["checks"].as_array().unwrap() {
        assert_eq!(
            c["fails"].as_u64(),
            Some(0),
            "check failed: {c}\n{}",
            text(&ran)
        );
        assert_eq!(c["passes"].as_u64(), Some(2), "{c}");
    }
    summary
}

/// The value a threshold on `metric` observed.
fn observed(summary: &serde_json::Value, metric: &str) -> f64 {
    summary["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["metric"] == metric)
        .unwrap_or_else(|| panic!("no threshold on {metric}: {}", summary["thresholds"]))
        ["observed"]
        .as_f64()
        .unwrap_or(-1.0)
}

const EVENTS_PAGE: &str = "<!doctype html><title>events</title><script>\
    console.log('hello', 42); console.warn('careful');\
    Promise.all([fetch('/api/item?id=1'), fetch('/api/item?id=2')])\
      .then((rs) => Promise.all(rs.map((r) => r.text())))\
      .then((t) => { document.title = 'done ' + t.join(','); });</script>";

fn events_site(path: &str, _head: &str) -> (&'static str, &'static str, String) {
    match path {
        "/" => ("200 OK", "text/html", EVENTS_PAGE.into()),
        p if p.starts_with("/api/item") => ("200 OK", "text/plain", p[13..].to_owned()),
        _ => ("404 Not Found", "text/plain", "no".into()),
    }
}

const EVENTS: &str = r#"
import { browser } from 'k6/browser';
import { check } from 'k6';

export const options = {
  scenarios: {
    ui: { executor: 'per-vu-iterations', vus: 1, iterations: 2, options: { browser: { type: 'chromium' } } },
  },
  thresholds: {
    'browser_http_req_duration{url:item}': ['count>=0'],
    'browser_http_req_duration{name:item}': ['count>=0'],
  },
};

export default async function () {
  const page = await browser.newPage();
  const seen = { console: [], args: [], requests: [], responses: [] };
  page.on('console', (m) => {
    seen.console.push(`${m.type()}:${m.text()}`);
    if (m.type() === 'log') m.args()[1].jsonValue().then((v) => seen.args.push(v));
  });
  page.on('request', (r) => seen.requests.push(`${r.method()} ${r.url()} ${r.resourceType()} ${r.isNavigationRequest()}`));
  page.on('response', (r) => seen.responses.push(`${r.status()} ${r.url()} ${r.request().method()} ${r.headers()['content-type']}`));
  page.on('metric', (m) => m.tag({ name: 'item', matches: [{ url: /\/api\/item\?id=\d+$/, method: 'GET' }] }));
  await page.goto(__ENV.URL);
  await page.waitForFunction(() => document.title.startsWith('done'));
  await page.waitForTimeout(50);
  console.log(JSON.stringify(seen));
  check(seen, {
    'console messages with their type and text': (s) => s.console.includes('log:hello 42') && s.console.includes('warning:careful'),
    'console arguments as values': (s) => s.args.length === 1 && s.args[0] === 42,
    'the document request': (s) => s.requests.includes(`GET ${__ENV.URL} Document true`),
    'the page\'s fetches': (s) => s.requests.includes(`GET ${__ENV.URL}api/item?id=1 Fetch false`)
      && s.requests.includes(`GET ${__ENV.URL}api/item?id=2 Fetch false`),
    'responses with status, request and headers': (s) => s.responses.includes(`200 ${__ENV.URL}api/item?id=2 GET text/plain`),
  });
  await page.close();
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_events_reach_the_scripts_handlers_and_metric_tags_group_urls() {
    let _turn = BROWSER_TURN.lock().await;
    let (port, heads) = site(events_site);
    let summary = run(port, "events.js", EVENTS, &["--quiet"]).await;
    assert_eq!(summary["checks"].as_array().unwrap().len(), 5);
    // Two iterations, two fetches each: every one grouped under `item`, both tags.
    assert_eq!(
        observed(&summary, "browser_http_req_duration{url:item}"),
        4.0
    );
    assert_eq!(
        observed(&summary, "browser_http_req_duration{name:item}"),
        4.0
    );
    let items = paths(&heads)
        .iter()
        .filter(|p| p.starts_with("/api/item"))
        .count();
    assert_eq!(items, 4, "the server got {:?}", paths(&heads));
}

const ROUTE_PAGE: &str = "<!doctype html><title>routes</title><script>\
    (async () => { const out = {};\
      try { out.fulfilled = await (await fetch('/mock')).text(); } catch (e) { out.fulfilled = 'error'; }\
      try { await fetch('/blocked'); out.aborted = 'no'; } catch (e) { out.aborted = 'yes'; }\
      try { out.continued = await (await fetch('/echo')).text(); } catch (e) { out.continued = 'error'; }\
      try { await fetch('/away'); out.denied = 'no'; } catch (e) { out.denied = 'yes'; }\
      try { out.plain = await (await fetch('/plain')).text(); } catch (e) { out.plain = 'error'; }\
      document.title = JSON.stringify(out); })();</script>";

fn route_site(path: &str, head: &str) -> (&'static str, &'static str, String) {
    let routed = head
        .lines()
        .find_map(|l| l.strip_prefix("x-routed: "))
        .unwrap_or("none")
        .trim()
        .to_owned();
    match path {
        "/" => ("200 OK", "text/html", ROUTE_PAGE.into()),
        "/echoed" => ("200 OK", "text/plain", format!("echoed {routed}")),
        "/plain" => ("200 OK", "text/plain", "plain".into()),
        _ => ("404 Not Found", "text/plain", "unexpected".into()),
    }
}

const ROUTES: &str = r#"
import { browser } from 'k6/browser';
import { check } from 'k6';

export const options = {
  scenarios: {
    ui: { executor: 'per-vu-iterations', vus: 1, iterations: 2, options: { browser: { type: 'chromium' } } },
  },
};

export default async function () {
  const page = await browser.newPage();
  const routed = [];
  await page.route(/\/mock$/, (route) => route.fulfill({ status: 200, contentType: 'text/plain', body: 'mocked' }));
  await page.route('**/blocked', (route) => route.abort());
  await page.route('**/echo', (route) => {
    routed.push(route.request().method());
    return route.continue({ url: `${__ENV.URL}echoed`, headers: Object.assign({}, route.request().headers(), { 'x-routed': 'yes' }) });
  });
  await page.route('**/away', (route) => route.continue({ url: __ENV.DENIED }));
  await page.route('**/favicon.ico', (route) => route.abort());
  await page.goto(__ENV.URL);
  await page.waitForFunction(() => document.title.startsWith('{'));
  const r = JSON.parse(await page.title());
  check(r, {
    'fulfilled by the script': (x) => x.fulfilled === 'mocked',
    'aborted by the script': (x) => x.aborted === 'yes',
    'continued to another URL with a header': (x) => x.continued === 'echoed yes' && routed[0] === 'GET',
    'continued to a denied origin: failed': (x) => x.denied === 'yes',
    'not matched: continued as it was': (x) => x.plain === 'plain',
  });
  await page.unroute('**/echo');
  // A handler that throws: the call waiting on the page rejects with its error.
  const other = await page.context().newPage();
  await other.route('**/thrown', () => { throw new Error('the handler broke'); });
  let broke = '';
  try { await other.goto(`${__ENV.URL}thrown`); } catch (e) { broke = String(e.message || e); }
  await other.close();
  check(broke, { 'a handler that throws rejects the call': (b) => b.includes('the handler broke') });
  await page.close();
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_abort_continue_and_fulfill_and_a_denied_continue_is_never_sent() {
    let _turn = BROWSER_TURN.lock().await;
    let (port, heads) = site(route_site);
    let (denied_port, contacted) = server(Some("x".into()));
    let denied = format!("DENIED=http://127.0.0.1:{denied_port}/stolen");
    let allow = format!("http://127.0.0.1:{port}");
    let summary = run(
        port,
        "routes.js",
        ROUTES,
        &["-e", &denied, "--allow", &allow, "--quiet"],
    )
    .await;
    assert_eq!(summary["checks"].as_array().unwrap().len(), 6);
    // Counted on the server's side: what the script fulfilled, aborted or sent
    // elsewhere never came; the continued request came to its new path.
    let mut seen: Vec<String> = paths(&heads)
        .into_iter()
        .filter(|p| p != "/favicon.ico" && p != "/thrown")
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        ["/", "/", "/echoed", "/echoed", "/plain", "/plain"],
        "the server got {seen:?}"
    );
    assert_eq!(
        contacted.load(Ordering::SeqCst),
        0,
        "the denied origin was contacted"
    );
    assert_eq!(common::metric_count(&summary, "http_reqs_denied"), 2.0);
}

const FRAMES_PAGE: &str = "<!doctype html><title>frames</title>\
    <div id='top' data-x='1'>top text</div><input id='k'>\
    <iframe name='inner' src='/frame' style='position:absolute;top:120px;left:60px;width:300px;height:200px;border:7px solid'></iframe>\
    <div style='height:4000px'></div><script>\
    addEventListener('wheel', (e) => { document.body.dataset.wheel = String(e.deltaY); });\
    addEventListener('keydown', (e) => { document.body.dataset.down = e.key + (e.repeat ? '+' : ''); });\
    addEventListener('keyup', (e) => { document.body.dataset.up = e.key; });\
    document.getElementById('top').addEventListener('poke', (e) => { document.body.dataset.poked = String(e.detail); });\
    </script>";

const INNER_PAGE: &str = "<!doctype html><title>inner</title>\
    <button id='in' onclick=\"this.textContent='clicked'\">press</button><input id='name'>";

fn frames_site(path: &str, _head: &str) -> (&'static str, &'static str, String) {
    match path {
        "/" => ("200 OK", "text/html", FRAMES_PAGE.into()),
        "/frame" => ("200 OK", "text/html", INNER_PAGE.into()),
        _ => ("404 Not Found", "text/plain", "no".into()),
    }
}

const FRAMES: &str = r#"
import { browser } from 'k6/browser';
import { check } from 'k6';

export const options = {
  scenarios: {
    ui: { executor: 'per-vu-iterations', vus: 1, iterations: 2, options: { browser: { type: 'chromium' } } },
  },
};

export default async function () {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(__ENV.URL);
  const frames = page.frames();
  const inner = frames.find((f) => f.name() === 'inner');
  const tree = frames.length === 2 && inner.url() === `${__ENV.URL}frame` && inner.parentFrame().name() === ''
    && frames[0].childFrames().length === 1 && page.mainFrame().url() === __ENV.URL;
  await page.frameLocator('iframe[name=inner]').locator('#in').click();
  const clicked = await inner.locator('#in').textContent();
  await inner.locator('#name').fill('ann');
  const filled = await page.frameLocator('iframe').getByRole('textbox').inputValue();
  const innerTitle = await inner.title();

  const h = await page.evaluateHandle(() => ({ a: 1, b: [2, 3] }));
  const json = await h.jsonValue();
  const sum = await h.evaluate((v, k) => v.b[0] + v.b[1] + k, 10);
  await h.dispose();
  const el = await page.$('#top');
  const elText = await el.textContent();
  const attr = await el.getAttribute('data-x');
  const none = await page.$('#missing');
  const divs = await page.$$('div');
  const body = await page.$('body');
  const under = await body.$('#top');
  const underText = under ? await under.textContent() : null;
  const underAll = await body.$$('div');
  const underNone = await body.$('#missing');

  await page.mouse.move(20, 20);
  await page.mouse.wheel(0, 120);
  await page.waitForFunction(() => document.body.dataset.wheel !== undefined);
  const wheel = await page.evaluate(() => document.body.dataset.wheel);
  await page.locator('#k').focus();
  await page.keyboard.down('Shift');
  const held = await page.evaluate(() => [document.body.dataset.down, document.body.dataset.up]);
  await page.keyboard.up('Shift');
  const released = await page.evaluate(() => document.body.dataset.up);
  await page.dispatchEvent('#top', 'poke', { detail: 'hi' });
  const poked = await page.evaluate(() => document.body.dataset.poked);
  await page.emulateMedia({ colorScheme: 'dark', media: 'print' });
  const media = await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches && matchMedia('print').matches);

  await page.setExtraHTTPHeaders({ 'x-extra': 'v1' });
  await page.addInitScript(() => { window.__init = 'ran'; });
  await page.goto(`${__ENV.URL}frame`);
  const init = await page.evaluate(() => window.__init);
  await context.setOffline(true);
  const offline = await page.evaluate(() => fetch('/frame?offline').then(() => 'online', () => 'offline'));

  check(null, {
    'frames: the main frame and the iframe': () => tree && page.mainFrame().url() === `${__ENV.URL}frame`,
    'frameLocator clicks inside the iframe': () => clicked === 'clicked',
    'a frame\'s locator fills inside it': () => filled === 'ann' && innerTitle === 'inner',
    'evaluateHandle: jsonValue and evaluate': () => json.a === 1 && json.b[1] === 3 && sum === 15,
    'page.$ and page.$$': () => elText === 'top text' && attr === '1' && none === null && divs.length === 2,
    'elementHandle.$ and $$': () => underText === 'top text' && underAll.length === 2 && underNone === null,
    'mouse.wheel': () => wheel === '120',
    'keyboard.down and up': () => held[0] === 'Shift' && held[1] == null && released === 'Shift',
    'dispatchEvent': () => poked === 'hi',
    'emulateMedia': () => media === true,
    'addInitScript': () => init === 'ran',
    'context.setOffline': () => offline === 'offline',
  });
  await context.close();
  const blank = await browser.newPage();
  await blank.setContent('<input id="e" value="v"><input id="r" readonly><button id="d" disabled>d</button>');
  const content = {
    editable: await blank.isEditable('#e'), readonly: await blank.locator('#r').isEditable(),
    disabled: await blank.isDisabled('#d'), size: blank.viewportSize(), open: blank.isClosed(),
    box: await blank.locator('#e').boundingBox(), inputs: (await blank.locator('input').all()).length,
  };
  blank.context().setDefaultTimeout(300);
  let waited = 0;
  const started = Date.now();
  try { await blank.locator('#never').click(); } catch (e) { waited = Date.now() - started; }
  await blank.close();
  content.closed = blank.isClosed();
  await browser.closeContext();
  check(content, {
    'setContent, isEditable, isDisabled, viewportSize, isClosed': (c) => c.editable === true && c.readonly === false
      && c.disabled === true && c.size.width > 0 && c.open === false && c.closed === true
      && c.box.width > 0 && c.box.height > 0 && c.inputs === 2,
    'context.setDefaultTimeout holds for its pages': () => waited >= 250 && waited < 5000,
  });
  const away = await browser.newContext({ offline: true });
  const awayPage = await away.newPage();
  let reached = 'online';
  try { await awayPage.goto(__ENV.URL); } catch (e) { reached = String(e.message || e); }
  await away.close();
  check(reached, { 'newContext({ offline: true })': (r) => r.includes('INTERNET_DISCONNECTED') });
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_handles_wheel_and_emulation_act_as_k6s() {
    let _turn = BROWSER_TURN.lock().await;
    let (port, heads) = site(frames_site);
    let summary = run(port, "frames.js", FRAMES, &[]).await;
    assert_eq!(summary["checks"].as_array().unwrap().len(), 15);
    // Counted on the server's side: the extra header went with the second visit of
    // each iteration only, and nothing was sent while offline.
    let heads = heads.lock().unwrap().clone();
    let extra = heads.iter().filter(|h| h.contains("x-extra: v1")).count();
    assert_eq!(extra, 2, "{heads:?}");
    assert!(
        !heads.iter().any(|h| h.contains("offline")),
        "a request left while offline: {heads:?}"
    );
    // The page itself once per iteration: the offline context's visit never came.
    let pages = heads.iter().filter(|h| h.starts_with("GET / ")).count();
    assert_eq!(pages, 2, "{heads:?}");
}
