//! The VUs of an arrival-rate scenario: idle ones wait in a pool that the scheduler
//! takes from without ever waiting, and the pool decides when one more may be made
//! (never past `max_vus`, and only a few at a time so a short hiccup does not make a
//! crowd of VUs that are no longer needed once they are ready).

use std::sync::Mutex;

/// VUs made at once in the background, per scenario.
pub(crate) const CREATIONS_AT_ONCE: u64 = 4;

/// What the scheduler gets for an iteration that is due.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Take<T> {
    /// An idle VU: start the iteration on it.
    Idle(T),
    /// No idle VU, but one more may be made: make it in the background (the iteration
    /// is dropped; the VU serves later ones), then hand it over with [`VuPool::made`]
    /// or give the slot back with [`VuPool::not_made`].
    Make,
    /// No idle VU and no more may be made now: the iteration is dropped.
    None,
}

/// Idle VUs, and how many exist or are being made.
pub(crate) struct VuPool<T> {
    inner: Mutex<Inner<T>>,
    max: u64,
}

struct Inner<T> {
    idle: Vec<T>,
    made: u64,
    making: u64,
}

impl<T> VuPool<T> {
    /// A pool holding the VUs made before the start, allowed to grow to `max`.
    pub(crate) fn new(vus: Vec<T>, max: u64) -> Self {
        Self {
            inner: Mutex::new(Inner {
                made: vus.len() as u64,
                idle: vus,
                making: 0,
            }),
            max,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An idle VU, else leave to make one, else nothing.
    pub(crate) fn take(&self) -> Take<T> {
        let mut inner = self.lock();
        if let Some(vu) = inner.idle.pop() {
            return Take::Idle(vu);
        }
        if inner.made + inner.making < self.max && inner.making < CREATIONS_AT_ONCE {
            inner.making += 1;
            return Take::Make;
        }
        Take::None
    }

    /// Returns a VU whose iteration ended.
    pub(crate) fn put(&self, vu: T) {
        self.lock().idle.push(vu);
    }

    /// Adds a VU made after a [`Take::Make`].
    pub(crate) fn made(&self, vu: T) {
        let mut inner = self.lock();
        inner.making -= 1;
        inner.made += 1;
        inner.idle.push(vu);
    }

    /// Gives back the slot of a [`Take::Make`] whose VU could not be made.
    pub(crate) fn not_made(&self) {
        self.lock().making -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_vus_first_then_growth_up_to_max_then_nothing() {
        let pool = VuPool::new(vec![1, 2], 8);
        assert_eq!(pool.take(), Take::Idle(2));
        assert_eq!(pool.take(), Take::Idle(1));
        for _ in 0..CREATIONS_AT_ONCE {
            assert_eq!(pool.take(), Take::Make);
        }
        // Enough are being made already.
        assert_eq!(pool.take(), Take::None);
        pool.made(3);
        pool.made(4);
        pool.not_made();
        assert_eq!(pool.take(), Take::Idle(4));
        assert_eq!(pool.take(), Take::Idle(3));
        // 4 made, 1 still being made: 3 more fit under max = 8.
        assert_eq!(pool.take(), Take::Make);
        assert_eq!(pool.take(), Take::Make);
        assert_eq!(pool.take(), Take::Make);
        assert_eq!(pool.take(), Take::None);
        for v in 5..9 {
            pool.made(v);
        }
        assert_eq!(pool.lock().made, 8);
        while let Take::Idle(_) = pool.take() {}
        assert_eq!(pool.take(), Take::None, "at max_vus nothing more is made");
        pool.put(1);
        assert_eq!(pool.take(), Take::Idle(1));
    }

    #[test]
    fn a_pool_at_max_from_the_start_never_grows() {
        let pool = VuPool::new(vec![7], 1);
        assert_eq!(pool.take(), Take::Idle(7));
        assert_eq!(pool.take(), Take::None);
    }
}
