//! Counters striped over threads: each thread writes the stripe its slot maps to, on a
//! cache line of its own, and readers add the stripes up. Why: a counter that every
//! VU thread bumps per iteration or per request moves its cache line between the
//! cores on every write, and with it whatever else shares the line. Measured with
//! `perf record -e cpu-clock` on the `noio` bench at two cores: two thirds of
//! `run_iteration`'s samples (about 9 % of the CPU) sat just after its `lock incq` on
//! the scenario's shared counters (results/scaling.md).

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Stripes per counter: more than any machine here has threads that write them, so
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

/// A count written by many threads and read now and then (live view, summary). Counts
/// that go up and down (requests in flight) use [`StripedCounter::sub`] and read with
/// [`StripedCounter::get_signed`]: a thread may end what another began, so one stripe
/// may go below zero (wrapping), and a reader racing a begin and its end may see the
/// end first; the sum, read as signed, stays right.
pub struct StripedCounter {
    /// One count per stripe, each on its own cache line.
    stripes: Box<[CachePadded<AtomicU64>]>,
}

impl Default for StripedCounter {
    fn default() -> Self {
        Self {
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        }
    }
}

impl StripedCounter {
    /// The calling thread's stripe.
    fn local(&self) -> &AtomicU64 {
        &self.stripes[thread_slot() % self.stripes.len()]
    }

    /// Adds `n` in the calling thread's stripe.
    pub fn add(&self, n: u64) {
        self.local().fetch_add(n, Ordering::Relaxed);
    }

    /// Takes `n` from the calling thread's stripe (wrapping).
    pub fn sub(&self, n: u64) {
        self.local().fetch_sub(n, Ordering::Relaxed);
    }

    /// The sum of the stripes, for counts that only go up.
    pub fn get(&self) -> u64 {
        self.stripes
            .iter()
            .fold(0u64, |sum, s| sum.wrapping_add(s.load(Ordering::Relaxed)))
    }

    /// The sum of the stripes as a signed number, for counts that go up and down.
    pub fn get_signed(&self) -> i64 {
        self.get() as i64
    }

    /// Sets the count to `n`, for a process that only mirrors counts made elsewhere
    /// (a coordinator); not meant to race with `add`.
    pub fn set(&self, n: u64) {
        for (i, s) in self.stripes.iter().enumerate() {
            s.store(if i == 0 { n } else { 0 }, Ordering::Relaxed);
        }
    }
}

impl std::fmt::Debug for StripedCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn threads_write_their_own_stripes_and_the_sum_is_exact() {
        let counter = Arc::new(StripedCounter::default());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let c = counter.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        c.add(1);
                    }
                    thread_slot()
                })
            })
            .collect();
        let slots: Vec<usize> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(counter.get(), 40_000);
        let mut distinct = slots.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 4, "each thread its own slot: {slots:?}");
        // Begun on those threads, ended on this one: this stripe goes below zero, the
        // sum is still right, and a reader that sees an end before its begin reads -1.
        counter.sub(40_000);
        assert_eq!(counter.get_signed(), 0);
        counter.sub(1);
        assert_eq!(counter.get_signed(), -1);
        counter.set(7);
        assert_eq!(counter.get(), 7);
    }
}
