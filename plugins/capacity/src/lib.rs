//! `capacity`: a capacity test of the demo app with three kinds of user in one run.
//!
//! Every VU signs in once (`init`: `POST /auth/token` as `cap-<id>`). Scenarios:
//!
//! - `browse`: list a group's notes, open one, think 1 to 3 s (readers);
//! - `write`: create a note, edit it, delete it, `PAUSE_MIN_MS` to `PAUSE_MAX_MS`
//!   (500 to 1,500) after each step (editors); counters `notes_created`,
//!   `notes_updated`, `notes_deleted`, and `pushes_expected` (the sum of the
//!   application's `X-Live-Recipients` answers);
//! - `sockets`: one live WebSocket per VU, subscribed to `GROUP`, kept across
//!   iterations; each iteration drains it for `DRAIN_MS` (1,000) and counts the note
//!   pushes in `pushes_received`; `sockets_opened` counts connections made.
//!
//! The default config ramps the three in steps, as a capacity test does, with
//! thresholds that abort the run once the p95 latency passes a second.
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`), `GROUP` (1),
//! `PAUSE_MIN_MS`, `PAUSE_MAX_MS`, `DRAIN_MS`.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use loadtest::auth::token;
use loadtest::metrics::counter;
use loadtest::serde::Deserialize;
use loadtest::websocket::{Message, Socket};
use loadtest::{auth, check, http, vu, PluginInfo, Scenario};

/// Used when the run sets no `BASE_URL`.
const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080";

/// The run config used when the operator gives none: the seed's shape, each kind of
/// user ramped in steps, with an abort once latency is past the capacity.
const DEFAULT_CONFIG: &str = r#"[scenarios.browse]
executor = "ramping-vus"
start_vus = 0
stages = [
    { duration = "1m", target = 20 },
    { duration = "1m", target = 40 },
    { duration = "1m", target = 60 },
    { duration = "1m", target = 80 },
]
exec = "browse"

[scenarios.write]
executor = "ramping-vus"
start_vus = 0
stages = [
    { duration = "1m", target = 5 },
    { duration = "1m", target = 10 },
    { duration = "1m", target = 15 },
    { duration = "1m", target = 20 },
]
exec = "write"

[scenarios.sockets]
executor = "ramping-vus"
start_vus = 0
stages = [
    { duration = "1m", target = 50 },
    { duration = "1m", target = 100 },
    { duration = "1m", target = 150 },
    { duration = "1m", target = 200 },
]
exec = "sockets"

[thresholds]
http_req_duration = [
    { threshold = "p(95)<1000", abort_on_fail = true, delay_abort_eval = "30s" },
]
"http_req_duration{scenario:write}" = ["p(95)<500"]
http_req_failed = ["rate<0.01"]
checks = ["rate>0.99"]
"#;

/// How long a new socket waits for its subscription to be acknowledged.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

thread_local! {
    /// A `sockets` VU's live socket; it outlives iterations and closes with the VU.
    static LIVE: RefCell<Option<Socket>> = const { RefCell::new(None) };
}

/// A note (only the fields read here).
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct Note {
    id: u64,
}

/// A message of the live socket (only its type).
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct LiveMessage {
    #[serde(rename = "type")]
    kind: String,
}

/// The scenario.
struct Capacity;

impl Scenario for Capacity {
    fn describe() -> PluginInfo {
        PluginInfo::new("capacity")
            .description(
                "A capacity test in one run: readers browse, editors create, edit and delete notes 0.5-1.5 s apart, and live views hold WebSockets",
            )
            .scenario("browse", "list a group's notes, open one, think 1-3 s")
            .scenario(
                "write",
                "create a note, edit it, delete it, PAUSE_MIN_MS..PAUSE_MAX_MS (0.5-1.5 s) after each step",
            )
            .scenario(
                "sockets",
                "hold one WebSocket subscribed to GROUP across iterations; drain it for DRAIN_MS each iteration",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn init(_data: String) -> Result<(), String> {
        let user = format!("cap-{}", vu::id());
        auth::sign_in_once(&vu::base_url(DEFAULT_BASE_URL), &user)
    }

    fn iteration(scenario: String) -> Result<(), String> {
        loadtest::dispatch(
            &scenario,
            &[("browse", browse), ("write", write), ("sockets", sockets)],
        )
    }
}

/// List, open, think.
fn browse() -> Result<(), String> {
    let base = vu::base_url(DEFAULT_BASE_URL);
    let info = vu::info();
    let mut rng = SplitMix64::new(info.vu_id, info.iteration);
    let group = rng.next() % 10 + 1;
    let res = http::get(format!("{base}/groups/{group}/notes?limit=20"))
        .bearer(token()?)
        .name("/groups/{g}/notes")
        .send()?;
    if !check("list status is 200", res.status() == 200) {
        return Err(format!("listing group {group} answered {}", res.status()));
    }
    let notes: Vec<Note> = res.json()?;
    if let Some(note) = notes.get((rng.next() % notes.len().max(1) as u64) as usize) {
        let res = http::get(format!("{base}/groups/{group}/notes/{}", note.id))
            .bearer(token()?)
            .name("/groups/{g}/notes/{id}")
            .send()?;
        check("note status is 200", res.status() == 200);
    }
    vu::sleep(Duration::from_millis(1000 + rng.next() % 2001));
    Ok(())
}

/// Create, edit, delete, with a pause after each.
fn write() -> Result<(), String> {
    let base = vu::base_url(DEFAULT_BASE_URL);
    let info = vu::info();
    let mut rng = SplitMix64::new(info.vu_id, info.iteration);
    let group = vu::env_parse("GROUP", 1u64);
    let min = vu::env_parse("PAUSE_MIN_MS", 500u64);
    let max = vu::env_parse("PAUSE_MAX_MS", 1500u64).max(min);
    let mut pause = || vu::sleep(Duration::from_millis(min + rng.next() % (max - min + 1)));

    let res = http::post(format!("{base}/groups/{group}/notes"))
        .bearer(token()?)
        .json(&loadtest::serde_json::json!({ "title": "draft", "body": "written by capacity" }))
        .name("/groups/{g}/notes")
        .send()?;
    if !check("create status is 201", res.status() == 201) {
        return Err(format!("creating a note answered {}", res.status()));
    }
    counter("notes_created", 1.0, &[]);
    counter("pushes_expected", recipients(&res), &[]);
    let Note { id } = res.json()?;
    pause();

    let res = http::put(format!("{base}/groups/{group}/notes/{id}"))
        .bearer(token()?)
        .json(&loadtest::serde_json::json!({ "title": "edited", "version": 1 }))
        .name("/groups/{g}/notes/{id}")
        .send()?;
    if check("edit status is 200", res.status() == 200) {
        counter("notes_updated", 1.0, &[]);
        counter("pushes_expected", recipients(&res), &[]);
    }
    pause();

    let res = http::delete(format!("{base}/groups/{group}/notes/{id}"))
        .bearer(token()?)
        .name("/groups/{g}/notes/{id}")
        .send()?;
    if !check("delete status is 204", res.status() == 204) {
        return Err(format!("deleting note {id} answered {}", res.status()));
    }
    counter("notes_deleted", 1.0, &[]);
    counter("pushes_expected", recipients(&res), &[]);
    pause();
    Ok(())
}

/// Keeps this VU's socket open and drains it for `DRAIN_MS`.
fn sockets() -> Result<(), String> {
    let drain_for = Duration::from_millis(vu::env_parse("DRAIN_MS", 1000u64));
    LIVE.with(|live| {
        let mut live = live.borrow_mut();
        if live.is_none() {
            *live = Some(open_socket()?);
            counter("sockets_opened", 1.0, &[]);
        }
        let Some(socket) = live.as_ref() else {
            return Ok(());
        };
        let end = Instant::now() + drain_for;
        let mut pushes = 0u64;
        let outcome = loop {
            let wait = end.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                break Ok(());
            }
            match socket.recv(wait) {
                Ok(Some(Message::Text(text))) if kind_of(&text).starts_with("note.") => pushes += 1,
                Ok(Some(_)) => {}
                Ok(None) => break Ok(()),
                Err(e) => break Err(e.to_string()),
            }
        };
        if pushes > 0 {
            counter("pushes_received", pushes as f64, &[]);
        }
        if !check("socket stays open", outcome.is_ok()) {
            // Reopened by the next iteration.
            *live = None;
        }
        outcome
    })
}

/// Connects, subscribes, waits for the acknowledgement.
fn open_socket() -> Result<Socket, String> {
    let url = format!(
        "{}/ws?token={}",
        ws_base(&vu::base_url(DEFAULT_BASE_URL)),
        token()?
    );
    let socket = Socket::connect_with(&url, &[], &[("name", "/ws")])?;
    socket.send_text(&format!(
        "{{\"subscribe\": [{}]}}",
        vu::env_parse("GROUP", 1u64)
    ))?;
    let deadline = Instant::now() + SUBSCRIBE_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match socket.recv(left)? {
            Some(Message::Text(text)) if kind_of(&text) == "subscribed" => return Ok(socket),
            Some(_) => {}
            None => return Err("no subscription acknowledgement".into()),
        }
    }
}

/// The application's count of sockets a change was pushed to.
fn recipients(res: &http::Response) -> f64 {
    res.header("x-live-recipients")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

/// The `type` of a live message, or "" if it is not one.
fn kind_of(text: &str) -> String {
    loadtest::serde_json::from_str::<LiveMessage>(text)
        .map(|m| m.kind)
        .unwrap_or_default()
}

/// `base` with `ws://` for `http://` (and `wss://` for `https://`).
fn ws_base(base: &str) -> String {
    match base.split_once("://") {
        Some(("https", rest)) => format!("wss://{rest}"),
        Some((_, rest)) => format!("ws://{rest}"),
        None => format!("ws://{base}"),
    }
}

/// A small deterministic pseudo-random sequence (SplitMix64) seeded from the VU and
/// the iteration, so runs are repeatable and need no entropy.
struct SplitMix64(u64);

impl SplitMix64 {
    fn new(vu_id: u64, iteration: u64) -> Self {
        SplitMix64(vu_id.rotate_left(32) ^ iteration)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

loadtest::export!(Capacity);
