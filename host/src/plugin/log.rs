//! The plugin's `log()` lines: a budget per VU (lines per second, bytes per line), and
//! stderr written through [`crate::stderr`], so no VU ever waits on it: when stderr is
//! slow or is a pipe nobody reads, lines are dropped and counted instead of blocking
//! the VU that wrote them. As k6's console, `debug` and `trace` lines are written only
//! with `-v`/`--verbose` ([`set_verbose`]); `--quiet` hides the progress, not the log.

pub(crate) use crate::config::LogLimits;
use crate::stderr::LineWriter;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// What became of the plugin's log lines, for `summary.json` (`log`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LogCounts {
    /// Lines handed to the writer.
    pub written: u64,
    /// Lines cut to `log_line_bytes`.
    pub truncated: u64,
    /// Lines dropped because their VU was over `log_lines_per_s`.
    pub dropped_over_budget: u64,
    /// Lines dropped because stderr did not keep up (a full pipe nobody reads).
    pub dropped_stderr_blocked: u64,
    /// `debug` and `trace` lines not written (no `-v`, as k6).
    #[serde(alias = "hidden_by_quiet")]
    pub hidden_debug: u64,
}

impl LogCounts {
    /// A warning for the summary when lines were lost or cut.
    pub fn warning(&self, limits: &LogLimits) -> Option<String> {
        let mut parts = Vec::new();
        if self.dropped_over_budget > 0 {
            parts.push(format!(
                "{} dropped over the budget of {} lines/s per VU (raise [limits] log_lines_per_s)",
                self.dropped_over_budget, limits.lines_per_s
            ));
        }
        if self.dropped_stderr_blocked > 0 {
            parts.push(format!(
                "{} dropped because stderr was not being read fast enough",
                self.dropped_stderr_blocked
            ));
        }
        if self.truncated > 0 {
            parts.push(format!(
                "{} cut to {} bytes (raise [limits] log_line_bytes)",
                self.truncated, limits.line_bytes
            ));
        }
        (!parts.is_empty()).then(|| format!("plugin log lines: {}", parts.join("; ")))
    }
}

/// Most lines a worker keeps for its coordinator between two ticks; the rest are only
/// counted (each VU's `log_lines_per_s` bounds them first).
pub(crate) const FORWARD_MAX: usize = 1000;

/// Lines a worker passes on to its coordinator, kept between two ticks.
#[derive(Default)]
struct Forward {
    on: AtomicBool,
    lines: Mutex<(Vec<String>, u64)>,
}

/// The run's log writer, shared by every VU.
pub struct LogSink {
    out: &'static LineWriter,
    forward: Forward,
    limits: LogLimits,
    verbose: bool,
    written: AtomicU64,
    truncated: AtomicU64,
    over_budget: AtomicU64,
    blocked: AtomicU64,
    hidden: AtomicU64,
}

/// `-v`/`--verbose` of this process: `debug` and `trace` lines are written.
static VERBOSE: AtomicBool = AtomicBool::new(false);

/// Sets `-v`/`--verbose` for the runs of this process (the command line, once).
pub(crate) fn set_verbose(on: bool) {
    VERBOSE.store(on, Ordering::Relaxed);
}

/// Whether this process was started with `-v`/`--verbose`.
pub(crate) fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}

/// Severity of a line, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// `trace`.
    Trace,
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `warn`.
    Warn,
    /// `error`.
    Error,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Self::Trace => "trace",
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warn => "warn",
            Self::Error => "error",
        }
    }
}

impl LogSink {
    /// Lines to the process's stderr; `debug` and `trace` ones only when `verbose`.
    pub fn stderr(limits: LogLimits, verbose: bool) -> Self {
        Self::new(limits, verbose, crate::stderr::writer())
    }

    /// Lines to `out`; `debug` and `trace` ones only when `verbose`.
    pub fn new(limits: LogLimits, verbose: bool, out: &'static LineWriter) -> Self {
        Self {
            out,
            forward: Forward::default(),
            limits,
            verbose,
            written: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
            over_budget: AtomicU64::new(0),
            blocked: AtomicU64::new(0),
            hidden: AtomicU64::new(0),
        }
    }

