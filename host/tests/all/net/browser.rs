//! HTTP as browsers and real clients use it, against the demo target on 127.0.0.1:
//! the survey flow (form sign-in, the 302 seen with `redirects(0)`, the cookie jar,
//! tokens read out of the page, single-use answers), the jar's reset between
//! iterations, source addresses per VU with per-address rate limits, and setup
//! requests kept out of the totals.

use crate::support as common;

use demo_target::{Cidr, DemoConfig, DemoServer};

async fn target(config: DemoConfig) -> DemoServer {
    DemoServer::start("127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("demo target starts")
}

/// Passes and fails of check `name` in summary.json.
fn check(run: &common::Finished, name: &str) -> (u64, u64) {
    let checks = run.json["checks"].as_array().expect("checks");
    let c = checks
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name:?} in {checks:?}"));
    (c["passes"].as_u64().unwrap(), c["fails"].as_u64().unwrap())
}

fn all_checks_pass(run: &common::Finished) {
    for c in run.json["checks"].as_array().unwrap() {
        assert_eq!(c["fails"].as_u64(), Some(0), "check failed: {c}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survey_flow_sees_the_302_keeps_the_session_and_tokens_are_single_use() {
    let server = target(DemoConfig::default()).await;
    let config = r#"
        [scenarios.answer]
        executor = "per-vu-iterations"
        vus = 2
        iterations = 5
        exec = "answer"
    "#;
    let run = common::run("survey", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    let counts = server.survey_counts();
    let served = server.requests_served();
    server.shutdown().await;

    all_checks_pass(&run);
    // Ten iterations, each a sign-in, a page, an answer and a replay.
    assert_eq!(run.scenario("answer", "completed"), 10);
    assert_eq!(check(&run, "login answers 302 to /survey"), (10, 0));
    assert_eq!(check(&run, "login sets the session cookie"), (10, 0));
    assert_eq!(check(&run, "the jar sends the session cookie"), (10, 0));
    assert_eq!(check(&run, "tokens found in the page"), (10, 0));
    // What the server counted equals what the plugin checked.
    assert_eq!(counts.logins, check(&run, "login answers 302 to /survey").0);
    assert_eq!(counts.pages, check(&run, "tokens found in the page").0);
    assert_eq!(counts.accepted, check(&run, "answer accepted").0);
    assert_eq!(
        counts.token_refused,
        check(&run, "replayed token refused").0
    );
    assert_eq!(counts.csrf_refused, 0);
    // redirects(0): the 302 was not followed, so four requests per iteration.
    assert_eq!(served, 40);
    assert_eq!(run.metric("http_reqs", "count") as u64, 40);
    // The replay was expected (409), so nothing failed.
    assert_eq!(run.json["http"]["failed"].as_u64(), Some(0));
}

async fn jar_run(extra: &str) -> common::Finished {
    let server = target(DemoConfig::default()).await;
    let config = format!(
        r#"
        [scenarios.default]
        executor = "per-vu-iterations"
        vus = 2
        iterations = 3
        {extra}
        "#
    );
    let run = common::run(
        "http_probe",
        &config,
        &[("BASE_URL", &server.base_url()), ("MODE", "jar")],
    )
    .await
    .unwrap();
    server.shutdown().await;
    all_checks_pass(&run);
    assert_eq!(run.scenario("default", "completed"), 6);
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jar_starts_each_iteration_from_init_and_sends_cookies_only_where_they_match() {
    let run = jar_run("").await;
    assert_eq!(run.metric("init_cookie_seen", "count"), 6.0);
    assert_eq!(run.metric("previous_iteration_cookie_seen", "count"), 0.0);
    assert_eq!(run.metric("foreign_cookie_seen", "count"), 0.0);
    assert_eq!(
        check(&run, "the redirect hop sent the cookie its 302 set"),
        (2, 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_cookies_reset_keeps_cookies_across_iterations() {
    let run = jar_run("[http]\nno_cookies_reset = true").await;
    assert_eq!(run.metric("init_cookie_seen", "count"), 6.0);
    // Iterations 1 and 2 of each VU see the cookie of the iteration before.
    assert_eq!(run.metric("previous_iteration_cookie_seen", "count"), 4.0);
    assert_eq!(run.metric("foreign_cookie_seen", "count"), 0.0);
}

/// Ten VUs, each about ten requests per second for two seconds, against a target that
/// allows `limit` requests per second per client address.
async fn paced_run(server: &DemoServer, http: &str, xff: bool) -> common::Finished {
    let config = format!(
        r#"
        [scenarios.default]
        executor = "constant-vus"
        vus = 10
        duration = "2s"
        {http}
        "#
    );
    common::run(
        "http_probe",
        &config,
        &[
            ("BASE_URL", &server.base_url()),
            ("MODE", "paced"),
            ("SLEEP_MS", "100"),
            ("XFF", if xff { "1" } else { "0" }),
        ],
    )
    .await
    .unwrap()
}

const TEN_ADDRESSES: &str = "[http]\nlocal_ips = [\"127.0.0.10-127.0.0.19\"]";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_ips_spread_vus_over_source_addresses_and_under_a_per_address_limit() {
    let limited = || DemoConfig {
        rate_limit: Some(40),
        ..DemoConfig::default()
    };
    // From one address: about 100 requests per second against a limit of 40.
    let server = target(limited()).await;
    let run = paced_run(&server, "", false).await;
    let refused = server.responses(429);
    assert_eq!(server.distinct_peers(), 1);
    server.shutdown().await;
    assert!(refused > 0, "one address over the limit got no 429");
    assert_eq!(check(&run, "not rate limited").1, refused);

    // Over ten addresses: about 10 per second each.
    let server = target(limited()).await;
    let run = paced_run(&server, TEN_ADDRESSES, false).await;
    let refused = server.responses(429);
    let peers = server.distinct_peers();
    server.shutdown().await;
    assert_eq!(peers, 10, "the server saw {peers} source addresses");
    assert_eq!(refused, 0, "spread over ten addresses, still rate limited");
    assert_eq!(check(&run, "not rate limited").1, 0);
    assert!(run.metric("http_reqs", "count") > 100.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_ips_count_as_clients_only_behind_a_trusted_proxy() {
    let config = |trusted: bool| DemoConfig {
        rate_limit: Some(40),
        trusted_proxies: if trusted {
            vec![Cidr::parse("127.0.0.1/32").unwrap()]
        } else {
            Vec::new()
        },
        ..DemoConfig::default()
    };
    let server = target(config(true)).await;
    paced_run(&server, "", true).await;
    let trusted_refused = server.responses(429);
    server.shutdown().await;
    let server = target(config(false)).await;
    paced_run(&server, "", true).await;
    let untrusted_refused = server.responses(429);
    server.shutdown().await;
    assert_eq!(
        trusted_refused, 0,
        "X-Forwarded-For from the trusted proxy was not honoured"
    );
    assert!(
        untrusted_refused > 0,
        "X-Forwarded-For from an untrusted peer was believed"
    );
}

async fn setup_run(extra: &str) -> (common::Finished, u64) {
    let server = target(DemoConfig::default()).await;
    let config = format!(
        r#"
        [scenarios.default]
        executor = "per-vu-iterations"
        vus = 1
        iterations = 3
        {extra}
        "#
    );
    let run = common::run(
        "http_probe",
        &config,
        &[("BASE_URL", &server.base_url()), ("MODE", "setup")],
    )
    .await
    .unwrap();
    let served = server.requests_served();
    server.shutdown().await;
    (run, served)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_requests_are_kept_out_of_the_totals_unless_counted() {
    let (run, served) = setup_run("").await;
    // Two requests in setup, one in teardown, three in iterations.
    assert_eq!(served, 6);
    assert_eq!(run.metric("http_reqs", "count"), 3.0);
    assert_eq!(
        run.json["setup"]["http_reqs"]["setup"].as_u64(),
        Some(2),
        "{}",
        run.json["setup"]
    );
    assert_eq!(run.json["setup"]["http_reqs"]["teardown"].as_u64(), Some(1));

    let (run, served) = setup_run("[http]\ncount_setup = true").await;
    assert_eq!(served, 6);
    assert_eq!(run.metric("http_reqs", "count"), 6.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_list_each_name_of_the_notes_plugin_and_add_up_to_http_reqs() {
    let server = target(DemoConfig::default()).await;
    let config = r#"
        [scenarios.browse]
        executor = "constant-vus"
        vus = 3
        duration = "2s"
        exec = "browse"
        graceful_stop = "10s"
    "#;
    let run = common::run("notes", config, &[("BASE_URL", &server.base_url())])
        .await
        .unwrap();
    server.shutdown().await;
    let http_reqs = run.metric("http_reqs", "count") as u64;
    assert!(http_reqs > 0);

    let rows = run.json["endpoints"].as_array().expect("endpoints");
    let names: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["method"].as_str().unwrap(),
                r["name"].as_str().unwrap()
            )
        })
        .collect();
    for expected in [
        "POST /auth/token",
        "GET /groups/{g}/notes",
        "GET /groups/{g}/notes/{id}",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    assert_eq!(rows.len(), 3, "{names:?}");
    let sum: u64 = rows.iter().map(|r| r["count"].as_u64().unwrap()).sum();
    assert_eq!(sum, http_reqs);
    for r in rows {
        let p50 = r["p50"].as_f64().unwrap();
        let p99 = r["p99"].as_f64().unwrap();
        assert!(p50 > 0.0 && p50 <= p99, "{r}");
        assert_eq!(r["error_rate"].as_f64(), Some(0.0), "{r}");
    }

    // endpoints.md has the same rows, and so do summary.txt and report.html.
    let dir = &run.outcome.results_dir;
    let md = std::fs::read_to_string(dir.join("endpoints.md")).unwrap();
    let mut md_sum = 0;
    for name in ["/auth/token", "/groups/{g}/notes", "/groups/{g}/notes/{id}"] {
        let line = md
            .lines()
            .find(|l| l.split('|').nth(2).map(str::trim) == Some(name))
            .unwrap_or_else(|| panic!("no row for {name} in\n{md}"));
        md_sum += line
            .split('|')
            .nth(3)
            .unwrap()
            .trim()
            .parse::<u64>()
            .unwrap();
    }
    assert_eq!(md_sum, http_reqs, "{md}");
    let txt = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
    assert!(
        txt.contains("endpoints:") && txt.contains("GET /groups/{g}/notes/{id}"),
        "{txt}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<h2>Endpoints</h2>") && html.contains("/groups/{g}/notes/{id}"));
}

/// A server on loopback that answers `200` to every request and keeps each request's
/// `User-Agent` (`None` for a request without one).
async fn agent_recorder() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<Option<String>>>>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let keep = keep.clone();
            tokio::spawn(async move {
                let mut pending = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&pending[..end]).into_owned();
                        pending.drain(..end + 4);
                        let agent = head.lines().find_map(|l| {
                            let (name, value) = l.split_once(':')?;
                            name.eq_ignore_ascii_case("user-agent")
                                .then(|| value.trim().to_string())
                        });
                        keep.lock().unwrap().push(agent);
                        let answer = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                        if socket.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                    match socket.read(&mut buf).await {
                        Ok(n) if n > 0 => pending.extend_from_slice(&buf[..n]),
                        _ => return,
                    }
                }
            });
        }
    });
    (url, seen)
}

/// The User-Agent of one run's requests (two iterations of one GET each), with
/// `http` as the run's `[http]` lines and `UA` (a request's own header) if given.
async fn agents_sent(http: &str, per_request: Option<&str>) -> Vec<Option<String>> {
    let (url, seen) = agent_recorder().await;
    let config = format!(
        "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 2\n\
         [http]\n{http}\n"
    );
    let mut env = vec![
        ("BASE_URL", url.as_str()),
        ("MODE", "paced"),
        ("SLEEP_MS", "0"),
    ];
    if let Some(agent) = per_request {
        env.push(("UA", agent));
    }
    let run = common::run("http_probe", &config, &env).await.unwrap();
    assert_eq!(run.metric("http_reqs", "count"), 2.0);
    let seen = seen.lock().unwrap().clone();
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_carry_a_user_agent_the_run_and_each_request_may_change() {
    // By default, as k6 sends `k6/VERSION (https://k6.io/)`, the tool and its version.
    let default = format!(
        "host/{} (WebAssembly load tester)",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        agents_sent("", None).await,
        [Some(default.clone()), Some(default)]
    );
    let custom = Some("shop-test/1.0".to_string());
    assert_eq!(
        agents_sent("user_agent = \"shop-test/1.0\"", None).await,
        [custom.clone(), custom]
    );
    // A request's own header wins over the run's.
    let own = Some("own/2".to_string());
    assert_eq!(
        agents_sent("user_agent = \"shop-test/1.0\"", Some("own/2")).await,
        [own.clone(), own]
    );
    // An empty one sends none.
    assert_eq!(agents_sent("user_agent = \"\"", None).await, [None, None]);
}
