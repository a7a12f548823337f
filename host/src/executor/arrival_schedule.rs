//! When each iteration of an arrival-rate executor is due.
//!
//! The rate is a piecewise-linear curve (one flat segment for `constant-arrival-rate`,
//! one segment per stage for `ramping-arrival-rate`). Iteration `k` (from 0) is due at
//! the first instant after which the curve's integral exceeds `k`: the integral is
//! solved for each `k` afresh, so no error accumulates over a long run, and no
//! iteration falls due inside a stretch where the rate is zero.
//!
//! An execution segment runs a stripe of the whole schedule ([`ArrivalSchedule::striped`]):
//! its `j`-th iteration is the whole schedule's iteration `stripe.global(j)`, due when it
//! would be in one process, so the segments together start exactly the whole schedule.

use crate::config::{ExecutionTuple, Stage};
use std::time::Duration;

/// Relative slack under which a total that float arithmetic put next to a whole
/// number is taken to be that number (2,000/s over 5 s is 10,000 iterations, not 10,001).
const WHOLE_NUMBER_SLACK: f64 = 1e-9;

/// One linear piece of the rate curve.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    /// Seconds from the schedule's start.
    start: f64,
    /// Seconds; never zero (zero-length stages only move the rate).
    length: f64,
    /// Iterations per second at the start.
    from: f64,
    /// Iterations per second at the end.
    to: f64,
    /// The integral up to `start`.
    before: f64,
    /// The integral up to the segment's end.
    after: f64,
}

impl Segment {
    /// Seconds into the segment at which `m` (0 ≤ m < after − before) iterations are due.
    fn solve(&self, m: f64) -> f64 {
        if m <= 0.0 {
            return 0.0;
        }
        let slope = (self.to - self.from) / self.length;
        let t = if slope.abs() <= f64::EPSILON * self.from.abs().max(1.0) {
            m / self.from
        } else {
            // from·t + slope·t²/2 = m; this form of the root stays exact when
            // `from` is zero and loses nothing when slope·m is small.
            let disc = (self.from * self.from + 2.0 * slope * m).max(0.0);
            2.0 * m / (self.from + disc.sqrt())
        };
        t.clamp(0.0, self.length)
    }
}

/// The due times of an arrival-rate scenario.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ArrivalSchedule {
    segments: Vec<Segment>,
    /// Iterations of the whole schedule.
    iterations: u64,
    length: Duration,
    stripe: Stripe,
}

/// Which of the whole schedule's iterations this process starts.
#[derive(Debug, Clone, PartialEq)]
enum Stripe {
    /// All of them.
    Whole,
    /// Those of an execution segment's stripe: `count` of them.
    Part { tuple: ExecutionTuple, count: u64 },
    /// None (the segment has no VU of the scenario).
    Nothing,
}

impl ArrivalSchedule {
    /// `rate` iterations per `time_unit` for `duration` (`constant-arrival-rate`).
    pub(crate) fn constant(rate: f64, time_unit: Duration, duration: Duration) -> Self {
        let per_second = rate / time_unit.as_secs_f64();
        Self::from_pieces(per_second, [(duration, per_second)])
    }

    /// From `start_rate`, each stage ramping linearly to its target over its duration
    /// (`ramping-arrival-rate`); rates are per `time_unit`.
    pub(crate) fn ramping(start_rate: f64, time_unit: Duration, stages: &[Stage]) -> Self {
        let unit = time_unit.as_secs_f64();
        Self::from_pieces(
            start_rate / unit,
            stages.iter().map(|s| (s.duration, s.target as f64 / unit)),
        )
    }

    /// From a starting rate and (length, rate at its end) pieces, rates per second.
    fn from_pieces(start: f64, pieces: impl IntoIterator<Item = (Duration, f64)>) -> Self {
        let mut segments = Vec::new();
        let mut from = start.max(0.0);
        let mut at = 0.0;
        let mut before = 0.0;
        let mut length = Duration::ZERO;
        for (duration, to) in pieces {
            let to = to.max(0.0);
            length += duration;
            if !duration.is_zero() {
                let seconds = duration.as_secs_f64();
                // Snapped, so that a segment ending exactly on a whole iteration does
                // not claim the next one (which may be due only after a pause).
                let after = snap(before + (from + to) / 2.0 * seconds);
                segments.push(Segment {
                    start: at,
                    length: seconds,
                    from,
                    to,
                    before,
                    after,
                });
                before = after;
                at += seconds;
            }
            from = to;
        }
        Self {
            segments,
            iterations: whole_count(before),
            length,
            stripe: Stripe::Whole,
        }
    }

