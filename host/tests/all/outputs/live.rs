//! Watching a run live: the CSV and JSON outputs add up to the summary, the dashboard
//! page (in headless Chromium, read as a person reads it) shows figures that move as
//! the run goes and end on the summary's, and remote write lands the run's totals in
//! a real Prometheus.

use crate::support as common;

use common::{demo_target, only_results_dir, plugin, summary_json, write_config};
use host::RunRequest;
use host::{LiveOptions, OutputSpec};
use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The tests that start Chromium take turns: two at once on a small machine can leave a
/// short run over before a page has opened.
use common::turns::BROWSER as BROWSER_TURN;

/// A run of `hello` at a fixed rate, bounded in time, with `live` outputs.
const RATE_CONFIG: &str = r#"
[scenarios.default]
executor = "constant-arrival-rate"
rate = 40
duration = "SECONDS"
pre_allocated_vus = 4
max_vus = 8
"#;

fn request(config: &Path, out: &Path, base: &str, live: LiveOptions) -> RunRequest {
    let mut request = RunRequest {
        plugin: plugin("hello"),
        config: Some(config.to_path_buf()),
        out: out.to_path_buf(),
        quiet: true,
        handle_signals: false,
        live,
        ..RunRequest::default()
    };
    request.overrides.env = vec![("BASE_URL".into(), base.into())];
    request
}

fn metric(summary: &serde_json::Value, name: &str, field: &str) -> f64 {
    summary["metrics"][name][field]
        .as_f64()
        .unwrap_or_else(|| panic!("no metrics.{name}.{field} in summary.json"))
}

