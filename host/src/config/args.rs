//! Parsers of command-line values that several subcommands share (`host run`,
//! `host sweep`, `host target`), as clap value parsers: they live with the config so
//! that no subcommand imports another's module.

use crate::duration::{parse_duration, DurationError};
use std::time::Duration;

/// A duration flag (`250ms`, `2s`), as the config writes them.
pub(crate) fn duration_arg(text: &str) -> Result<Duration, DurationError> {
    parse_duration(text)
}

/// Why a `-e` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum KeyValueError {
    /// A bare `KEY` that this process's environment does not set (or an empty one).
    #[error("expected KEY=VALUE, or a KEY set in this environment: {0:?} is not set")]
    NotSet(String),
    /// `=VALUE`.
    #[error("empty key before `=`: give KEY=VALUE")]
    EmptyKey,
}

/// `KEY=VALUE` of `-e`; a bare `KEY` takes its value from this process's environment
/// (as `docker run -e KEY` does), so a secret need not be written on a command line.
/// Errors never quote the value.
pub(crate) fn key_value(text: &str) -> Result<(String, String), KeyValueError> {
    let Some((k, v)) = text.split_once('=') else {
        return match std::env::var(text) {
            Ok(v) if !text.is_empty() => Ok((text.to_string(), v)),
            _ => Err(KeyValueError::NotSet(text.to_string())),
        };
    };
    if k.is_empty() {
        return Err(KeyValueError::EmptyKey);
    }
    Ok((k.to_string(), v.to_string()))
}