    /// The same schedule keeping only the iterations of an execution segment's stripe
    /// (see [`crate::config::ScenarioConfig::iteration_stripe`]); `None` keeps none.
    /// Numbers given to and returned by the other methods then count this stripe's
    /// iterations only.
    pub(crate) fn striped(mut self, stripe: Option<ExecutionTuple>) -> Self {
        self.stripe = match stripe {
            None => Stripe::Nothing,
            Some(tuple) if tuple.is_full() => Stripe::Whole,
            Some(tuple) => Stripe::Part {
                count: tuple.scale(self.iterations),
                tuple,
            },
        };
        self
    }

    /// How many iterations fall due over the schedule (of its stripe).
    #[cfg(test)]
    pub(crate) fn iterations(&self) -> u64 {
        match &self.stripe {
            Stripe::Whole => self.iterations,
            Stripe::Part { count, .. } => *count,
            Stripe::Nothing => 0,
        }
    }

    /// How long the schedule lasts.
    pub(crate) fn length(&self) -> Duration {
        self.length
    }

    /// When iteration `k` (from 0, of the stripe) is due, from the schedule's start;
    /// `None` past the last one.
    pub(crate) fn due(&self, k: u64) -> Option<Duration> {
        match &self.stripe {
            Stripe::Whole => self.due_whole(k),
            Stripe::Part { tuple, count } => (k < *count)
                .then(|| self.due_whole(tuple.global(k)))
                .flatten(),
            Stripe::Nothing => None,
        }
    }

    /// How many iterations (of the stripe) fall due strictly before `t` from the
    /// schedule's start. It lets the scheduler count a batch of missed due times in one
    /// step instead of one by one.
    pub(crate) fn due_before(&self, t: Duration) -> u64 {
        match &self.stripe {
            Stripe::Whole => self.due_before_whole(t),
            // The stripe's share of the first n is the count of its indexes below n.
            Stripe::Part { tuple, .. } => tuple.scale(self.due_before_whole(t)),
            Stripe::Nothing => 0,
        }
    }

    /// When iteration `k` of the whole schedule is due.
    fn due_whole(&self, k: u64) -> Option<Duration> {
        if k >= self.iterations {
            return None;
        }
        let k = k as f64;
        // The first segment that ends with more than k iterations due holds the k-th.
        let index = self.segments.partition_point(|s| s.after <= k);
        let Some(segment) = self.segments.get(index) else {
            // Unreachable: the total is the last segment's integral rounded up.
            return Some(self.length);
        };
        let seconds = segment.start + segment.solve(k - segment.before);
        Some(Duration::from_secs_f64(seconds).min(self.length))
    }

    /// How many iterations of the whole schedule fall due strictly before `t`: the
    /// whole numbers `k` below the rate curve's integral at `t`.
    fn due_before_whole(&self, t: Duration) -> u64 {
        let t = t.as_secs_f64();
        let index = self.segments.partition_point(|s| s.start + s.length <= t);
        let Some(segment) = self.segments.get(index) else {
            return self.iterations;
        };
        let into = (t - segment.start).max(0.0);
        let slope = (segment.to - segment.from) / segment.length;
        let integral = segment.before + segment.from * into + slope * into * into / 2.0;
        whole_count(snap(integral)).min(self.iterations)
    }
}

/// `x`, or the whole number float arithmetic left it next to.
fn snap(x: f64) -> f64 {
    let nearest = x.round();
    if (x - nearest).abs() <= WHOLE_NUMBER_SLACK * nearest.abs().max(1.0) {
        nearest
    } else {
        x
    }
}

