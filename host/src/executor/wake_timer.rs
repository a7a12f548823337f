//! A timer precise to microseconds on a tokio runtime, for the arrival-rate scheduler.
//!
//! tokio's own timer ticks in whole milliseconds, which would add up to a millisecond
//! to every iteration's start lag. A Linux timerfd registered with the runtime's I/O
//! driver fires when it is due instead, and costs the thread that waits on it no
//! thread of its own: a busy runtime sees it expire in the `epoll_wait` it makes
//! anyway, and an idle one is woken by it directly (one wake-up, where a timer thread
//! that then woke the runtime took two, and a write to the runtime's eventfd).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// One timer, re-armed for each wait. Falls back to tokio's timer where no timerfd
/// could be made.
pub(crate) struct WakeTimer {
    fd: Option<AsyncFd<OwnedFd>>,
}

impl WakeTimer {
    /// A timer on the current runtime (which must have its I/O driver enabled).
    pub(crate) fn new() -> Self {
        Self { fd: timerfd().ok() }
    }

    /// Resolves at `at` (at once if it has passed). It may resolve early (a readiness
    /// left from an earlier wait, or a failed timer): callers that need `at` look at
    /// the clock again.
    pub(crate) async fn sleep_until(&mut self, at: Instant) {
        let now = Instant::now();
        if at <= now {
            return;
        }
        match &self.fd {
            Some(fd) if arm(fd.get_ref(), at - now).is_ok() => match fd.readable().await {
                // The expiry count is not read: re-arming resets it, and the
                // runtime's epoll is edge-triggered, so each expiry is one event
                // anyway. That saves a syscall per wake-up; a readiness left from an
                // earlier expiry can only make a wait end early.
                Ok(mut ready) => ready.clear_ready(),
                Err(_) => super::context::sleep_until(at).await,
            },
            _ => super::context::sleep_until(at).await,
        }
    }
}

/// A non-blocking timerfd on the monotonic clock (the one `Instant` reads), registered
/// with the current runtime.
fn timerfd() -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: timerfd_create takes no pointers; a non-negative result is a new
    // descriptor that nothing else owns.
    let raw = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor just made, owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: the `OwnedFd` keeps the descriptor open, and the same, for as long as
    // the `AsyncFd` that owns it lives.
    Ok(unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }?)
}

/// Arms `fd` to expire once, `after` from now (more than zero: zero would disarm it).
fn arm(fd: &OwnedFd, after: Duration) -> io::Result<()> {
    let after = after.max(Duration::from_nanos(1));
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: after.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: after.subsec_nanos() as libc::c_long,
        },
    };
    // SAFETY: `spec` is a valid itimerspec; the old value is not asked for (null).
    let r = unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_at_its_time_on_a_current_thread_runtime_and_again_after_rearming() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let mut timer = WakeTimer::new();
            assert!(timer.fd.is_some(), "a timerfd on Linux");
            for wait in [300u64, 1500, 50] {
                let start = Instant::now();
                let at = start + Duration::from_micros(wait);
                timer.sleep_until(at).await;
                assert!(Instant::now() >= at, "fired before {wait} µs");
            }
            // A time that has passed resolves at once.
            let start = Instant::now();
            timer
                .sleep_until(start.checked_sub(Duration::from_millis(5)).unwrap_or(start))
                .await;
            assert!(start.elapsed() < Duration::from_secs(1));
        });
    }
}
