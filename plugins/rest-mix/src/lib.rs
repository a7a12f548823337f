//! `rest-mix`: users of the demo app's REST API, pages a few seconds apart, with
//! short-lived access tokens renewed by refresh tokens.
//!
//! `setup` reads `GET /api/config` for the groups to use (the small seeded groups, and
//! the large ones when the demo system was started with `--large-groups`). Each
//! iteration is one user's life:
//!
//! 1. sign up (`POST /accounts`): an access token valid `expires_in` seconds and a
//!    single-use refresh token;
//! 2. `PAGES` pages, `THINK_MIN_MS` to `THINK_MAX_MS` apart, each one of: browse (a page
//!    of a group's notes, then one note), search (`GET /groups/{g}/search?q=...`, in a
//!    large group when there is one), or create a note; 5 : 3 : 2;
//!    before a page, an access token that expires within `REFRESH_MARGIN_MS` is renewed
//!    (`POST /auth/refresh`); a 401 anyway (it expired in flight) is counted in
//!    `expired_401`, and the token is renewed and the request retried once;
//! 3. delete the account (`DELETE /accounts/me`).
//!
//! Counters for comparing with the demo system's `/metrics`: `signups`, `refreshes`,
//! `deletions`, `searches`, `notes_created`, `expired_401`.
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`), `PAGES` (10),
//! `THINK_MIN_MS` (2000), `THINK_MAX_MS` (4000), `REFRESH_MARGIN_MS` (1000).

use std::cell::RefCell;
use std::time::{Duration, Instant};

use loadtest::metrics::counter;
use loadtest::serde::{Deserialize, Serialize};
use loadtest::{check, http, vu, PluginInfo, Scenario};

/// Used when the run sets no `BASE_URL`.
const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080";

/// The run config used when the operator gives none: the seed's shape, a ramp to 20
/// users, a plateau, a ramp down that lets each user finish (and delete its account).
const DEFAULT_CONFIG: &str = r#"[scenarios.api]
executor = "ramping-vus"
start_vus = 0
stages = [
    { duration = "30s", target = 20 },
    { duration = "2m", target = 20 },
    { duration = "30s", target = 0 },
]
graceful_ramp_down = "45s"
graceful_stop = "45s"
exec = "api_user"

[env]
PAGES = "10"
THINK_MIN_MS = "2000"
THINK_MAX_MS = "4000"

[thresholds]
http_req_duration = ["p(95)<300"]
"http_req_duration{name:/groups/{g}/search}" = ["p(95)<800"]
"http_req_duration{name:/auth/refresh}" = ["p(95)<200"]
http_req_failed = ["rate<0.01"]
checks = ["rate>0.99"]
"#;

/// Search terms: words of the demo system's large groups, common to rare.
const TERMS: [&str; 8] = [
    "alpha", "cache", "error", "graph", "index", "kernel", "network", "pager",
];

/// What `setup` hands every VU.
#[derive(Serialize, Deserialize, Default)]
#[serde(crate = "loadtest::serde")]
struct Groups {
    groups: Vec<u32>,
    large_groups: Vec<u32>,
}

/// A token pair of the account API.
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct TokenPair {
    access_token: String,
    refresh_token: String,
    expires_in: f64,
}

/// A note (only its id).
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct Note {
    id: u64,
}

/// A search answer (only the count).
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct Found {
    total: u64,
}

thread_local! {
    /// The groups from `setup`, kept by `init`.
    static GROUPS: RefCell<Groups> = RefCell::new(Groups::default());
}

/// The signed-up user's tokens and when the access token expires.
struct Session {
    pair: TokenPair,
    expires: Instant,
}

impl Session {
    fn new(pair: TokenPair) -> Self {
        let expires = Instant::now() + Duration::from_secs_f64(pair.expires_in.max(0.0));
        Session { pair, expires }
    }

    /// Renews the pair: the old refresh token is spent.
    fn refresh(&mut self, base: &str) -> Result<(), String> {
        let res = http::post(format!("{base}/auth/refresh"))
            .json(&loadtest::serde_json::json!({ "refresh_token": self.pair.refresh_token }))
            .name("/auth/refresh")
            .send()?;
        if !check("refresh status is 200", res.status() == 200) {
            return Err(format!("refresh answered {}: {}", res.status(), res.text()));
        }
        counter("refreshes", 1.0, &[]);
        *self = Session::new(res.json()?);
        Ok(())
    }

    /// Renews the pair if the access token is about to expire.
    fn fresh(&mut self, base: &str) -> Result<&str, String> {
        let margin = Duration::from_millis(vu::env_parse("REFRESH_MARGIN_MS", 1000u64));
        if Instant::now() + margin >= self.expires {
            self.refresh(base)?;
        }
        Ok(&self.pair.access_token)
    }

    /// Sends `make(token)`; on a 401 (the token expired in flight) renews and retries once.
    fn send(
        &mut self,
        base: &str,
        make: impl Fn(&str) -> http::RequestBuilder,
    ) -> Result<http::Response, String> {
        let res = make(self.fresh(base)?).send()?;
        if res.status() != 401 {
            return Ok(res);
        }
        counter("expired_401", 1.0, &[]);
        self.refresh(base)?;
        Ok(make(&self.pair.access_token).send()?)
    }
}

/// The scenario.
struct RestMix;

impl Scenario for RestMix {
    fn describe() -> PluginInfo {
        PluginInfo::new("rest-mix")
            .description(
                "REST API users: sign up, pages a few seconds apart (browse, search, create) with access tokens renewed by refresh tokens, delete the account",
            )
            .scenario(
                "api_user",
                "one user's life per iteration: POST /accounts; PAGES pages (browse 5 : search 3 : create 2) THINK_MIN_MS..THINK_MAX_MS apart, refreshing the access token before it expires; DELETE /accounts/me",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn setup(_config: String) -> Result<String, String> {
        let res = http::get(format!("{}/api/config", vu::base_url(DEFAULT_BASE_URL)))
            .name("/api/config")
            .send()?;
        if res.status() != 200 {
            return Err(format!(
                "GET /api/config answered {}; is BASE_URL the demo system?",
                res.status()
            ));
        }
        let groups: Groups = res.json()?;
        if groups.groups.is_empty() {
            return Err("the demo system has no groups".into());
        }
        loadtest::serde_json::to_string(&groups).map_err(|e| e.to_string())
    }

    fn init(data: String) -> Result<(), String> {
        let groups: Groups = loadtest::serde_json::from_str(&data)
            .map_err(|e| format!("setup's data is not the groups: {e}"))?;
        GROUPS.with(|g| *g.borrow_mut() = groups);
        Ok(())
    }

    fn iteration(scenario: String) -> Result<(), String> {
        loadtest::dispatch(&scenario, &[("api_user", user_life)])
    }
}

/// Sign up, browse, delete.
fn user_life() -> Result<(), String> {
    let base = vu::base_url(DEFAULT_BASE_URL);
    let info = vu::info();
    let mut rng = SplitMix64::new(info.vu_id, info.iteration);
    let user = format!(
        "rest-{}-{}-{:x}",
        info.vu_id,
        info.iteration,
        rng.next() >> 40
    );
    let res = http::post(format!("{base}/accounts"))
        .json(&loadtest::serde_json::json!({ "user": user }))
        .name("/accounts")
        .send()?;
    if !check("sign-up status is 201", res.status() == 201) {
        return Err(format!("sign-up answered {}: {}", res.status(), res.text()));
    }
    counter("signups", 1.0, &[]);
    let mut session = Session::new(res.json()?);

    let pages = vu::env_parse("PAGES", 10u64);
    let think_min = vu::env_parse("THINK_MIN_MS", 2000u64);
    let think_max = vu::env_parse("THINK_MAX_MS", 4000u64).max(think_min);
    let mut result = Ok(());
    for page in 0..pages {
        if page > 0 {
            let think = think_min + rng.next() % (think_max - think_min + 1);
            vu::sleep(Duration::from_millis(think));
        }
        result = match rng.next() % 10 {
            0..=4 => browse(&base, &mut session, &mut rng),
            5..=7 => search(&base, &mut session, &mut rng),
            _ => create(&base, &mut session, &mut rng),
        };
        if result.is_err() {
            break;
        }
    }

    // The account goes even after a failed page, so sign-ups and deletions match.
    let res = session.send(&base, |token| {
        http::delete(format!("{base}/accounts/me"))
            .bearer(token)
            .name("/accounts/me")
    })?;
    if !check("delete status is 204", res.status() == 204) {
        return Err(format!("deleting the account answered {}", res.status()));
    }
    counter("deletions", 1.0, &[]);
    result
}

fn pick(list: &[u32], rng: &mut SplitMix64) -> Option<u32> {
    (!list.is_empty()).then(|| list[(rng.next() % list.len() as u64) as usize])
}

/// A page of a group's notes, then one of them.
fn browse(base: &str, session: &mut Session, rng: &mut SplitMix64) -> Result<(), String> {
    let group = GROUPS.with(|g| pick(&g.borrow().groups, rng)).unwrap_or(1);
    let res = session.send(base, |token| {
        http::get(format!("{base}/groups/{group}/notes?limit=20"))
            .bearer(token)
            .name("/groups/{g}/notes")
    })?;
    if !check("list status is 200", res.status() == 200) {
        return Err(format!("listing group {group} answered {}", res.status()));
    }
    let notes: Vec<Note> = res.json()?;
    let Some(note) = notes.get((rng.next() % notes.len().max(1) as u64) as usize) else {
        return Ok(());
    };
    let id = note.id;
    let res = session.send(base, |token| {
        http::get(format!("{base}/groups/{group}/notes/{id}"))
            .bearer(token)
            .name("/groups/{g}/notes/{id}")
    })?;
    // Another user may have just deleted it.
    check(
        "note status is 200 or 404",
        matches!(res.status(), 200 | 404),
    );
    Ok(())
}

/// A search in a large group (a small one when there is none).
fn search(base: &str, session: &mut Session, rng: &mut SplitMix64) -> Result<(), String> {
    let group = GROUPS
        .with(|g| {
            let g = g.borrow();
            pick(&g.large_groups, rng).or_else(|| pick(&g.groups, rng))
        })
        .unwrap_or(1);
    let term = TERMS[(rng.next() % TERMS.len() as u64) as usize];
    let res = session.send(base, |token| {
        http::get(format!("{base}/groups/{group}/search?q={term}&limit=20"))
            .bearer(token)
            .name("/groups/{g}/search")
    })?;
    if !check("search status is 200", res.status() == 200) {
        return Err(format!("search in group {group} answered {}", res.status()));
    }
    let Found { total } = res.json()?;
    counter("searches", 1.0, &[]);
    counter("search_hits", total as f64, &[]);
    Ok(())
}

/// A new note in one of the small groups.
fn create(base: &str, session: &mut Session, rng: &mut SplitMix64) -> Result<(), String> {
    let group = GROUPS.with(|g| pick(&g.borrow().groups, rng)).unwrap_or(1);
    let res = session.send(base, |token| {
        http::post(format!("{base}/groups/{group}/notes"))
            .bearer(token)
            .json(&loadtest::serde_json::json!({
                "title": "from rest-mix",
                "body": "a note written by a REST API user",
            }))
            .name("/groups/{g}/notes")
    })?;
    if !check("create status is 201", res.status() == 201) {
        return Err(format!("creating a note answered {}", res.status()));
    }
    counter("notes_created", 1.0, &[]);
    Ok(())
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

loadtest::export!(RestMix);
