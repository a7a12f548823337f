//! Thread per core for the VU loops of the closed-model executors: one current-thread
//! tokio runtime on a thread of its own per core the process may use, each VU's loop
//! spawned on one of them (by VU index, round-robin). A VU, its plugin instance and
//! the hyper connection tasks it spawns then share a thread: no work stealing and no
//! wake-up of another worker between a VU and its connection. Measured in
//! results/scaling.md: on two cores tokio's multi-thread runtime made 0.4–0.6 context
//! switches per request and cost 1.2–1.5 times the CPU per request of one core; on one
//! core its LIFO slot writes each request the moment it is made, so the target wakes
//! for every request and each `writev` pays that wake-up (4 µs more kernel time per
//! request than a current-thread runtime, which writes the requests of all ready VUs
//! in a row).

use std::sync::OnceLock;
use tokio::runtime::Handle;

/// The runtimes of the VU threads, started on first use and kept for the process's
/// life; empty when no thread could be started.
static RUNTIMES: OnceLock<Vec<Handle>> = OnceLock::new();

/// The runtime VU number `index` runs on, or `None` for the caller's own runtime.
pub(crate) fn runtime_for(index: usize) -> Option<&'static Handle> {
    let runtimes = RUNTIMES.get_or_init(start);
    (!runtimes.is_empty()).then(|| &runtimes[thread_of(index)])
}

/// The number of the VU thread VU number `index` runs on (0 when there are none):
/// VUs go to the threads in turn. Callers that gather VUs by thread use this rather
/// than repeating the rule.
pub(crate) fn thread_of(index: usize) -> usize {
    index % count().max(1)
}

/// How many VU threads there are (started on first use); 0 when none could be
/// started.
pub(crate) fn count() -> usize {
    RUNTIMES.get_or_init(start).len()
}

/// One current-thread runtime per core the process may use (its affinity, as
/// `taskset` sets it).
fn start() -> Vec<Handle> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..cores).filter_map(start_one).collect()
}

/// A thread running a current-thread runtime until the process ends; its handle.
/// `None` when the thread or the runtime cannot be made: the VUs then share the
/// others, or the caller's runtime when none could be made.
fn start_one(number: usize) -> Option<Handle> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(format!("vu-thread-{number}"))
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            let Ok(runtime) = runtime else {
                return;
            };
            if tx.send(runtime.handle().clone()).is_ok() {
                runtime.block_on(std::future::pending::<()>());
            }
        })
        .ok()?;
    rx.recv().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vus_are_dealt_over_the_threads_in_turn() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let first = runtime_for(0).expect("a VU thread");
        assert_eq!(
            RUNTIMES.get().expect("started").len(),
            cores,
            "one per core"
        );
        let again = runtime_for(cores).expect("a runtime");
        assert_eq!(first.id(), again.id(), "VU `cores` runs where VU 0 does");
        if cores > 1 {
            let second = runtime_for(1).expect("a runtime");
            assert_ne!(first.id(), second.id(), "VU 1 runs on the next thread");
        }
        // The runtime runs what is spawned on it, on its own thread.
        let (tx, rx) = std::sync::mpsc::channel();
        first.spawn(async move {
            let _ = tx.send(std::thread::current().name().map(str::to_string));
        });
        let ran_on = rx.recv().expect("the task ran");
        assert!(ran_on.is_some_and(|n| n.starts_with("vu-thread-")));
    }
}
