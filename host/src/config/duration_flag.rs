//! `--duration` sets the length of `constant-vus` and `constant-arrival-rate`
//! scenarios only (as k6's does); a scenario it leaves as it was (ramping stages,
//! iterations) is named with its real length, so `--duration 6s` on a two-minute ramp
//! does not silently run for two minutes.

use super::scenario::ExecutorConfig;
use super::RunConfig;
use crate::duration::format_duration;
use std::time::Duration;

/// One warning per scenario that `--duration flag` did not shorten, with its length.
pub(crate) fn unshortened(config: &RunConfig, flag: Option<Duration>) -> Vec<String> {
    let Some(flag) = flag else {
        return Vec::new();
    };
    config
        .scenarios
        .iter()
        .filter(|s| {
            !matches!(
                s.executor,
                ExecutorConfig::ConstantVus { .. } | ExecutorConfig::ConstantArrivalRate { .. }
            )
        })
        .map(|s| {
            let (what, fix) = match s.executor {
                ExecutorConfig::RampingVus { .. } | ExecutorConfig::RampingArrivalRate { .. } => (
                    "its stages set its length",
                    "shorten its stages (or give --stage DURATION:TARGET for a ramping-vus run)",
                ),
                _ => (
                    "it ends after its iterations or its max_duration",
                    "give --iterations, or set its max_duration",
                ),
            };
            let length = s.executor.duration();
            let start = if s.start_time.is_zero() {
                String::new()
            } else {
                format!(" after its start_time of {}", format_duration(s.start_time))
            };
            format!(
                "--duration {} does not shorten scenario `{}` ({}: {what}); it runs for {}{start}; to make it shorter, {fix}",
                format_duration(flag),
                s.name,
                s.executor.name(),
                format_duration(length),
            )
        })
        .collect()
}
