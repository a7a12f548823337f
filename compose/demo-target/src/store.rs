//! In-memory storage: notes by group, and issued sign-in tokens.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::Serialize;

use crate::counters::{self, Counter};

/// Takes a read lock, ignoring poisoning: every write leaves the data consistent, so a
/// panic elsewhere must not take the whole server down with it.
pub fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Takes a write lock, ignoring poisoning (see [`read`]).
pub fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

/// One note, as stored and as sent to clients.
#[derive(Clone, Debug, Serialize)]
pub struct Note {
    /// Unique across all groups.
    pub id: u64,
    /// The group the note belongs to.
    pub group: u32,
    /// Short title.
    pub title: String,
    /// Free text.
    pub body: String,
    /// Starts at 1 and grows by one on every update.
    pub version: u64,
}

/// A change to a note; `None` fields stay as they are.
#[derive(Debug, Default)]
pub struct NoteUpdate {
    /// New title.
    pub title: Option<String>,
    /// New body.
    pub body: Option<String>,
    /// If set, the update applies only when the note still has this version.
    pub expected_version: Option<u64>,
}

/// Why an update did not apply.
#[derive(Debug)]
pub enum UpdateError {
    /// No such note in that group.
    NotFound,
    /// The note has moved on; carries its current state.
    Conflict(Note),
}

#[derive(Default)]
struct Notes {
    groups: HashMap<u32, BTreeMap<u64, Note>>,
    next_id: u64,
    count: usize,
}

/// All notes, grouped; a `BTreeMap` per group keeps listings in id order.
pub struct NoteStore {
    inner: RwLock<Notes>,
    /// Changes made and searches run through the API (seeding is not counted).
    pub counters: NoteCounters,
}

/// Counters of the notes API, kept by the routes.
#[derive(Default)]
pub struct NoteCounters {
    /// Notes created (201).
    pub created: Counter,
    /// Notes updated (200 to a PUT).
    pub updated: Counter,
    /// Notes deleted (204).
    pub deleted: Counter,
    /// Searches answered.
    pub searches: Counter,
    /// Notes that matched a search, summed over searches.
    pub search_hits: Counter,
    /// Notes examined by searches, summed.
    pub search_scanned: Counter,
}

impl NoteCounters {
    /// Appends the counters to a Prometheus text exposition.
    pub fn render(&self, out: &mut String) {
        let rows = [
            (
                "demo_notes_created_total",
                "Notes created through the API.",
                &self.created,
            ),
            (
                "demo_notes_updated_total",
                "Notes updated through the API.",
                &self.updated,
            ),
            (
                "demo_notes_deleted_total",
                "Notes deleted through the API.",
                &self.deleted,
            ),
            (
                "demo_searches_total",
                "Searches answered (GET /groups/{g}/search).",
                &self.searches,
            ),
            (
                "demo_search_hits_total",
                "Notes that matched a search, summed over searches.",
                &self.search_hits,
            ),
            (
                "demo_search_scanned_total",
                "Notes examined by searches, summed.",
                &self.search_scanned,
            ),
        ];
        for (name, help, counter) in rows {
            counters::render(out, name, "counter", help, counter.get());
        }
    }
}

/// Words the notes of large groups are written with, so searches have hits of
/// varied frequency.
pub const VOCABULARY: [&str; 16] = [
    "alpha", "budget", "cache", "deploy", "error", "feature", "graph", "hotfix", "index", "jitter",
    "kernel", "latency", "metric", "network", "outage", "pager",
];

impl NoteStore {
    /// A store with groups `1..=groups`, each holding `per_group` generated notes.
    pub fn seeded(groups: u32, per_group: u32) -> Self {
        let store = NoteStore {
            inner: RwLock::new(Notes {
                next_id: 1,
                ..Notes::default()
            }),
            counters: NoteCounters::default(),
        };
        for group in 1..=groups {
            for n in 1..=per_group {
                let body = format!("Seeded note {n} of group {group}.");
                store.create(group, format!("Note {n}"), body);
            }
        }
        store
    }

