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
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let key = (kind, scenario.to_string(), message.to_string());
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
}
