//! A VU's idle connections by origin, and the turns of a batch's requests.

use super::prepared::Prepared;
use crate::net::connect::Connection;
use crate::net::targets::PoolKey;
use rustc_hash::FxHashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use tokio::sync::{Semaphore, SemaphorePermit};

/// Idle connections kept per origin and VU (browsers keep six).
const MAX_IDLE_PER_ORIGIN: usize = 6;

/// A VU's idle connections by origin.
pub(super) type Pool = FxHashMap<PoolKey, Vec<Connection>>;

/// A connection to `key` from the pool: an HTTP/2 one is shared (a handle on it is
/// handed out and it stays pooled), an HTTP/1.1 one is taken.
pub(super) fn checkout(pool: &mut Pool, key: &PoolKey) -> Option<Connection> {
    let idle = pool.get_mut(key)?;
    while let Some(conn) = idle.last_mut() {
        if !conn.is_usable() {
            idle.pop();
            continue;
        }
        if let Some(handle) = conn.share() {
            return Some(handle);
        }
        return idle.pop();
    }
    None
}

/// Returns a connection to the pool; a handle on an HTTP/2 or HTTP/3 connection
/// already pooled is dropped (the pooled one serves on).
pub(super) fn checkin(pool: &mut Pool, key: PoolKey, mut conn: Connection) {
    let idle = pool.entry(key).or_default();
    let proto = conn.proto();
    if proto.multiplexed() && idle.iter_mut().any(|c| c.proto() == proto && c.is_usable()) {
        return;
    }
    if idle.len() < MAX_IDLE_PER_ORIGIN && conn.is_usable() {
        idle.push(conn);
    }
}

/// The pool as a batch's requests share it. The lock is held only to take or give
/// back a connection, never across an await, and only by one VU's requests.
pub(super) fn lock(pool: &Mutex<Pool>) -> MutexGuard<'_, Pool> {
    pool.lock().unwrap_or_else(PoisonError::into_inner)
}

/// When a batch's requests may go: at most `[http] batch` of them in flight, and at
/// most `batch_per_host` to one origin (k6's `batch` and `batchPerHost`). A request
/// waits for its origin's turn before it takes one of the batch's, so requests to a
/// busy origin do not hold back those to another.
pub(super) struct BatchTurns {
    all: Semaphore,
    per_host: FxHashMap<PoolKey, Semaphore>,
}

/// A request's turn: it ends when dropped.
type Turn<'a> = (Option<SemaphorePermit<'a>>, Option<SemaphorePermit<'a>>);

impl BatchTurns {
    pub(super) fn new(options: &crate::config::HttpOptions, ready: &[(usize, Prepared)]) -> Self {
        let mut per_host = FxHashMap::default();
        if options.batch_per_host > 0 {
            for (_, p) in ready {
                per_host
                    .entry(p.target.pool_key.clone())
                    .or_insert_with(|| Semaphore::new(options.batch_per_host));
            }
        }
        Self {
            all: Semaphore::new(options.batch),
            per_host,
        }
    }

    /// Waits for the turn of a request to `key`. The semaphores are never closed, so
    /// each acquire ends with a permit.
    pub(super) async fn wait(&self, key: &PoolKey) -> Turn<'_> {
        let host = match self.per_host.get(key) {
            Some(s) => s.acquire().await.ok(),
            None => None,
        };
        (host, self.all.acquire().await.ok())
    }
}