/// A free port on loopback (bound, read, released).
fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_and_json_outputs_add_up_to_the_summary() {
    let server = demo_target(Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    // 4 s, so that a second lost to a loaded machine (Chromium starting in the
    // dashboard test beside this one left one CI run with rows in only 2 of 3
    // seconds) still leaves three seconds with rows.
    let config = write_config(dir.path(), &RATE_CONFIG.replace("SECONDS", "4s"));
    let csv_path = dir.path().join("metrics.csv.gz");
    let json_path = dir.path().join("metrics.json");
    let live = LiveOptions {
        dashboard: None,
        outputs: vec![
            OutputSpec::Csv(csv_path.clone()),
            OutputSpec::Json(json_path.clone()),
        ],
        linger: false,
    };
    let out = dir.path().join("out");
    let outcome = host::run(request(&config, &out, &server.base_url(), live))
        .await
        .expect("the run completes");
    server.shutdown().await;
    assert_eq!(outcome.exit_code, 0);
    let summary = summary_json(&only_results_dir(&out));
    let total_reqs = metric(&summary, "http_reqs", "count");
    assert!(total_reqs >= 100.0, "{total_reqs} requests");
    let check_passes = summary["checks"][0]["passes"].as_u64().unwrap();

    // CSV, gzipped: k6's header, then rows whose http_reqs values add up.
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&csv_path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header.join(","),
        "metric_name,timestamp,metric_value,check,error,error_code,group,method,name,proto,\
         scenario,status,subproto,tls_version,url,extra_tags,metadata"
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (name_col, value_col, ts_col) = (col("metric_name"), col("metric_value"), col("timestamp"));
    let reqs: Vec<&csv::StringRecord> = rows
        .iter()
        .filter(|r| &r[name_col] == "http_reqs")
        .collect();
    let csv_reqs: f64 = reqs
        .iter()
        .map(|r| r[value_col].parse::<f64>().unwrap())
        .sum();
    assert_eq!(
        csv_reqs, total_reqs,
        "CSV http_reqs rows add up to the summary"
    );
    let seconds: std::collections::BTreeSet<i64> =
        reqs.iter().map(|r| r[ts_col].parse().unwrap()).collect();
    assert!(seconds.len() >= 3, "one row per second: {seconds:?}");
    for r in &reqs {
        assert_eq!(&r[col("method")], "GET");
        assert_eq!(&r[col("name")], "/");
        assert_eq!(&r[col("scenario")], "default");
        assert_eq!(&r[col("status")], "200");
    }
    let csv_passes: f64 = rows
        .iter()
        .filter(|r| &r[name_col] == "checks")
        .map(|r| {
            let meta = &r[col("metadata")];
            let passes = meta
                .split('&')
                .find_map(|kv| kv.strip_prefix("passes="))
                .unwrap_or_else(|| panic!("passes in {meta}"));
            passes.parse::<f64>().unwrap()
        })
        .sum();
    assert_eq!(csv_passes as u64, check_passes, "check passes add up");
    let durations: u64 = rows
        .iter()
        .filter(|r| &r[name_col] == "http_req_duration")
        .map(|r| {
            let meta = &r[col("metadata")];
            meta.split('&')
                .find_map(|kv| kv.strip_prefix("count="))
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(
        durations as f64,
        metric(&summary, "http_req_duration", "count"),
        "trend counts add up"
    );

    // JSON lines: every line parses; each metric declared once, before its points.
    let text = std::fs::read_to_string(&json_path).unwrap();
    let mut declared = std::collections::BTreeSet::new();
    let mut json_reqs = 0.0;
    let mut last_time = String::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let name = v["metric"].as_str().unwrap().to_string();
        match v["type"].as_str().unwrap() {
            "Metric" => {
                assert!(declared.insert(name.clone()), "{name} declared once");
                assert_eq!(v["data"]["name"], name.as_str());
            }
            "Point" => {
                assert!(
                    declared.contains(&name),
                    "{name} declared before its points"
                );
                let time = v["data"]["time"].as_str().unwrap().to_string();
                assert!(time.ends_with('Z') && time.contains('T'), "{time}");
                assert!(time >= last_time, "times go forward");
                last_time = time;
                if name == "http_reqs" {
                    json_reqs += v["data"]["value"].as_f64().unwrap();
                    assert_eq!(v["data"]["tags"]["status"], "200");
                }
            }
            other => panic!("unexpected line type {other}"),
        }
    }
    assert_eq!(
        json_reqs, total_reqs,
        "JSON http_reqs points add up to the summary"
    );
    assert!(declared.contains("http_req_duration") && declared.contains("vus"));
}

/// Headless Chromium driven over the DevTools protocol.
struct Browser {
    child: std::process::Child,
    ws: tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET `url` (http only), with the status, content type and body.
async fn get(url: &str) -> (u16, String, String) {
    try_get(url)
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"))
}

/// GET `url`, or why it failed.
async fn try_get(url: &str) -> Result<(u16, String, String), String> {
    use http_body_util::{BodyExt, Empty};
    let client: hyper_util::client::legacy::Client<_, Empty<bytes::Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http();
    let response = tokio::time::timeout(Duration::from_secs(10), client.get(url.parse().unwrap()))
        .await
        .map_err(|_| "no answer within 10 s".to_string())?
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((
        status,
        content_type,
        String::from_utf8_lossy(&body).into_owned(),
    ))
}

impl Browser {
    /// Opens `url` in a new headless Chromium.
    async fn open(url: &str) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let child = std::process::Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
                "--window-size=1200,1600",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("chromium is installed (apt-get install -y chromium; ./dev test does it)");
        // Chromium writes the port it chose into the profile.
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(60);
        let port: u16 = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                if let Some(port) = text.lines().next().and_then(|l| l.trim().parse().ok()) {
                    break port;
                }
            }
            assert!(
                Instant::now() < deadline,
                "chromium did not open its DevTools port"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let ws_url = loop {
            let (_, _, body) = get(&format!("http://127.0.0.1:{port}/json/list")).await;
            let targets: serde_json::Value = serde_json::from_str(&body).unwrap();
            let page = targets
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["type"] == "page");
            if let Some(page) = page {
                break page["webSocketDebuggerUrl"].as_str().unwrap().to_string();
            }
            assert!(Instant::now() < deadline, "no page in {body}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let (ws, _) = tokio_tungstenite::client_async(ws_url.as_str(), stream)
            .await
            .unwrap();
        Browser {
            child,
            ws,
            next_id: 0,
            _profile: profile,
        }
    }

    /// Evaluates `expression` in the page and returns its value.
    async fn eval(&mut self, expression: &str) -> serde_json::Value {
        use futures::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        self.next_id += 1;
        let id = self.next_id;
        let call = serde_json::json!({
            "id": id,
            "method": "Runtime.evaluate",
            "params": { "expression": expression, "returnByValue": true },
        });
        self.ws.send(Message::text(call.to_string())).await.unwrap();
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(10), self.ws.next())
                .await
                .expect("DevTools answers")
                .unwrap()
                .unwrap();
            let Ok(text) = msg.to_text() else { continue };
            let v: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
            if v["id"] == id {
                return v["result"]["result"]["value"].clone();
            }
        }
    }

    /// The text a person sees in the element `id`.
    async fn text(&mut self, id: &str) -> String {
        let v = self
            .eval(&format!(
                "(document.getElementById({id:?}) || {{innerText: ''}}).innerText"
            ))
            .await;
        v.as_str().unwrap_or_default().to_string()
    }

    /// A number shown in element `id` ("1,234", "12.34 ms", "0.00 %").
    async fn number(&mut self, id: &str) -> f64 {
        let text = self.text(id).await;
        let digits: String = text
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .replace(',', "");
        digits
            .parse()
            .unwrap_or_else(|_| panic!("#{id} shows {text:?}, not a number"))
    }

    /// Waits until `what` holds of the page, polling.
    async fn wait_for(&mut self, what: &str, expression: &str, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            if self.eval(expression).await == serde_json::Value::Bool(true) {
                return;
            }
            assert!(Instant::now() < deadline, "the page never showed {what}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_the_run_as_it_goes_and_ends_on_the_summary() {
    let _turn = BROWSER_TURN.lock().await;
    let server = demo_target(Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "{}\n[thresholds]\nhttp_req_duration = [\"p(95)<5000\"]\nhttp_reqs = [\"count<5\"]\n",
        RATE_CONFIG.replace("SECONDS", "7s")
    );
    let config = write_config(dir.path(), &toml);
    let addr = free_addr();
    let live = LiveOptions {
        dashboard: Some(addr),
        outputs: Vec::new(),
        linger: false,
    };
    let out = dir.path().join("out");
    // The run's future stays on this task (it is not Send); the page is watched from
    // a task of its own while the run goes.
    let watcher = tokio::spawn(async move {
        let deadline = Instant::now() + Duration::from_secs(120);
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            assert!(
                Instant::now() < deadline,
                "the dashboard never listened on {addr}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut page = Browser::open(&format!("http://{addr}/")).await;
        page.wait_for(
            "requests while running",
            "document.getElementById('state').innerText === 'running' && \
             parseInt(document.getElementById('reqs-total').innerText.replace(/,/g, '')) > 0",
            Duration::from_secs(30),
        )
        .await;
        let first = page.number("reqs-total").await;
        let first_elapsed = page.text("elapsed").await;
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let second = page.number("reqs-total").await;
        let second_elapsed = page.text("elapsed").await;
        assert!(
            second > first,
            "the request count moves: {first} then {second}"
        );
        assert_ne!(first_elapsed, second_elapsed, "the elapsed time moves");
        assert!(
            page.number("rps-now").await > 0.0,
            "requests per second shown"
        );
        let thresholds = page.text("thresholds").await;
        assert!(
            thresholds.contains("p(95)<5000") && thresholds.contains("passing"),
            "{thresholds}"
        );
        assert!(
            thresholds.contains("count<5") && thresholds.contains("failing"),
            "a threshold crossed during the run shows as failing: {thresholds}"
        );
        let endpoints = page.text("endpoints").await;
        assert!(endpoints.contains("GET /"), "{endpoints}");
        assert!(page.text("checks").await.contains("status is 200"));
        assert!(
            page.text("services").await.contains("generator"),
            "the generator is sampled"
        );

        // /metrics beside the page, mid-run: OpenMetrics text with the run's counters.
        let (status, content_type, body) = get(&format!("http://{addr}/metrics")).await;
        assert_eq!(status, 200);
        assert!(
            content_type.starts_with("application/openmetrics-text"),
            "{content_type}"
        );
        assert!(body.contains("# TYPE k6_http_reqs counter"), "{body}");
        assert!(
            body.lines().any(|l| l.starts_with("k6_http_reqs_total{")),
            "{body}"
        );
        assert!(body.ends_with("# EOF\n"));
        page
    });
    let outcome = host::run(request(&config, &out, &server.base_url(), live))
        .await
        .expect("the run completes");
    let mut page = watcher.await.expect("the page showed the run as it went");
    server.shutdown().await;
    assert_eq!(outcome.exit_code, 99, "the count<5 threshold was crossed");
    let summary = summary_json(&outcome.results_dir);
    page.wait_for(
        "the end of the run",
        "document.getElementById('state').innerText.startsWith('finished')",
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(
        page.number("reqs-total").await,
        metric(&summary, "http_reqs", "count"),
        "the page ends on the summary's request count"
    );
    assert_eq!(
        page.number("iterations").await,
        metric(&summary, "iterations", "count")
    );
    for (id, field) in [
        ("p50-total", "med"),
        ("p95-total", "p95"),
        ("p99-total", "p99"),
    ] {
        let shown = page.number(id).await;
        let summary_ms = metric(&summary, "http_req_duration", field);
        assert!(
            (shown - summary_ms).abs() <= 0.0051,
            "#{id} shows {shown} ms, summary.json has {summary_ms}"
        );
    }
    let report = page.text("report").await;
    let report_path = outcome.results_dir.join("report.html");
    assert!(
        report.contains(&report_path.display().to_string()),
        "the page links to the report: {report}"
    );
    let href = page
        .eval("document.getElementById('report-link').getAttribute('href')")
        .await;
    assert_eq!(href, "/report.html");
}

/// Waits until something listens at `addr`.
async fn wait_listening(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "the dashboard never listened on {addr}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_opened_mid_run_draws_the_run_from_its_start_on_labelled_axes() {
    let _turn = BROWSER_TURN.lock().await;
    let server = demo_target(Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &RATE_CONFIG.replace("SECONDS", "8s"));
    let addr = free_addr();
    let live = LiveOptions {
        dashboard: Some(addr),
        outputs: Vec::new(),
        linger: false,
    };
    let out = dir.path().join("out");
    let watcher = tokio::spawn(async move {
        wait_listening(addr).await;
        // Opened about four seconds into the run.
        tokio::time::sleep(Duration::from_secs(4)).await;
        let mut page = Browser::open(&format!("http://{addr}/")).await;
        page.wait_for(
            "the seconds before it opened",
            "Number(document.getElementById('c-rps').dataset.points || 0) >= 4",
            Duration::from_secs(30),
        )
        .await;
        let first = page.eval("hist.t[0]").await.as_f64().unwrap();
        assert!(
            first <= 1.5,
            "the charts start at the run's start: {first} s"
        );
        let times = page.eval("hist.t").await;
        let times: Vec<f64> = times
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_f64().unwrap())
            .collect();
        assert!(
            times.windows(2).all(|w| w[1] > w[0]),
            "each second once, in order: {times:?}"
        );
        for (chart, unit) in [
            ("c-rps", "req/s"),
            ("c-lat", "ms"),
            ("c-vus", "VUs"),
            ("c-err", "%"),
        ] {
            let said = page
                .eval(&format!(
                    "JSON.stringify(document.getElementById('{chart}').dataset)"
                ))
                .await;
            let data: serde_json::Value = serde_json::from_str(said.as_str().unwrap()).unwrap();
            assert_eq!(data["unit"], unit, "{chart}: {data}");
            let y: Vec<String> = serde_json::from_str(data["yTicks"].as_str().unwrap()).unwrap();
            assert!(
                y.len() >= 2 && y.iter().all(|l| l.ends_with(&format!(" {unit}"))),
                "{chart}: the value axis is labelled in {unit}: {y:?}"
            );
            let t: Vec<String> = serde_json::from_str(data["tTicks"].as_str().unwrap()).unwrap();
            assert!(
                t.first().map(String::as_str) == Some("0s") && t.len() >= 2,
                "{chart}: a time axis from 0s: {t:?}"
            );
        }
        let legend = page.text("l-lat").await;
        for name in ["p50", "p95", "p99", "ms"] {
            assert!(
                legend.contains(name),
                "the latency legend names {name}: {legend}"
            );
        }
        assert!(page.text("l-rps").await.contains("requests/s"));
    });
    let outcome = host::run(request(&config, &out, &server.base_url(), live))
        .await
        .expect("the run completes");
    watcher.await.expect("the page drew the whole run");
    server.shutdown().await;
    assert_eq!(outcome.exit_code, 0);
}

#[test]
fn from_the_command_line_the_dashboard_stays_up_after_the_run_until_ctrl_c() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(demo_target(Duration::ZERO));
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &RATE_CONFIG.replace("SECONDS", "2s"));
    let addr = free_addr();
    let out = dir.path().join("out");
    // Its stdin is a terminal (a pseudo-terminal's far end), as when someone runs it and
    // can press Ctrl-C: without one it does not wait (the next test).
    let (_terminal, stdin) = pseudo_terminal();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_host"))
        .args([
            "run",
            plugin("hello").to_str().unwrap(),
            "--quiet",
            "--config",
        ])
        .arg(&config)
        .args(["--dashboard", &addr.to_string(), "--out"])
        .arg(&out)
        .args(["-e", &format!("BASE_URL={}", server.base_url())])
        .stdin(stdin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stops the child if an assertion fails first.
    struct Kill(u32);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &self.0.to_string()])
                .status();
        }
    }
    let _kill = Kill(child.id());
    let mut stderr = child.stderr.take().unwrap();
    let (lines, said) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let mut buf = [0u8; 1024];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            text.push_str(&String::from_utf8_lossy(&buf[..n]));
            let _ = lines.send(text.clone());
        }
    });
    let line = format!("its dashboard stays up at http://{addr}/");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut text = String::new();
    while !text.contains(&line) {
        assert!(Instant::now() < deadline, "never said {line:?}: {text}");
        if let Ok(t) = said.recv_timeout(Duration::from_millis(200)) {
            text = t;
        }
    }
    assert!(text.contains("press Ctrl-C to exit"), "{text}");
    // The run is over and still the page and its report are served.
    runtime.block_on(async {
        let (status, _, page) = get(&format!("http://{addr}/")).await;
        assert_eq!(status, 200);
        assert!(page.contains("<canvas"));
        let (status, content_type, report) = get(&format!("http://{addr}/report.html")).await;
        assert_eq!(status, 200, "{report}");
        assert!(content_type.starts_with("text/html") && report.contains("<html"));
    });
    std::thread::sleep(Duration::from_millis(500));
    assert!(child.try_wait().unwrap().is_none(), "it waits for Ctrl-C");
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "Ctrl-C did not end it");
        std::thread::sleep(Duration::from_millis(50));
    };
    // The run's own exit code, not an interruption's.
    assert_eq!(status.code(), Some(0));
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(stdout.contains("results: "), "{stdout}");
    runtime.block_on(server.shutdown());
}

