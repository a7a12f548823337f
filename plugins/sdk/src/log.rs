//! Lines for the run's log, tagged with the VU by the host.
//!
//! ```no_run
//! # let user = "alice";
//! loadtest::log::info(format!("signed in as {user}"));
//! ```

use crate::bindings::loadtest::scenario::vu as wit;

/// Severity of a log line: `Trace`, `Debug`, `Info`, `Warn`, `Error`.
pub use wit::LogLevel as Level;

/// Writes `message` at `level`.
pub fn log(level: Level, message: impl AsRef<str>) {
    wit::log(level, message.as_ref());
}

/// Writes a trace line.
pub fn trace(message: impl AsRef<str>) {
    log(Level::Trace, message);
}

/// Writes a debug line.
pub fn debug(message: impl AsRef<str>) {
    log(Level::Debug, message);
}

/// Writes an info line.
pub fn info(message: impl AsRef<str>) {
    log(Level::Info, message);
}

/// Writes a warning.
pub fn warn(message: impl AsRef<str>) {
    log(Level::Warn, message);
}

/// Writes an error line.
pub fn error(message: impl AsRef<str>) {
    log(Level::Error, message);
}
