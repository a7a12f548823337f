//! A transport wrapper that counts bytes each way and notes when the last write
//! happened, which splits a request's time into sending and waiting as k6 does.

use super::types::IoBytes;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Byte counts and last-write time of one connection.
#[derive(Debug, Default)]
pub(crate) struct IoStats {
    sent: AtomicU64,
    received: AtomicU64,
    last_write_ns: AtomicU64,
    /// What [`IoStats::take_unaccounted`] handed out so far (sent, received).
    accounted: (AtomicU64, AtomicU64),
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl IoStats {
    /// Bytes written so far.
    pub(crate) fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Bytes read so far.
    pub(crate) fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// The bytes each way since the last call: concurrent HTTP/2 streams on one
    /// connection take turns at the counts, so each byte is counted once.
    pub(crate) fn take_unaccounted(&self) -> IoBytes {
        let sent = self.sent();
        let received = self.received();
        // fetch_max keeps the mark from going back when two streams race.
        IoBytes {
            sent: sent.saturating_sub(self.accounted.0.fetch_max(sent, Ordering::Relaxed)),
            received: received
                .saturating_sub(self.accounted.1.fetch_max(received, Ordering::Relaxed)),
        }
    }

    /// Raises the counts to totals read from elsewhere (a QUIC connection's UDP
    /// counts, which quinn keeps): they only grow, so a stale reading is harmless.
    pub(crate) fn observe(&self, sent: u64, received: u64) {
        self.sent.fetch_max(sent, Ordering::Relaxed);
        self.received.fetch_max(received, Ordering::Relaxed);
    }

    /// Notes that a request was written now (QUIC: its stream finished).
    pub(crate) fn note_write(&self) {
        epoch();
        let ns = epoch().elapsed().as_nanos().max(1) as u64;
        self.last_write_ns.store(ns, Ordering::Relaxed);
    }

    /// When the last write finished, if there was one.
    pub(crate) fn last_write(&self) -> Option<Instant> {
        match self.last_write_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(epoch() + Duration::from_nanos(ns)),
        }
    }
}

/// Wraps a transport and updates an [`IoStats`].
pub(crate) struct CountingIo<T> {
    inner: T,
    stats: Arc<IoStats>,
}

impl<T> CountingIo<T> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: T) -> (Self, Arc<IoStats>) {
        let stats = Arc::new(IoStats::default());
        epoch();
        (
            Self {
                inner,
                stats: stats.clone(),
            },
            stats,
        )
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for CountingIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            self.stats.received.fetch_add(n as u64, Ordering::Relaxed);
        }
        res
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for CountingIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &res {
            self.stats.sent.fetch_add(*n as u64, Ordering::Relaxed);
            let ns = epoch().elapsed().as_nanos().max(1) as u64;
            self.stats.last_write_ns.store(ns, Ordering::Relaxed);
        }
        res
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = &res {
            self.stats.sent.fetch_add(*n as u64, Ordering::Relaxed);
            let ns = epoch().elapsed().as_nanos().max(1) as u64;
            self.stats.last_write_ns.store(ns, Ordering::Relaxed);
        }
        res
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
