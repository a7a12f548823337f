//! In-memory storage: notes by group, and issued sign-in tokens.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::Serialize;

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
}

impl NoteStore {
    /// A store with groups `1..=groups`, each holding `per_group` generated notes.
    pub fn seeded(groups: u32, per_group: u32) -> Self {
        let store = NoteStore {
            inner: RwLock::new(Notes {
                next_id: 1,
                ..Notes::default()
            }),
        };
        for group in 1..=groups {
            for n in 1..=per_group {
                let body = format!("Seeded note {n} of group {group}.");
                store.create(group, format!("Note {n}"), body);
            }
        }
        store
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
