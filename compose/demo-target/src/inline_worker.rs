//! The worker inside the API process, for the embedded demo (`host demo`, tests): it
//! claims queued commands straight from the outbox, as `demo-target worker` does over
//! HTTP in the Compose stack, takes `work` for each, and records the result.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::state::AppState;

/// Commands worked on at once.
const CONCURRENCY: usize = 32;

/// Claims and completes commands until `stop` says so.
pub async fn run(state: Arc<AppState>, work: Duration, mut stop: watch::Receiver<bool>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    loop {
        let jobs = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            jobs = state.commands.claim(CONCURRENCY, Duration::from_secs(1), |g| state.notes.list(g)) => jobs,
        };
        for job in jobs {
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            let state = state.clone();
            tokio::spawn(async move {
                if !work.is_zero() {
                    tokio::time::sleep(work).await;
                }
                let job = serde_json::to_value(&job).unwrap_or_default();
                let result = crate::worker::work(&job);
                if let Some(id) = job["id"].as_u64() {
                    state.commands.complete(id, result);
                }
                drop(slot);
            });
        }
    }
}
