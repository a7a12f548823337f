//! An outbox of events delivered as HMAC-SHA256-signed webhooks to a receiver (the
//! demo system's own `POST /admin/webhooks/receive`), at a bounded delivery rate, so a
//! load test can measure how long the outbox takes to drain after its load.
//!
//! `POST /events` queues an event; a delivery task ([`deliver`]) takes events in order,
//! at most `rate` a second, and POSTs each with `X-Webhook-Id` and
//! `X-Webhook-Signature: sha256=<hex of HMAC-SHA256(secret, body)>`. The receiver
//! verifies the signature and counts. A failed delivery goes back to the front of the
//! queue. `pending` counts the events queued or being delivered.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use ring::hmac;
use tokio::sync::{watch, Notify, Semaphore};

/// Most events kept waiting; past it `POST /events` answers 503.
pub const MAX_PENDING: usize = 100_000;

/// Deliveries in flight at once.
const MAX_IN_FLIGHT: usize = 32;

/// How long one delivery may take before it counts as failed and is retried.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// One event waiting for delivery.
#[derive(Clone, Debug)]
pub struct Event {
    /// Unique id, growing from 1.
    pub id: u64,
    /// The JSON body as received.
    pub body: Bytes,
}

#[derive(Default)]
struct Queue {
    next_id: u64,
    waiting: VecDeque<Event>,
    in_flight: usize,
}

/// The outbox, the signing key and the counters of both ends.
pub struct Outbox {
    key: hmac::Key,
    rate: u32,
    queue: Mutex<Queue>,
    queued: Notify,
    submitted: AtomicU64,
    delivered: AtomicU64,
    retries: AtomicU64,
    received: AtomicU64,
    rejected: AtomicU64,
}

impl Outbox {
    /// Signing with `secret`, delivering at most `rate` events a second.
    pub fn new(secret: &str, rate: u32) -> Self {
        Outbox {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes()),
            rate: rate.max(1),
            queue: Mutex::default(),
            queued: Notify::new(),
            submitted: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            received: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues an event; its id, or `None` when [`MAX_PENDING`] are waiting.
    pub fn submit(&self, body: Bytes) -> Option<u64> {
        let mut queue = self.lock();
        if queue.waiting.len() + queue.in_flight >= MAX_PENDING {
            return None;
        }
        queue.next_id += 1;
        let id = queue.next_id;
        queue.waiting.push_back(Event { id, body });
        drop(queue);
        self.submitted.fetch_add(1, Ordering::Relaxed);
        self.queued.notify_one();
        Some(id)
    }

    /// Events queued or being delivered.
    pub fn pending(&self) -> usize {
        let queue = self.lock();
        queue.waiting.len() + queue.in_flight
    }

    /// Events delivered (the receiver answered 2xx).
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// Webhooks the receiver accepted with a valid signature.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Events accepted by `POST /events`.
    pub fn submitted(&self) -> u64 {
        self.submitted.load(Ordering::Relaxed)
    }

    /// `sha256=<hex>`: the signature header's value for `body`.
    pub fn sign(&self, body: &[u8]) -> String {
        let tag = hmac::sign(&self.key, body);
        let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256={hex}")
    }

    /// The receiver's check of a signature header (constant time); counts the verdict.
    pub fn verify(&self, body: &[u8], header: Option<&str>) -> bool {
        let tag = header
            .and_then(|h| h.strip_prefix("sha256="))
            .and_then(decode_hex);
        let ok = tag.is_some_and(|tag| hmac::verify(&self.key, body, &tag).is_ok());
        let counter = if ok { &self.received } else { &self.rejected };
        counter.fetch_add(1, Ordering::Relaxed);
        ok
    }

    /// The next event to deliver (now counted in flight), waiting for one.
    async fn next(&self) -> Event {
        loop {
            let notified = self.queued.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut queue = self.lock();
                if let Some(event) = queue.waiting.pop_front() {
                    queue.in_flight += 1;
                    return event;
                }
            }
            notified.await;
        }
    }

    /// Ends a delivery: counted when it succeeded, back to the front otherwise.
    fn finished(&self, event: Event, ok: bool) {
        let mut queue = self.lock();
        queue.in_flight -= 1;
        if ok {
            drop(queue);
            self.delivered.fetch_add(1, Ordering::Relaxed);
        } else {
            queue.waiting.push_front(event);
            drop(queue);
            self.retries.fetch_add(1, Ordering::Relaxed);
            self.queued.notify_one();
        }
    }

