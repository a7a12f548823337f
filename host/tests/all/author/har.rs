//! Scenarios from browser recordings: a real headless Chromium, driven through the
//! DevTools protocol, records a first visit, the survey (form sign-in, CSRF field,
//! single-use token in a script tag) and an account's life (sign-up, token refresh)
//! against the demo target, and a warm-cache visit (the first one's recording edited to
//! hold 304s to conditional requests);
//! `host new --from-har` writes each as a k6 script and as a Python plugin (the survey
//! and the account's life as Rust plugins too), which run with every check passing
//! while the server's own counters show every single-use token spent once (none
//! replayed) and every sign-up accepted from several VUs. Small fixtures cover a
//! recording with third-party requests, one with no pages, one in Firefox's shape and
//! a broken one.

use crate::support as common;

use common::{host_in as host, output_text as text};

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use time::format_description::well_known::Rfc3339;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

/// componentize-py: `$COMPONENTIZE_PY`, else the venv `./dev test` makes
/// (target/py-venv), else PATH.
fn componentize_py() -> PathBuf {
    if let Some(p) = std::env::var_os("COMPONENTIZE_PY") {
        return PathBuf::from(p);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/py-venv/bin/componentize-py");
    if venv.is_file() {
        return venv;
    }
    PathBuf::from("componentize-py")
}

// ------------------------------------------------------------------ the recorder

/// One request as the DevTools protocol told it, becoming a HAR entry.
#[derive(Default)]
struct Recorded {
    page: String,
    wall: f64,
    start: f64,
    end: Option<f64>,
    kind: String,
    request: Value,
    status: i64,
    headers: Value,
    mime: String,
    body: Option<(String, bool)>,
    done: bool,
}

/// A headless Chromium with one page, recording its network traffic.
struct Browser {
    child: tokio::process::Child,
    ws: tokio_tungstenite::WebSocketStream<TcpStream>,
    next_id: u64,
    events: Vec<Value>,
    _profile: tempfile::TempDir,
    page: String,
    pages: Vec<(String, String, f64)>,
    entries: Vec<Recorded>,
    live: BTreeMap<String, usize>,
}

fn header_pairs(headers: &Value) -> Value {
    let mut out = Vec::new();
    if let Some(m) = headers.as_object() {
        for (k, v) in m {
            // DevTools joins repeated headers with newlines.
            for line in v.as_str().unwrap_or("").split('\n') {
                out.push(json!({"name": k, "value": line}));
            }
        }
    }
    Value::Array(out)
}

fn iso(wall: f64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos((wall * 1e9) as i128)
        .unwrap()
        .format(&Rfc3339)
        .unwrap()
}

impl Browser {
    async fn launch() -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let mut child = tokio::process::Command::new("chromium")
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--remote-debugging-port=0",
                "about:blank",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("chromium runs (./dev test installs Debian's chromium)");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let browser_ws = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    return url.trim().to_string();
                }
            }
            panic!("chromium exited without a DevTools address")
        })
        .await
        .expect("chromium starts within 20 s");
        // Keep draining its stderr so that it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let port: u16 = browser_ws
            .trim_start_matches("ws://127.0.0.1:")
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        // The page target's id, from the browser's own socket (Target.getTargets).
        let page_id = loop {
            let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            let (mut browser, _) = tokio_tungstenite::client_async(browser_ws.as_str(), stream)
                .await
                .unwrap();
            let ask = json!({"id": 1, "method": "Target.getTargets", "params": {}});
            browser
                .send(Message::Text(ask.to_string().into()))
                .await
                .unwrap();
            let mut found = None;
            while let Ok(Some(Ok(Message::Text(t)))) =
                tokio::time::timeout(Duration::from_secs(10), browser.next()).await
            {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                if v["id"] == 1 {
                    found = v["result"]["targetInfos"]
                        .as_array()
                        .and_then(|l| l.iter().find(|t| t["type"] == "page"))
                        .map(|t| t["targetId"].as_str().unwrap().to_string());
                    break;
                }
            }
            let _ = browser.close(None).await;
            if let Some(id) = found {
                break id;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let page_ws = format!("ws://127.0.0.1:{port}/devtools/page/{page_id}");
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (ws, _) = tokio_tungstenite::client_async(page_ws.as_str(), stream)
            .await
            .unwrap();
        let mut b = Browser {
            child,
            ws,
            next_id: 0,
            events: Vec::new(),
            _profile: profile,
            page: String::new(),
            pages: Vec::new(),
            entries: Vec::new(),
            live: BTreeMap::new(),
        };
        b.call("Network.enable", json!({})).await;
        b.call("Page.enable", json!({})).await;
        b.call("Network.setCacheDisabled", json!({"cacheDisabled": true}))
            .await;
        b
    }

    /// Reads one message (with a deadline) into the event queue or as a reply.
    async fn read(&mut self, wait: Duration) -> Option<Value> {
        let msg = tokio::time::timeout(wait, self.ws.next()).await.ok()??;
        let msg = msg.expect("DevTools socket reads");
        let Message::Text(t) = msg else { return None };
        let v: Value = serde_json::from_str(t.as_str()).unwrap();
        if v.get("method").is_some() {
            self.on_event(&v);
            self.events.push(v);
            return None;
        }
        Some(v)
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"id": id, "method": method, "params": params}).to_string();
        self.ws.send(Message::Text(msg.into())).await.unwrap();
        loop {
            if let Some(reply) = self.read(Duration::from_secs(20)).await {
                if reply["id"] == id {
                    assert!(reply.get("error").is_none(), "{method}: {reply}");
                    return reply["result"].clone();
                }
            }
        }
    }

    fn on_event(&mut self, v: &Value) {
        let p = &v["params"];
        let id = p["requestId"].as_str().unwrap_or("").to_string();
        match v["method"].as_str().unwrap_or("") {
            "Network.requestWillBeSent" => {
                if let (Some(&i), Some(r)) = (self.live.get(&id), p.get("redirectResponse")) {
                    let e = &mut self.entries[i];
                    e.status = r["status"].as_i64().unwrap_or(0);
                    e.headers = r["headers"].clone();
                    e.mime = r["mimeType"].as_str().unwrap_or("").to_string();
                    e.end = p["timestamp"].as_f64();
                    e.body = Some((String::new(), false));
                    e.done = true;
                }
                self.live.insert(id, self.entries.len());
                self.entries.push(Recorded {
                    page: self.page.clone(),
                    wall: p["wallTime"].as_f64().unwrap(),
                    start: p["timestamp"].as_f64().unwrap(),
                    kind: p["type"].as_str().unwrap_or("other").to_ascii_lowercase(),
                    request: p["request"].clone(),
                    ..Recorded::default()
                });
            }
            "Network.responseReceived" => {
                if let Some(&i) = self.live.get(&id) {
                    let r = &p["response"];
                    let e = &mut self.entries[i];
                    e.status = r["status"].as_i64().unwrap_or(0);
                    e.headers = r["headers"].clone();
                    e.mime = r["mimeType"].as_str().unwrap_or("").to_string();
                }
            }
            "Network.loadingFinished" | "Network.loadingFailed" => {
                if let Some(&i) = self.live.get(&id) {
                    self.entries[i].end = p["timestamp"].as_f64();
                    self.entries[i].done = true;
                }
            }
            _ => {}
        }
    }

    /// Starts a new page of the recording.
    fn page(&mut self, title: &str) {
        self.page = format!("page_{}", self.pages.len() + 1);
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        self.pages
            .push((self.page.clone(), title.to_string(), wall));
    }

    /// Waits until a page load fired and every request started has finished.
    async fn settle(&mut self, load: bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut loaded = !load;
        loop {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the page did not settle"
            );
            if let Some(i) = self
                .events
                .iter()
                .position(|e| e["method"] == "Page.loadEventFired")
            {
                self.events.remove(i);
                loaded = true;
            }
            let pending = self.entries.iter().any(|e| !e.done);
            if loaded && !pending {
                // Nothing more within 100 ms: the page is quiet.
                if self.read(Duration::from_millis(100)).await.is_none()
                    && self.entries.iter().all(|e| e.done)
                {
                    break;
                }
                continue;
            }
            self.read(Duration::from_millis(200)).await;
        }
        // Bodies, while the browser still holds them.
        let ids: Vec<(String, usize)> = self.live.iter().map(|(k, v)| (k.clone(), *v)).collect();
        for (id, i) in ids {
            if self.entries[i].body.is_none() {
                self.entries[i].body = Some((String::new(), false));
                if self.entries[i].status > 0 {
                    self.next_id += 1;
                    let nid = self.next_id;
                    let msg = json!({"id": nid, "method": "Network.getResponseBody", "params": {"requestId": id}});
                    self.ws
                        .send(Message::Text(msg.to_string().into()))
                        .await
                        .unwrap();
                    let reply = loop {
                        if let Some(r) = self.read(Duration::from_secs(10)).await {
                            if r["id"] == nid {
                                break r;
                            }
                        }
                    };
                    if let Some(b) = reply["result"]["body"].as_str() {
                        let b64 = reply["result"]["base64Encoded"].as_bool().unwrap_or(false);
                        self.entries[i].body = Some((b.to_string(), b64));
                    }
                }
            }
            if self.entries[i].request.get("postData").is_none()
                && self.entries[i].request["hasPostData"] == true
            {
                let r = self
                    .call("Network.getRequestPostData", json!({"requestId": id}))
                    .await;
                self.entries[i].request["postData"] = r["postData"].clone();
            }
        }
    }

    async fn navigate(&mut self, title: &str, url: &str) {
        self.page(title);
        self.call("Page.navigate", json!({"url": url})).await;
        self.settle(true).await;
    }

    /// Runs `js` in the page (awaiting its promise); a form it submits loads a page.
    async fn act(&mut self, title: &str, js: &str, loads: bool) {
        self.page(title);
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": js, "awaitPromise": true}),
            )
            .await;
        assert!(r.get("exceptionDetails").is_none(), "{js}: {r}");
        self.settle(loads).await;
    }

    /// The recording so far as a HAR 1.2 document (the fields DevTools' export writes),
    /// and starts a new one.
    fn take_har(&mut self) -> Value {
        let pages: Vec<Value> = self
            .pages
            .drain(..)
            .map(|(id, title, wall)| json!({"id": id, "title": title, "startedDateTime": iso(wall), "pageTimings": {}}))
            .collect();
        let entries: Vec<Value> = self
            .entries
            .drain(..)
            .map(|e| {
                let time_ms = (e.end.unwrap_or(e.start) - e.start) * 1000.0;
                let (text, b64) = e.body.unwrap_or_default();
                let mut content = json!({"size": text.len(), "mimeType": e.mime, "text": text});
                if b64 {
                    content["encoding"] = json!("base64");
                }
                let mut request = json!({
                    "method": e.request["method"],
                    "url": e.request["url"],
                    "httpVersion": "HTTP/1.1",
                    "headers": header_pairs(&e.request["headers"]),
                    "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0,
                });
                if let Some(pd) = e.request["postData"].as_str() {
                    let mime = e.request["headers"]
                        .as_object()
                        .and_then(|h| {
                            h.iter()
                                .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                        })
                        .and_then(|(_, v)| v.as_str())
                        .unwrap_or("")
                        .to_string();
                    request["postData"] = json!({"mimeType": mime, "text": pd});
                }
                json!({
                    "pageref": e.page,
                    "startedDateTime": iso(e.wall),
                    "time": time_ms,
                    "request": request,
                    "response": {
                        "status": e.status, "statusText": "", "httpVersion": "HTTP/1.1",
                        "headers": header_pairs(&e.headers), "cookies": [],
                        "content": content, "redirectURL": "", "headersSize": -1, "bodySize": -1,
                    },
                    "cache": {}, "timings": {"send": 0, "wait": time_ms, "receive": 0},
                    "_resourceType": e.kind,
                })
            })
            .collect();
        self.live.clear();
        json!({"log": {"version": "1.2", "creator": {"name": "host tests (DevTools protocol)", "version": "1"}, "pages": pages, "entries": entries}})
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

// ------------------------------------------------------------------ the checks

/// `host new NAME --from-har HAR --lang js` in `dir`; returns the project and stdout.
async fn from_har(dir: &Path, name: &str, har: &Value, extra: &[&str]) -> (PathBuf, String) {
    from_har_in(dir, name, har, "js", extra).await
}

/// `host new NAME --from-har HAR --lang LANG` in `dir`; returns the project and stdout.
async fn from_har_in(
    dir: &Path,
    name: &str,
    har: &Value,
    lang: &str,
    extra: &[&str],
) -> (PathBuf, String) {
    let file = dir.join(format!("{name}.har"));
    std::fs::write(&file, serde_json::to_string_pretty(har).unwrap()).unwrap();
    let mut args = vec![
        "new",
        name,
        "--from-har",
        file.to_str().unwrap(),
        "--lang",
        lang,
    ];
    args.extend(extra);
    let made = host(dir, &args).await;
    assert!(made.status.success(), "{}", text(&made));
    (
        dir.join(name),
        String::from_utf8_lossy(&made.stdout).into_owned(),
    )
}

/// Runs a generated script `iterations` times on one VU; returns summary.json.
async fn run_clean(project: &Path, base: &str, iterations: u32) -> Value {
    run_vus(project, "script.js", base, 1, iterations).await
}

/// Runs a generated script (or a built plugin, `what`) on `vus` VUs with `--iterations
/// iterations` (a script's `options` make them shared, k6's way; a plugin's
/// per-vu-iterations config makes them each VU's), and checks that every check passed
/// and every iteration ran; returns summary.json.
async fn run_vus(project: &Path, what: &str, base: &str, vus: u32, iterations: u32) -> Value {
    let out = project.join("results");
    let _ = std::fs::remove_dir_all(&out);
    let n = iterations.to_string();
    let v = vus.to_string();
    let base_env = format!("BASE_URL={base}");
    let mut args = vec!["run", what];
    if what.ends_with(".js") {
        args.extend(["--config", "run.toml"]);
    }
    args.extend([
        "-e",
        &base_env,
        "--iterations",
        &n,
        "--vus",
        &v,
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let ran = host(project, &args).await;
    let source = if what.ends_with(".js") {
        "script.js"
    } else {
        "app.py"
    };
    let script = std::fs::read_to_string(project.join(source))
        .or_else(|_| std::fs::read_to_string(project.join("src/lib.rs")))
        .unwrap();
    assert!(
        ran.status.success(),
        "{}\n--- script.js:\n{script}",
        text(&ran)
    );
    let summary = common::summary_json(&common::only_results_dir(&out));
    let checks = summary["checks"].as_array().expect("checks").clone();
    assert!(!checks.is_empty(), "the script checks statuses:\n{script}");
    for c in &checks {
        assert_eq!(
            c["fails"].as_u64(),
            Some(0),
            "a check failed: {c}\n{script}"
        );
    }
    let expected = if what.ends_with(".js") {
        iterations
    } else {
        vus * iterations
    };
    assert_eq!(
        summary["metrics"]["iterations"]["count"].as_f64(),
        Some(f64::from(expected)),
        "{script}"
    );
    summary
}

/// `host build` of a generated plugin project (Rust or Python); returns the .wasm path.
async fn build(project: &Path) -> String {
    let dir = project.to_path_buf();
    let built = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_host"))
            .current_dir(&dir)
            .arg("build")
            .env("CARGO_TARGET_DIR", shared_target_dir())
            .env("COMPONENTIZE_PY", componentize_py())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let source = std::fs::read_to_string(project.join("app.py"))
        .or_else(|_| std::fs::read_to_string(project.join("src/lib.rs")))
        .unwrap_or_default();
    assert!(built.status.success(), "{}\n{source}", text(&built));
    String::from_utf8_lossy(&built.stdout).trim().to_string()
}

/// The demo target's whole `/metrics` text (the site and account counters included).
fn scrape(base: &str) -> String {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

fn metric(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics")) as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recordings_of_a_real_chromium_become_scenarios_that_replay_no_token() {
    let target = common::demo_target(Duration::ZERO).await;
    let base = target.base_url();
    let tmp = tempfile::tempdir().unwrap();
    let mut browser = Browser::launch().await;

    // A first visit: the app shell and its 40 assets.
    browser.navigate("Notes", &format!("{base}/app")).await;
    let visit = browser.take_har();

    // The survey: a form sign-in, then an answer carrying the page's CSRF field and
    // the single-use token of its JSON script (the page's own script would add it).
    browser
        .navigate("Sign in", &format!("{base}/survey/login"))
        .await;
    browser
        .act(
            "Survey",
            "const f = document.querySelector('form'); f.user.value = 'har-user'; \
             f.password.value = 'demo'; f.submit();",
            true,
        )
        .await;
    browser
        .act(
            "Answer",
            "const d = JSON.parse(document.getElementById('survey-data').textContent); \
             const f = document.querySelector('form'); const t = document.createElement('input'); \
             t.type = 'hidden'; t.name = 'token'; t.value = d.token; f.appendChild(t); \
             f.answer.value = '4'; f.submit();",
            true,
        )
        .await;
    let survey = browser.take_har();

    // An account's life, by the page's fetch calls with pauses between: sign-up, a
    // call with the access token, a refresh (single-use), a call, the deletion.
    browser
        .navigate("Config", &format!("{base}/api/config"))
        .await;
    browser
        .act(
            "Account",
            "(async () => { \
               const pause = () => new Promise((r) => setTimeout(r, 600)); \
               const post = (u, b) => fetch(u, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(b) }).then((r) => r.json()); \
               const bearer = (t) => ({ headers: { Authorization: 'Bearer ' + t } }); \
               let t = await post('/accounts', { user: 'har-account-owner' }); await pause(); \
               await fetch('/api/me', bearer(t.access_token)); await pause(); \
               t = await post('/auth/refresh', { refresh_token: t.refresh_token }); await pause(); \
               await fetch('/api/me', bearer(t.access_token)); await pause(); \
               await fetch('/accounts/me', Object.assign({ method: 'DELETE' }, bearer(t.access_token))); \
             })()",
            false,
        )
        .await;
    let mut account = browser.take_har();

    drop(browser);
    // No pages: the steps are the bursts between the pauses.
    account["log"].as_object_mut().unwrap().remove("pages");
    for e in account["log"]["entries"].as_array_mut().unwrap() {
        e.as_object_mut().unwrap().remove("pageref");
    }

    // First visit: one step, the shell then its 40 files as one batch.
    let (project, said) = from_har(tmp.path(), "first-visit", &visit, &[]).await;
    let script = std::fs::read_to_string(project.join("script.js")).unwrap();
    assert!(script.contains("group('Notes'"), "{script}");
    assert!(script.contains("The page's 40 static files"), "{script}");
    assert!(said.contains("1 step, 4"), "{said}");
    let assets_before = metric(&scrape(&base), "demo_assets_served_total");
    run_clean(&project, &base, 2).await;
    assert_eq!(
        metric(&scrape(&base), "demo_assets_served_total") - assets_before,
        80
    );
    // The same as a Python plugin: built, run, the 40 files fetched per iteration.
    let (project, _) = from_har_in(tmp.path(), "first-visit-py", &visit, "python", &[]).await;
    let app = std::fs::read_to_string(project.join("app.py")).unwrap();
    assert!(app.contains("def notes(base, v):"), "{app}");
    assert!(app.contains("statics = loadtest.http.batch(["), "{app}");
    let wasm = build(&project).await;
    let assets_before = metric(&scrape(&base), "demo_assets_served_total");
    run_vus(&project, &wasm, &base, 1, 2).await;
    assert_eq!(
        metric(&scrape(&base), "demo_assets_served_total") - assets_before,
        80
    );

    // Survey: the sign-in and the answer are the pages' own forms, submitted as a
    // browser does (the CSRF field left to the form), the script's token extracted.
    let (project, said) = from_har(tmp.path(), "survey", &survey, &[]).await;
    let script = std::fs::read_to_string(project.join("script.js")).unwrap();
    assert!(
        said.contains("csrf: <input name=\"csrf\"> value")
            && said.contains("form field csrf (kept by the form)"),
        "{said}"
    );
    assert!(
        said.contains("token: JSON field token of <script id=\"survey-data\">"),
        "{said}"
    );
    assert!(!script.contains("csrf = "), "{script}");
    assert!(
        script.contains(".html().find('script[id=\"survey-data\"]').text()).token;"),
        "{script}"
    );
    assert!(
        script.contains("formSelector: 'form[action=\"/survey/answer\"]',")
            && script.contains("fields: { answer: '4', token },"),
        "{script}"
    );
    assert!(
        script.contains(".submitForm({\n      formSelector: 'form[action=\"/survey/login\"]',\n      fields: { user: 'har-user', password: 'demo' },"),
        "{script}"
    );
    assert!(
        script.contains("Follows the recorded redirect (302 to /survey)"),
        "{script}"
    );
    // No hand-made extraction helpers: k6's own API reads the pages.
    assert!(!script.contains("\nfunction "), "{script}");
    let before = target.survey_counts();
    assert_eq!(before.accepted, 1, "the browser answered once");
    run_clean(&project, &base, 3).await;
    let after = target.survey_counts();
    assert_eq!(after.accepted - before.accepted, 3, "{after:?}");
    assert_eq!(after.token_refused, 0, "a token was replayed: {after:?}");
    assert_eq!(after.csrf_refused, 0, "{after:?}");

    // The same recording as a Rust plugin: built with cargo, run, no token replayed.
    let file = tmp.path().join("survey.har");
    let made = host(
        tmp.path(),
        &[
            "new",
            "survey-rs",
            "--from-har",
            file.to_str().unwrap(),
            "--lang",
            "rust",
        ],
    )
    .await;
    assert!(made.status.success(), "{}", text(&made));
    let project = tmp.path().join("survey-rs");
    let lib = std::fs::read_to_string(project.join("src/lib.rs")).unwrap();
    assert!(lib.contains("v.csrf = input_value(&res"), "{lib}");
    assert!(
        lib.contains("fn answer(base: &str, v: &mut Carried)"),
        "{lib}"
    );
    let wasm = build(&project).await;
    run_vus(&project, &wasm, &base, 1, 3).await;
    let rust_after = target.survey_counts();
    assert_eq!(rust_after.accepted - after.accepted, 3, "{rust_after:?}");
    assert_eq!(rust_after.token_refused, 0, "{rust_after:?}");

    // And as a Python plugin: the SDK's form helper submits the pages' forms.
    let (project, said) = from_har_in(tmp.path(), "survey-py", &survey, "python", &[]).await;
    assert!(said.contains("(kept by the form)"), "{said}");
    let app = std::fs::read_to_string(project.join("app.py")).unwrap();
    assert!(
        app.contains(".form('form[action=\"/survey/answer\"]').set(\"answer\", \"4\").set(\"token\", v.token).submit("),
        "{app}"
    );
    assert!(
        app.contains("v.token = res")
            && app.contains(".html().json_script(\"survey-data\")[\"token\"]"),
        "{app}"
    );
    assert!(app.contains("def answer(base, v):"), "{app}");
    let wasm = build(&project).await;
    run_vus(&project, &wasm, &base, 1, 3).await;
    let py_after = target.survey_counts();
    assert_eq!(py_after.accepted - rust_after.accepted, 3, "{py_after:?}");
    assert_eq!(py_after.token_refused, 0, "{py_after:?}");
    assert_eq!(py_after.csrf_refused, 0, "{py_after:?}");

    // Account life, from a recording without pages: the refresh token and both access
    // tokens come from the responses that issued them, and the signed-up name is made
    // per VU and iteration, so several VUs sign up at once without a conflict.
    let (project, said) = from_har(tmp.path(), "account", &account, &[]).await;
    let script = std::fs::read_to_string(project.join("script.js")).unwrap();
    assert!(
        said.contains("refreshToken: JSON field refresh_token"),
        "{said}"
    );
    assert!(
        said.contains("accessToken2: JSON field access_token"),
        "{said}"
    );
    assert!(
        said.contains("user: har-account-owner-<VU>-<iteration>-<random>"),
        "{said}"
    );
    assert!(said.contains("Unresolved: none"), "{said}");
    assert!(
        script.contains("const user = `har-account-owner-${__VU}-${__ITER}-"),
        "{script}"
    );
    assert!(script.contains("{ user: user }"), "{script}");
    assert!(script.contains(".json('refresh_token')"), "{script}");
    assert!(
        script.matches("group(").count() >= 5,
        "one step per burst:\n{script}"
    );
    let signups = |m: &str| {
        (
            metric(m, "demo_signups_total"),
            metric(m, "demo_signup_conflicts_total"),
            metric(m, "demo_token_refresh_refused_total"),
        )
    };
    let (s0, c0, r0) = signups(&scrape(&base));
    assert_eq!(c0, 0);
    run_vus(&project, "script.js", &base, 4, 12).await;
    let (s1, c1, r1) = signups(&scrape(&base));
    assert_eq!(s1 - s0, 12, "every sign-up accepted");
    assert_eq!(
        (c1, r1),
        (0, r0),
        "no name taken twice, no refresh token replayed"
    );

    // The account's life as a Rust plugin, 2 VUs of 2 iterations each.
    let (project, _) = from_har_in(tmp.path(), "account-rs", &account, "rust", &[]).await;
    let lib = std::fs::read_to_string(project.join("src/lib.rs")).unwrap();
    assert!(
        lib.contains("v.user = unique(\"har-account-owner\", \"\");"),
        "{lib}"
    );
    let wasm = build(&project).await;
    run_vus(&project, &wasm, &base, 2, 2).await;
    let (s2, c2, r2) = signups(&scrape(&base));
    assert_eq!((s2 - s1, c2, r2), (4, 0, r0));

    // And as a Python plugin, 3 VUs of 2 iterations each.
    let (project, _) = from_har_in(tmp.path(), "account-py", &account, "python", &[]).await;
    let app = std::fs::read_to_string(project.join("app.py")).unwrap();
    assert!(
        app.contains("v.user = unique(\"har-account-owner\", \"\")")
            && app.contains("json={\"user\": v.user}"),
        "{app}"
    );
    assert!(app.contains("v.refresh_token = res"), "{app}");
    let wasm = build(&project).await;
    run_vus(&project, &wasm, &base, 3, 2).await;
    let (s3, c3, r3) = signups(&scrape(&base));
    assert_eq!((s3 - s2, c3, r3), (6, 0, r0));
    assert_eq!(
        metric(&scrape(&base), "demo_accounts"),
        0,
        "each deleted its own"
    );

    // A visit with a warm cache: the recording holds 304s to conditional requests.
    // Made from the first visit's recording, edited as a warm-cache visit records it:
    // the shell (`no-cache`) and a third of its files answered 304 to an If-None-Match
    // of their ETag, with no body. (Headless Chromium, asked through DevTools, reported
    // its revalidated shell as 200 and its cached files as 200 from its cache.)
    let mut revisit = visit.clone();
    let mut revalidated = 0;
    for (i, e) in revisit["log"]["entries"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        let url = e["request"]["url"].as_str().unwrap().to_string();
        if !(url.ends_with("/app") || (url.contains("/assets/") && i % 3 == 0)) {
            continue;
        }
        let etag = e["response"]["headers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["name"].as_str().unwrap().eq_ignore_ascii_case("etag"))
            .map(|h| h["value"].clone())
            .expect("the demo target names each file's ETag");
        e["request"]["headers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "If-None-Match", "value": etag}));
        e["response"]["status"] = json!(304);
        e["response"]["content"] = json!({"size": 0, "mimeType": "", "text": ""});
        revalidated += 1;
    }
    assert!(revalidated > 10, "{revalidated}");
    let (project, _) = from_har(tmp.path(), "revisit", &revisit, &[]).await;
    let script = std::fs::read_to_string(project.join("script.js")).unwrap();
    assert!(
        script.contains("Recorded as 304")
            && script.contains("'GET /app is 200': (r) => r.status === 200"),
        "{script}"
    );
    assert!(
        !script.to_ascii_lowercase().contains("if-none-match"),
        "{script}"
    );
    assert!(
        script.contains("Some were recorded as 304") && script.contains("static files are 200"),
        "{script}"
    );
    let shells = metric(&scrape(&base), "demo_app_shell_total");
    let assets = metric(&scrape(&base), "demo_assets_served_total");
    run_clean(&project, &base, 2).await;
    // Every file was served whole: no conditional request was replayed.
    let after = scrape(&base);
    assert_eq!(metric(&after, "demo_app_shell_total") - shells, 2);
    assert_eq!(metric(&after, "demo_assets_served_total") - assets, 80);
    target.shutdown().await;
}

/// The plugins workspace's target folder: a generated Rust project builds there so the
/// SDK's dependencies, compiled for the bundled plugins, are not compiled again.
fn shared_target_dir() -> PathBuf {
    Path::new(host::PLUGINS_DIR)
        .ancestors()
        .nth(2)
        .expect("PLUGINS_DIR is plugins/target/wasm32-wasip2/release")
        .to_path_buf()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/har")
        .join(name)
}

#[tokio::test]
async fn third_party_requests_are_left_out_and_listed_unless_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let har: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("third-party.har")).unwrap())
            .unwrap();
    let (project, said) = from_har(tmp.path(), "shop", &har, &[]).await;
    let script = std::fs::read_to_string(project.join("script.js")).unwrap();
    assert!(
        said.contains("https://analytics.example.net: 2 requests"),
        "{said}"
    );
    assert!(
        said.contains("https://cdn.example.com: 1 request"),
        "{said}"
    );
    assert!(
        !script.contains("analytics.example.net/collect"),
        "{script}"
    );
    let run_toml = std::fs::read_to_string(project.join("run.toml")).unwrap();
    assert!(
        run_toml.contains("allow = [\"http://shop.example\"]"),
        "{run_toml}"
    );
    // Ids in paths are templated into the request names.
    assert!(script.contains("tags: { name: '/notes/{id}' }"), "{script}");

    let (project, said) = from_har(
        tmp.path(),
        "shop-cdn",
        &har,
        &["--keep-origin", "https://cdn.example.com"],
    )
    .await;
    let script = std::fs::read_to_string(project.join("script.js")).unwrap();
    assert!(!said.contains("cdn.example.com: 1"), "{said}");
    assert!(
        script.contains("https://cdn.example.com/lib.js"),
        "{script}"
    );
    let run_toml = std::fs::read_to_string(project.join("run.toml")).unwrap();
    assert!(
        run_toml.contains("allow = [\"http://shop.example\", \"https://cdn.example.com\"]"),
        "{run_toml}"
    );
}

#[tokio::test]
async fn a_firefox_shaped_recording_is_read_and_a_broken_one_refused() {
    let tmp = tempfile::tempdir().unwrap();
    // Firefox: no _resourceType, form fields as params without text, a body left out.
    let har: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("firefox.har")).unwrap()).unwrap();
    let (project, said) = from_har(tmp.path(), "fx", &har, &[]).await;
    let script = std::fs::read_to_string(project.join("script.js")).unwrap();
    assert!(
        said.contains("csrfmiddlewaretoken: <input name=\"csrfmiddlewaretoken\">"),
        "{said}"
    );
    // The login page's form is submitted as a browser does: the CSRF field is the live
    // page's, the typed fields are set over it.
    assert!(
        said.contains("form field csrfmiddlewaretoken (kept by the form)"),
        "{said}"
    );
    assert!(
        script.contains("fields: { username: 'ann', password: 'secret' }"),
        "{script}"
    );
    assert!(script.contains("The page's 2 static files"), "{script}");
    assert!(said.contains("Unresolved: sent as recorded"), "{said}");
    assert!(said.contains("0f1e2d3c4b5a69788796a5b4c3d2e1f0"), "{said}");

    // A file that is not a HAR, and one whose entry lacks its start time: refused
    // with what is wrong, and no folder made.
    std::fs::write(tmp.path().join("page.har"), "<html></html>").unwrap();
    let out = host(
        tmp.path(),
        &["new", "bad", "--from-har", "page.har", "--lang", "js"],
    )
    .await;
    assert!(!out.status.success());
    assert!(text(&out).contains("not JSON"), "{}", text(&out));
    let mut broken = har.clone();
    broken["log"]["entries"][1]
        .as_object_mut()
        .unwrap()
        .remove("startedDateTime");
    std::fs::write(tmp.path().join("broken.har"), broken.to_string()).unwrap();
    let out = host(
        tmp.path(),
        &["new", "bad", "--from-har", "broken.har", "--lang", "js"],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        text(&out).contains("log.entries[1] is not a HAR entry")
            && text(&out).contains("startedDateTime"),
        "{}",
        text(&out)
    );
    assert!(!tmp.path().join("bad").exists());
}
