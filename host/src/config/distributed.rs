//! The `[distributed]` section: how `host coordinate` treats its workers.
//!
//! ```toml
//! [distributed]
//! on_worker_loss = "continue"   # or "abort": a lost worker stops the run (exit 108)
//! join_timeout = "60s"          # how long the coordinator waits for all its workers
//! ```

use crate::table::{ConfigError, TableReader};
use std::time::Duration;

/// What a coordinator does when a worker disappears.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnWorkerLoss {
    /// The run goes on with the other workers; the summary names the lost one.
    #[default]
    Continue,
    /// The run stops (exit code 108), still writing its results.
    Abort,
}

/// Settings of a distributed run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistributedOptions {
    /// What a lost worker does to the run.
    pub on_worker_loss: OnWorkerLoss,
    /// How long the coordinator waits for all its workers to join and be ready.
    pub join_timeout: Duration,
}

impl Default for DistributedOptions {
    fn default() -> Self {
        Self {
            on_worker_loss: OnWorkerLoss::Continue,
            join_timeout: Duration::from_secs(60),
        }
    }
}

/// Reads `[distributed]` from the run config, or the defaults when it is absent.
pub(crate) fn parse(source: &toml::Table) -> Result<DistributedOptions, ConfigError> {
    let mut options = DistributedOptions::default();
    let Some(value) = source.get("distributed") else {
        return Ok(options);
    };
    let table = value.as_table().ok_or_else(|| ConfigError {
        path: "distributed".into(),
        message: "must be a table: write it as [distributed]".into(),
    })?;
    let mut r = TableReader::new("distributed", table);
    if let Some(text) = r.string("on_worker_loss")? {
        options.on_worker_loss = match text.as_str() {
            "continue" => OnWorkerLoss::Continue,
            "abort" => OnWorkerLoss::Abort,
            other => {
                return Err(r.error(
                    "on_worker_loss",
                    format!("{other:?} is not one of \"continue\", \"abort\""),
                ))
            }
        };
    }
    if let Some(timeout) = r.duration("join_timeout")? {
        if timeout.is_zero() {
            return Err(r.error("join_timeout", "must be longer than 0s"));
        }
        options.join_timeout = timeout;
    }
    r.finish()?;
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<DistributedOptions, ConfigError> {
        parse(&toml::from_str(text).unwrap())
    }

    #[test]
    fn reads_the_policy_and_explains_mistakes() {
        assert_eq!(parse_text("").unwrap(), DistributedOptions::default());
        let o =
            parse_text("[distributed]\non_worker_loss = \"abort\"\njoin_timeout = \"5s\"").unwrap();
        assert_eq!(o.on_worker_loss, OnWorkerLoss::Abort);
        assert_eq!(o.join_timeout, Duration::from_secs(5));
        let err = parse_text("[distributed]\non_worker_loss = \"stop\"").unwrap_err();
        assert!(err.message.contains("\"continue\", \"abort\""), "{err:?}");
        assert!(parse_text("[distributed]\nonworkerloss = \"abort\"").is_err());
    }
}
