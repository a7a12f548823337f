//! `shared-iterations`: VUs take iterations from a shared pool until `iterations` have
//! been started, or `max_duration` runs out. An execution segment's pool is its share
//! of `iterations`, dealt over the VUs of every segment.

use super::context::{run_vu_loops, ActiveVu, ExecutorReport, ScenarioCtx};
use crate::vu::Vu;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Runs the executor.
pub(crate) async fn run(
    ctx: Arc<ScenarioCtx>,
    vus: Vec<Vu>,
    iterations: u64,
    max_duration: Duration,
) -> ExecutorReport {
    ctx.wait_for_start().await;
    let end = ctx.start + max_duration;
    let hard = end + ctx.config.graceful_stop;
    let share = ctx.stripe().map_or(0, |stripe| stripe.scale(iterations));
    let remaining = Arc::new(AtomicU64::new(share));
    run_vu_loops(&ctx, vus, move |ctx, mut vu, _| {
        let remaining = remaining.clone();
        async move {
            let _active = ActiveVu::new(&ctx.stats);
            let mut interrupt = ctx.interrupt_at(hard);
            while ctx.may_start(end) && take_one(&remaining) {
                ctx.run_iteration(&mut vu, None, Pin::new(&mut interrupt))
                    .await;
            }
        }
    })
    .await;
    ExecutorReport::default()
}

/// Claims one iteration from the pool; false when it is empty.
fn take_one(remaining: &AtomicU64) -> bool {
    remaining
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_hands_out_exactly_its_size() {
        let pool = Arc::new(AtomicU64::new(1000));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let p = pool.clone();
                std::thread::spawn(move || {
                    let mut n = 0;
                    while take_one(&p) {
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(total, 1000);
    }
}
