//! `async` functions and promises in k6 scripts: the build rewrites async functions into
//! generators that the k6 layer drives on its own microtask queue (the runtime runs no
//! promise jobs). Against the demo target: every request after each `await` is made
//! (the target's count = http_reqs), `Promise.all` over `http.asyncRequest`, a `.then`
//! chain interleaves with an `await` in the language's order, an async `setup()`'s value
//! reaches the iterations, an async method reaches `super`; a rejection fails its
//! iteration with its message and line; `await` inside text is left alone; async socket
//! handlers and an awaited close run on the event loop; what cannot be rewritten fails
//! the build.

use super::scripts::run_script;
use crate::support as common;

use common::{host_in as host, output_text as text};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const FLOW: &str = r#"import http from 'k6/http';
import { check } from 'k6';
import { Counter } from 'k6/metrics';
import { setTimeout } from 'k6/timers';

const finished = new Counter('finished_iterations');
const B = __ENV.BASE_URL;
export const options = { vus: 2, iterations: 6 };

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class Base { label(n) { return `base ${n}`; } }
class Api extends Base {
  async label(n) { const v = await Promise.resolve(n); return `${super.label(v)} via ${this.kind}`; }
  get kind() { return 'async'; }
}

export async function setup() {
  const res = await http.asyncRequest('POST', `${B}/auth/token`, JSON.stringify({ user: 'async-setup' }),
    { headers: { 'Content-Type': 'application/json' } });
  await pause(5);
  return { token: res.json('token'), status: res.status };
}

export default async function (data) {
  const order = [];
  const chain = Promise.resolve(1)
    .then((v) => { order.push(`then ${v}`); return v + 1; })
    .then((v) => { order.push(`then ${v}`); throw new Error('two'); })
    .catch((e) => { order.push(`catch ${e.message}`); return 3; })
    .finally(() => order.push('finally'));
  order.push('sync');
  const first = await http.asyncRequest('GET', `${B}/?step=1`);
  order.push('after first');
  await pause(2);
  order.push('after pause');
  const second = await http.asyncRequest('GET', `${B}/?step=2`);
  const third = http.get(`${B}/?step=3`);
  const all = await Promise.all([1, 2, 3].map((n) => http.asyncRequest('GET', `${B}/?all=${n}`)));
  const last = await chain;
  const labelled = await new Api().label(7);
  check(first, {
    'each await resumed with its response': (r) => r.status === 200 && second.status === 200 && third.status === 200,
    'Promise.all gave three responses in order': () => all.length === 3
      && all.every((r, i) => r.status === 200 && r.url.endsWith(`all=${i + 1}`)),
    // As in k6: the response arrives only once the job queue is empty, so the whole
    // chain runs before the code after the first await.
    'then chain in order': () => order.join(',') === 'sync,then 1,then 2,catch two,finally,after first,after pause',
    'the chain settled with its catch value': () => last === 3,
    'async setup data arrived': () => data.status === 200 && typeof data.token === 'string',
    'promises are the global Promise': () => first instanceof Object && chain instanceof Promise,
    'an async method reaches super and this': () => labelled === 'base 7 via async',
  });
  finished.add(1);
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_default_function_makes_every_request_after_each_await() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("flow.js"), FLOW).unwrap();
    let target = common::demo_target(Duration::ZERO).await;
    let before = target.requests_served();
    let (ran, out) = run_script(tmp.path(), "flow.js", &target.base_url(), &[]).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let shown = text(&ran);
    assert!(!shown.contains("returned a Promise"), "{shown}");
    // setup's one request, then six per iteration (two awaited, one plain, three
    // through Promise.all), six iterations.
    let served = target.requests_served() - before;
    assert_eq!(served, 1 + 6 * 6, "{shown}");
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(common::metric_count(&summary, "http_reqs"), served as f64);
    assert_eq!(
        common::metric_count(&summary, "finished_iterations"),
        6.0,
        "the code after the last await ran in every iteration: {}",
        summary["metrics"]
    );
    for name in [
        "each await resumed with its response",
        "Promise.all gave three responses in order",
        "then chain in order",
        "the chain settled with its catch value",
        "async setup data arrived",
        "promises are the global Promise",
        "an async method reaches super and this",
    ] {
        assert_eq!(common::check_counts(&summary, name), (6, 0), "{name}");
    }
}

/// asyncRequests started before an await are in flight together, as in k6: a VU's
/// queued requests go out as one batch when the script yields. A plain request made
/// while some are queued sends them first; a failed one settles with its error
/// Response (or rejects under `throw`); an iteration that fails after queueing one
/// still sends it (k6 had started it).
const OVERLAP: &str = r#"import http from 'k6/http';
import { check } from 'k6';
const B = __ENV.BASE_URL;
export const options = { vus: 1, iterations: 3 };