/// A pseudo-terminal: its controlling end (kept open while the child runs) and its
/// far end, for a child's stdin.
fn pseudo_terminal() -> (std::fs::File, std::process::Stdio) {
    use std::os::fd::FromRawFd;
    let (mut controller, mut far) = (0, 0);
    // SAFETY: openpty writes two new descriptors, owned by the Files made of them.
    let made = unsafe {
        libc::openpty(
            &mut controller,
            &mut far,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(made, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just made and are owned by nothing else.
    unsafe {
        (
            std::fs::File::from_raw_fd(controller),
            std::process::Stdio::from(std::fs::File::from_raw_fd(far)),
        )
    }
}

#[test]
fn with_no_terminal_the_dashboard_run_ends_when_the_run_does() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(demo_target(Duration::ZERO));
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &RATE_CONFIG.replace("SECONDS", "1s"));
    let addr = free_addr();
    // A CI job: stdin from /dev/null, output to pipes; nobody can press Ctrl-C.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_host"))
        .args([
            "run",
            plugin("hello").to_str().unwrap(),
            "--quiet",
            "--config",
        ])
        .arg(&config)
        .args(["--dashboard", &addr.to_string(), "--out"])
        .arg(dir.path().join("out"))
        .args(["-e", &format!("BASE_URL={}", server.base_url())])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status =
        status.unwrap_or_else(|| panic!("it waited for a Ctrl-C nobody can press: {stderr}"));
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("press Ctrl-C"), "{stderr}");
    runtime.block_on(server.shutdown());
}

