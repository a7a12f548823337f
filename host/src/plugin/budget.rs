//! Limits on one call into a plugin: a wall-clock deadline and a CPU budget, both
//! enforced from the epoch callback, which also yields to tokio every tick so a busy
//! plugin cannot starve the other VUs (unless it gave the thread back since the last
//! tick, waiting in an import: then a yield would only cost a round through the
//! scheduler and two fiber switches).

use super::engine::EPOCH_TICK;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

/// Why a call was stopped by the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// The call ran past its wall-clock deadline.
    Deadline(Duration),
    /// The plugin computed for longer than its CPU budget.
    Cpu(Duration),
}

/// The limits and accounting of the current call.
#[derive(Debug, Clone)]
pub struct CallBudget {
    /// CPU a call may use.
    pub cpu_limit: Duration,
    started: Option<Instant>,
    wall_limit: Duration,
    cpu_used: Duration,
    last_tick: Option<Instant>,
    /// Set when the callback stopped the call, and why.
    pub exceeded: Option<Exceeded>,
    /// Waits in imports that gave the thread back, and their number at the last tick.
    waits: u64,
    waits_at_tick: u64,
    /// Calls started, so that per-call state elsewhere can tell a new call.
    calls: u64,
}

impl CallBudget {
    /// A budget allowing `cpu_limit` of computation per call.
    pub fn new(cpu_limit: Duration) -> Self {
        Self {
            cpu_limit,
            started: None,
            wall_limit: Duration::MAX,
            cpu_used: Duration::ZERO,
            last_tick: None,
            exceeded: None,
            waits: 0,
            waits_at_tick: 0,
            calls: 0,
        }
    }

    /// Starts accounting for a call that may last `wall_limit`.
    pub fn start_call(&mut self, wall_limit: Duration) {
        self.started = Some(Instant::now());
        self.wall_limit = wall_limit;
        self.cpu_used = Duration::ZERO;
        self.last_tick = None;
        self.exceeded = None;
        self.calls += 1;
    }

    /// The number of the call in progress (1 for the first): it changes with each
    /// [`start_call`](Self::start_call).
    pub fn call_number(&self) -> u64 {
        self.calls
    }

    /// Runs an import's future, noting whether it gave the thread back (was pending):
    /// then the plugin need not yield at the next tick. The future is pinned where the
    /// caller made it: moving it in here copied it (over a kilobyte) every request.
    pub async fn wait<F: Future>(&mut self, mut future: Pin<&mut F>) -> F::Output {
        let mut pending = false;
        let output = std::future::poll_fn(|cx| match future.as_mut().poll(cx) {
            Poll::Ready(output) => Poll::Ready(output),
            Poll::Pending => {
                pending = true;
                Poll::Pending
            }
        })
        .await;
        self.waits += u64::from(pending);
        output
    }

    /// Whether the plugin must yield at this tick: it did not give the thread back
    /// since the last one (it computed, or its imports answered at once).
    pub fn must_yield(&mut self) -> bool {
        let busy = self.waits == self.waits_at_tick;
        self.waits_at_tick = self.waits;
        busy
    }

    /// Called from the epoch callback, i.e. only while the plugin's own code runs.
    /// Ticks that come close together mean the plugin computed in between; a long gap
    /// means it was waiting in a host call (sleep, request), which costs no CPU, and so
    /// does a short one in which it waited in an import (a socket receiving a message
    /// every few milliseconds would otherwise count as computing all the time).
    pub fn on_tick(&mut self, now: Instant) -> Option<Exceeded> {
        if let Some(last) = self.last_tick {
            let gap = now.saturating_duration_since(last);
            let waited = self.waits != self.waits_at_tick;
            if gap <= EPOCH_TICK * 3 && !waited {
                self.cpu_used += gap;
            }
        }
        self.last_tick = Some(now);
        let exceeded = match self.started {
            Some(start) if now.saturating_duration_since(start) >= self.wall_limit => {
                Some(Exceeded::Deadline(self.wall_limit))
            }
            _ if self.cpu_used >= self.cpu_limit => Some(Exceeded::Cpu(self.cpu_limit)),
            _ => None,
        };
        if exceeded.is_some() {
            self.exceeded = exceeded;
        }
        exceeded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_ticks_count_as_cpu_and_gaps_do_not() {
        let mut b = CallBudget::new(Duration::from_millis(50));
        b.start_call(Duration::from_secs(60));
        let t0 = Instant::now();
        // A 1 s wait in a host call, then steady ticks of computation.
        assert_eq!(b.on_tick(t0), None);
        assert_eq!(b.on_tick(t0 + Duration::from_secs(1)), None);
        let mut t = t0 + Duration::from_secs(1);
        let mut stopped = None;
        for _ in 0..10 {
            t += EPOCH_TICK;
            stopped = stopped.or(b.on_tick(t));
        }
        assert_eq!(stopped, Some(Exceeded::Cpu(Duration::from_millis(50))));
    }

    #[tokio::test]
    async fn yields_only_after_a_tick_without_waiting() {
        let mut b = CallBudget::new(Duration::from_secs(1));
        assert!(b.must_yield(), "no wait yet");
        // An import that answers at once is no wait.
        b.wait(std::pin::pin!(async {})).await;
        assert!(b.must_yield());
        b.wait(std::pin::pin!(tokio::task::yield_now())).await;
        assert!(!b.must_yield(), "it waited since the last tick");
        assert!(b.must_yield(), "and not since");
    }

    #[tokio::test]
    async fn close_ticks_with_a_wait_between_are_not_cpu() {
        let mut b = CallBudget::new(Duration::from_millis(50));
        b.start_call(Duration::from_secs(60));
        let mut t = Instant::now();
        assert_eq!(b.on_tick(t), None);
        // A socket's messages: a wait in an import between every two ticks.
        for _ in 0..20 {
            b.wait(std::pin::pin!(tokio::task::yield_now())).await;
            t += EPOCH_TICK;
            assert_eq!(b.on_tick(t), None);
            assert!(!b.must_yield());
        }
        // Without the waits, the same ticks are computation.
        let mut stopped = None;
        for _ in 0..10 {
            t += EPOCH_TICK;
            stopped = stopped.or(b.on_tick(t));
            b.must_yield();
        }
        assert_eq!(stopped, Some(Exceeded::Cpu(Duration::from_millis(50))));
    }

    #[test]
    fn wall_deadline_stops_the_call() {
        let mut b = CallBudget::new(Duration::from_secs(100));
        b.start_call(Duration::from_millis(10));
        let later = Instant::now() + Duration::from_millis(20);
        assert_eq!(
            b.on_tick(later),
            Some(Exceeded::Deadline(Duration::from_millis(10)))
        );
    }
}
