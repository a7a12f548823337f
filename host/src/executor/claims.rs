//! The iterations of an arrival-rate scenario that are neither started nor dropped,
//! claimed one at a time by whoever gets to them first: the scheduler at its wake-ups,
//! or a VU whose iteration has just ended and finds the next one already due.
//!
//! A VU that takes the next due iteration itself runs it at once on its own thread, in
//! the task it is already in: no hand-off from the scheduler's thread (a spawn, a write
//! to the VU thread's eventfd, its `epoll_wait` returning), no trip through the pool.
//! That hand-off is what made an iteration of the open model cost more than one of the
//! closed model (results/open-model.md). Only the scheduler drops: a VU never drops an
//! iteration, so what is dropped, and when, is what the scheduler alone decided before
//! (an iteration due while no VU was idle, found at the wake-up after it fell due).
//!
//! One counter holds the first iteration left; every start and every drop moves it by
//! compare-and-swap, so each iteration is started or dropped exactly once and due =
//! started + dropped holds by construction.

use super::arrival_schedule::ArrivalSchedule;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The schedule of a scenario and the first of its iterations not yet claimed.
pub(crate) struct Claims {
    schedule: ArrivalSchedule,
    /// When the schedule started.
    start: Instant,
    next: AtomicU64,
}

impl Claims {
    /// Claims over `schedule`, which started at `start`; none claimed yet.
    pub(crate) fn new(schedule: ArrivalSchedule, start: Instant) -> Self {
        Self {
            schedule,
            start,
            next: AtomicU64::new(0),
        }
    }

    /// The schedule claimed from.
    pub(crate) fn schedule(&self) -> &ArrivalSchedule {
        &self.schedule
    }

    /// The first iteration not yet claimed (every one before it was started or dropped).
    pub(crate) fn next(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// When the first iteration not yet claimed is due; `None` past the schedule's end.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.schedule.due(self.next()).map(|d| self.start + d)
    }

    /// Claims the first iteration left if it is due by `now`: its number and due time.
    pub(crate) fn claim_due(&self, now: Instant) -> Option<(u64, Instant)> {
        let mut next = self.next.load(Ordering::Acquire);
        loop {
            let due = self.start + self.schedule.due(next)?;
            if due > now {
                return None;
            }
            match self.next.compare_exchange_weak(
                next,
                next + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some((next, due)),
                Err(actual) => next = actual,
            }
        }
    }

    /// Claims every iteration left that fell due strictly before `now`, to be dropped:
    /// the range claimed (empty when none was left).
    pub(crate) fn claim_all_due(&self, now: Instant) -> Range<u64> {
        let until = self
            .schedule
            .due_before(now.saturating_duration_since(self.start));
        let mut next = self.next.load(Ordering::Acquire);
        loop {
            if next >= until {
                return next..next;
            }
            match self
                .next
                .compare_exchange_weak(next, until, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return next..until,
                Err(actual) => next = actual,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn each_iteration_is_claimed_once_whoever_claims_it() {
        // 1,000,000/s for 1 s, all of it due: four threads claim one by one while a
        // fifth claims in ranges; every iteration is claimed exactly once.
        let start = Instant::now() - Duration::from_secs(2);
        let schedule =
            ArrivalSchedule::constant(1e6, Duration::from_secs(1), Duration::from_secs(1));
        let claims = Arc::new(Claims::new(schedule, start));
        let singles: Vec<_> = (0..4)
            .map(|_| {
                let claims = claims.clone();
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    while let Some((n, _)) = claims.claim_due(Instant::now()) {
                        got.push(n);
                        if got.len() % 1000 == 0 {
                            std::thread::yield_now();
                        }
                    }
                    got
                })
            })
            .collect();
        let ranges = {
            let claims = claims.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                for _ in 0..50 {
                    got.push(claims.claim_all_due(start + Duration::from_micros(20_000)));
                    got.push(claims.claim_all_due(Instant::now()));
                    std::thread::yield_now();
                }
                got
            })
        };
        let mut seen = vec![0u8; 1_000_000];
        for thread in singles {
            for n in thread.join().expect("a claimer") {
                seen[n as usize] += 1;
            }
        }
        for range in ranges.join().expect("the range claimer") {
            for n in range {
                seen[n as usize] += 1;
            }
        }
        // The last iteration is due at the very end; claim_all_due counts those due
        // strictly before `now`, claim_due those due by it: together, all of them.
        assert!(seen.iter().all(|&c| c == 1), "claimed twice or never");
        assert_eq!(claims.next(), 1_000_000);
        assert!(claims.next_due().is_none());
    }

    #[test]
    fn nothing_is_claimed_before_it_is_due() {
        let start = Instant::now();
        let schedule =
            ArrivalSchedule::constant(10.0, Duration::from_secs(1), Duration::from_secs(1));
        let claims = Claims::new(schedule, start);
        // Iteration 0 is due at the start, iteration 1 at 100 ms.
        assert_eq!(claims.claim_due(start).map(|c| c.0), Some(0));
        assert_eq!(claims.claim_due(start + Duration::from_millis(99)), None);
        assert_eq!(
            claims.claim_all_due(start + Duration::from_millis(100)),
            1..1
        );
        assert_eq!(
            claims.claim_all_due(start + Duration::from_millis(350)),
            1..4
        );
        assert_eq!(claims.next(), 4);
        let (n, due) = claims
            .claim_due(start + Duration::from_millis(400))
            .expect("iteration 4 is due at 400 ms");
        assert_eq!(n, 4);
        assert_eq!(due, start + Duration::from_millis(400));
    }
}