/// Prometheus from Debian's package, on a free port with its own storage, killed on
/// drop.
struct Prometheus {
    child: std::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    async fn start() -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(&config, "global:\n  scrape_interval: 15s\n").unwrap();
        let addr = free_addr();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--web.enable-remote-write-receiver")
            .arg("--enable-feature=native-histograms")
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus is installed (apt-get install -y prometheus; ./dev test does it)");
        let prometheus = Prometheus {
            child,
            url: format!("http://{addr}"),
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if try_get(&format!("{}/-/ready", prometheus.url))
                .await
                .is_ok_and(|r| r.0 == 200)
            {
                break;
            }
            assert!(Instant::now() < deadline, "prometheus did not get ready");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        prometheus
    }

    /// The series an instant PromQL query returns.
    async fn query_all(&self, promql: &str) -> Vec<serde_json::Value> {
        let url = format!(
            "{}/api/v1/query?query={}",
            self.url,
            url::form_urlencoded::byte_serialize(promql.as_bytes()).collect::<String>()
        );
        let (status, _, body) = get(&url).await;
        assert_eq!(status, 200, "{promql}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// The single value an instant PromQL query returns.
    async fn query(&self, promql: &str) -> f64 {
        let url = format!(
            "{}/api/v1/query?query={}",
            self.url,
            url::form_urlencoded::byte_serialize(promql.as_bytes()).collect::<String>()
        );
        let (status, _, body) = get(&url).await;
        assert_eq!(status, 200, "{promql}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let result = &v["data"]["result"];
        assert_eq!(result.as_array().map(Vec::len), Some(1), "{promql}: {body}");
        result[0]["value"][1]
            .as_str()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("{promql}: {body}"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_write_lands_the_run_in_prometheus() {
    let prometheus = Prometheus::start().await;
    let server = demo_target(Duration::ZERO).await;
    let write_url = format!("{}/api/v1/write", prometheus.url);
    for (trend_as, prefix) in [("percentiles", "k6_"), ("native", "nat_")] {
        let dir = tempfile::tempdir().unwrap();
        let toml = format!(
            "{}\n[outputs.prometheus]\ntrend_as = \"{trend_as}\"\nprefix = \"{prefix}\"\n",
            RATE_CONFIG.replace("SECONDS", "3s")
        );
        let config = write_config(dir.path(), &toml);
        let live = LiveOptions {
            dashboard: None,
            outputs: vec![OutputSpec::PrometheusRw(write_url.clone())],
            linger: false,
        };
        let out: PathBuf = dir.path().join("out");
        let outcome = host::run(request(&config, &out, &server.base_url(), live))
            .await
            .expect("the run completes");
        assert_eq!(outcome.exit_code, 0);
        let summary = summary_json(&outcome.results_dir);
        let reqs = metric(&summary, "http_reqs", "count");
        assert!(reqs >= 60.0);
        assert_eq!(
            prometheus
                .query(&format!("sum({prefix}http_reqs_total)"))
                .await,
            reqs,
            "{trend_as}: Prometheus has the run's http_reqs total"
        );
        assert_eq!(
            prometheus
                .query(&format!(
                    "sum({prefix}http_reqs_total{{method=\"GET\",name=\"/\",status=\"200\",scenario=\"default\"}})"
                ))
                .await,
            reqs,
            "every tag is a label"
        );
        let count = metric(&summary, "http_req_duration", "count");
        match trend_as {
            "percentiles" => {
                let p95 = prometheus
                    .query(&format!("max({prefix}http_req_duration_p95)"))
                    .await;
                let summary_p95 = metric(&summary, "http_req_duration", "p95") / 1000.0;
                assert!(
                    (p95 - summary_p95).abs() < 1e-9,
                    "p95 {p95} s in Prometheus, {summary_p95} s in summary.json"
                );
                assert_eq!(
                    prometheus
                        .query(&format!("sum({prefix}http_req_duration_count)"))
                        .await,
                    count
                );
            }
            _ => {
                assert_eq!(
                    prometheus
                        .query(&format!(
                            "histogram_count(sum({prefix}http_req_duration_seconds))"
                        ))
                        .await,
                    count,
                    "the native histogram holds every sample"
                );
            }
        }
        // The Grafana dashboard in the repository reads these series: each of its
        // queries that applies to this run returns something.
        let grafana: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/grafana/loadtest.json"),
            )
            .unwrap(),
        )
        .unwrap();
        let mut asked = 0;
        for panel in grafana["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                let expr = target["expr"].as_str().unwrap();
                let native_only = expr.contains("_seconds");
                let percentiles_only = expr.contains("http_req_duration_");
                if expr.contains("dropped_iterations")
                    || (trend_as == "percentiles" && native_only)
                    || (trend_as == "native" && percentiles_only && !native_only)
                {
                    continue;
                }
                let promql = expr
                    .replace("$__rate_interval", "1m")
                    .replace("k6_", prefix);
                assert!(
                    !prometheus.query_all(&promql).await.is_empty(),
                    "{trend_as}: the Grafana panel {:?} finds nothing with {promql}",
                    panel["title"]
                );
                asked += 1;
            }
        }
        assert!(asked >= 8, "{asked} Grafana queries checked");
    }
    server.shutdown().await;
}
