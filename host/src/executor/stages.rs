//! Stage arithmetic shared by the ramping executors: the VUs of a ramping-vus
//! schedule at a time (k6's steps), and when each stage ends.

use crate::config::Stage;
use std::time::Duration;

/// The VUs at `t`, stepped as k6 steps them: within a stage, the i-th of its `|diff|`
/// steps comes at i/|diff| of its duration, up or down. A ramp down thus keeps a VU
/// until its step (2 → 1 over 1 s keeps both VUs the whole second, as k6 1.1.0 does
/// for `-s 1s:1` on a script of `vus: 2`), where the linear value floored would drop
/// it at once.
pub(crate) fn steps_at(start_vus: u64, stages: &[Stage], t: Duration) -> u64 {
    let mut from = start_vus;
    let mut stage_start = Duration::ZERO;
    for stage in stages {
        let stage_end = stage_start + stage.duration;
        if t < stage_end {
            let done = (t - stage_start).as_secs_f64() / stage.duration.as_secs_f64();
            let diff = stage.target.abs_diff(from);
            // A tiny epsilon keeps float error from losing a step exactly at its time.
            let steps = ((diff as f64 * done) + 1e-9).floor() as u64;
            return if stage.target >= from {
                from + steps.min(diff)
            } else {
                from - steps.min(diff)
            };
        }
        from = stage.target;
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
    fn stages_end_where_their_durations_add_up() {
        let stages = [stage(10, 10), stage(10, 10), stage(5, 0)];
        assert_eq!(
            stage_ends(&stages),
            vec![
                Duration::from_secs(10),
                Duration::from_secs(20),
                Duration::from_secs(25)
            ]
        );
    }

    /// k6's steps: up at i/|diff| of the stage, down likewise (a VU leaves at its
    /// step, not as soon as the linear value falls under it).
    #[test]
    fn steps_come_at_k6_s_times_up_and_down() {
        let ms = Duration::from_millis;
        let down = [stage(1, 1)];
        assert_eq!(steps_at(2, &down, ms(0)), 2);
        assert_eq!(steps_at(2, &down, ms(999)), 2, "both VUs the whole second");
        assert_eq!(steps_at(2, &down, ms(1000)), 1);
        let up = [stage(2, 3), stage(0, 5), stage(4, 1)];
        assert_eq!(steps_at(1, &up, ms(999)), 1);
        assert_eq!(steps_at(1, &up, ms(1000)), 2);
        assert_eq!(steps_at(1, &up, ms(2000)), 5, "a stage of no time jumps");
        assert_eq!(steps_at(1, &up, ms(2999)), 5);
        assert_eq!(steps_at(1, &up, ms(3000)), 4);
        assert_eq!(steps_at(1, &up, ms(6000)), 1);
        assert_eq!(steps_at(1, &up, ms(9000)), 1);
    }
}
