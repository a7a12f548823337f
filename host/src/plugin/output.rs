//! The guest's stdout and stderr: kept as a small tail per VU, so a trap can be
//! reported with what the plugin printed last (a Rust panic prints its message there).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// Bytes of output kept per VU.
const TAIL_BYTES: usize = 4096;

/// The last few KiB a VU's plugin wrote to stdout or stderr.
#[derive(Clone, Default)]
pub struct OutputTail {
    buffer: Arc<Mutex<Vec<u8>>>,
}

impl OutputTail {
    /// What is held, as text, trimmed.
    pub fn text(&self) -> String {
        let buf = self.buffer.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&buf).trim().to_string()
    }

    /// Forgets what was held.
    pub fn clear(&self) {
        self.buffer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    fn push(&self, bytes: &[u8]) {
        let mut buf = self.buffer.lock().unwrap_or_else(|p| p.into_inner());
        buf.extend_from_slice(bytes);
        if buf.len() > TAIL_BYTES {
            let cut = buf.len() - TAIL_BYTES;
            buf.drain(..cut);
        }
    }
}

impl IsTerminal for OutputTail {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for OutputTail {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for OutputTail {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
