//! `sockets`: live views. Many users keep many browser tabs open on the demo app's
//! live-updates WebSocket while one user edits notes; every push each tab receives is
//! counted and compared with the pushes the application says it sent.
//!
//! Scenarios (both sign in once per VU in `init`, as user `vu-<id>`):
//!
//! - `listeners`: each VU opens `TABS` sockets to `GET /ws?token=...` in its first
//!   iteration, subscribes each to group `GROUP` and keeps them across iterations (in a
//!   `thread_local!`, since the VU's instance lives as long as the VU). Every iteration
//!   drains all of its sockets for `DRAIN_MS` and adds the note pushes it found to the
//!   counter `pushes_received`. A socket that fails is counted (`socket stays open`
//!   check) and reopened in the next iteration.
//! - `writer`: once a second, creates a note in `GROUP` and deletes it. The application
//!   answers each change with `X-Live-Recipients: N`, the sockets it pushed that change
//!   to; their sum is the counter `pushes_expected`.
//!
//! The default config holds 1,000 sockets (50 VUs × 20 tabs) for two minutes; the
//! writer starts 10 s in and stops 5 s before the listeners, so the summary's
//! `pushes_received` should equal `pushes_expected`.
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`), `TABS` (20; the demo app
//! allows 20 sockets per user), `GROUP` (1), `DRAIN_MS` (1000: one listener iteration),
//! `POLL_MS` (200: pause between two passes over a listener's sockets), `WRITE_MS`
//! (1000: the writer's pace).
//!
//! Several targets: `TARGETS` lists base URLs separated by commas (it replaces
//! `BASE_URL`). One target process holds only so many sockets (its open-file limit),
//! so 100,000 sockets are spread over several: listener VU `id` uses target
//! `(id - 1) % count`, and the writer changes a note in every target each round,
//! signed in at each, so `pushes_expected` sums every target's recipients.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use loadtest::metrics::counter;
use loadtest::serde::Deserialize;
use loadtest::websocket::{Message, Socket, WsError};
use loadtest::{auth, check, http, vu, PluginInfo, Scenario};

/// Used when the run sets no `BASE_URL`.
const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080";

/// The run config used when the operator gives none.
const DEFAULT_CONFIG: &str = r#"[scenarios.listeners]
executor = "constant-vus"
vus = 50
duration = "2m"
exec = "listeners"

[scenarios.writer]
executor = "constant-vus"
vus = 1
start_time = "10s"
duration = "1m45s"
exec = "writer"
"#;

/// How long a tab waits for the application to acknowledge its subscription.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

thread_local! {
    /// A listener's open tabs; they outlive iterations and close when the VU ends.
    static TABS: RefCell<Vec<Socket>> = const { RefCell::new(Vec::new()) };
    /// The writer's token at each target (signed in there on first use).
    static WRITER_TOKENS: RefCell<Vec<Option<String>>> = const { RefCell::new(Vec::new()) };
}

/// A message of the live-updates socket (only the field this scenario reads).
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct LiveMessage {
    #[serde(rename = "type")]
    kind: String,
}

/// A created note (only its id).
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct Created {
    id: u64,
}

/// The scenario.
struct Sockets;

impl Scenario for Sockets {
    fn describe() -> PluginInfo {
        PluginInfo::new("sockets")
            .description(
                "Live views: users hold many WebSockets across iterations while one user edits notes; pushes received vs expected",
            )
            .scenario(
                "listeners",
                "open TABS sockets subscribed to GROUP once, then drain them every iteration",
            )
            .scenario(
                "writer",
                "once a second, create and delete a note in GROUP",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn init(_data: String) -> Result<(), String> {
        auth::sign_in_once(&my_target(), &user())
    }

    fn iteration(scenario: String) -> Result<(), String> {
        loadtest::dispatch(&scenario, &[("listeners", listen), ("writer", write)])
    }
}

/// Opens the missing tabs, then drains every tab for `DRAIN_MS`.
fn listen() -> Result<(), String> {
    let started = Instant::now();
    let wanted = vu::env_parse("TABS", 20u64) as usize;
    let drain_for = Duration::from_millis(vu::env_parse("DRAIN_MS", 1000u64));
    let poll_every = Duration::from_millis(vu::env_parse("POLL_MS", 200u64).max(1));
    TABS.with(|tabs| {
        let mut tabs = tabs.borrow_mut();
        let mut opened = Ok(());
        while tabs.len() < wanted {
            match open_tab() {
                Ok(tab) => tabs.push(tab),
                Err(e) => {
                    opened = Err(e);
                    break;
                }
            }
        }
        let mut pushes = 0u64;
        loop {
            pushes += drain(&mut tabs);
            let elapsed = started.elapsed();
            if elapsed >= drain_for {
                break;
            }
            vu::sleep(poll_every.min(drain_for - elapsed));
        }
        if pushes > 0 {
            counter("pushes_received", pushes as f64, &[]);
        }
        for _ in tabs.iter() {
            check("socket stays open", true);
        }
        opened
    })
}

/// Opens one tab: connect, subscribe, wait for the acknowledgement.
fn open_tab() -> Result<Socket, String> {
    let token = auth::token()?;
    let url = format!("{}/ws?token={token}", ws_url(&my_target()));
    let socket = Socket::connect_with(&url, &[], &[("name", "/ws")])?;
    let group = vu::env_parse("GROUP", 1u64);
    socket.send_text(&format!("{{\"subscribe\": [{group}]}}"))?;
    let deadline = Instant::now() + SUBSCRIBE_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match socket.recv(left)? {
            Some(Message::Text(text)) if kind_of(&text) == "subscribed" => return Ok(socket),
            Some(Message::Text(text)) if kind_of(&text) == "error" => {
                return Err(format!("subscription refused: {text}"))
            }
            Some(_) => {}
            None => {
                return Err(format!(
                    "no subscription acknowledgement within {SUBSCRIBE_TIMEOUT:?}"
                ))
            }
        }
    }
}

/// Takes every message already received on every tab; returns the note pushes.
/// A tab that failed is dropped (and reopened by the next iteration).
fn drain(tabs: &mut Vec<Socket>) -> u64 {
    let mut pushes = 0;
    tabs.retain(|tab| loop {
        match tab.recv(Duration::ZERO) {
            Ok(Some(Message::Text(text))) => {
                if kind_of(&text).starts_with("note.") {
                    pushes += 1;
                }
            }
            Ok(Some(Message::Binary(_))) => {}
            Ok(None) => return true,
            Err(e) => {
                check("socket stays open", false);
                let reason = match &e {
                    WsError::Closed(..) => "closed",
                    _ => "broken",
                };
                counter("tabs_lost", 1.0, &[("reason", reason)]);
                return false;
            }
        }
    });
    pushes
}

/// One round of writes every `WRITE_MS`: a note changed in every target. The pace
/// holds when a write fails, so a failing target is not hammered in a tight loop.
fn write() -> Result<(), String> {
    let started = Instant::now();
    let every = Duration::from_millis(vu::env_parse("WRITE_MS", 1000u64));
    // Every target gets its write even if one before it failed; the first error is
    // the iteration's.
    let mut result = Ok(());
    for (i, base) in targets().iter().enumerate() {
        let written = writer_token(i, base).and_then(|token| change_a_note(base, &token));
        result = result.and(written);
    }
    if let Some(rest) = every.checked_sub(started.elapsed()) {
        vu::sleep(rest);
    }
    result
}

/// The writer's token at target `i` (`base`): the one `init` got at this VU's own
/// target, else signed in there once.
fn writer_token(i: usize, base: &str) -> Result<String, String> {
    if *base == my_target() {
        return auth::token().map(str::to_owned);
    }
    WRITER_TOKENS.with(|tokens| {
        let mut tokens = tokens.borrow_mut();
        if tokens.len() <= i {
            tokens.resize(i + 1, None);
        }
        if let Some(token) = &tokens[i] {
            return Ok(token.clone());
        }
        let token = auth::sign_in(base, &user())?;
        tokens[i] = Some(token.clone());
        Ok(token)
    })
}

/// Creates a note in `GROUP` at `base` and deletes it, counting the pushes the app sent.
fn change_a_note(base: &str, token: &str) -> Result<(), String> {
    let group = vu::env_parse("GROUP", 1u64);
    let info = vu::info();
    let res = http::post(format!("{base}/groups/{group}/notes"))
        .bearer(token)
        .json(&loadtest::serde_json::json!({
            "title": format!("live {}", info.iteration),
            "body": "written by the sockets scenario",
        }))
        .name("/groups/{g}/notes")
        .send()?;
    if !check("create status is 201", res.status() == 201) {
        return Err(format!("creating a note answered {}", res.status()));
    }
    // Counted at once: the pushes went out even if the delete below fails.
    counter("pushes_expected", recipients(&res) as f64, &[]);
    let Created { id } = res.json()?;
    let res = http::delete(format!("{base}/groups/{group}/notes/{id}"))
        .bearer(token)
        .name("/groups/{g}/notes/{id}")
        .send()?;
    if !check("delete status is 204", res.status() == 204) {
        return Err(format!("deleting note {id} answered {}", res.status()));
    }
    counter("pushes_expected", recipients(&res) as f64, &[]);
    Ok(())
}

/// The application's count of sockets a change was pushed to.
fn recipients(res: &http::Response) -> u64 {
    res.header("x-live-recipients")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// The `type` of a live message, or "" if it is not one.
fn kind_of(text: &str) -> String {
    loadtest::serde_json::from_str::<LiveMessage>(text)
        .map(|m| m.kind)
        .unwrap_or_default()
}

/// This VU's user name at every target.
fn user() -> String {
    format!("vu-{}", vu::id())
}

/// The targets' base URLs: `TARGETS` (comma-separated), else `BASE_URL`.
fn targets() -> Vec<String> {
    let listed: Vec<String> = vu::env("TARGETS")
        .unwrap_or_default()
        .split(',')
        .map(|t| t.trim().trim_end_matches('/').to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    if listed.is_empty() {
        vec![vu::base_url(DEFAULT_BASE_URL)]
    } else {
        listed
    }
}

/// The target of this VU's sockets (and of its sign-in): VUs are dealt round-robin.
fn my_target() -> String {
    let mut targets = targets();
    let i = (vu::id().saturating_sub(1) % targets.len() as u64) as usize;
    targets.swap_remove(i)
}

/// A base URL with `ws://` for `http://` (and `wss://` for `https://`).
fn ws_url(base: &str) -> String {
    match base.split_once("://") {
        Some(("https", rest)) => format!("wss://{rest}"),
        Some((_, rest)) => format!("ws://{rest}"),
        None => format!("ws://{base}"),
    }
}

loadtest::export!(Sockets);
