//! `notes`: signed-in users browsing the demo notes application.
//!
//! Each VU signs in once (`init`: `POST /auth/token` as user `vu-<id>`) and keeps its
//! bearer token. Each iteration of the `browse` scenario then lists the notes of one
//! of the ten seeded groups, opens one of them and thinks for 1 to 3 seconds, as a
//! person reading would. URLs are grouped in the metrics by their `name` tags
//! (`/groups/{g}/notes`, `/groups/{g}/notes/{id}`).
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`).

use std::time::Duration;

use loadtest::serde::Deserialize;
use loadtest::{auth, check, http, vu, PluginInfo, Scenario};

/// Used when the run sets no `BASE_URL`.
const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080";

/// Groups `1..=GROUPS` are seeded by the demo application.
const GROUPS: u64 = 10;

/// The run config used when the operator gives none.
const DEFAULT_CONFIG: &str = r#"[scenarios.browse]
executor = "constant-vus"
vus = 10
duration = "10s"
exec = "browse"
"#;

/// A note as the application sends it (only the fields this scenario reads).
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct Note {
    id: u64,
    group: u32,
}

/// The scenario.
struct Notes;

impl Scenario for Notes {
    fn describe() -> PluginInfo {
        PluginInfo::new("notes")
            .description(
                "Signed-in users browse the demo app's notes: list a group, open a note, think",
            )
            .scenario(
                "browse",
                "list a group's notes, open one of them, think 1-3 s",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn init(_data: String) -> Result<(), String> {
        let user = format!("vu-{}", vu::id());
        auth::sign_in_once(&vu::base_url(DEFAULT_BASE_URL), &user)
    }

    fn iteration(scenario: String) -> Result<(), String> {
        loadtest::dispatch(&scenario, &[("browse", browse)])
    }
}

/// One visit: list a group, open one of its notes, think.
fn browse() -> Result<(), String> {
    let token = auth::token()?;
    let base = vu::base_url(DEFAULT_BASE_URL);
    let info = vu::info();
    let mut rng = SplitMix64::new(info.vu_id, info.iteration);
    let group = (info.vu_id + info.iteration) % GROUPS + 1;

    let res = http::get(format!("{base}/groups/{group}/notes"))
        .bearer(token)
        .name("/groups/{g}/notes")
        .send()?;
    if !check("list status is 200", res.status() == 200) {
        return Err(format!("listing group {group} answered {}", res.status()));
    }
    let notes: Vec<Note> = res.json()?;
    if !check("list is not empty", !notes.is_empty()) {
        return Err(format!("group {group} has no notes"));
    }

    let pick = &notes[(rng.next() % notes.len() as u64) as usize];
    let res = http::get(format!("{base}/groups/{group}/notes/{}", pick.id))
        .bearer(token)
        .name("/groups/{g}/notes/{id}")
        .send()?;
    if !check("note status is 200", res.status() == 200) {
        return Err(format!(
            "note {} of group {group} answered {}",
            pick.id,
            res.status()
        ));
    }
    let note: Note = res.json()?;
    check(
        "note id matches",
        note.id == pick.id && u64::from(note.group) == group,
    );

    // Think time: 1 to 3 s, spread over VUs and iterations.
    vu::sleep(Duration::from_millis(1000 + rng.next() % 2001));
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

loadtest::export!(Notes);
