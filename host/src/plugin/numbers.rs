//! Iteration numbers within a scenario (`iteration-in-scenario`): unique over the
//! whole test and sequential from 0, like k6's `exec.scenario.iterationInTest`.
//!
//! A number is taken when the plugin first asks for it in an iteration (`vu.info`),
//! not when every iteration starts. Why: the counter is one atomic shared by every VU
//! thread of the scenario, and an add per iteration moves its cache line between the
//! cores each time (results/scaling.md); most scenarios never ask. What a plugin sees
//! is unchanged in kind: numbers are unique, and with no gaps among the iterations that
//! ask (where k6 leaves a gap for each iteration that does not), so
//! `rows[n % rows.len()]` walks the rows in turn. Two iterations running at once may
//! take theirs in either order, as they may in k6.

use crate::config::ExecutionTuple;
use std::sync::atomic::{AtomicU64, Ordering};

/// Hands out one scenario's iteration numbers in this process.
#[derive(Debug)]
pub struct IterationNumbers {
    next: AtomicU64,
    /// How this process's numbers map to the whole test's (its execution segment's
    /// stripe); `None` when it has no share of the iterations.
    stripe: Option<ExecutionTuple>,
}

impl IterationNumbers {
    /// Numbers from 0, mapped through `stripe` when this process runs a segment.
    pub fn new(stripe: Option<ExecutionTuple>) -> Self {
        Self {
            next: AtomicU64::new(0),
            stripe,
        }
    }

    /// The next number: the same as the local count in a run of the whole test, and
    /// never the same in two segments.
    pub fn take(&self) -> u64 {
        let local = self.next.fetch_add(1, Ordering::Relaxed);
        match &self.stripe {
            Some(stripe) if !stripe.is_full() => stripe.global(local),
            _ => local,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_sequential_from_zero() {
        let numbers = IterationNumbers::new(None);
        let taken: Vec<u64> = (0..5).map(|_| numbers.take()).collect();
        assert_eq!(taken, [0, 1, 2, 3, 4]);
    }
}
