//! Plugin failures gathered over the run: counts by kind and message for the summary,
//! and the streak of consecutive failures that can abort a run.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Distinct messages kept; later distinct ones are only counted.
const MAX_MESSAGES: usize = 50;

/// What kind of failure.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// `iteration` returned an error.
    Error,
    /// The plugin panicked.
    Panic,
    /// The plugin trapped otherwise (out of memory, stack overflow, unreachable).
    Trap,
    /// The iteration ran past its timeout.
    Timeout,
    /// The plugin computed past its CPU budget (a runaway loop).
    CpuLimit,
    /// The plugin ran out of its memory cap.
    MemoryLimit,
    /// The plugin overflowed its stack (unbounded recursion).
    StackOverflow,
    /// A VU's `init` failed (error, trap or timeout); the VU retries it later.
    Init,
}

impl From<crate::plugin::TrapCause> for ErrorKind {
    fn from(cause: crate::plugin::TrapCause) -> Self {
        use crate::plugin::TrapCause;
        match cause {
            TrapCause::Panic => Self::Panic,
            TrapCause::Deadline => Self::Timeout,
            TrapCause::Cpu => Self::CpuLimit,
            TrapCause::Memory => Self::MemoryLimit,
            TrapCause::Stack => Self::StackOverflow,
            TrapCause::Other => Self::Trap,
        }
    }
}

impl ErrorKind {
    /// Its name as a tag value.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Panic => "panic",
            Self::Trap => "trap",
            Self::Timeout => "timeout",
            Self::CpuLimit => "cpu_limit",
            Self::MemoryLimit => "memory_limit",
            Self::StackOverflow => "stack_overflow",
            Self::Init => "init",
        }
    }
}

/// One distinct failure.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ErrorEntry {
    /// Kind.
    pub kind: ErrorKind,
    /// Scenario it happened in.
    pub scenario: String,
    /// The message (panic text, error text, trap).
    pub message: String,
    /// How often.
    pub count: u64,
}

/// Several processes' failures as one list (a coordinator's and its workers'): counts
/// of the same kind, scenario and message added, most frequent first, at most as many
/// distinct ones as one process keeps; the rest, and every part's unlisted ones,
/// counted as unlisted.
pub(crate) fn merge(parts: &[(&[ErrorEntry], u64)]) -> (Vec<ErrorEntry>, u64) {
    let mut counts: BTreeMap<(ErrorKind, &str, &str), u64> = BTreeMap::new();
    let mut unlisted = 0;
    for (entries, part_unlisted) in parts {
        unlisted += part_unlisted;
        for e in entries.iter() {
            *counts
                .entry((e.kind, e.scenario.as_str(), e.message.as_str()))
                .or_default() += e.count;
        }
    }
    let mut list: Vec<ErrorEntry> = counts
        .into_iter()
        .map(|((kind, scenario, message), count)| ErrorEntry {
            kind,
            scenario: scenario.into(),
            message: message.into(),
            count,
        })
        .collect();
    list.sort_by_key(|e| std::cmp::Reverse(e.count));
    for e in list.drain(list.len().min(MAX_MESSAGES)..) {
        unlisted += e.count;
    }
    (list, unlisted)
}

/// The run's failures.
#[derive(Default)]
pub struct ErrorLog {
    entries: Mutex<BTreeMap<(ErrorKind, String, String), u64>>,
    unlisted: AtomicU64,
    streak: AtomicU64,
}

impl ErrorLog {
    /// Records a failure; returns the consecutive-failure streak including it.
    pub fn failure(&self, kind: ErrorKind, scenario: &str, message: &str) -> u64 {
        // Cut where it is kept, whoever sent it (a worker's list comes from the wire);
        // a message already cut keeps its note of how long it was.
        let message = crate::bounded::cut(message, crate::bounded::MESSAGE_BYTES + 64);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let key = (kind, scenario.to_string(), message.into_owned());
        if let Some(count) = entries.get_mut(&key) {
            *count += 1;
        } else if entries.len() < MAX_MESSAGES {
            entries.insert(key, 1);
        } else {
            self.unlisted.fetch_add(1, Ordering::Relaxed);
        }
        self.streak.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Records a success, ending a streak.
    pub fn success(&self) {
        if self.streak.load(Ordering::Relaxed) != 0 {
            self.streak.store(0, Ordering::Relaxed);
        }
    }

    /// Consecutive failures so far.
    pub fn streak(&self) -> u64 {
        self.streak.load(Ordering::Relaxed)
    }

    /// Distinct failures, most frequent first, and how many were not listed.
    pub fn entries(&self) -> (Vec<ErrorEntry>, u64) {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let mut list: Vec<ErrorEntry> = entries
            .iter()
            .map(|((kind, scenario, message), count)| ErrorEntry {
                kind: *kind,
                scenario: scenario.clone(),
                message: message.clone(),
                count: *count,
            })
            .collect();
        list.sort_by_key(|e| std::cmp::Reverse(e.count));
        (list, self.unlisted.load(Ordering::Relaxed))
    }

    /// Failures recorded so far, listed or not (a worker sends its list when this
    /// changes).
    pub fn total(&self) -> u64 {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.values().sum::<u64>() + self.unlisted.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: ErrorKind, message: &str, count: u64) -> ErrorEntry {
        ErrorEntry {
            kind,
            scenario: "default".into(),
            message: message.into(),
            count,
        }
    }

    #[test]
    fn merged_lists_add_alike_failures_and_keep_the_cap() {
        let a = [
            entry(ErrorKind::Panic, "boom", 2),
            entry(ErrorKind::Error, "no", 1),
        ];
        let b = [entry(ErrorKind::Panic, "boom", 3)];
        let (list, unlisted) = merge(&[(&a, 1), (&b, 0)]);
        assert_eq!(unlisted, 1);
        assert_eq!(list.len(), 2);
        assert_eq!((list[0].kind, list[0].count), (ErrorKind::Panic, 5));
        assert_eq!((list[1].message.as_str(), list[1].count), ("no", 1));

        // Past the cap, the least frequent are counted as unlisted.
        let many: Vec<ErrorEntry> = (0..MAX_MESSAGES as u64 + 2)
            .map(|i| entry(ErrorKind::Error, &format!("e{i}"), i + 1))
            .collect();
        let (list, unlisted) = merge(&[(&many, 0)]);
        assert_eq!(list.len(), MAX_MESSAGES);
        assert_eq!(unlisted, 1 + 2, "e0 and e1, counted 1 and 2");
    }
}
