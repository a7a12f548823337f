//! The bytes a socket holds for its plugin: messages received and not yet taken. The
//! socket's task reads the peer only while they are under the socket's byte budget, so
//! a plugin that falls behind costs at most the budget plus one message per socket,
//! whatever size the peer's messages are.

use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::Notify;

/// Bytes held for one socket, shared by the plugin's handle and the socket's task.
pub(super) struct Held {
    bytes: AtomicUsize,
    limit: usize,
    freed: Notify,
}

impl Held {
    /// Nothing held yet; reading stops once `limit` bytes are held.
    pub(super) fn new(limit: usize) -> Self {
        Self {
            bytes: AtomicUsize::new(0),
            limit,
            freed: Notify::new(),
        }
    }

    /// Whether the task may read another message.
    pub(super) fn has_room(&self) -> bool {
        self.bytes.load(Ordering::Acquire) < self.limit
    }

    /// A message of `len` bytes was put in the buffer.
    pub(super) fn add(&self, len: usize) {
        self.bytes.fetch_add(len, Ordering::AcqRel);
    }

    /// The plugin took a message of `len` bytes: wakes the task if it was waiting.
    pub(super) fn take(&self, len: usize) {
        self.bytes.fetch_sub(len, Ordering::AcqRel);
        // A stored permit if the task is not waiting yet, so no wake-up is lost.
        self.freed.notify_one();
    }

    /// Waits until the plugin takes a message.
    pub(super) async fn freed(&self) {
        self.freed.notified().await;
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }
}
