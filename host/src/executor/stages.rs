//! Stage arithmetic shared by the ramping executors: the value of a piecewise-linear
//! schedule at a time, and its integral (iterations due by a time, for arrival rates).

use crate::config::Stage;
use std::time::Duration;

/// The schedule's value at `t` after its start: linear within each stage, from the
/// previous stage's target (or `start`) to this stage's target.
pub(crate) fn value_at(start: f64, stages: &[Stage], t: Duration) -> f64 {
    let mut from = start;
    let mut stage_start = Duration::ZERO;
    for stage in stages {
        let stage_end = stage_start + stage.duration;
        if t < stage_end {
            let frac = (t - stage_start).as_secs_f64() / stage.duration.as_secs_f64();
            return from + (stage.target as f64 - from) * frac;
        }
        from = stage.target as f64;
        stage_start = stage_end;
    }
    from
}

/// When each stage ends, from the schedule's start.
pub(crate) fn stage_ends(stages: &[Stage]) -> Vec<Duration> {
    stages
        .iter()
        .scan(Duration::ZERO, |acc, s| {
            *acc += s.duration;
            Some(*acc)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(secs: u64, target: u64) -> Stage {
        Stage {
            duration: Duration::from_secs(secs),
            target,
        }
    }

    #[test]
    fn linear_within_stages_and_exact_at_their_ends() {
        let stages = [stage(10, 10), stage(10, 10), stage(5, 0)];
        assert_eq!(value_at(0.0, &stages, Duration::ZERO), 0.0);
        assert_eq!(value_at(0.0, &stages, Duration::from_secs(5)), 5.0);
        assert_eq!(value_at(0.0, &stages, Duration::from_secs(10)), 10.0);
        assert_eq!(value_at(0.0, &stages, Duration::from_secs(15)), 10.0);
        assert_eq!(value_at(0.0, &stages, Duration::from_millis(22_500)), 5.0);
        assert_eq!(value_at(0.0, &stages, Duration::from_secs(99)), 0.0);
        assert_eq!(
            stage_ends(&stages),
            vec![
                Duration::from_secs(10),
                Duration::from_secs(20),
                Duration::from_secs(25)
            ]
        );
    }

    #[test]
    fn zero_length_stage_jumps() {
        let stages = [stage(0, 7), stage(1, 7)];
        assert_eq!(value_at(1.0, &stages, Duration::ZERO), 7.0);
    }
}
