//! The run's answer to SIGINT and SIGTERM: the first stops it gracefully, a second
//! at once; the listener may be made before the run (a coordinator's workers join
//! before it starts) and lives until the run is over.

use crate::control::{RunControl, StopReason};
use std::sync::Arc;
use std::time::Duration;

/// The listener made before the run by [`listen_for_signals_early`], for the run's
/// handler to take when it starts.
static EARLY_LISTENER: std::sync::Mutex<Option<crate::signals::Signals>> =
    std::sync::Mutex::new(None);

/// Listens for SIGINT and SIGTERM from now on, for the run's handler to take when it
/// starts. For a command that answers others before its run starts (a coordinator
/// accepts workers while it compiles the plugin and runs `setup()`): without it, a
/// Ctrl-C in that gap took the default action and killed the process, and the workers
/// that had joined were never told. A signal that arrives before the handler starts is
/// kept by the listener and acted on when it does.
pub(crate) fn listen_for_signals_early() {
    let mut early = EARLY_LISTENER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if early.is_none() {
        *early = Some(crate::signals::listen());
    }
}

/// First SIGINT/SIGTERM: stop gracefully (running iterations get `graceful_stop`);
/// a second one interrupts them at once.
pub(super) fn spawn_signal_handler(
    control: Arc<RunControl>,
    graceful_stop: Duration,
) -> SignalHandler {
    // One listener for both waits (or the one `listen_for_signals_early` made): a
    // signal that arrives while the handler is between its two waits is seen by the
    // second.
    let early = EARLY_LISTENER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let mut signals = early.unwrap_or_else(crate::signals::listen);
    SignalHandler(tokio::spawn(async move {
        signals.next().await;
        crate::stderr::line(format_args!(
            "\nstopping: running iterations get up to {} to finish; press Ctrl-C again to stop at once",
            crate::config::format_duration(graceful_stop)
        ));
        control.stop_with(StopReason::Interrupted);
        tokio::select! {
            _ = signals.next() => {}
            _ = tokio::time::sleep(graceful_stop) => {}
        }
        control.hard_stop.cancel();
    }))
}

/// The run's signal handler, stopped when the run is over: a Ctrl-C after it (to
/// leave a dashboard that stays up) is not a stop of the run.
pub(super) struct SignalHandler(tokio::task::JoinHandle<()>);

impl Drop for SignalHandler {
    fn drop(&mut self) {
        self.0.abort();
    }
}
