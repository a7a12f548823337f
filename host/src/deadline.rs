//! A timeout timer kept and moved forward for each use: resetting a registered tokio
//! timer is one update of the timer wheel, where making one per request and dropping it
//! is an insert and a removal. VUs use one for the iteration timeout and one for the
//! request timeout.

use std::pin::Pin;
use std::time::Instant;
use tokio::time::{Instant as TokioInstant, Sleep};

/// A reusable timeout timer; it needs the tokio runtime only once first armed.
#[derive(Default)]
pub(crate) struct Deadline(Option<Pin<Box<Sleep>>>);

impl Deadline {
    /// The timer, armed to fire at `at`.
    pub(crate) fn at(&mut self, at: Instant) -> Pin<&mut Sleep> {
        let at = TokioInstant::from_std(at);
        match &mut self.0 {
            Some(timer) => {
                timer.as_mut().reset(at);
                timer.as_mut()
            }
            none => none.insert(Box::pin(tokio::time::sleep_until(at))).as_mut(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn rearming_moves_the_deadline() {
        let mut deadline = Deadline::default();
        let start = Instant::now();
        deadline.at(start + Duration::from_secs(60));
        // Re-armed earlier, it fires then, not at the first time.
        deadline
            .at(Instant::now() + Duration::from_millis(20))
            .await;
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(20), "{waited:?}");
        assert!(waited < Duration::from_secs(30), "{waited:?}");
        // And once fired it can be armed again.
        deadline
            .at(Instant::now() + Duration::from_millis(10))
            .await;
    }
}
