//! Why a flag's value is refused by the command line's own value parsers; clap shows
//! each after `invalid value '…' for '--flag'`.

use crate::duration::DurationError;

/// A path flag whose optional value swallowed the plugin (`--stack plugin.wasm`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{text:?} is the plugin, not a value of --{flag}: put --{flag} after the plugin \
     (`host run {text} --{flag}`), or give its value with `=` (`--{flag}=VALUE`)"
)]
pub(super) struct PluginTakenAsValue {
    /// The flag, without its dashes.
    pub flag: &'static str,
    /// The value it took.
    pub text: String,
}

/// A flag whose value is optional takes the next word as its value, so `--dashboard
/// plugin.wasm` would read the plugin as the address: say how to write it instead.
pub(super) fn plugin_taken_as_value(flag: &'static str, text: &str) -> Option<PluginTakenAsValue> {
    text.ends_with(".wasm").then(|| PluginTakenAsValue {
        flag,
        text: text.to_owned(),
    })
}

/// Why a `--stage DURATION:TARGET` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum StageError {
    /// No `:`.
    #[error("expected DURATION:TARGET such as 30s:100, got {0:?}")]
    Shape(String),
    /// The duration does not parse.
    #[error("{text:?}: {reason}")]
    Duration {
        /// The stage as given.
        text: String,
        /// Why its duration does not parse.
        reason: DurationError,
    },
    /// The target is not a count of VUs.
    #[error("{text:?}: the target {target:?} is not a whole number of VUs (30s:100)")]
    Target {
        /// The stage as given.
        text: String,
        /// Its target as given.
        target: String,
    },
}

/// Why a `--dashboard ADDR` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum DashboardError {
    /// The address swallowed the plugin.
    #[error("{0}")]
    PluginTaken(PluginTakenAsValue),
    /// Not `IP:PORT`.
    #[error("{0:?} is not an address to listen on: write IP:PORT, such as 127.0.0.1:5665")]
    Address(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_write() {
        assert_eq!(
            plugin_taken_as_value("stack", "p.wasm")
                .unwrap()
                .to_string(),
            "\"p.wasm\" is the plugin, not a value of --stack: put --stack after the plugin \
             (`host run p.wasm --stack`), or give its value with `=` (`--stack=VALUE`)"
        );
        assert!(plugin_taken_as_value("stack", "compose.yaml").is_none());
        assert_eq!(
            StageError::Target {
                text: "30s:x".into(),
                target: "x".into()
            }
            .to_string(),
            "\"30s:x\": the target \"x\" is not a whole number of VUs (30s:100)"
        );
    }
}
