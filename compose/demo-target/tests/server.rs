//! End-to-end tests against a real `DemoServer` on 127.0.0.1, through hyper's client.

use std::time::{Duration, Instant};

use bytes::Bytes;
use demo_target::{DemoConfig, DemoServer, Faults};
use http_body_util::{BodyExt, Full};
use hyper::{HeaderMap, Method, Request, StatusCode};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

struct Harness {
    server: DemoServer,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Harness {
    async fn start(faults: Faults) -> Harness {
        Self::with(DemoConfig {
            faults,
            ..DemoConfig::default()
        })
        .await
    }

    async fn with(config: DemoConfig) -> Harness {
        let server = DemoServer::start("127.0.0.1:0".parse().unwrap(), config)
            .await
            .unwrap();
        let client = Client::builder(TokioExecutor::new()).build_http();
        Harness { server, client }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.server.base_url()));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req.body(Full::new(Bytes::from(body.to_owned()))).unwrap();
        let resp = self.client.request(req).await.unwrap();
        let (parts, body) = resp.into_parts();
        Reply {
            status: parts.status,
            headers: parts.headers,
            body: body.collect().await.unwrap().to_bytes(),
        }
    }

    async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, &[], "").await
    }

    async fn token(&self) -> String {
        let reply = self
            .send(Method::POST, "/auth/token", &[], r#"{"user":"alice"}"#)
            .await;
        assert_eq!(reply.status, StatusCode::OK);
        reply.json()["token"].as_str().unwrap().to_owned()
    }
}

