//! The capacity switch: a target whose true capacity is known, so that a sweep's
//! capacity model can be checked against it.
//!
//! With `workers = N` and `service_time = D`, at most N requests are served at once and
//! each holds its worker for D (an async sleep, so no thread is blocked); the rest wait
//! in a queue, and past `queue` waiting requests the next ones are shed with 503 and
//! `Retry-After`. Saturated, the target serves N / D requests a second.
//!
//! The retrograde mode (`crosstalk` κ > 0, and `contention` σ): a request's service time
//! grows with the requests in service when it starts, n (itself included):
//! D × (1 + σ(n − 1) + κn(n − 1)). With n requests in service the target then serves
//! n / (D(1 + σ(n − 1) + κn(n − 1))) a second: exactly the Universal Scalability Law,
//! whose throughput peaks at n* = √((1 − σ)/κ) and falls past it, as a system whose
//! workers spend more and more time keeping each other coherent does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Waiting requests allowed when no queue length is given: enough that a sweep sees
/// queueing latency, not shedding, well past the capacity.
pub const DEFAULT_QUEUE: usize = 10_000;

/// Parses `--contention` or `--crosstalk`: a finite share, 0 or more.
pub fn parse_share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "{text:?} is not a number of 0 or more (a share of the service time, e.g. 0.01)"
        )),
    }
}

/// A limit on concurrent work.
#[derive(Clone, Debug, PartialEq)]
pub struct Capacity {
    /// Requests served at once (at least 1).
    pub workers: usize,
    /// How long each request holds its worker (alone in service).
    pub service_time: Duration,
    /// Requests that may wait for a worker; past it they are shed with 503.
    pub queue: usize,
    /// σ of the retrograde mode: service time added per other request in service, as a
    /// share of `service_time` (0 = none).
    pub contention: f64,
    /// κ of the retrograde mode: service time added per pair of requests in service, as
    /// a share of `service_time` (0 = none; above 0 throughput falls past a peak).
    pub crosstalk: f64,
}

impl Capacity {
    /// A plain limit: `workers` of `service_time`, the default queue, no retrograde.
    pub fn new(workers: usize, service_time: Duration) -> Capacity {
        Capacity {
            workers,
            service_time,
            queue: DEFAULT_QUEUE,
            contention: 0.0,
            crosstalk: 0.0,
        }
    }

    /// The service time of a request that starts with `in_service` requests in service,
    /// itself included.
    pub fn service_time_at(&self, in_service: usize) -> Duration {
        let n = in_service.max(1) as f64;
        let factor = 1.0 + self.contention * (n - 1.0) + self.crosstalk * n * (n - 1.0);
        if factor == 1.0 || !factor.is_finite() {
            return self.service_time;
        }
        self.service_time.mul_f64(factor)
    }
}

/// Whether a request got a worker.
pub enum Admission {
    /// It holds a worker until this is dropped (after its service time has passed).
    Served(Worker),
    /// The queue was full: answer 503 with `Retry-After`.
    Shed,
}

/// A held worker; dropping it frees the worker for the next request.
pub struct Worker {
    _permit: OwnedSemaphorePermit,
}

/// The workers and queue of one [`Capacity`]. Replaced as a whole when the capacity
/// changes; requests already admitted finish on the gate they entered.
pub struct Gate {
    capacity: Capacity,
    permits: std::sync::Arc<Semaphore>,
    waiting: AtomicUsize,
    /// When each worker is next free. A request starts at the later of its arrival and
    /// its worker's `free_at`, not when its task happens to run: a tokio timer wakes up
    /// late (a millisecond, far more on a loaded machine), and counting from the wake-up
    /// would lose that lateness on every request, so a saturated target would serve
    /// N / (D + lateness). Counted this way it serves N / D whatever the scheduling.
    free_at: Mutex<Vec<Instant>>,
}

impl Gate {
    /// A gate with `capacity.workers` idle workers.
    pub fn new(capacity: Capacity) -> Gate {
        let workers = capacity.workers.max(1);
        let now = Instant::now();
        Gate {
            permits: std::sync::Arc::new(Semaphore::new(workers)),
            waiting: AtomicUsize::new(0),
            free_at: Mutex::new(vec![now; workers]),
            capacity,
        }
    }

    /// The capacity this gate enforces.
    pub fn capacity(&self) -> &Capacity {
        &self.capacity
    }

