//! `demo-visitor`: first visits to the demo app, then a live view, then the next visitor.
//!
//! Each iteration is one new visitor with an empty cache:
//!
//! 1. the page: `GET /app`, then every asset it links (`/assets/...`, 40 files: style
//!    sheets, scripts, fonts, icons, images) as one batch, as a browser loads them in
//!    parallel; the trend `page_load_ms` is the page plus its assets;
//! 2. the app shell's calls, one after the other: sign in (`POST /auth/token`),
//!    `GET /api/config`, `GET /api/me`, the first notes (`GET /groups/1/notes?limit=20`);
//!    the trend `first_visit_ms` runs from the page request to the last of these;
//! 3. a live view: a WebSocket (`/ws`) subscribed to group 1, held for `LIVE_MS`, with
//!    an application ping (`{"ping": n}`, answered by a pong message) every `PING_MS`
//!    and an inbox poll (`GET /inbox`) every `INBOX_MS`;
//!
//! then the socket closes and the VU becomes the next visitor.
//!
//! Counters, for comparing with the demo system's `/metrics`: `visits`,
//! `assets_loaded` (200s) and `asset_bytes`, `app_pings` and `app_pongs`,
//! `inbox_polls`, `pushes_received`.
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`), `LIVE_MS` (20000),
//! `PING_MS` (5000), `INBOX_MS` (10000).

use std::time::{Duration, Instant};

use loadtest::metrics::{counter, trend};
use loadtest::serde::Deserialize;
use loadtest::websocket::{Message, Socket};
use loadtest::{auth, check, http, vu, PluginInfo, Scenario};

/// Used when the run sets no `BASE_URL`.
const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080";

/// The run config used when the operator gives none: the seed's shape, visitors
/// arriving over half a minute, a plateau, and a ramp down; each visitor stays 20 s.
const DEFAULT_CONFIG: &str = r#"[scenarios.visitors]
executor = "ramping-vus"
start_vus = 0
stages = [
    { duration = "30s", target = 20 },
    { duration = "1m", target = 20 },
    { duration = "15s", target = 0 },
]
graceful_ramp_down = "30s"
exec = "visit"

[env]
LIVE_MS = "20000"
PING_MS = "5000"
INBOX_MS = "10000"

[thresholds]
"http_req_duration{name:/app}" = ["p(95)<500"]
"http_req_duration{name:/assets/*}" = ["p(95)<500"]
http_req_failed = ["rate<0.01"]
checks = ["rate>0.99"]
page_load_ms = ["p(95)<2000"]
"#;

/// How long the app waits for a pong before counting the ping as lost.
const PONG_TIMEOUT: Duration = Duration::from_secs(5);

/// A message of the live socket (only the field this scenario reads).
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct LiveMessage {
    #[serde(rename = "type")]
    kind: String,
}

/// The scenario.
struct Visitor;

impl Scenario for Visitor {
    fn describe() -> PluginInfo {
        PluginInfo::new("demo-visitor")
            .description(
                "First visits with an empty cache (the page, its 40 assets as a batch, the app shell's API calls), then a live view over a WebSocket with app pings and inbox polls, then the next visitor",
            )
            .scenario(
                "visit",
                "GET /app and its assets as one batch; sign in, /api/config, /api/me, the first notes; hold /ws for LIVE_MS with a ping every PING_MS and GET /inbox every INBOX_MS",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn iteration(scenario: String) -> Result<(), String> {
        loadtest::dispatch(&scenario, &[("visit", visit)])
    }
}

/// One visitor, from the first request to the end of the live view.
fn visit() -> Result<(), String> {
    let base = vu::base_url(DEFAULT_BASE_URL);
    let started = Instant::now();
    counter("visits", 1.0, &[]);

    // 1. The page and its files.
    let page = http::get(format!("{base}/app")).name("/app").send()?;
    if !check("page status is 200", page.status() == 200) {
        return Err(format!("GET /app answered {}", page.status()));
    }
    let assets = asset_paths(&page.text());
    check("page links assets", !assets.is_empty());
    let requests = assets
        .iter()
        .map(|path| http::get(format!("{base}{path}")).name("/assets/*"))
        .collect();
    let mut loaded = 0u64;
    let mut bytes = 0u64;
    for result in http::batch(requests) {
        match result {
            Ok(res) if res.status() == 200 => {
                loaded += 1;
                bytes += res.body_size();
            }
            Ok(res) => {
                check("asset status is 200", false);
                loadtest::log::warn(format!("asset answered {}", res.status()));
            }
            Err(e) => {
                check("asset status is 200", false);
                loadtest::log::warn(format!("asset failed: {e}"));
            }
        }
    }
    counter("assets_loaded", loaded as f64, &[]);
    counter("asset_bytes", bytes as f64, &[]);
    check("every asset loaded", loaded == assets.len() as u64);
    trend("page_load_ms", ms(started.elapsed()), &[]);

    // 2. The app shell's calls.
    let token = sign_in(&base)?;
    let res = http::get(format!("{base}/api/config"))
        .name("/api/config")
        .send()?;
    check("config status is 200", res.status() == 200);
    let res = http::get(format!("{base}/api/me"))
        .bearer(&token)
        .name("/api/me")
        .send()?;
    check("me status is 200", res.status() == 200);
    let res = http::get(format!("{base}/groups/1/notes?limit=20"))
        .bearer(&token)
        .name("/groups/{g}/notes")
        .send()?;
    check("notes status is 200", res.status() == 200);
    trend("first_visit_ms", ms(started.elapsed()), &[]);

    // 3. The live view.
    live_view(&base, &token)
}

/// Signs the visitor in; its token for the API and the socket.
fn sign_in(base: &str) -> Result<String, String> {
    let info = vu::info();
    auth::sign_in(base, &format!("visitor-{}-{}", info.vu_id, info.iteration))
}

/// Holds the live socket for `LIVE_MS`, pinging and polling the inbox on schedule.
fn live_view(base: &str, token: &str) -> Result<(), String> {
    let live_for = Duration::from_millis(vu::env_parse("LIVE_MS", 20_000u64));
    let ping_every = Duration::from_millis(vu::env_parse("PING_MS", 5_000u64).max(10));
    let inbox_every = Duration::from_millis(vu::env_parse("INBOX_MS", 10_000u64).max(10));
    let ws_url = format!("{}/ws?token={token}", ws_base(base));
    let socket = Socket::connect_with(&ws_url, &[], &[("name", "/ws")])?;
    socket.send_text("{\"subscribe\": [1]}")?;
    let start = Instant::now();
    let end = start + live_for;
    let (mut next_ping, mut next_poll) = (start + ping_every, start + inbox_every);
    let (mut pings, mut pongs, mut polls, mut pushes) = (0u64, 0u64, 0u64, 0u64);
    let mut last_ping = None;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        if now >= next_ping {
            pings += 1;
            socket.send_text(&format!("{{\"ping\": {pings}}}"))?;
            last_ping = Some(now);
            next_ping += ping_every;
        }
        if now >= next_poll {
            let res = http::get(format!("{base}/inbox"))
                .bearer(token)
                .name("/inbox")
                .send()?;
            if check("inbox status is 200", res.status() == 200) {
                polls += 1;
            }
            next_poll += inbox_every;
        }
        let wake = end.min(next_ping).min(next_poll);
        let wait = wake.saturating_duration_since(Instant::now());
        if let Some(Message::Text(text)) = socket.recv(wait)? {
            match kind_of(&text).as_str() {
                "pong" => {
                    pongs += 1;
                    if let Some(sent) = last_ping {
                        trend("app_ping_rtt_ms", ms(sent.elapsed()), &[]);
                    }
                }
                kind if kind.starts_with("note.") => pushes += 1,
                _ => {}
            }
        }
    }
    // Pongs still on their way count too, within a bound.
    let deadline = Instant::now() + PONG_TIMEOUT;
    while pongs < pings {
        let wait = deadline.saturating_duration_since(Instant::now());
        match socket.recv(wait)? {
            Some(Message::Text(text)) if kind_of(&text) == "pong" => pongs += 1,
            Some(_) => {}
            None => break,
        }
    }
    check("every app ping answered", pongs == pings);
    counter("app_pings", pings as f64, &[]);
    counter("app_pongs", pongs as f64, &[]);
    counter("inbox_polls", polls as f64, &[]);
    counter("pushes_received", pushes as f64, &[]);
    let _ = socket.close(1000, "visitor leaves");
    Ok(())
}

/// The `/assets/...` paths a page links, in order, once each.
fn asset_paths(html: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for (at, _) in html.match_indices("\"/assets/") {
        let rest = &html[at + 1..];
        if let Some(end) = rest.find('"') {
            let path = rest[..end].to_owned();
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    paths
}

/// The `type` of a live message, or "" if it is not one.
fn kind_of(text: &str) -> String {
    loadtest::serde_json::from_str::<LiveMessage>(text)
        .map(|m| m.kind)
        .unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `base` with `ws://` for `http://` (and `wss://` for `https://`).
fn ws_base(base: &str) -> String {
    match base.split_once("://") {
        Some(("https", rest)) => format!("wss://{rest}"),
        Some((_, rest)) => format!("ws://{rest}"),
        None => format!("ws://{base}"),
    }
}

loadtest::export!(Visitor);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_linked_asset_once() {
        let html = r#"<link href="/assets/a.css"><script src="/assets/b.js"></script><img src="/assets/a.css"><a href="/other">"#;
        assert_eq!(asset_paths(html), ["/assets/a.css", "/assets/b.js"]);
    }
}
