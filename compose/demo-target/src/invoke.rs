//! The invoke endpoint's state: an API key, a concurrency limit past which requests
//! are shed (503 with `Retry-After`) instead of queued, and its counters.
//!
//! Shedding at a concurrency limit is what a function platform in front of a pool of
//! warm instances does: a request that finds every instance busy is refused at once,
//! and the client is told when to come back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The invoke endpoint of one server.
pub struct Invoker {
    api_key: String,
    work: Duration,
    slots: Arc<Semaphore>,
    ok: AtomicU64,
    shed: AtomicU64,
    unauthorized: AtomicU64,
}

impl Invoker {
    /// Accepting `api_key`, serving at most `concurrency` invocations at once, each
    /// taking `work`.
    pub fn new(api_key: String, concurrency: usize, work: Duration) -> Self {
        Invoker {
            api_key,
            work,
            slots: Arc::new(Semaphore::new(concurrency.max(1))),
            ok: AtomicU64::new(0),
            shed: AtomicU64::new(0),
            unauthorized: AtomicU64::new(0),
        }
    }

    /// Whether `key` is the API key; a wrong or missing one is counted.
    pub fn authorize(&self, key: Option<&str>) -> bool {
        // Not a secret worth a constant-time comparison: it is the demo's published key.
        let ok = key == Some(self.api_key.as_str());
        if !ok {
            self.unauthorized.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }

    /// A free slot, or `None` (counted as shed) when all are busy.
    pub fn admit(&self) -> Option<OwnedSemaphorePermit> {
        let permit = self.slots.clone().try_acquire_owned().ok();
        if permit.is_none() {
            self.shed.fetch_add(1, Ordering::Relaxed);
        }
        permit
    }

    /// Does an invocation's work while holding its slot, and counts it.
    pub async fn work(&self, _slot: OwnedSemaphorePermit) {
        if !self.work.is_zero() {
            tokio::time::sleep(self.work).await;
        }
        self.ok.fetch_add(1, Ordering::Relaxed);
    }

    /// Appends the counters to a Prometheus text exposition.
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let _ = write!(
            out,
            "# HELP demo_invoke_total Invocations (POST /invoke) by outcome: ok (200), shed (503, all slots busy), unauthorized (401).\n\
             # TYPE demo_invoke_total counter\n\
             demo_invoke_total{{outcome=\"ok\"}} {}\n\
             demo_invoke_total{{outcome=\"shed\"}} {}\n\
             demo_invoke_total{{outcome=\"unauthorized\"}} {}\n",
            get(&self.ok),
            get(&self.shed),
            get(&self.unauthorized),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_concurrency_limit_requests_are_shed() {
        let invoker = Invoker::new("k".into(), 2, Duration::ZERO);
        assert!(!invoker.authorize(None));
        assert!(!invoker.authorize(Some("x")));
        assert!(invoker.authorize(Some("k")));
        let a = invoker.admit().unwrap();
        let _b = invoker.admit().unwrap();
        assert!(invoker.admit().is_none());
        invoker.work(a).await;
        assert!(invoker.admit().is_some());
        let mut text = String::new();
        invoker.render(&mut text);
        assert!(text.contains("{outcome=\"ok\"} 1\n"), "{text}");
        assert!(text.contains("{outcome=\"shed\"} 1\n"), "{text}");
        assert!(text.contains("{outcome=\"unauthorized\"} 2\n"), "{text}");
    }
}
