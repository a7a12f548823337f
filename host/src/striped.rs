//! Values striped over threads: each thread writes the stripe its slot maps to, on a
//! cache line of its own, and readers add the stripes up. Why: a counter that every
//! VU thread bumps per iteration or per request moves its cache line between the
//! cores on every write, and with it whatever else shares the line. Measured with
//! `perf record -e cpu-clock` on the `noio` bench at two cores: two thirds of
//! `run_iteration`'s samples (about 9 % of the CPU) sat just after its `lock incq` on
//! the scenario's shared counters (results/scaling.md).

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};

/// Stripes per value: more than any machine here has threads that write them, so
/// each thread gets its own (threads past this share, which is correct, only slower).
const STRIPES: usize = 64;

static NEXT_THREAD_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THREAD_SLOT: usize = NEXT_THREAD_SLOT.fetch_add(1, Ordering::Relaxed);
}

/// This thread's slot: a number handed out on a thread's first call, in turn.
pub(crate) fn thread_slot() -> usize {
    THREAD_SLOT.with(|s| *s)
}

/// One `T` per stripe, each on its own cache line.
pub(crate) struct Striped<T> {
    stripes: Box<[CachePadded<T>]>,
}

impl<T: Default> Default for Striped<T> {
    fn default() -> Self {
        Self {
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(T::default()))
                .collect(),
        }
    }
}

impl<T> Striped<T> {
    /// The calling thread's stripe.
    pub(crate) fn local(&self) -> &T {
        &self.stripes[thread_slot() % self.stripes.len()]
    }

    /// Every stripe, for readers that add them up.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.stripes.iter().map(|s| &**s)
    }
}

/// A counter written by many threads and read now and then (live view, summary).
#[derive(Default)]
pub struct StripedCounter(Striped<AtomicU64>);

impl StripedCounter {
    /// Adds `n` in the calling thread's stripe.
    pub fn add(&self, n: u64) {
        self.0.local().fetch_add(n, Ordering::Relaxed);
    }

    /// The sum of the stripes.
    pub fn get(&self) -> u64 {
        self.0.iter().map(|s| s.load(Ordering::Relaxed)).sum()
    }

    /// Sets the counter to `n`, for a process that only mirrors counts made
    /// elsewhere (a coordinator); not meant to race with `add`.
    pub fn set(&self, n: u64) {
        for (i, s) in self.0.iter().enumerate() {
            s.store(if i == 0 { n } else { 0 }, Ordering::Relaxed);
        }
    }
}

impl std::fmt::Debug for StripedCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

/// A signed count of things begun and not yet ended (requests in flight): a thread
/// may end what another began, so one stripe may go below zero; the sum does not.
#[derive(Default)]
pub struct StripedGauge(Striped<AtomicI64>);

impl StripedGauge {
    /// Adds `n` (negative to subtract) in the calling thread's stripe.
    pub fn add(&self, n: i64) {
        self.0.local().fetch_add(n, Ordering::Relaxed);
    }

    /// The sum of the stripes.
    pub fn get(&self) -> i64 {
        self.0.iter().map(|s| s.load(Ordering::Relaxed)).sum()
    }

    /// Sets the gauge to `n`, for a process that only mirrors counts made elsewhere.
    pub fn set(&self, n: i64) {
        for (i, s) in self.0.iter().enumerate() {
            s.store(if i == 0 { n } else { 0 }, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn threads_write_their_own_stripes_and_the_sum_is_exact() {
        let counter = Arc::new(StripedCounter::default());
        let gauge = Arc::new(StripedGauge::default());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (c, g) = (counter.clone(), gauge.clone());
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        c.add(1);
                        g.add(1);
                    }
                    thread_slot()
                })
            })
            .collect();
        let slots: Vec<usize> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(counter.get(), 40_000);
        assert_eq!(gauge.get(), 40_000);
        let mut distinct = slots.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 4, "each thread its own slot: {slots:?}");
        // Begun on one thread, ended on another: one stripe goes negative, the sum
        // is still right.
        gauge.add(-40_000);
        assert_eq!(gauge.get(), 0);
        counter.set(7);
        assert_eq!(counter.get(), 7);
        gauge.set(-3);
        assert_eq!(gauge.get(), -3);
    }
}