#[tokio::test]
async fn notes_crud_round_trip_with_auth() {
    let h = Harness::start(Faults::default()).await;
    let bearer = format!("Bearer {}", h.token().await);
    let auth = [("authorization", bearer.as_str())];

    let list = h.send(Method::GET, "/groups/1/notes", &auth, "").await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.headers["content-type"], "application/json");
    let notes = list.json();
    assert_eq!(notes.as_array().unwrap().len(), 20);
    assert!(notes.as_array().unwrap().iter().all(|n| n["group"] == 1));

    let created = h
        .send(
            Method::POST,
            "/groups/3/notes",
            &auth,
            r#"{"title":"t","body":"b"}"#,
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let note = created.json();
    assert_eq!(
        (note["group"].clone(), note["version"].clone()),
        (json!(3), json!(1))
    );
    let id = note["id"].as_u64().unwrap();
    assert!(id > 200, "ids must not collide with the 200 seeded notes");
    let path = format!("/groups/3/notes/{id}");

    let fetched = h.send(Method::GET, &path, &auth, "").await;
    assert_eq!(fetched.status, StatusCode::OK);
    assert_eq!(fetched.json(), note);
    let wrong_group = h
        .send(Method::GET, &format!("/groups/4/notes/{id}"), &auth, "")
        .await;
    assert_eq!(wrong_group.status, StatusCode::NOT_FOUND);

    let updated = h
        .send(Method::PUT, &path, &auth, r#"{"title":"t2","body":"b2"}"#)
        .await;
    assert_eq!(updated.status, StatusCode::OK);
    let updated = updated.json();
    assert_eq!(
        (updated["title"].clone(), updated["version"].clone()),
        (json!("t2"), json!(2))
    );
    let stale = h
        .send(Method::PUT, &path, &auth, r#"{"title":"x","version":1}"#)
        .await;
    assert_eq!(stale.status, StatusCode::CONFLICT);

    let bad = h
        .send(Method::POST, "/groups/3/notes", &auth, "{not json")
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.json()["error"]
        .as_str()
        .unwrap()
        .contains("invalid JSON"));

    let deleted = h.send(Method::DELETE, &path, &auth, "").await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert!(deleted.body.is_empty());
    assert_eq!(
        h.send(Method::GET, &path, &auth, "").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        h.send(Method::DELETE, &path, &auth, "").await.status,
        StatusCode::NOT_FOUND
    );

    let wrong_method = h.send(Method::PATCH, &path, &auth, "").await;
    assert_eq!(wrong_method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong_method.headers["allow"], "GET, PUT, DELETE");
    assert_eq!(h.get("/nowhere").await.status, StatusCode::NOT_FOUND);
    assert_eq!(h.get("/groups/x/notes").await.status, StatusCode::NOT_FOUND);
    let health = h.get("/health").await;
    assert_eq!(
        (health.status, health.json()),
        (StatusCode::OK, json!({"status": "ok"}))
    );
}

#[tokio::test]
async fn notes_need_a_known_bearer_token() {
    let h = Harness::start(Faults::default()).await;
    let none = h.get("/groups/1/notes").await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    assert!(none.json()["error"].is_string());
    let bogus = h
        .send(
            Method::POST,
            "/groups/1/notes",
            &[("authorization", "Bearer nope")],
            r#"{"title":"t"}"#,
        )
        .await;
    assert_eq!(bogus.status, StatusCode::UNAUTHORIZED);
    let metrics = String::from_utf8(h.get("/metrics").await.body.to_vec()).unwrap();
    assert!(
        metrics.contains("\ndemo_notes 200\n"),
        "unauthorised POST created a note:\n{metrics}"
    );
    assert!(
        metrics.contains("demo_requests_by_status{status=\"401\"} 2\n"),
        "{metrics}"
    );
    let bad_user = h
        .send(Method::POST, "/auth/token", &[], r#"{"user":""}"#)
        .await;
    assert_eq!(bad_user.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn static_files_have_etags_and_answer_304() {
    let h = Harness::start(Faults::default()).await;
    let index = h.get("/").await;
    assert_eq!(index.status, StatusCode::OK);
    let html = String::from_utf8(index.body.to_vec()).unwrap();
    for asset in ["/static/app.css", "/static/app.js", "/static/logo.svg"] {
        assert!(html.contains(asset), "index.html must link {asset}");
        assert_eq!(h.get(asset).await.status, StatusCode::OK, "{asset}");
    }

    let css = h.get("/static/app.css").await;
    assert_eq!(css.headers["cache-control"], "public, max-age=3600");
    assert_eq!(css.headers["content-type"], "text/css; charset=utf-8");
    let etag = css.headers["etag"].to_str().unwrap().to_owned();
    assert!(
        etag.starts_with('"') && !etag.starts_with("W/"),
        "strong ETag: {etag}"
    );

    let cached = h
        .send(
            Method::GET,
            "/static/app.css",
            &[("if-none-match", &etag)],
            "",
        )
        .await;
    assert_eq!(cached.status, StatusCode::NOT_MODIFIED);
    assert!(cached.body.is_empty());
    assert_eq!(cached.headers["etag"], etag.as_str());

    let other = h
        .send(
            Method::GET,
            "/static/app.css",
            &[("if-none-match", "\"stale\"")],
            "",
        )
        .await;
    assert_eq!(other.status, StatusCode::OK);
    assert_eq!(other.body, css.body);
    assert_eq!(
        h.get("/static/missing.txt").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn requests_served_counts_every_request_exactly() {
    let h = Harness::start(Faults::default()).await;
    assert_eq!(h.server.requests_served(), 0);
    let paths = ["/health", "/", "/nowhere", "/groups/1/notes", "/metrics"];
    for i in 0..25 {
        h.get(paths[i % paths.len()]).await;
    }
    assert_eq!(h.server.requests_served(), 25);
    // The pooled client keeps its connection alive between sequential requests.
    let connections = h.server.connections_accepted();
    assert!((1..25).contains(&connections), "{connections} connections");
    let metrics = String::from_utf8(h.get("/metrics").await.body.to_vec()).unwrap();
    assert!(metrics.contains("\ndemo_requests_total 26\n"), "{metrics}");
    assert!(metrics.contains(&format!("\ndemo_connections_total {connections}\n")));
}

#[tokio::test]
async fn latency_fault_delays_requests_but_not_health() {
    let h = Harness::start(Faults::default()).await;
    let latency = Duration::from_millis(300);
    h.server.set_faults(Faults {
        latency,
        ..Faults::default()
    });
    let started = Instant::now();
    assert_eq!(h.get("/static/app.js").await.status, StatusCode::OK);
    assert!(started.elapsed() >= latency, "took {:?}", started.elapsed());

    let started = Instant::now();
    assert_eq!(h.get("/health").await.status, StatusCode::OK);
    assert!(
        started.elapsed() < latency,
        "health took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn stall_window_holds_requests_until_it_ends() {
    // Windows at 1s..1.8s, 2s..2.8s, … after server start, which is no earlier than
    // `before`, so a request sent at `before + 1.1s` cannot finish before `before + 1.8s`.
    let before = Instant::now();
    let h = Harness::start(Faults {
        stall_every: Some(Duration::from_secs(1)),
        stall_for: Duration::from_millis(800),
        ..Faults::default()
    })
    .await;
    let quick = Instant::now();
    assert_eq!(h.get("/").await.status, StatusCode::OK);
    assert!(
        quick.elapsed() < Duration::from_millis(500),
        "stalled outside a window"
    );

    tokio::time::sleep_until((before + Duration::from_millis(1100)).into()).await;
    let sent = Instant::now();
    assert_eq!(h.get("/").await.status, StatusCode::OK);
    assert!(Instant::now() >= before + Duration::from_millis(1800));
    assert!(
        sent.elapsed() >= Duration::from_millis(400),
        "took {:?}",
        sent.elapsed()
    );
}

#[tokio::test]
async fn error_rate_one_fails_everything_except_health_and_admin() {
    let h = Harness::start(Faults::default()).await;
    let put = h
        .send(
            Method::PUT,
            "/admin/faults",
            &[],
            r#"{"latency_ms":0,"stall_every_ms":null,"stall_for_ms":0,"error_rate":1.0}"#,
        )
        .await;
    assert_eq!(put.status, StatusCode::OK);
    assert_eq!(h.get("/admin/faults").await.json()["error_rate"], 1.0);

    for path in ["/", "/groups/1/notes", "/nowhere"] {
        let reply = h.get(path).await;
        assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR, "{path}");
        assert_eq!(reply.headers["content-type"], "application/json");
    }
    assert_eq!(h.get("/health").await.status, StatusCode::OK);

    let invalid = h
        .send(Method::PUT, "/admin/faults", &[], r#"{"error_rate":2}"#)
        .await;
    assert_eq!(invalid.status, StatusCode::BAD_REQUEST);

    h.server.set_faults(Faults::default());
    let metrics = String::from_utf8(h.get("/metrics").await.body.to_vec()).unwrap();
    assert!(
        metrics.contains("demo_requests_by_status{status=\"500\"} 3\n"),
        "{metrics}"
    );
}

#[tokio::test]
async fn admin_hold_keeps_the_memory_it_takes() {
    let h = Harness::start(Faults::default()).await;
    let rss_kib = || -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    };
    let before = rss_kib();
    let held = h.send(Method::POST, "/admin/hold?mb=16", &[], "").await;
    assert_eq!(held.status, StatusCode::OK);
    assert_eq!(held.json()["held_mb"], 16);
    // Written, so resident: the server runs in this process.
    assert!(rss_kib() >= before + 12 * 1024, "{before} -> {}", rss_kib());
    assert_eq!(
        h.send(Method::POST, "/admin/hold?mb=1", &[], "")
            .await
            .json()["held_mb"],
        17
    );
    for bad in ["/admin/hold", "/admin/hold?mb=0", "/admin/hold?mb=99999"] {
        let reply = h.send(Method::POST, bad, &[], "").await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{bad}");
    }
    assert_eq!(
        h.get("/admin/hold?mb=1").await.status,
        StatusCode::METHOD_NOT_ALLOWED
    );
}

#[tokio::test]
async fn admin_hold_is_capped_in_all() {
    let h = Harness::with(DemoConfig {
        max_held_mb: 20,
        ..DemoConfig::default()
    })
    .await;
    let path = |mb: u32| format!("/admin/hold?mb={mb}");
    assert_eq!(
        h.send(Method::POST, &path(16), &[], "").await.status,
        StatusCode::OK
    );
    let refused = h.send(Method::POST, &path(8), &[], "").await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    let why = refused.json()["error"].as_str().unwrap().to_owned();
    assert!(
        why.contains("already holding 16 MiB") && why.contains("20 MiB"),
        "{why}"
    );
    assert_eq!(
        h.send(Method::POST, &path(4), &[], "").await.json()["held_mb"],
        20,
        "what fits is still held"
    );
}

#[tokio::test]
async fn admin_is_refused_to_peers_outside_admin_from() {
    // 127.0.0.1 is outside 10.0.0.0/8: every /admin/* call is refused, the rest served.
    let h = Harness::with(DemoConfig {
        admin_from: vec![demo_target::Cidr::parse("10.0.0.0/8").unwrap()],
        ..DemoConfig::default()
    })
    .await;
    for path in ["/admin/hold?mb=1", "/admin/outbox/claim?max=1&wait_ms=0"] {
        let reply = h.send(Method::POST, path, &[], "").await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{path}");
        assert!(reply.json()["error"]
            .as_str()
            .unwrap()
            .contains("--admin-from"));
    }
    assert_eq!(h.get("/health").await.status, StatusCode::OK);
    let open = Harness::with(DemoConfig {
        admin_from: vec![demo_target::Cidr::parse("127.0.0.0/8").unwrap()],
        ..DemoConfig::default()
    })
    .await;
    let held = open.send(Method::POST, "/admin/hold?mb=1", &[], "").await;
    assert_eq!(held.status, StatusCode::OK);
}

#[tokio::test]
async fn shutdown_stops_accepting() {
    let h = Harness::start(Faults::default()).await;
    let addr = h.server.addr();
    assert_eq!(
        h.server.base_url(),
        format!("http://127.0.0.1:{}", addr.port())
    );
    assert_eq!(h.get("/health").await.status, StatusCode::OK);
    tokio::time::timeout(Duration::from_secs(10), h.server.shutdown())
        .await
        .expect("shutdown finishes");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_set_over_admin_queues_then_sheds_with_retry_after() {
    let h = Harness::start(Faults::default()).await;
    let set = h
        .send(
            Method::PUT,
            "/admin/faults",
            &[],
            r#"{"workers":1,"service_time_ms":400,"queue":1}"#,
        )
        .await;
    assert_eq!(set.status, StatusCode::OK);
    let now = h.get("/admin/faults").await.json();
    assert_eq!(now["workers"], 1);
    assert_eq!(now["service_time_ms"], 400.0);
    assert_eq!(now["queue"], 1);

    // One served, one waiting for it, the third shed at once.
    let began = Instant::now();
    let (a, b, c) = tokio::join!(h.get("/health-not"), h.get("/health-not"), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        h.get("/health-not").await
    });
    let mut statuses = [a.status, b.status, c.status];
    statuses.sort();
    assert_eq!(
        statuses,
        [
            StatusCode::NOT_FOUND,
            StatusCode::NOT_FOUND,
            StatusCode::SERVICE_UNAVAILABLE
        ]
    );
    assert_eq!(c.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(c.headers["retry-after"], "1");
    // The two served ones took a service time each, one after the other.
    assert!(
        began.elapsed() >= Duration::from_millis(790),
        "{:?}",
        began.elapsed()
    );
    // Health and admin stay outside the limit.
    let quick = Instant::now();
    assert_eq!(h.get("/health").await.status, StatusCode::OK);
    assert!(quick.elapsed() < Duration::from_millis(300));

    let off = h
        .send(Method::PUT, "/admin/faults", &[], r#"{"workers":0}"#)
        .await;
    assert_eq!(off.status, StatusCode::OK);
    assert!(off.json()["workers"].is_null());
    let bad = h
        .send(
            Method::PUT,
            "/admin/faults",
            &[],
            r#"{"workers":2,"service_time_ms":-1}"#,
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

/// A series' value in a Prometheus text exposition (0 if absent).
fn series(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn handling_time_histogram_counts_each_route_served() {
    let h = Harness::start(Faults::default()).await;
    let shell = h.get("/app").await;
    let html = String::from_utf8(shell.body.to_vec()).unwrap();
    let assets: Vec<String> = html
        .split("\"/assets/")
        .skip(1)
        .map(|rest| format!("/assets/{}", rest.split('"').next().unwrap()))
        .collect();
    assert!(assets.len() >= 20, "{} assets in {html}", assets.len());
    // At once, as a visitor's batch fetches them.
    let replies = futures::future::join_all(assets.iter().map(|p| h.get(p))).await;
    assert!(replies.iter().all(|r| r.status == StatusCode::OK));
    for _ in 0..3 {
        h.token().await;
    }
    h.get("/nowhere/at/all").await;

    let metrics = String::from_utf8(h.get("/metrics").await.body.to_vec()).unwrap();
    let count = |labels: &str| {
        series(
            &metrics,
            &format!("demo_request_duration_seconds_count{{{labels}}}"),
        )
    };
    let served = series(&metrics, "demo_assets_served_total");
    assert_eq!(served, assets.len() as f64, "{metrics}");
    assert_eq!(count("method=\"GET\",route=\"/assets/*\""), served);
    assert_eq!(count("method=\"GET\",route=\"/app\""), 1.0);
    assert_eq!(count("method=\"POST\",route=\"/auth/token\""), 3.0);
    assert_eq!(count("method=\"GET\",route=\"other\""), 1.0);
    // Every request is in one series: the counts add up to the requests received,
    // but for this scrape, timed once it is answered.
    let timed: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("demo_request_duration_seconds_count{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!(timed + 1.0, series(&metrics, "demo_requests_total"));
}

#[tokio::test]
async fn handling_time_includes_an_injected_latency() {
    let h = Harness::start(Faults {
        latency: Duration::from_millis(30),
        ..Faults::default()
    })
    .await;
    for _ in 0..4 {
        h.get("/api/config").await;
    }
    let metrics = String::from_utf8(h.get("/metrics").await.body.to_vec()).unwrap();
    let labels = "method=\"GET\",route=\"/api/config\"";
    let bucket = |le: &str| {
        series(
            &metrics,
            &format!("demo_request_duration_seconds_bucket{{{labels},le=\"{le}\"}}"),
        )
    };
    // Handled in 30 ms and a little more: none at or below 25 ms, all by 10 s.
    assert_eq!(bucket("0.025"), 0.0, "{metrics}");
    assert_eq!(bucket("10"), 4.0, "{metrics}");
    let sum = series(
        &metrics,
        &format!("demo_request_duration_seconds_sum{{{labels}}}"),
    );
    assert!(
        (0.12..2.0).contains(&sum),
        "sum {sum} s for 4 requests of 30 ms"
    );
}
