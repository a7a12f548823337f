//! Fault injection: added latency, periodic stalls, injected 500s, and a capacity limit
//! (workers, service time and queue; see [`crate::capacity`]).
//!
//! Faults exist so a load test can show what slow or failing targets look like; they
//! apply to every request except `/health` and `/admin/*`, so the target stays
//! observable and controllable while it misbehaves.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::capacity::{Admission, Capacity, Gate};
use crate::store::read;

/// The faults to inject; the default injects none.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Added to every faulted request.
    pub latency: Duration,
    /// Period of the stall windows, measured from server start: windows begin at
    /// `stall_every`, `2 * stall_every`, … and each lasts `stall_for`. `None` disables stalls.
    pub stall_every: Option<Duration>,
    /// Length of each stall window; requests arriving inside one wait until it ends.
    pub stall_for: Duration,
    /// Share of faulted requests answered 500, from 0.0 (none) to 1.0 (all).
    pub error_rate: f64,
    /// At most this much work at once; `None` serves everything at once.
    pub capacity: Option<Capacity>,
}

impl Faults {
    /// How long a request arriving `since_start` after server start must wait for the
    /// current stall window to end (zero outside windows).
    pub fn stall_wait(&self, since_start: Duration) -> Duration {
        let Some(every) = self.stall_every.filter(|every| !every.is_zero()) else {
            return Duration::ZERO;
        };
        // No window at time zero: a freshly started target should be able to answer.
        if since_start < every {
            return Duration::ZERO;
        }
        let phase = since_start.as_nanos() % every.as_nanos();
        let phase = Duration::from_nanos(u64::try_from(phase).unwrap_or(u64::MAX));
        self.stall_for.saturating_sub(phase)
    }
}

/// Whether faults apply to a request for `path`.
pub fn applies_to(path: &str) -> bool {
    !(path == "/health" || path == "/admin" || path.starts_with("/admin/"))
}

/// The active faults of one server, changeable while it runs.
pub struct FaultInjector {
    started: Instant,
    faults: RwLock<Faults>,
    /// The workers and queue of `faults.capacity`, rebuilt when it changes.
    gate: RwLock<Option<Arc<Gate>>>,
    /// Counter driving a splitmix64 sequence: deterministic, lock-free and good enough
    /// to spread errors evenly.
    rng: AtomicU64,
}

impl FaultInjector {
    /// Injects `faults`, with stall windows measured from `started`.
    pub fn new(faults: Faults, started: Instant) -> Self {
        FaultInjector {
            started,
            gate: RwLock::new(faults.capacity.clone().map(|c| Arc::new(Gate::new(c)))),
            faults: RwLock::new(faults),
            rng: AtomicU64::new(0),
        }
    }

    /// The faults currently injected.
    pub fn get(&self) -> Faults {
        read(&self.faults).clone()
    }

    /// Replaces the injected faults; requests already waiting keep their old delay.
    pub fn set(&self, faults: Faults) {
        {
            // The same capacity keeps its gate, so its queue and busy workers carry on.
            let mut gate = crate::store::write(&self.gate);
            if gate.as_ref().map(|g| g.capacity()) != faults.capacity.as_ref() {
                *gate = faults.capacity.clone().map(|c| Arc::new(Gate::new(c)));
            }
        }
        *crate::store::write(&self.faults) = faults;
    }

    /// Takes a worker of the capacity limit (waiting in its queue, then for the
    /// service time); `None` when there is no limit.
    pub async fn admit(&self) -> Option<Admission> {
        let gate = read(&self.gate).clone()?;
        Some(gate.admit().await)
    }

    /// Requests waiting for a worker of the capacity limit now.
    pub fn waiting(&self) -> usize {
        read(&self.gate).as_ref().map_or(0, |g| g.waiting())
    }

    /// Delays the calling request as the faults say (without blocking a thread) and
    /// returns whether it should be answered with an injected 500.
    pub async fn inject(&self) -> bool {
        let faults = self.get();
        let delay = faults.stall_wait(self.started.elapsed()) + faults.latency;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        faults.error_rate > 0.0 && self.next_unit() < faults.error_rate
    }

    /// The next number of the sequence, uniform in `[0, 1)`.
    fn next_unit(&self) -> f64 {
        let mut z = self
            .rng
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // The top 53 bits fill an f64 mantissa exactly.
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stalls(every_ms: u64, for_ms: u64) -> Faults {
        Faults {
            stall_every: Some(Duration::from_millis(every_ms)),
            stall_for: Duration::from_millis(for_ms),
            ..Faults::default()
        }
    }

    #[test]
    fn stall_windows_start_at_each_period_and_not_at_zero() {
        let f = stalls(1000, 200);
        let ms = Duration::from_millis;
        assert_eq!(f.stall_wait(ms(0)), Duration::ZERO);
        assert_eq!(f.stall_wait(ms(100)), Duration::ZERO);
        assert_eq!(f.stall_wait(ms(1000)), ms(200));
        assert_eq!(f.stall_wait(ms(1150)), ms(50));
        assert_eq!(f.stall_wait(ms(1200)), Duration::ZERO);
        assert_eq!(f.stall_wait(ms(3010)), ms(190));
        assert_eq!(Faults::default().stall_wait(ms(5000)), Duration::ZERO);
    }

    #[test]
    fn error_rate_is_roughly_honoured() {
        let injector = FaultInjector::new(Faults::default(), Instant::now());
        let hits = (0..10_000).filter(|_| injector.next_unit() < 0.25).count();
        assert!((2_200..2_800).contains(&hits), "{hits} of 10000");
    }

    #[test]
    fn health_and_admin_are_exempt() {
        assert!(!applies_to("/health"));
        assert!(!applies_to("/admin/faults"));
        assert!(applies_to("/administrator"));
        assert!(applies_to("/groups/1/notes"));
    }
}