export default async function () {
  const four = await Promise.all([1, 2, 3, 4].map((n) => http.asyncRequest('GET', `${B}/?overlap=${n}`)));
  const queued = http.asyncRequest('GET', `${B}/?queued=1`);
  const plain = http.get(`${B}/?plain=1`);
  const before = await queued;
  const [ok, refused] = await Promise.all([
    http.asyncRequest('GET', `${B}/?ok=1`),
    http.asyncRequest('GET', 'http://127.0.0.1:9/'),
  ]);
  let rejected = '';
  try {
    await http.asyncRequest('GET', 'http://127.0.0.1:9/', null, { tags: { kind: 'thrown' } });
  } catch (e) { rejected = String(e.message || e); }
  check(four, {
    'four responses in order': (rs) => rs.length === 4
      && rs.every((r, i) => r.status === 200 && r.url.endsWith(`overlap=${i + 1}`)),
    'a queued request settles beside a plain one': () => before.status === 200 && plain.status === 200,
    'a failed one settles with its error': () => ok.status === 200 && refused.status === 0 && refused.error !== '',
    'without throw nothing rejects': () => rejected === '',
  });
  if (__ITER === 2) {
    http.asyncRequest('GET', `${B}/?sent=1`);
    throw new Error('fails before it yields');
  }
}
"#;

/// A keep-alive HTTP/1.1 server that answers every request 100 ms late, counting the
/// requests served and the most it held at once.
async fn overlap_server() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let (served, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let active = Arc::new(AtomicUsize::new(0));
    let (s, m) = (served.clone(), most.clone());
    let url = common::servers::raw_server(move |mut stream: TcpStream| {
        let (served, most, active) = (s.clone(), m.clone(), active.clone());
        async move {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 2048];
            loop {
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                buf.drain(..end);
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
                active.fetch_sub(1, Ordering::SeqCst);
                served.fetch_add(1, Ordering::SeqCst);
                let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                if stream.write_all(reply).await.is_err() {
                    return;
                }
            }
        }
    })
    .await;
    (url.trim_end_matches('/').to_string(), served, most)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_requests_started_together_are_in_flight_together() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("overlap.js"), OVERLAP).unwrap();
    let (base, served, most) = overlap_server().await;
    let (ran, out) = run_script(tmp.path(), "overlap.js", &base, &[]).await;
    let shown = text(&ran);
    let summary = common::summary_json(&common::only_results_dir(&out));
    // Per iteration: four together, the queued one and the plain one, then `ok` (the
    // refused request and the thrown one never reach this server); the third
    // iteration queued one more before it failed, which is sent all the same.
    assert_eq!(served.load(Ordering::SeqCst), 3 * 7 + 1, "{shown}");
    assert_eq!(
        most.load(Ordering::SeqCst),
        4,
        "the server never held the four asyncRequests of Promise.all at once: {shown}"
    );
    for name in [
        "four responses in order",
        "a queued request settles beside a plain one",
        "a failed one settles with its error",
        "without throw nothing rejects",
    ] {
        assert_eq!(common::check_counts(&summary, name), (3, 0), "{name}");
    }
    assert!(
        shown.contains("fails before it yields"),
        "the third iteration's failure is reported: {shown}"
    );
}

// Async functions awaiting settled values, a thenable and a rejection, beside `.then`
// chains, then the iteration's own awaits with no other job queued (the driver resumes
// those at once instead of through the queue) and with one queued. The order is what
// k6 1.1.0 logs for this script (with `Promise.resolve().then` for queueMicrotask,
// which k6 lacks).
const ORDER: &str = r#"import { check } from 'k6';
export const options = { vus: 2, iterations: 4 };
const K6_ORDER = 'sync,a0 1,b0 s,t1,q1,a1 s,b1 x,b2,t2,t3,a2 t,a3,main A,main b,alone,late then,'
  + 'after late s,c1,main c s,c2,end';
export default async function () {
  const order = [];
  const log = (s) => order.push(s);
  const settled = Promise.resolve('s');
  const a = (async () => { log(`a0 ${await 1}`); log(`a1 ${await settled}`); log(`a2 ${await { then(r) { r('t'); } }}`); log('a3'); return 'A'; })();
  const b = (async () => { log(`b0 ${await settled}`); try { await Promise.reject(new Error('x')); } catch (e) { log(`b1 ${e.message}`); } log('b2'); })();
  Promise.resolve().then(() => log('t1')).then(() => log('t2')).then(() => log('t3'));
  queueMicrotask(() => log('q1'));
  log('sync');
  const ra = await a;
  log(`main ${ra}`);
  await b;
  log('main b');
  await null;
  log('alone');
  Promise.resolve().then(() => log('late then'));
  log(`after late ${await settled}`);
  const c = (async () => { await null; log('c1'); await null; log('c2'); })();
  log(`main c ${await settled}`);
  await c;
  log('end');
  const got = order.join(',');
  if (!check(got, { 'jobs run in k6 order': (g) => g === K6_ORDER })) throw new Error(`order: ${got}`);
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awaits_of_settled_values_and_then_chains_interleave_as_in_k6() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("order.js"), ORDER).unwrap();
    let (ran, out) = run_script(tmp.path(), "order.js", "http://127.0.0.1:9", &[]).await;
    let shown = text(&ran);
    assert!(ran.status.success(), "{shown}");
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(
        common::check_counts(&summary, "jobs run in k6 order"),
        (4, 0),
        "{shown} {}",
        summary["plugin_errors"]
    );
}

