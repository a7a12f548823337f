//! The run's seconds as the dashboard's charts draw them, kept from the start so a
//! page opened mid-run (or reloaded) shows the whole run, not only what came after it
//! opened. A point is a few numbers; past [`MAX_POINTS`] every other one is dropped,
//! so a long soak keeps its shape in bounded memory.

use super::snapshot::Snapshot;
use bytes::Bytes;

/// Points kept at most: two hours of seconds, then coarser.
const MAX_POINTS: usize = 7200;

/// One second: `[elapsed s, requests/s, p50 ms, p95 ms, p99 ms, VUs, error %]`.
pub(crate) type Point = [f64; 7];

/// The points so far.
#[derive(Debug, Default)]
pub(crate) struct History {
    points: Vec<Point>,
}

impl History {
    /// Adds the second `snap` describes.
    pub(crate) fn push(&mut self, snap: &Snapshot) {
        if self.points.len() >= MAX_POINTS {
            let mut keep = false;
            self.points.retain(|_| {
                keep = !keep;
                keep
            });
        }
        let (n, t) = (&snap.now, &snap.totals);
        self.points.push([
            snap.elapsed_s,
            n.rps,
            n.p50,
            n.p95,
            n.p99,
            t.vus,
            n.failed_share * 100.0,
        ]);
    }

    /// The points as one server-sent event named `history`.
    pub(crate) fn event(&self) -> Bytes {
        let json = serde_json::to_string(&self.points).unwrap_or_else(|_| "[]".into());
        Bytes::from(format!("event: history\ndata: {json}\n\n"))
    }

    /// How many points are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.points.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_run_is_thinned_not_cut() {
        let mut h = History::default();
        let snap = |t: f64| Snapshot {
            elapsed_s: t,
            ..Snapshot::empty_for_tests()
        };
        for t in 0..(MAX_POINTS as u64 + 10) {
            h.push(&snap(t as f64));
        }
        assert!(h.len() <= MAX_POINTS, "{}", h.len());
        // The start is still there, and so is the newest second.
        assert_eq!(h.points[0][0], 0.0);
        assert_eq!(h.points.last().unwrap()[0], (MAX_POINTS + 9) as f64);
        let text = String::from_utf8(h.event().to_vec()).unwrap();
        assert!(
            text.starts_with("event: history\ndata: [[0.0,"),
            "{}",
            &text[..40]
        );
        assert!(text.ends_with("]]\n\n"));
    }
}