    /// Adds `count` large groups after the existing ones (`first..first+count`), each
    /// with `per_group` notes written from [`VOCABULARY`]; word `k` appears in about
    /// one note in `k + 1`, so searches range from common to rare terms.
    pub fn seed_large(&self, first: u32, count: u32, per_group: u32) {
        let mut rng = 0x1A26_u64;
        for group in first..first.saturating_add(count) {
            for n in 1..=per_group {
                let mut words = Vec::new();
                for (k, word) in VOCABULARY.iter().enumerate() {
                    rng = rng
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    if (rng >> 33).is_multiple_of(k as u64 + 1) {
                        words.push(*word);
                    }
                }
                let body = format!("Note {n} of large group {group}: {}.", words.join(" "));
                self.create(group, format!("Entry {n}"), body);
            }
        }
    }

    /// Up to `limit` notes of `group` with ids above `after`, in id order.
    pub fn page(&self, group: u32, after: u64, limit: usize) -> Vec<Note> {
        let notes = read(&self.inner);
        notes
            .groups
            .get(&group)
            .map(|g| {
                g.range(after.saturating_add(1)..)
                    .take(limit)
                    .map(|(_, n)| n.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Notes of `group` whose title or body contains `term` (ASCII case-insensitive):
    /// how many match in all, the first `limit` of them, and how many were examined.
    pub fn search(&self, group: u32, term: &str, limit: usize) -> (usize, Vec<Note>, usize) {
        let notes = read(&self.inner);
        let Some(g) = notes.groups.get(&group) else {
            return (0, Vec::new(), 0);
        };
        let term = term.as_bytes();
        let contains = |text: &str| {
            text.as_bytes()
                .windows(term.len().max(1))
                .any(|w| w.eq_ignore_ascii_case(term))
        };
        let mut total = 0;
        let mut first = Vec::new();
        for note in g.values() {
            if contains(&note.title) || contains(&note.body) {
                total += 1;
                if first.len() < limit {
                    first.push(note.clone());
                }
            }
        }
        (total, first, g.len())
    }

    /// The notes of `group` in id order; an unknown group is simply empty.
    pub fn list(&self, group: u32) -> Vec<Note> {
        let notes = read(&self.inner);
        notes
            .groups
            .get(&group)
            .map(|g| g.values().cloned().collect())
            .unwrap_or_default()
    }

    /// One note, if it exists in `group`.
    pub fn get(&self, group: u32, id: u64) -> Option<Note> {
        read(&self.inner).groups.get(&group)?.get(&id).cloned()
    }

    /// Stores a new note at version 1 and returns it.
    pub fn create(&self, group: u32, title: String, body: String) -> Note {
        let mut notes = write(&self.inner);
        let id = notes.next_id;
        notes.next_id += 1;
        notes.count += 1;
        let note = Note {
            id,
            group,
            title,
            body,
            version: 1,
        };
        notes
            .groups
            .entry(group)
            .or_default()
            .insert(id, note.clone());
        note
    }

    /// Applies `update` and returns the note at its new version.
    pub fn update(&self, group: u32, id: u64, update: NoteUpdate) -> Result<Note, UpdateError> {
        let mut notes = write(&self.inner);
        let note = notes
            .groups
            .get_mut(&group)
            .and_then(|g| g.get_mut(&id))
            .ok_or(UpdateError::NotFound)?;
        if update.expected_version.is_some_and(|v| v != note.version) {
            return Err(UpdateError::Conflict(note.clone()));
        }
        if let Some(title) = update.title {
            note.title = title;
        }
        if let Some(body) = update.body {
            note.body = body;
        }
        note.version += 1;
        Ok(note.clone())
    }

    /// Removes a note; false if it did not exist in `group`.
    pub fn delete(&self, group: u32, id: u64) -> bool {
        let mut notes = write(&self.inner);
        let removed = notes
            .groups
            .get_mut(&group)
            .is_some_and(|g| g.remove(&id).is_some());
        if removed {
            notes.count -= 1;
        }
        removed
    }

    /// How many notes are stored across all groups.
    pub fn count(&self) -> usize {
        read(&self.inner).count
    }
}

#[derive(Default)]
struct Tokens {
    users: HashMap<String, String>,
    /// Issue order, so the oldest token is the first forgotten.
    order: VecDeque<String>,
}

/// Sign-in tokens and the users they were issued to.
pub struct TokenStore {
    inner: RwLock<Tokens>,
    max: usize,
    /// Randomly keyed per process, so tokens cannot be predicted from the counter.
    keys: RandomState,
    counter: AtomicU64,
}

impl TokenStore {
    /// An empty store remembering at most `max` tokens (at least one).
    pub fn new(max: usize) -> Self {
        TokenStore {
            inner: RwLock::new(Tokens::default()),
            max: max.max(1),
            keys: RandomState::new(),
            counter: AtomicU64::new(0),
        }
    }

    /// Issues a fresh opaque token for `user`.
    pub fn issue(&self, user: &str) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let token = format!(
            "{:016x}{:016x}",
            self.keys.hash_one((n, 0u8)),
            self.keys.hash_one((n, 1u8))
        );
        let mut tokens = write(&self.inner);
        tokens.users.insert(token.clone(), user.to_owned());
        tokens.order.push_back(token.clone());
        while tokens.order.len() > self.max {
            if let Some(old) = tokens.order.pop_front() {
                tokens.users.remove(&old);
            }
        }
        token
    }

    /// The user a token was issued to, if it is still known.
    pub fn user_for(&self, token: &str) -> Option<String> {
        read(&self.inner).users.get(token).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeding_gives_unique_ids_across_groups() {
        let store = NoteStore::seeded(3, 4);
        assert_eq!(store.count(), 12);
        let mut ids: Vec<u64> = (1..=3).flat_map(|g| store.list(g)).map(|n| n.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 12);
    }

    #[test]
    fn update_checks_group_and_version() {
        let store = NoteStore::seeded(0, 0);
        let note = store.create(2, "t".into(), "b".into());
        assert!(matches!(
            store.update(3, note.id, NoteUpdate::default()),
            Err(UpdateError::NotFound)
        ));
        let stale = NoteUpdate {
            expected_version: Some(5),
            ..NoteUpdate::default()
        };
        assert!(matches!(
            store.update(2, note.id, stale),
            Err(UpdateError::Conflict(_))
        ));
        let updated = store.update(2, note.id, NoteUpdate::default()).unwrap();
        assert_eq!(updated.version, 2);
        assert!(!store.delete(1, note.id));
        assert!(store.delete(2, note.id));
        assert_eq!(store.count(), 0);
    }

    #[test]
    fn large_groups_page_and_search() {
        let store = NoteStore::seeded(2, 3);
        store.seed_large(3, 1, 1000);
        assert_eq!(store.count(), 1006);
        let page = store.page(3, 0, 10);
        assert_eq!(page.len(), 10);
        let next = store.page(3, page[9].id, 10);
        assert!(next[0].id > page[9].id);
        let (all, first, scanned) = store.search(3, "ALPHA", 5);
        assert_eq!((all, first.len(), scanned), (1000, 5, 1000));
        let (rare, _, _) = store.search(3, "pager", 5);
        assert!(rare > 20 && rare < 200, "{rare}");
        assert_eq!(store.search(1, "alpha", 5).0, 0);
    }

    #[test]
    fn tokens_are_distinct_and_oldest_are_forgotten() {
        let tokens = TokenStore::new(2);
        let a = tokens.issue("alice");
        let b = tokens.issue("bob");
        let c = tokens.issue("carol");
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert_eq!(tokens.user_for(&a), None);
        assert_eq!(tokens.user_for(&b).as_deref(), Some("bob"));
        assert_eq!(tokens.user_for(&c).as_deref(), Some("carol"));
    }
}