    /// Requests waiting for a worker now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Waits for a worker (or sheds the request when the queue is full), then for the
    /// service time.
    pub async fn admit(&self) -> Admission {
        let arrived = Instant::now();
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                // Counted before waiting, so a burst cannot overfill the queue.
                if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.capacity.queue {
                    self.waiting.fetch_sub(1, Ordering::AcqRel);
                    return Admission::Shed;
                }
                let permit = self.permits.clone().acquire_owned().await;
                self.waiting.fetch_sub(1, Ordering::AcqRel);
                match permit {
                    Ok(permit) => permit,
                    // The semaphore is never closed; if it were, shedding is the answer.
                    Err(_) => return Admission::Shed,
                }
            }
        };
        // Permits in use: the requests in service, this one included.
        let in_service = self.capacity.workers.max(1) - self.permits.available_permits();
        let done = self.take_slot(arrived, self.capacity.service_time_at(in_service));
        tokio::time::sleep_until(done).await;
        Admission::Served(Worker { _permit: permit })
    }

    /// Books the earliest-free worker for `service_time`, starting at the later of
    /// `arrived` and when that worker became free, and says when it ends.
    fn take_slot(&self, arrived: Instant, service_time: Duration) -> Instant {
        let mut free_at = self.free_at.lock().unwrap_or_else(|e| e.into_inner());
        // A permit is held, so at least one worker is free or about to be.
        let (index, at) = free_at
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|(_, at)| *at)
            .unwrap_or((0, arrived));
        let done = arrived.max(at) + service_time;
        if let Some(slot) = free_at.get_mut(index) {
            *slot = done;
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(workers: usize, ms: u64, queue: usize) -> std::sync::Arc<Gate> {
        std::sync::Arc::new(Gate::new(Capacity {
            queue,
            ..Capacity::new(workers, Duration::from_millis(ms))
        }))
    }

    #[test]
    fn retrograde_service_time_follows_the_usl() {
        let c = Capacity {
            contention: 0.1,
            crosstalk: 0.01,
            ..Capacity::new(64, Duration::from_millis(20))
        };
        assert_eq!(c.service_time_at(0), Duration::from_millis(20));
        assert_eq!(c.service_time_at(1), Duration::from_millis(20));
        // 1 + 0.1 × 9 + 0.01 × 10 × 9 = 2.8.
        let d = c.service_time_at(10).as_secs_f64();
        assert!((d - 0.056).abs() < 1e-9, "{d}");
        assert_eq!(
            Capacity::new(4, Duration::from_millis(10)).service_time_at(4),
            Duration::from_millis(10)
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn retrograde_throughput_falls_past_its_peak() {
        // 5 ms alone, κ = 1/16: n* = 4. Eight at once take 5 × (1 + 56/16) = 22.5 ms
        // each (355/s); four at once 5 × 1.75 = 8.75 ms (457/s).
        let g = std::sync::Arc::new(Gate::new(Capacity {
            crosstalk: 1.0 / 16.0,
            ..Capacity::new(64, Duration::from_millis(5))
        }));
        let mut rates = Vec::new();
        for concurrency in [4usize, 8] {
            let began = std::time::Instant::now();
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..concurrency {
                let g = g.clone();
                tasks.spawn(async move {
                    for _ in 0..20 {
                        drop(g.admit().await);
                    }
                });
            }
            while let Some(r) = tasks.join_next().await {
                r.unwrap();
            }
            rates.push((concurrency * 20) as f64 / began.elapsed().as_secs_f64());
        }
        assert!(rates[1] < rates[0], "{rates:?}");
        // Never faster than the model allows at each concurrency.
        assert!(rates[0] <= 460.0 && rates[1] <= 360.0, "{rates:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn throughput_is_capped_near_workers_over_service_time() {
        // 4 workers of 10 ms: 400/s. 800 requests at once need 2 s when saturated.
        let g = gate(4, 10, 10_000);
        let began = std::time::Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..800 {
            let g = g.clone();
            tasks.spawn(async move { matches!(g.admit().await, Admission::Served(_)) });
        }
        let mut served = 0;
        while let Some(ok) = tasks.join_next().await {
            served += usize::from(ok.unwrap());
        }
        let took = began.elapsed().as_secs_f64();
        assert_eq!(served, 800);
        let rate = 800.0 / took;
        // Never faster than the capacity; not much slower either, even on a loaded
        // machine (starts are counted from arrivals and free workers, not wake-ups).
        assert!(rate <= 404.0, "{rate:.0}/s in {took:.2}s");
        assert!(rate >= 300.0, "{rate:.0}/s in {took:.2}s");
    }

    #[tokio::test]
    async fn past_the_queue_requests_are_shed() {
        let g = gate(1, 200, 2);
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..6 {
            let g = g.clone();
            tasks.spawn(async move { matches!(g.admit().await, Admission::Shed) });
            // Let each one reach the gate in turn.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut shed = 0;
        while let Some(s) = tasks.join_next().await {
            shed += usize::from(s.unwrap());
        }
        // One served, two waiting, three shed.
        assert_eq!(shed, 3);
    }
}
