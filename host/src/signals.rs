//! SIGINT and SIGTERM for the whole command, heard in one place.
//!
//! One thread listens for both signals from the first [`listen`] until the process
//! ends, and counts them; every part of a command that stops on a signal (a run's
//! graceful and hard stops, a sweep between levels, `host up` while it starts, the
//! dashboard that stays up, `host top`, `host target`) holds a [`Signals`] and waits
//! for the next one it has not seen.
//!
//! Why one listener: a listener made per wait hears only what arrives after its first
//! poll, so a second Ctrl-C sent while one part handed over to the next (a sweep's
//! levels, a run's graceful stop) could be lost; and each part listened to a different
//! subset (some to SIGINT only, so a SIGTERM during `host up` left a half-started stack
//! behind). The thread runs its own small runtime, so a listener outlives whichever
//! runtime first asked for it (tests make one per test).
//!
//! As with any handler, once the first [`listen`] is made the signals no longer kill
//! the process by default: whoever listens decides what they mean.

use std::sync::OnceLock;
use tokio::sync::watch;

/// The count of SIGINT and SIGTERM received since the listener started.
static COUNT: OnceLock<watch::Sender<u64>> = OnceLock::new();

/// The listening thread's counter, started on the first call.
fn counter() -> &'static watch::Sender<u64> {
    COUNT.get_or_init(|| {
        let (tx, _) = watch::channel(0u64);
        let out = tx.clone();
        // Registered before this returns: a signal right after `listen()` is counted.
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .build()
                {
                    Ok(r) => r,
                    Err(_) => {
                        let _ = ready_tx.send(());
                        return;
                    }
                };
                runtime.block_on(async move {
                    use tokio::signal::unix::{signal, SignalKind};
                    let int = signal(SignalKind::interrupt());
                    let term = signal(SignalKind::terminate());
                    let _ = ready_tx.send(());
                    let (Ok(mut int), Ok(mut term)) = (int, term) else {
                        return;
                    };
                    loop {
                        tokio::select! {
                            _ = int.recv() => {}
                            _ = term.recv() => {}
                        }
                        tx.send_modify(|n| *n += 1);
                    }
                });
            });
        if spawned.is_ok() {
            let _ = ready_rx.recv();
        }
        out
    })
}

/// Listens from now on: [`Signals::next`] resolves on each SIGINT or SIGTERM that
/// arrives after this call.
pub(crate) fn listen() -> Signals {
    let receiver = counter().subscribe();
    let seen = *receiver.borrow();
    Signals { receiver, seen }
}

/// Resolves on the first SIGINT or SIGTERM after its first poll: for a wait that
/// ends at the first signal (as the arm of a `select!`).
pub(crate) async fn next() {
    listen().next().await;
}

/// One part's view of the signals: those it has not seen yet.
pub(crate) struct Signals {
    receiver: watch::Receiver<u64>,
    seen: u64,
}

impl Signals {
    /// Resolves on the next SIGINT or SIGTERM this listener has not seen (one that
    /// arrived since the last call, or since [`listen`], resolves at once). Never
    /// resolves if the signals could not be listened to.
    pub(crate) async fn next(&mut self) {
        loop {
            let now = *self.receiver.borrow_and_update();
            if now > self.seen {
                self.seen += 1;
                return;
            }
            if self.receiver.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Real signals to this test process: each listener sees each one once, including
    /// two sent before it waited (the case a listener made per wait loses).
    #[tokio::test]
    async fn every_listener_sees_every_signal_after_it_started_listening() {
        let mut early = listen();
        let pid = std::process::id().to_string();
        for kind in ["-INT", "-TERM"] {
            let sent = std::process::Command::new("kill")
                .args([kind, &pid])
                .status()
                .unwrap();
            assert!(sent.success());
        }
        // Both were sent before `early` waited: it still sees two.
        for _ in 0..2 {
            tokio::time::timeout(Duration::from_secs(5), early.next())
                .await
                .expect("a signal sent before the wait was lost");
        }
        // A listener made after them sees neither.
        let mut late = listen();
        assert!(
            tokio::time::timeout(Duration::from_millis(200), late.next())
                .await
                .is_err(),
            "a listener saw a signal from before it listened"
        );
        assert!(
            tokio::time::timeout(Duration::from_millis(200), early.next())
                .await
                .is_err(),
            "one signal was seen twice"
        );
    }
}
