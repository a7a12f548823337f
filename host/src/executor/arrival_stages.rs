//! Per-stage figures of a `ramping-arrival-rate` scenario for the summary: each stage's
//! target rate, the rate reached at its end (the target scaled by the share of the
//! iterations due in its last second that started), and the most VUs busy at once.

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
    due_in_window: Vec<u64>,
    started_in_window: Vec<u64>,
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
            due_in_window: vec![0; stages.len()],
            started_in_window: vec![0; stages.len()],
            peak_busy: vec![0; stages.len()],
            ends,
        }
    }

    /// The stage running at `offset` from the schedule's start (the last one after it).
    fn stage_at(&self, offset: Duration) -> Option<usize> {
        let index = self.ends.partition_point(|end| *end <= offset);
        (index < self.ends.len()).then_some(index)
    }

    /// The stage whose end window holds `offset`.
    fn window_at(&self, offset: Duration) -> Option<usize> {
        self.stage_at(offset)
            .filter(|&i| offset >= self.window_starts[i])
    }

    /// Counts the iterations due in each stage's end window among the first `reached`
    /// of the schedule (those the scheduler got to, started or dropped), given how
    /// many fall due before an offset. Done once at the end, so the scheduler never
    /// visits dropped iterations one by one.
    pub(crate) fn reached(&mut self, reached: u64, due_before: impl Fn(Duration) -> u64) {
        for i in 0..self.ends.len() {
            let from = due_before(self.window_starts[i]).min(reached);
            let to = due_before(self.ends[i]).min(reached);
            self.due_in_window[i] = to.saturating_sub(from);
        }
    }

    /// Counts an iteration due at `offset` that started.
    pub(crate) fn started(&mut self, offset: Duration) {
        if let Some(i) = self.window_at(offset) {
            self.started_in_window[i] += 1;
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
                // Float rounding may put a started iteration on the other side of a
                // window's edge from the count of those due.
                let due = self.due_in_window[i];
                let started = self.started_in_window[i].min(due);
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
        // Due times: one at 0.1 s, 40 in stage 1's last second (2–3 s, 30 of them
        // started), then 20 in stage 3 (0.5 s long, all started).
        let mut due: Vec<Duration> = vec![ms(100)];
        due.extend((0..40).map(|i| ms(2000 + i * 25)));
        due.extend((0..20).map(|i| ms(3000 + i * 25)));
        t.started(ms(100));
        for i in 0..40 {
            if i % 4 != 0 {
                t.started(ms(2000 + i * 25));
            }
        }
        for i in 0..20 {
            t.started(ms(3000 + i * 25));
        }
        let due_before = |offset: Duration| due.iter().filter(|d| **d < offset).count() as u64;
        t.reached(due.len() as u64, due_before);
        t.busy(ms(10), 3);
        t.busy(ms(2999), 7);
        t.busy(ms(3100), 2);
        t.busy(ms(9000), 99); // after the schedule: ignored
        let r = t.report();
        assert_eq!((r[0].target, r[0].at_end, r[0].peak), (100, 75, 7));
        assert_eq!((r[1].target, r[1].at_end, r[1].peak), (50, 0, 0));
        assert_eq!((r[2].target, r[2].at_end, r[2].peak), (50, 50, 2));
        // A run stopped after 41 due iterations never reached stage 3's window.
        t.reached(41, due_before);
        let r = t.report();
        assert_eq!(r[0].at_end, 75);
        assert_eq!(r[2].at_end, 0);
    }
}
