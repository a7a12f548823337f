//! The VUs of an arrival-rate scenario: idle ones wait in their home thread's list, which
//! that thread's scheduler and its ending iterations take from without ever waiting, and
//! the pool decides when one more may be made (never past `max_vus`, and only a few at a
//! time so a short hiccup does not make a crowd of VUs that are no longer needed once
//! they are ready).
//!
//! The idle lists are per VU thread so that starting an iteration never crosses
//! threads; a count of the idle VUs of all threads tells a thread with none whether a
//! due iteration may still find one elsewhere (then it is left to that thread) or must
//! be dropped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// VUs made at once in the background, per scenario.
pub(crate) const CREATIONS_AT_ONCE: u64 = 4;

/// What a thread's scheduler gets for an iteration that is due.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Take<T> {
    /// An idle VU of this thread: start the iteration on it.
    Idle(T),
    /// None here, but another thread has an idle VU: leave the iteration to it.
    Elsewhere,
    /// No idle VU anywhere, but one more may be made: make it in the background (the
    /// iteration is dropped; the VU serves later ones), then hand it over with
    /// [`VuPool::made`] or give the slot back with [`VuPool::not_made`].
    Make,
    /// No idle VU anywhere and no more may be made now: the iteration is dropped.
    None,
}

/// Idle VUs by thread, and how many exist or are being made.
pub(crate) struct VuPool<T> {
    /// The idle VUs of each thread; only that thread's tasks touch its list, so its
    /// lock is never contended.
    idle: Vec<Mutex<Vec<T>>>,
    /// Idle VUs over all threads.
    idle_count: AtomicU64,
    counts: Mutex<Counts>,
    max: u64,
}

struct Counts {
    made: u64,
    making: u64,
}

impl<T> VuPool<T> {
    /// A pool of `threads` idle lists holding the VUs made before the start (each on
    /// the thread `thread_of` gives), allowed to grow to `max`.
    pub(crate) fn new(
        threads: usize,
        vus: Vec<T>,
        thread_of: impl Fn(&T) -> usize,
        max: u64,
    ) -> Self {
        let threads = threads.max(1);
        let made = vus.len() as u64;
        let mut idle: Vec<Vec<T>> = (0..threads).map(|_| Vec::new()).collect();
        for vu in vus {
            idle[thread_of(&vu) % threads].push(vu);
        }
        Self {
            idle: idle.into_iter().map(Mutex::new).collect(),
            idle_count: AtomicU64::new(made),
            counts: Mutex::new(Counts { made, making: 0 }),
            max,
        }
    }

    fn list(&self, thread: usize) -> std::sync::MutexGuard<'_, Vec<T>> {
        self.idle[thread % self.idle.len()]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An idle VU of `thread`, else word that another thread has one, else leave to
    /// make one, else nothing.
    pub(crate) fn take(&self, thread: usize) -> Take<T> {
        if let Some(vu) = self.list(thread).pop() {
            self.idle_count.fetch_sub(1, Ordering::AcqRel);
            return Take::Idle(vu);
        }
        self.take_none_idle()
    }

    /// What [`VuPool::take`] gives on a thread with no idle VU: word that another
    /// thread has one, else leave to make one, else nothing.
    pub(crate) fn take_none_idle(&self) -> Take<T> {
        if self.idle_count.load(Ordering::Acquire) > 0 {
            return Take::Elsewhere;
        }
        let mut counts = self.counts();
        if counts.made + counts.making < self.max && counts.making < CREATIONS_AT_ONCE {
            counts.making += 1;
            return Take::Make;
        }
        Take::None
    }

    /// Returns a VU whose iterations ended to the idle list of `thread` (its home).
    pub(crate) fn put(&self, thread: usize, vu: T) {
        self.list(thread).push(vu);
        self.idle_count.fetch_add(1, Ordering::AcqRel);
    }

    /// Adds a VU made after a [`Take::Make`], idle on `thread` (its home).
    pub(crate) fn made(&self, thread: usize, vu: T) {
        {
            let mut counts = self.counts();
            counts.making -= 1;
            counts.made += 1;
        }
        self.put(thread, vu);
    }

    /// Gives back the slot of a [`Take::Make`] whose VU could not be made.
    pub(crate) fn not_made(&self) {
        self.counts().making -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_vus_first_then_growth_up_to_max_then_nothing() {
        let pool = VuPool::new(1, vec![1, 2], |_| 0, 8);
        assert_eq!(pool.take(0), Take::Idle(2));
        assert_eq!(pool.take(0), Take::Idle(1));
        for _ in 0..CREATIONS_AT_ONCE {
            assert_eq!(pool.take(0), Take::Make);
        }
        // Enough are being made already.
        assert_eq!(pool.take(0), Take::None);
        pool.made(0, 3);
        pool.made(0, 4);
        pool.not_made();
        assert_eq!(pool.take(0), Take::Idle(4));
        assert_eq!(pool.take(0), Take::Idle(3));
        // 4 made, 1 still being made: 3 more fit under max = 8.
        assert_eq!(pool.take(0), Take::Make);
        assert_eq!(pool.take(0), Take::Make);
        assert_eq!(pool.take(0), Take::Make);
        assert_eq!(pool.take(0), Take::None);
        for v in 5..9 {
            pool.made(0, v);
        }
        assert_eq!(pool.counts().made, 8);
        while let Take::Idle(_) = pool.take(0) {}
        assert_eq!(pool.take(0), Take::None, "at max_vus nothing more is made");
        pool.put(0, 1);
        assert_eq!(pool.take(0), Take::Idle(1));
    }

    #[test]
    fn a_pool_at_max_from_the_start_never_grows() {
        let pool = VuPool::new(1, vec![7], |_| 0, 1);
        assert_eq!(pool.take(0), Take::Idle(7));
        assert_eq!(pool.take(0), Take::None);
    }

    #[test]
    fn a_thread_without_idle_vus_leaves_the_iteration_to_one_with_some() {
        // VUs 0..4 dealt over 2 threads by parity.
        let pool = VuPool::new(2, vec![0, 1, 2, 3], |v| *v % 2, 4);
        assert_eq!(pool.take(0), Take::Idle(2));
        assert_eq!(pool.take(0), Take::Idle(0));
        // Thread 1 still has two: thread 0 neither drops nor makes.
        assert_eq!(pool.take(0), Take::Elsewhere);
        assert_eq!(pool.take(1), Take::Idle(3));
        assert_eq!(pool.take(1), Take::Idle(1));
        // None idle anywhere, and at max_vus: dropped on either thread.
        assert_eq!(pool.take(0), Take::None);
        assert_eq!(pool.take_none_idle(), Take::None);
        assert_eq!(pool.take(1), Take::None);
        // A VU back on thread 1 is left to it by thread 0.
        pool.put(1, 1);
        assert_eq!(pool.take(0), Take::Elsewhere);
        // Asked not to take one, thread 1 leaves it too.
        assert_eq!(pool.take_none_idle(), Take::Elsewhere);
        assert_eq!(pool.take(1), Take::Idle(1));
    }
}
