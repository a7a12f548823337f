//! Live updates: which WebSocket is subscribed to which group, fan-out of note changes,
//! the per-user socket limit, and the signal that closes every socket at shutdown.
//!
//! Each socket has a bounded queue of pushes. A change is offered to every subscriber
//! of its group without waiting; a subscriber whose queue is full is a slow client and
//! is disconnected (its queue is dropped) rather than buffered without bound.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::Utf8Bytes;

use crate::store::{read, write, Note};
use crate::DemoConfig;

/// Most groups one socket may subscribe to.
pub const MAX_GROUPS_PER_SOCKET: usize = 100;

/// A change to a note, as pushed to subscribers.
pub enum Change<'a> {
    /// A note was created.
    Created(&'a Note),
    /// A note was updated.
    Updated(&'a Note),
    /// A note was deleted.
    Deleted {
        /// Its group.
        group: u32,
        /// Its id.
        id: u64,
    },
}

impl Change<'_> {
    fn group(&self) -> u32 {
        match self {
            Change::Created(n) | Change::Updated(n) => n.group,
            Change::Deleted { group, .. } => *group,
        }
    }

    /// The JSON text pushed; `at_ms` is the server's clock, for delivery latency.
    fn to_json(&self) -> String {
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let value = match self {
            Change::Created(note) => {
                json!({ "type": "note.created", "group": note.group, "note": note, "at_ms": at_ms })
            }
            Change::Updated(note) => {
                json!({ "type": "note.updated", "group": note.group, "note": note, "at_ms": at_ms })
            }
            Change::Deleted { group, id } => {
                json!({ "type": "note.deleted", "group": group, "id": id, "at_ms": at_ms })
            }
        };
        value.to_string()
    }
}

/// WebSocket settings of the demo application.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    /// How often the server pings each socket.
    pub ping_interval: Duration,
    /// A socket from which nothing (not even a pong) arrived for this long is closed.
    pub idle_timeout: Duration,
    /// Most sockets one user may hold; one more is refused with 429.
    pub max_per_user: usize,
    /// Pushes queued per socket; a socket whose queue is full is disconnected.
    pub queue: usize,
}

impl LiveConfig {
    /// The live settings of a demo config.
    pub fn from_demo(config: &DemoConfig) -> Self {
        LiveConfig {
            // A zero period would make the ping timer panic.
            ping_interval: config.ws_ping_interval.max(Duration::from_millis(10)),
            idle_timeout: config.ws_idle_timeout,
            max_per_user: config.ws_max_per_user,
            queue: config.ws_queue.max(1),
        }
    }
}

#[derive(Default)]
struct Subscriptions {
    /// Each socket's push queue; dropping it tells the socket it was too slow.
    queues: HashMap<u64, mpsc::Sender<Utf8Bytes>>,
    /// Sockets by group.
    groups: HashMap<u32, HashSet<u64>>,
}

/// Counters shown on `/metrics`.
#[derive(Default)]
pub struct LiveCounters {
    /// Sockets open now.
    pub open: AtomicU64,
    /// Sockets accepted since start.
    pub accepted: AtomicU64,
    /// Upgrades refused because the user held too many sockets.
    pub refused: AtomicU64,
    /// Pushes queued to sockets.
    pub pushes: AtomicU64,
    /// Sockets disconnected because their queue was full.
    pub slow_disconnects: AtomicU64,
    /// Sockets closed for silence.
    pub idle_closes: AtomicU64,
    /// Application-level pings (`{"ping": n}`) answered with a pong message.
    pub app_pings: AtomicU64,
}

impl LiveCounters {
    /// Appends the counters to a Prometheus text exposition.
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let rows: [(&str, &str, &str, &AtomicU64); 7] = [
            ("demo_ws_open", "gauge", "WebSockets open now.", &self.open),
            (
                "demo_ws_accepted_total",
                "counter",
                "WebSockets accepted.",
                &self.accepted,
            ),
            (
                "demo_ws_refused_total",
                "counter",
                "WebSocket upgrades refused: the user held too many.",
                &self.refused,
            ),
            (
                "demo_ws_pushes_total",
                "counter",
                "Note changes queued to WebSockets.",
                &self.pushes,
            ),
            (
                "demo_ws_slow_disconnects_total",
                "counter",
                "WebSockets cut off because their push queue overflowed.",
                &self.slow_disconnects,
            ),
            (
                "demo_ws_idle_closes_total",
                "counter",
                "WebSockets closed for silence.",
                &self.idle_closes,
            ),
            (
                "demo_ws_app_pings_total",
                "counter",
                "Application pings ({\"ping\": n}) answered with a pong message.",
                &self.app_pings,
            ),
        ];
        for (name, kind, help, value) in rows {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
        }
    }
}

/// The live-update hub of one server.
pub struct LiveHub {
    /// Its settings.
    pub config: LiveConfig,
    /// Its counters.
    pub counters: LiveCounters,
    subscriptions: RwLock<Subscriptions>,
    users: Mutex<HashMap<String, usize>>,
    next_id: AtomicU64,
    stop: watch::Sender<bool>,
}

/// A user's claim on one of their sockets; released when dropped.
pub struct Seat {
    hub: Arc<LiveHub>,
    user: String,
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut users = self
            .hub
            .users
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = users.get_mut(&self.user) {
            *n -= 1;
            if *n == 0 {
                users.remove(&self.user);
            }
        }
    }
}