    /// Whether `debug` and `trace` lines are written (`-v`).
    pub fn verbose(&self) -> bool {
        self.verbose
    }

    /// The limits each VU's [`LogBudget`] applies.
    pub fn limits(&self) -> LogLimits {
        self.limits
    }

    /// Writes one line of VU `vu` of `scenario` if its budget allows; never blocks.
    pub fn write(
        &self,
        budget: &mut LogBudget,
        scenario: &str,
        vu: u64,
        level: Level,
        message: &str,
    ) {
        if !self.verbose && level < Level::Info {
            self.hidden.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if !budget.take(self.limits.lines_per_s, Instant::now()) {
            self.over_budget.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // A secret the script got is redacted before the line is cut, kept or forwarded.
        let message = crate::stderr::redact::redact(message);
        let (text, cut) = cut_at(&message, self.limits.line_bytes);
        // One line, and nothing in it that drives the terminal.
        let text = crate::stderr::escape_controls(text, false);
        let line = if cut > 0 {
            self.truncated.fetch_add(1, Ordering::Relaxed);
            format!(
                "[{scenario} vu {vu}] {}: {text}… ({cut} more bytes not shown)\n",
                level.name()
            )
        } else {
            format!("[{scenario} vu {vu}] {}: {text}\n", level.name())
        };
        if self.forward.on.load(Ordering::Relaxed) {
            let mut kept = self.forward.lines.lock().unwrap_or_else(|p| p.into_inner());
            if kept.0.len() < FORWARD_MAX {
                kept.0.push(line.clone());
            } else {
                kept.1 += 1;
            }
        }
        if self.out.try_line(line) {
            self.written.fetch_add(1, Ordering::Relaxed);
        } else {
            self.blocked.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// From now on, keeps each line written for [`take_forwarded`](Self::take_forwarded)
    /// too (a worker, whose coordinator shows its lines).
    pub fn start_forwarding(&self) {
        self.forward.on.store(true, Ordering::Relaxed);
    }

    /// The lines kept since the last call, and how many more were not kept.
    pub fn take_forwarded(&self) -> (Vec<String>, u64) {
        let mut kept = self.forward.lines.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *kept)
    }

    /// Writes a line that was written elsewhere (a worker's), counted as written here;
    /// escaped again, as it came from the wire, and cut to the line budget.
    pub fn relay(&self, line: String) {
        let body = line.strip_suffix('\n').unwrap_or(&line);
        let (body, cut) = cut_at(body, self.limits.line_bytes.saturating_add(256));
        let mut line = crate::stderr::escape_controls(body, false).into_owned();
        if cut > 0 {
            line.push_str(&format!("… ({cut} more bytes not shown)"));
        }
        line.push('\n');
        if self.out.try_line(line) {
            self.written.fetch_add(1, Ordering::Relaxed);
        } else {
            self.blocked.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> LogCounts {
        LogCounts {
            written: self.written.load(Ordering::Relaxed),
            truncated: self.truncated.load(Ordering::Relaxed),
            dropped_over_budget: self.over_budget.load(Ordering::Relaxed),
            dropped_stderr_blocked: self.blocked.load(Ordering::Relaxed),
            hidden_debug: self.hidden.load(Ordering::Relaxed),
        }
    }
}

/// `message` cut to at most `max` bytes on a character boundary, and the bytes cut.
fn cut_at(message: &str, max: usize) -> (&str, usize) {
    if message.len() <= max {
        return (message, 0);
    }
    let mut end = max;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    (&message[..end], message.len() - end)
}

/// One VU's token bucket: `lines_per_s` tokens a second, at most a second's worth kept.
#[derive(Debug, Clone)]
pub struct LogBudget {
    tokens: f64,
    last: Option<Instant>,
}

impl Default for LogBudget {
    fn default() -> Self {
        Self {
            tokens: f64::INFINITY,
            last: None,
        }
    }
}

impl LogBudget {
    /// Takes a token if one is left at `now`.
    fn take(&mut self, lines_per_s: f64, now: Instant) -> bool {
        let burst = lines_per_s.max(1.0);
        self.tokens = match self.last {
            None => burst,
            Some(last) => {
                (self.tokens + now.duration_since(last).as_secs_f64() * lines_per_s).min(burst)
            }
        };
        self.last = Some(now);
        if lines_per_s > 0.0 && self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    fn leaked(out: impl Write + Send + 'static) -> &'static LineWriter {
        Box::leak(Box::new(LineWriter::start(256, out)))
    }

    #[test]
    fn the_budget_refills_at_its_rate_and_keeps_one_second() {
        let mut b = LogBudget::default();
        let t0 = Instant::now();
        let taken = (0..100).filter(|_| b.take(10.0, t0)).count();
        assert_eq!(taken, 10, "a second's worth at once");
        assert!(!b.take(10.0, t0 + Duration::from_millis(50)));
        assert!(b.take(10.0, t0 + Duration::from_millis(110)));
        let later = t0 + Duration::from_secs(60);
        let taken = (0..100).filter(|_| b.take(10.0, later)).count();
        assert_eq!(taken, 10, "idle time does not bank more than a second");
        let mut off = LogBudget::default();
        assert!(!off.take(0.0, t0));
    }

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        assert_eq!(cut_at("héllo", 2), ("h", 5));
        assert_eq!(cut_at("hello", 10), ("hello", 0));
    }

    /// A writer that blocks until released, like a pipe nobody reads.
    struct Stuck(Arc<Mutex<()>>);

    impl Write for Stuck {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            drop(self.0.lock().unwrap());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stuck_writer_drops_lines_instead_of_blocking() {
        let gate = Arc::new(Mutex::new(()));
        let held = gate.lock().unwrap();
        let sink = LogSink::new(
            LogLimits {
                lines_per_s: 1e9,
                line_bytes: 16,
            },
            false,
            leaked(Stuck(gate.clone())),
        );
        let mut budget = LogBudget::default();
        let started = Instant::now();
        for _ in 0..10_000 {
            sink.write(
                &mut budget,
                "s",
                1,
                Level::Info,
                "a line much longer than sixteen bytes",
            );
        }
        assert!(started.elapsed() < Duration::from_secs(5));
        let counts = sink.counts();
        assert_eq!(counts.written + counts.dropped_stderr_blocked, 10_000);
        assert!(counts.written <= 257, "{counts:?}");
        assert_eq!(counts.truncated, 10_000);
        drop(held);
    }

    #[test]
    fn debug_lines_are_written_only_when_verbose() {
        for (verbose, hidden, written) in [(false, 2, 2), (true, 0, 4)] {
            let sink = LogSink::new(LogLimits::default(), verbose, leaked(std::io::sink()));
            let mut budget = LogBudget::default();
            sink.write(&mut budget, "s", 1, Level::Debug, "debug");
            sink.write(&mut budget, "s", 1, Level::Trace, "trace");
            sink.write(&mut budget, "s", 1, Level::Info, "shown");
            sink.write(&mut budget, "s", 1, Level::Error, "shown");
            let counts = sink.counts();
            assert_eq!((counts.hidden_debug, counts.written), (hidden, written));
        }
    }

    #[test]
    fn forwarded_lines_are_kept_from_the_start_and_capped() {
        let limits = LogLimits {
            lines_per_s: 1e9,
            line_bytes: 64,
        };
        let sink = LogSink::new(limits, false, leaked(std::io::sink()));
        let mut budget = LogBudget::default();
        sink.write(&mut budget, "s", 1, Level::Info, "before");
        sink.start_forwarding();
        for _ in 0..FORWARD_MAX + 2 {
            sink.write(&mut budget, "s", 2, Level::Warn, "after");
        }
        let (lines, not_kept) = sink.take_forwarded();
        assert_eq!((lines.len(), not_kept), (FORWARD_MAX, 2));
        assert_eq!(lines[0], "[s vu 2] warn: after\n");
        assert_eq!(sink.take_forwarded(), (Vec::new(), 0), "taken once");
    }
}
