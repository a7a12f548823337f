//! Parsers of command-line values that several subcommands share (`host run`,
//! `host sweep`, `host target`), as clap value parsers: they live with the config so
//! that no subcommand imports another's module.

use super::parse_duration;
use std::time::Duration;

/// A duration flag (`250ms`, `2s`), as the config writes them.
pub(crate) fn duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

/// `KEY=VALUE` of `-e`; a bare `KEY` takes its value from this process's environment
/// (as `docker run -e KEY` does), so a secret need not be written on a command line.
/// Errors never quote the value.
pub(crate) fn key_value(text: &str) -> Result<(String, String), String> {
    let Some((k, v)) = text.split_once('=') else {
        return match std::env::var(text) {
            Ok(v) if !text.is_empty() => Ok((text.to_string(), v)),
            _ => Err(format!(
                "expected KEY=VALUE, or a KEY set in this environment: {text:?} is not set"
            )),
        };
    };
    if k.is_empty() {
        return Err("empty key before `=`: give KEY=VALUE".into());
    }
    Ok((k.to_string(), v.to_string()))
}