/// Iterations due for a (snapped) integral of `x`: the whole numbers `k` with `k < x`.
fn whole_count(x: f64) -> u64 {
    if x > 0.0 {
        x.ceil() as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    fn stage(ms: u64, target: u64) -> Stage {
        Stage {
            duration: Duration::from_millis(ms),
            target,
        }
    }

    fn assert_near(got: Option<Duration>, want: f64) {
        let got = got.expect("due").as_secs_f64();
        assert!((got - want).abs() < 1e-6, "got {got}s, want {want}s");
    }

    #[test]
    fn constant_rate_is_evenly_spaced_without_drift() {
        let s = ArrivalSchedule::constant(2000.0, secs(1.0), secs(5.0));
        assert_eq!(s.iterations(), 10_000);
        assert_eq!(s.due(0), Some(Duration::ZERO));
        assert_near(s.due(1), 0.0005);
        assert_near(s.due(2000), 1.0);
        assert_near(s.due(9_999), 4.9995);
        assert_eq!(s.due(10_000), None);
        assert_eq!(s.length(), secs(5.0));
    }

    #[test]
    fn time_unit_scales_the_rate() {
        // One iteration per 2 s for 5 s: due at 0, 2 and 4 s.
        let s = ArrivalSchedule::constant(1.0, secs(2.0), secs(5.0));
        assert_eq!(s.iterations(), 3);
        assert_near(s.due(1), 2.0);
        assert_near(s.due(2), 4.0);
        // 90 per minute for 10 s: 15 iterations, 2/3 s apart.
        let s = ArrivalSchedule::constant(90.0, secs(60.0), secs(10.0));
        assert_eq!(s.iterations(), 15);
        assert_near(s.due(3), 2.0);
    }

    #[test]
    fn a_fraction_of_an_iteration_left_at_the_end_still_counts() {
        // 2.5 iterations' worth: the third is due at 2 s, inside the schedule.
        let s = ArrivalSchedule::constant(1.0, secs(1.0), secs(2.5));
        assert_eq!(s.iterations(), 3);
        assert_near(s.due(2), 2.0);
    }

    #[test]
    fn ramp_from_zero_follows_the_integral() {
        // 0 → 1000/s over 4 s: 125·t² iterations by t, 2,000 in all.
        let s = ArrivalSchedule::ramping(0.0, secs(1.0), &[stage(4000, 1000)]);
        assert_eq!(s.iterations(), 2000);
        assert_eq!(s.due(0), Some(Duration::ZERO));
        assert_near(s.due(125), 1.0);
        assert_near(s.due(500), 2.0);
        assert_near(s.due(1999), (1999.0f64 / 125.0).sqrt());
    }

    #[test]
    fn ramp_down_to_zero() {
        // 10/s → 0 over 2 s: 10·t − 2.5·t², 10 in all.
        let s = ArrivalSchedule::ramping(10.0, secs(1.0), &[stage(2000, 0)]);
        assert_eq!(s.iterations(), 10);
        assert_near(s.due(5), 2.0 - 2.0f64.sqrt());
        let last = s.due(9).unwrap().as_secs_f64();
        assert!((1.3..2.0).contains(&last), "{last}");
    }

    #[test]
    fn zero_length_stages_jump_the_rate() {
        let s = ArrivalSchedule::ramping(0.0, secs(1.0), &[stage(0, 100), stage(1000, 100)]);
        assert_eq!(s.iterations(), 100);
        assert_eq!(s.due(0), Some(Duration::ZERO));
        assert_near(s.due(1), 0.01);
        assert_near(s.due(99), 0.99);
    }

    #[test]
    fn nothing_is_due_while_the_rate_is_zero() {
        // Held at 0 for 2 s, then 0 → 10/s over 2 s: the first is due at 2 s, not at 0.
        let s = ArrivalSchedule::ramping(0.0, secs(1.0), &[stage(2000, 0), stage(2000, 10)]);
        assert_eq!(s.iterations(), 10);
        assert_near(s.due(0), 2.0);
        // Then 2.5·t² more by t into the ramp: the 6th at t = √2.
        assert_near(s.due(5), 2.0 + 2.0f64.sqrt());
        // 10/s for 1 s, a pause of 1 s at rate 0, then 10/s again for 1 s.
        let s = ArrivalSchedule::ramping(
            10.0,
            secs(1.0),
            &[
                stage(1000, 10),
                stage(0, 0),
                stage(1000, 0),
                stage(0, 10),
                stage(1000, 10),
            ],
        );
        assert_eq!(s.iterations(), 20);
        assert_near(s.due(9), 0.9);
        assert_near(s.due(10), 2.0);
        assert_near(s.due(19), 2.9);
        assert_eq!(s.length(), secs(3.0));
    }

    #[test]
    fn a_schedule_of_zero_rate_has_no_iterations() {
        let s = ArrivalSchedule::ramping(0.0, secs(1.0), &[stage(5000, 0)]);
        assert_eq!(s.iterations(), 0);
        assert_eq!(s.due(0), None);
        let s = ArrivalSchedule::ramping(0.0, secs(1.0), &[stage(0, 50)]);
        assert_eq!(s.iterations(), 0);
    }

    #[test]
    fn due_before_counts_what_due_places_before_each_instant() {
        let stages = [
            stage(1500, 300),
            stage(0, 50),
            stage(700, 50),
            stage(2000, 0),
            stage(500, 0),
            stage(1300, 900),
        ];
        let schedules = [
            ArrivalSchedule::ramping(20.0, secs(1.0), &stages),
            ArrivalSchedule::constant(2000.0, secs(1.0), secs(5.0)),
            ArrivalSchedule::constant(1e9, secs(1.0), secs(2.0)),
        ];
        for s in &schedules {
            assert_eq!(s.due_before(Duration::ZERO), 0);
            assert_eq!(s.due_before(s.length()), s.iterations());
            assert_eq!(s.due_before(s.length() * 2), s.iterations());
            // At 1,000 instants across the schedule, the count agrees with `due` up to
            // float rounding at the instant itself.
            for i in 0..1000u32 {
                let t = s.length() * i / 1000;
                let n = s.due_before(t);
                if n > 0 {
                    let last = s.due(n - 1).unwrap();
                    assert!(
                        last <= t + Duration::from_nanos(1),
                        "{n} due by {t:?}: {last:?}"
                    );
                }
                if let Some(next) = s.due(n) {
                    assert!(
                        next + Duration::from_nanos(1) >= t,
                        "{n} is due at {next:?}, before {t:?}"
                    );
                }
            }
        }
        // A billion per second for 2 s: counted in one step, not two billion.
        let s = &schedules[2];
        assert_eq!(s.iterations(), 2_000_000_000);
        assert_eq!(s.due_before(secs(0.5)), 500_000_000);
    }

    #[test]
    fn due_times_rise_and_match_the_integral_everywhere() {
        let stages = [
            stage(1500, 300),
            stage(0, 50),
            stage(700, 50),
            stage(2000, 0),
            stage(500, 0),
            stage(1300, 900),
        ];
        let s = ArrivalSchedule::ramping(20.0, secs(1.0), &stages);
        // Integral by hand: 240 + 35 + 50 + 0 + 585.
        assert_eq!(s.iterations(), 910);
        let mut last = Duration::ZERO;
        for k in 0..s.iterations() {
            let due = s.due(k).unwrap();
            assert!(due >= last, "iteration {k} due before iteration {}", k - 1);
            assert!(due < s.length());
            last = due;
        }
        // After the ramp down and the pause, the next one waits for the last ramp.
        assert_near(s.due(325), 4.7);
    }

    #[test]
    fn stripes_of_a_sequence_share_out_the_whole_schedule() {
        let from_flags = crate::config::ExecutionTuple::from_flags;
        let whole = ArrivalSchedule::ramping(0.0, secs(1.0), &[stage(2000, 60), stage(1000, 60)]);
        assert_eq!(whole.iterations(), 120);
        let mut dues = Vec::new();
        for segment in ["0:1/3", "1/3:2/3", "2/3:1"] {
            let tuple = from_flags(Some(segment), Some("0,1/3,2/3,1")).unwrap();
            let part = whole.clone().striped(Some(tuple));
            assert_eq!(part.iterations(), 40, "{segment}");
            // Counted in the stripe's own numbers, as the scheduler asks.
            assert_eq!(part.due_before(secs(10.0)), 40);
            assert_eq!(part.due_before(Duration::ZERO), 0);
            let mid = part.due_before(secs(2.0));
            assert!((19..=21).contains(&mid), "{segment}: {mid}");
            assert_eq!(part.due(40), None);
            dues.extend((0..part.iterations()).map(|k| part.due(k).unwrap()));
        }
        // Together, exactly the whole schedule's due times.
        let mut want: Vec<Duration> = (0..120).map(|k| whole.due(k).unwrap()).collect();
        dues.sort();
        want.sort();
        assert_eq!(dues, want);
        let none = whole.clone().striped(None);
        assert_eq!(
            (none.iterations(), none.due(0), none.due_before(secs(9.0))),
            (0, None, 0)
        );
    }
}
