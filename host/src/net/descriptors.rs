//! File descriptors: every connection and socket takes one. The soft limit
//! (`ulimit -n`) is often 1,024 or less while the hard limit allows far more, so the
//! host raises the soft limit to the hard one at start, as servers do. When the limit
//! is still hit (`Too many open files`), the error and the summary name `ulimit -n`.

use std::sync::atomic::{AtomicU64, Ordering};

/// Times the process ran out of descriptors (`EMFILE`, or the system's `ENFILE`).
static EXHAUSTED: AtomicU64 = AtomicU64::new(0);

/// Raises the soft descriptor limit to the hard limit; the limit now in force.
pub(crate) fn raise_limit() -> Option<u64> {
    rlimit::increase_nofile_limit(u64::MAX).ok()
}

/// The soft descriptor limit in force.
pub(crate) fn limit() -> Option<u64> {
    rlimit::getrlimit(rlimit::Resource::NOFILE)
        .ok()
        .map(|(soft, _)| soft)
}

/// Times descriptors ran out in this process so far (a run reports its own share).
pub(crate) fn exhausted_count() -> u64 {
    EXHAUSTED.load(Ordering::Relaxed)
}

/// Whether `e` is the process (or the system) running out of descriptors; counts it.
pub(crate) fn check(e: &std::io::Error) -> bool {
    let out = matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE));
    if out {
        EXHAUSTED.fetch_add(1, Ordering::Relaxed);
    }
    out
}

/// What to do about it: names the limit and `ulimit -n`.
pub(crate) fn advice() -> String {
    let limit = limit().map_or_else(|| "its".to_string(), |n| n.to_string());
    format!(
        "the host may hold {limit} files and connections at once (`ulimit -n`, raised to the \
         hard limit at start); raise the hard limit (`ulimit -Hn 65536` as root, or \
         `LimitNOFILE=` for a service) or run fewer VUs"
    )
}

/// A summary warning when descriptors ran out `times` times during the run.
pub(crate) fn warning(times: u64) -> Option<String> {
    (times > 0).then(|| {
        format!(
            "{times} connections or files could not be opened: too many open files; {}",
            advice()
        )
    })
}