/// A socket registered with the hub; unregistered when dropped.
pub struct Registration {
    hub: Arc<LiveHub>,
    /// Its id.
    pub id: u64,
    /// Its queue of pushes; `None` from it means the socket was too slow.
    pub pushes: mpsc::Receiver<Utf8Bytes>,
    _seat: Seat,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.hub.unregister(self.id);
        self.hub.counters.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl LiveHub {
    /// A hub with no sockets.
    pub fn new(config: LiveConfig) -> Self {
        LiveHub {
            config,
            counters: LiveCounters::default(),
            subscriptions: RwLock::new(Subscriptions::default()),
            users: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            stop: watch::channel(false).0,
        }
    }

    /// Claims one of `user`'s sockets, or `None` when they hold the most allowed.
    pub fn admit(self: &Arc<Self>, user: &str) -> Option<Seat> {
        let mut users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
        let held = users.entry(user.to_owned()).or_insert(0);
        if *held >= self.config.max_per_user {
            self.counters.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *held += 1;
        Some(Seat {
            hub: Arc::clone(self),
            user: user.to_owned(),
        })
    }

    /// Registers an accepted socket holding `seat`.
    pub fn register(self: &Arc<Self>, seat: Seat) -> Registration {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(self.config.queue);
        write(&self.subscriptions).queues.insert(id, tx);
        self.counters.open.fetch_add(1, Ordering::Relaxed);
        self.counters.accepted.fetch_add(1, Ordering::Relaxed);
        Registration {
            hub: Arc::clone(self),
            id,
            pushes: rx,
            _seat: seat,
        }
    }

    /// Adds `groups` to socket `id`'s subscriptions; false if it is gone (too slow).
    pub fn subscribe(&self, id: u64, groups: &[u32]) -> bool {
        let mut subs = write(&self.subscriptions);
        if !subs.queues.contains_key(&id) {
            return false;
        }
        for group in groups {
            subs.groups.entry(*group).or_default().insert(id);
        }
        true
    }

    /// Removes `groups` from socket `id`'s subscriptions.
    pub fn unsubscribe(&self, id: u64, groups: &[u32]) {
        let mut subs = write(&self.subscriptions);
        for group in groups {
            if let Some(members) = subs.groups.get_mut(group) {
                members.remove(&id);
                if members.is_empty() {
                    subs.groups.remove(group);
                }
            }
        }
    }

    /// Offers `change` to every subscriber of its group and returns how many
    /// subscribers there were. Slow ones are disconnected, not waited for.
    pub fn publish(&self, change: Change<'_>) -> usize {
        let group = change.group();
        let mut slow = Vec::new();
        let recipients = {
            let subs = read(&self.subscriptions);
            let Some(members) = subs.groups.get(&group) else {
                return 0;
            };
            let text = Utf8Bytes::from(change.to_json());
            for id in members {
                if let Some(queue) = subs.queues.get(id) {
                    if queue.try_send(text.clone()).is_err() {
                        slow.push(*id);
                    }
                }
            }
            members.len()
        };
        self.counters
            .pushes
            .fetch_add((recipients - slow.len()) as u64, Ordering::Relaxed);
        if !slow.is_empty() {
            self.counters
                .slow_disconnects
                .fetch_add(slow.len() as u64, Ordering::Relaxed);
            for id in slow {
                self.unregister(id);
            }
        }
        recipients
    }

    /// Resolves when the server shuts down.
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Tells every socket to close.
    pub fn shut_down(&self) {
        let _ = self.stop.send(true);
    }

    fn unregister(&self, id: u64) {
        let mut subs = write(&self.subscriptions);
        subs.queues.remove(&id);
        subs.groups.retain(|_, members| {
            members.remove(&id);
            !members.is_empty()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub(max_per_user: usize, queue: usize) -> Arc<LiveHub> {
        Arc::new(LiveHub::new(LiveConfig {
            ping_interval: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(90),
            max_per_user,
            queue,
        }))
    }

    fn note(group: u32) -> Note {
        Note {
            id: 7,
            group,
            title: "t".into(),
            body: "b".into(),
            version: 1,
        }
    }

    #[test]
    fn users_hold_a_bounded_number_of_seats() {
        let hub = hub(2, 4);
        let a = hub.admit("ann").unwrap();
        let _b = hub.admit("ann").unwrap();
        assert!(hub.admit("ann").is_none());
        assert!(hub.admit("bob").is_some());
        drop(a);
        assert!(hub.admit("ann").is_some());
    }

    #[test]
    fn pushes_reach_subscribers_of_the_group_only() {
        let hub = hub(20, 4);
        let mut one = hub.register(hub.admit("u").unwrap());
        let mut two = hub.register(hub.admit("u").unwrap());
        assert!(hub.subscribe(one.id, &[1]));
        assert!(hub.subscribe(two.id, &[2]));
        assert_eq!(hub.publish(Change::Created(&note(1))), 1);
        let text = one.pushes.try_recv().unwrap();
        assert!(text.as_str().contains("\"note.created\""), "{text}");
        assert!(two.pushes.try_recv().is_err());
        assert_eq!(hub.publish(Change::Deleted { group: 3, id: 1 }), 0);
        hub.unsubscribe(one.id, &[1]);
        assert_eq!(hub.publish(Change::Updated(&note(1))), 0);
    }

    #[test]
    fn a_slow_subscriber_is_cut_off_not_buffered() {
        let hub = hub(20, 2);
        let mut slow = hub.register(hub.admit("u").unwrap());
        hub.subscribe(slow.id, &[1]);
        for _ in 0..3 {
            assert_eq!(hub.publish(Change::Created(&note(1))), 1);
        }
        assert_eq!(hub.counters.slow_disconnects.load(Ordering::Relaxed), 1);
        assert!(slow.pushes.try_recv().is_ok());
        assert!(slow.pushes.try_recv().is_ok());
        // Its queue was dropped: after what was queued, it learns it was cut off.
        assert!(matches!(
            slow.pushes.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
        assert!(!hub.subscribe(slow.id, &[1]));
        assert_eq!(hub.publish(Change::Created(&note(1))), 0);
    }
}
