//! Per-stage figures of a `ramping-arrival-rate` scenario for the summary: each stage's
//! target rate, the rate reached at its end (the target scaled by the share of the
//! iterations due in its last second that started), and the most VUs busy at once.
//!
//! Iterations start on the scheduler's thread and on the VU threads alike (a VU whose
//! iteration ends takes the next one that is due, [`super::claims`]), but only the
//! scheduler drops them: so the tracker counts the drops, and what started in a window
//! is what was due there less what was dropped.

use super::context::StageReport;
use super::stages::stage_ends;
use crate::config::Stage;
use std::time::Duration;

/// How far back from a stage's end its achieved rate is measured.
const END_WINDOW: Duration = Duration::from_secs(1);

/// Gathers the figures while the scheduler runs.
pub(crate) struct StageTracker {
    ends: Vec<Duration>,
    targets: Vec<u64>,
    /// Start of each stage's end window.
    window_starts: Vec<Duration>,
    /// Each end window as the iterations due in it: `[from, to)` by number.
    window_iterations: Vec<(u64, u64)>,
    due_in_window: Vec<u64>,
    dropped_in_window: Vec<u64>,
    peak_busy: Vec<u64>,
}

impl StageTracker {
    /// A tracker for `stages`.
    pub(crate) fn new(stages: &[Stage]) -> Self {
        let ends = stage_ends(stages);
        let window_starts = stages
            .iter()
            .zip(&ends)
            .map(|(stage, end)| *end - stage.duration.min(END_WINDOW))
            .collect();
        Self {
            targets: stages.iter().map(|s| s.target).collect(),
            window_starts,
            window_iterations: vec![(0, 0); stages.len()],
            due_in_window: vec![0; stages.len()],
            dropped_in_window: vec![0; stages.len()],
            peak_busy: vec![0; stages.len()],
            ends,
        }
    }

    /// The stage running at `offset` from the schedule's start (the last one after it).
    fn stage_at(&self, offset: Duration) -> Option<usize> {
        let index = self.ends.partition_point(|end| *end <= offset);
        (index < self.ends.len()).then_some(index)
    }

    /// Sets the end windows' iterations, given how many fall due before an offset; done
    /// once, before the first drop is counted.
    pub(crate) fn number_windows(&mut self, due_before: impl Fn(Duration) -> u64) {
        for i in 0..self.ends.len() {
            self.window_iterations[i] =
                (due_before(self.window_starts[i]), due_before(self.ends[i]));
        }
    }

    /// Counts the iterations due in each stage's end window among the first `reached`
    /// of the schedule (those started or dropped). Done once at the end, so the
    /// scheduler never visits dropped iterations one by one.
    pub(crate) fn reached(&mut self, reached: u64) {
        for (i, (from, to)) in self.window_iterations.iter().enumerate() {
            self.due_in_window[i] = (*to).min(reached).saturating_sub(*from);
        }
    }

    /// Counts the iterations numbered `dropped` as dropped.
    pub(crate) fn dropped(&mut self, dropped: std::ops::Range<u64>) {
        for (i, (from, to)) in self.window_iterations.iter().enumerate() {
            let overlap = dropped
                .end
                .min(*to)
                .saturating_sub(dropped.start.max(*from));
            self.dropped_in_window[i] += overlap;
        }
    }

    /// Notes that `busy` VUs were busy at `offset`.
    pub(crate) fn busy(&mut self, offset: Duration, busy: u64) {
        if let Some(i) = self.stage_at(offset) {
            self.peak_busy[i] = self.peak_busy[i].max(busy);
        }
    }

    /// One report per stage: `target` and `at_end` in iterations per time unit, `peak`
    /// in busy VUs. A stage with no iteration due in its last second (zero length, or
    /// a rate too low) reports 0 at its end.
    pub(crate) fn report(&self) -> Vec<StageReport> {
        (0..self.ends.len())
            .map(|i| {
                let due = self.due_in_window[i];
                let started = due.saturating_sub(self.dropped_in_window[i]);
                let at_end = if due == 0 {
                    0
                } else {
                    (self.targets[i] as f64 * started as f64 / due as f64).round() as u64
                };
                StageReport {
                    target: self.targets[i],
                    at_end,
                    peak: self.peak_busy[i],
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(ms: u64, target: u64) -> Stage {
        Stage {
            duration: Duration::from_millis(ms),
            target,
        }
    }

    #[test]
    fn rate_at_each_stages_end_and_peak_busy() {
        let ms = Duration::from_millis;
        let mut t = StageTracker::new(&[stage(3000, 100), stage(0, 50), stage(500, 50)]);
        // Due times: one at 0.1 s, 40 in stage 1's last second (2–3 s, numbers 1–40,
        // every fourth dropped: 1, 5, ..., 37), then 20 in stage 3 (0.5 s long, numbers
        // 41–60, all started).
        let mut due: Vec<Duration> = vec![ms(100)];
        due.extend((0..40).map(|i| ms(2000 + i * 25)));
        due.extend((0..20).map(|i| ms(3000 + i * 25)));
        let due_before = |offset: Duration| due.iter().filter(|d| **d < offset).count() as u64;
        t.number_windows(due_before);
        for i in (0..40).step_by(4) {
            t.dropped(1 + i..2 + i);
        }
        // A range of drops that spans a window's edge counts only its part inside.
        t.dropped(0..1);
        t.reached(due.len() as u64);
        t.busy(ms(10), 3);
        t.busy(ms(2999), 7);
        t.busy(ms(3100), 2);
        t.busy(ms(9000), 99); // after the schedule: ignored
        let r = t.report();
        assert_eq!((r[0].target, r[0].at_end, r[0].peak), (100, 75, 7));
        assert_eq!((r[1].target, r[1].at_end, r[1].peak), (50, 0, 0));
        assert_eq!((r[2].target, r[2].at_end, r[2].peak), (50, 50, 2));
        // A run stopped after 41 due iterations never reached stage 3's window.
        t.reached(41);
        let r = t.report();
        assert_eq!(r[0].at_end, 75);
        assert_eq!(r[2].at_end, 0);
        // Drops spanning stage 1's window and stage 3's are split between them.
        t.dropped(39..45);
        t.reached(due.len() as u64);
        let r = t.report();
        assert_eq!(r[0].at_end, 70, "28 of 40 started");
        assert_eq!(r[2].at_end, 40, "16 of 20 started");
    }
}
