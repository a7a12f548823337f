//! Parsers of command-line values that several subcommands share (`host run`,
//! `host sweep`, `host target`), as clap value parsers: they live with the config so
//! that no subcommand imports another's module.

use super::parse_duration;
use std::time::Duration;

/// A duration flag (`250ms`, `2s`), as the config writes them.
pub(crate) fn duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

/// `KEY=VALUE` of `-e`.
pub(crate) fn key_value(text: &str) -> Result<(String, String), String> {
    let (k, v) = text
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, got {text:?}"))?;
    if k.is_empty() {
        return Err(format!("empty key in {text:?}"));
    }
    Ok((k.to_string(), v.to_string()))
}