const REJECTS: &str = r#"import { check } from 'k6';
import { Counter } from 'k6/metrics';
const after = new Counter('after_the_await');
export const options = { vus: 1, iterations: 4 };
async function failIf(odd) {
  await null;
  if (odd) throw new Error(`rejected in iteration ${__ITER}`);
}
export default async function () {
  const s = 'await x'; const t = `await ${'y'}`; /* await z */ const r = /await (w)/.exec('await w'); // await v
  check(null, { 'await in text is kept': () => s === 'await x' && t === 'await y' && r[1] === 'w' });
  await failIf(__ITER % 2 === 1);
  after.add(1);
  if (__ITER === 2) Promise.reject(new Error('left unhandled'));
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_promise_fails_its_iteration_with_its_message_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("rejects.js"), REJECTS).unwrap();
    let (ran, out) = run_script(tmp.path(), "rejects.js", "http://127.0.0.1:9", &[]).await;
    let shown = text(&ran);
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(
        common::check_counts(&summary, "await in text is kept"),
        (4, 0),
        "{shown}"
    );
    // Iterations 1 and 3 reject before the counter; 0 and 2 pass it.
    assert_eq!(common::metric_count(&summary, "after_the_await"), 2.0);
    let errors = summary["plugin_errors"].to_string();
    assert!(errors.contains("rejected in iteration 1"), "{errors}");
    assert!(errors.contains("rejected in iteration 3"), "{errors}");
    // The stack names the line of the throw, after the await, in the user's file.
    assert!(errors.contains("rejects.js:7"), "{errors}");
    // A rejection nobody handled fails its iteration as k6 reports it.
    assert!(
        errors.contains("Uncaught (in promise) left unhandled"),
        "{errors}"
    );
}

// (Top-level `await` builds since issue 50: js/idioms.rs runs it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_rewrite_cannot_run_fails_the_build_with_its_name_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    for (file, src, line, what) in [
        (
            "loop.js",
            "import http from 'k6/http';\nexport default async function () {\n  const xs = [];\n  for await (const x of xs) {}\n}\n",
            "loop.js:4",
            "`for await`",
        ),
        (
            "gen.js",
            "export default function () {}\n\nexport async function* pages() {}\n",
            "gen.js:3",
            "async generator function",
        ),
    ] {
        std::fs::write(tmp.path().join(file), src).unwrap();
        let built = host(tmp.path(), ["build", file]).await;
        assert!(!built.status.success(), "{}", text(&built));
        let err = String::from_utf8_lossy(&built.stderr);
        assert!(
            err.contains(line) && err.contains(what),
            "{file}: {}",
            text(&built)
        );
    }
}

const SOCKET: &str = r#"import { WebSocket } from 'k6/experimental/websockets';
import { setTimeout } from 'k6/timers';
import { Counter } from 'k6/metrics';
import { WS, token } from './common.js';

const pongs = new Counter('pongs');
const seenAtClose = new Counter('seen_at_close');
export const options = { vus: 1, iterations: 3 };
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export default async function () {
  const sock = new WebSocket(`${WS}/ws?token=${token()}`);
  let n = 0;
  const closed = new Promise((resolve) => { sock.onclose = () => resolve(n); });
  sock.onopen = () => sock.send('{"ping": 1}');
  sock.addEventListener('message', async (e) => {
    if (e.data.indexOf('"pong"') < 0) return;
    n += 1;
    pongs.add(1);
    await pause(5);
    if (n < 3) sock.send(`{"ping": ${n + 1}}`); else sock.close();
  });
  seenAtClose.add(await closed);
}
"#;

/// An async message handler that awaits a timer before answering, and an iteration
/// that awaits the socket's close: the event loop keeps the iteration alive until both
/// are done, as k6's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_socket_handlers_and_an_awaited_close_run_on_the_event_loop() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("common.js"), super::scripts::WS_COMMON).unwrap();
    std::fs::write(tmp.path().join("socket.js"), SOCKET).unwrap();
    let target = common::demo_target(Duration::ZERO).await;
    let (ran, out) = run_script(tmp.path(), "socket.js", &target.base_url(), &[]).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(
        common::metric_count(&summary, "pongs"),
        9.0,
        "{}",
        text(&ran)
    );
    // Each iteration's code after `await closed` ran, with the three pongs it saw.
    assert_eq!(common::metric_count(&summary, "seen_at_close"), 9.0);
    assert_eq!(common::metric_count(&summary, "ws_sessions"), 3.0);
    assert_eq!(summary["plugin_errors"].as_array().map_or(0, Vec::len), 0);
}