    /// Appends the outbox's and receiver's counters to a Prometheus text exposition.
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let _ = write!(
            out,
            "# HELP demo_outbox_pending Events queued or being delivered as webhooks.\n\
             # TYPE demo_outbox_pending gauge\n\
             demo_outbox_pending {}\n\
             # HELP demo_outbox_events_total Events accepted by POST /events.\n\
             # TYPE demo_outbox_events_total counter\n\
             demo_outbox_events_total {}\n\
             # HELP demo_outbox_delivered_total Webhooks delivered (the receiver answered 2xx).\n\
             # TYPE demo_outbox_delivered_total counter\n\
             demo_outbox_delivered_total {}\n\
             # HELP demo_outbox_retries_total Deliveries that failed and were queued again.\n\
             # TYPE demo_outbox_retries_total counter\n\
             demo_outbox_retries_total {}\n\
             # HELP demo_webhooks_received_total Webhooks the receiver accepted: signature valid.\n\
             # TYPE demo_webhooks_received_total counter\n\
             demo_webhooks_received_total {}\n\
             # HELP demo_webhooks_rejected_total Webhooks the receiver refused: signature missing or wrong.\n\
             # TYPE demo_webhooks_rejected_total counter\n\
             demo_webhooks_rejected_total {}\n",
            self.pending(),
            get(&self.submitted),
            get(&self.delivered),
            get(&self.retries),
            get(&self.received),
            get(&self.rejected),
        );
    }
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Delivers the outbox's events to `receiver` (a full URL), paced at the outbox's
/// rate, until `stop` says so.
pub async fn deliver(outbox: Arc<Outbox>, receiver: String, mut stop: watch::Receiver<bool>) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut pace = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(outbox.rate)));
    // After an idle spell, deliver at the rate, not in a burst making up for it.
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    loop {
        let event = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            event = outbox.next() => event,
        };
        pace.tick().await;
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let (outbox, client, receiver) = (outbox.clone(), client.clone(), receiver.clone());
        tokio::spawn(async move {
            let request = Request::builder()
                .method(Method::POST)
                .uri(&receiver)
                .header("content-type", "application/json")
                .header("x-webhook-id", event.id.to_string())
                .header("x-webhook-signature", outbox.sign(&event.body))
                .body(Full::new(event.body.clone()));
            let ok = match request {
                Ok(request) => matches!(
                    tokio::time::timeout(DELIVERY_TIMEOUT, client.request(request)).await,
                    Ok(Ok(resp)) if resp.status().is_success()
                ),
                Err(_) => false,
            };
            if !ok {
                // Not straight back: a receiver that is down would be hammered.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            outbox.finished(event, ok);
            drop(slot);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_and_tampering_is_caught() {
        let outbox = Outbox::new("s3cret", 10);
        let sig = outbox.sign(b"{\"a\":1}");
        assert!(sig.starts_with("sha256=") && sig.len() == 7 + 64, "{sig}");
        assert!(outbox.verify(b"{\"a\":1}", Some(&sig)));
        assert!(!outbox.verify(b"{\"a\":2}", Some(&sig)));
        assert!(!outbox.verify(b"{\"a\":1}", None));
        assert!(!outbox.verify(b"{\"a\":1}", Some("sha256=zz")));
        let other = Outbox::new("other", 10);
        assert!(!other.verify(b"{\"a\":1}", Some(&sig)));
        assert_eq!(outbox.received(), 1);
    }

    #[tokio::test]
    async fn a_failed_delivery_goes_back_to_the_front() {
        let outbox = Outbox::new("s", 10);
        outbox.submit(Bytes::from_static(b"1")).unwrap();
        outbox.submit(Bytes::from_static(b"2")).unwrap();
        let first = outbox.next().await;
        assert_eq!(outbox.pending(), 2);
        outbox.finished(first, false);
        let again = outbox.next().await;
        assert_eq!(again.id, 1);
        outbox.finished(again, true);
        assert_eq!(outbox.pending(), 1);
        assert_eq!(outbox.delivered(), 1);
    }
}
