//! The host's stderr, written by a thread of its own through a bounded queue, so a run
//! never waits on it: when stderr is a pipe nobody reads, the pipe fills, the writer
//! thread blocks, the queue fills, and further lines are dropped and counted instead of
//! freezing the VU or the run loop that wrote them. The command line drains the queue
//! (for a bounded time) before the process exits.

pub(crate) mod redact;

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Lines the queue to stderr holds.
const QUEUE_LINES: usize = 1024;

/// A writer thread fed through a bounded queue of lines.
pub struct LineWriter {
    queue: SyncSender<String>,
    pending: Arc<AtomicUsize>,
    dropped: AtomicU64,
}

impl LineWriter {
    /// Starts a thread writing every queued line to `out`; at most `capacity` lines
    /// wait for it.
    pub fn start(capacity: usize, mut out: impl Write + Send + 'static) -> Self {
        let (queue, lines) = sync_channel::<String>(capacity);
        let pending = Arc::new(AtomicUsize::new(0));
        let done = pending.clone();
        // Without the thread (none could be made) the queue fills and lines are dropped.
        let _ = std::thread::Builder::new()
            .name("stderr-writer".into())
            .spawn(move || {
                for line in lines {
                    // Blocks on a full pipe: only this thread waits then.
                    let _ = out.write_all(line.as_bytes());
                    let _ = out.flush();
                    done.fetch_sub(1, Ordering::AcqRel);
                }
            });
        Self {
            queue,
            pending,
            dropped: AtomicU64::new(0),
        }
    }

    /// Queues `line` (which should end with a newline); `false`, and counted, when
    /// the queue is full. Never blocks.
    pub fn try_line(&self, line: String) -> bool {
        // A secret a script got never reaches the terminal (see `redact`).
        let line = match redact::redact(&line) {
            std::borrow::Cow::Owned(clean) => clean,
            std::borrow::Cow::Borrowed(_) => line,
        };
        self.pending.fetch_add(1, Ordering::AcqRel);
        if self.queue.try_send(line).is_ok() {
            true
        } else {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            false
        }
    }

    /// Lines dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Waits until every queued line is written, or `timeout` passed; whether it was.
    pub fn flush(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        while self.pending.load(Ordering::Acquire) > 0 {
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

/// The process's stderr writer, started on first use.
pub(crate) fn writer() -> &'static LineWriter {
    static STDERR: OnceLock<LineWriter> = OnceLock::new();
    STDERR.get_or_init(|| LineWriter::start(QUEUE_LINES, std::io::stderr()))
}

/// Writes `text` and a newline to stderr without ever blocking (see the module);
/// terminal control characters in it are escaped (newlines and tabs kept).
pub(crate) fn line(text: impl std::fmt::Display) {
    let text = text.to_string();
    writer().try_line(format!("{}\n", escape_controls(&text, true)));
}

/// `warning: TEXT` on stderr, without ever blocking, escaped as [`line`] does.
pub(crate) fn warn(text: impl std::fmt::Display) {
    let text = text.to_string();
    writer().try_line(format!("warning: {}\n", escape_controls(&text, true)));
}

/// `text` with the characters that drive a terminal written as escapes (`\x1b`,
/// `\r`, `\u{202e}`): what a plugin logs or a worker sends can then neither move the
/// cursor, rewrite earlier lines, retitle the window nor reorder text. With
/// `keep_lines`, newlines and tabs stay as they are (the host's own messages span lines).
pub(crate) fn escape_controls(text: &str, keep_lines: bool) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| {
        (c.is_control() && !(keep_lines && matches!(c, '\n' | '\t')))
            // Bidirectional overrides and isolates reorder what follows them.
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !escaped(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A writer that blocks until released, like a pipe nobody reads.
    struct Stuck(Arc<Mutex<Vec<u8>>>);

    impl Write for Stuck {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn control_characters_are_escaped() {
        let hostile = "ok\x1b[2J\x1b]0;pwned\x07\rfake\u{9b}31m\u{202e}txt\nnext\tcol";
        assert_eq!(
            escape_controls(hostile, false),
            "ok\\x1b[2J\\x1b]0;pwned\\x07\\rfake\\x9b31m\\u{202e}txt\\nnext\\tcol"
        );
        assert_eq!(
            escape_controls(hostile, true),
            "ok\\x1b[2J\\x1b]0;pwned\\x07\\rfake\\x9b31m\\u{202e}txt\nnext\tcol"
        );
        assert!(matches!(
            escape_controls("plain text, é", false),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_blocked_writer_makes_lines_drop_not_wait() {
        let out = Arc::new(Mutex::new(Vec::new()));
        let gate = out.lock().unwrap();
        let writer = LineWriter::start(8, Stuck(out.clone()));
        let started = Instant::now();
        let kept = (0..1000)
            .filter(|i| writer.try_line(format!("{i}\n")))
            .count();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!((8..=9).contains(&kept), "{kept} kept");
        assert_eq!(writer.dropped(), 1000 - kept as u64);
        assert!(!writer.flush(Duration::from_millis(50)));
        drop(gate);
        assert!(writer.flush(Duration::from_secs(5)));
        assert_eq!(
            String::from_utf8_lossy(&out.lock().unwrap())
                .lines()
                .count(),
            kept
        );
    }
}
