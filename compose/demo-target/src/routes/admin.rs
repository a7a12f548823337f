//! `/admin/faults`: reading and switching the injected faults (and the capacity limit)
//! at runtime; and `/admin/hold`: memory taken and never given back, so a test can
//! push the process past its container's memory limit and see the OOM kill reported.

use std::sync::PoisonError;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use serde::{Deserialize, Serialize};

use super::{error, json, method_not_allowed, read_json, Resp};
use crate::capacity::{Capacity, DEFAULT_QUEUE};
use crate::faults::Faults;
use crate::state::AppState;

/// The wire form of [`Faults`], in whole milliseconds. Omitted fields mean "off",
/// so a `PUT` always states the complete fault set.
#[derive(Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct FaultsJson {
    latency_ms: u64,
    /// `null` or 0 disables stalls.
    stall_every_ms: Option<u64>,
    stall_for_ms: u64,
    error_rate: f64,
    /// Requests served at once; `null` or 0 lifts the capacity limit.
    workers: Option<usize>,
    /// How long each request holds its worker, in milliseconds (fractions allowed).
    service_time_ms: f64,
    /// Requests that may wait for a worker; `null` means the default (10000).
    queue: Option<usize>,
    /// Retrograde mode: service time added per other request in service (σ).
    contention: f64,
    /// Retrograde mode: service time added per pair of requests in service (κ).
    crosstalk: f64,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl From<&Faults> for FaultsJson {
    fn from(f: &Faults) -> Self {
        FaultsJson {
            latency_ms: millis(f.latency),
            stall_every_ms: f.stall_every.map(millis),
            stall_for_ms: millis(f.stall_for),
            error_rate: f.error_rate,
            workers: f.capacity.as_ref().map(|c| c.workers),
            service_time_ms: f
                .capacity
                .as_ref()
                .map_or(0.0, |c| c.service_time.as_secs_f64() * 1000.0),
            queue: f.capacity.as_ref().map(|c| c.queue),
            contention: f.capacity.as_ref().map_or(0.0, |c| c.contention),
            crosstalk: f.capacity.as_ref().map_or(0.0, |c| c.crosstalk),
        }
    }
}

impl From<FaultsJson> for Faults {
    fn from(j: FaultsJson) -> Self {
        Faults {
            latency: Duration::from_millis(j.latency_ms),
            stall_every: j
                .stall_every_ms
                .filter(|&ms| ms > 0)
                .map(Duration::from_millis),
            stall_for: Duration::from_millis(j.stall_for_ms),
            error_rate: j.error_rate,
            capacity: j.workers.filter(|&n| n > 0).map(|workers| Capacity {
                queue: j.queue.unwrap_or(DEFAULT_QUEUE),
                contention: j.contention,
                crosstalk: j.crosstalk,
                ..Capacity::new(workers, Duration::from_secs_f64(j.service_time_ms / 1000.0))
            }),
        }
    }
}

/// `GET` answers the current faults; `PUT` replaces them and answers the new ones.
pub async fn faults(state: &AppState, req: Request<Incoming>) -> Resp {
    match *req.method() {
        Method::GET => json(StatusCode::OK, &FaultsJson::from(&state.faults.get())),
        Method::PUT => {
            let wanted: FaultsJson = match read_json(state, req).await {
                Ok(wanted) => wanted,
                Err(resp) => return resp,
            };
            if !(0.0..=1.0).contains(&wanted.error_rate) {
                return error(
                    StatusCode::BAD_REQUEST,
                    "error_rate must be between 0 and 1",
                );
            }
            // Also refuses NaN and infinity, which Duration cannot hold.
            if !(0.0..=3_600_000.0).contains(&wanted.service_time_ms) {
                return error(
                    StatusCode::BAD_REQUEST,
                    "service_time_ms must be between 0 and 3600000 (one hour)",
                );
            }
            for (name, v) in [
                ("contention", wanted.contention),
                ("crosstalk", wanted.crosstalk),
            ] {
                if let Err(why) = crate::capacity::parse_share(&v.to_string()) {
                    return error(StatusCode::BAD_REQUEST, &format!("{name}: {why}"));
                }
            }
            let faults = Faults::from(wanted);
            state.faults.set(faults.clone());
            json(StatusCode::OK, &FaultsJson::from(&faults))
        }
        _ => method_not_allowed("GET, PUT"),
    }
}

/// The most `/admin/hold` takes in one request.
const MAX_HOLD_MB: usize = 4096;

/// `POST /admin/hold?mb=N`: takes N MiB (1 to 4096), every page written so it is
/// resident rather than only promised, keeps it until the process exits, and answers
/// the MiB held in all. Under a container memory limit smaller than that, the kernel
/// kills the process: what a leak looks like to the load test.
/// Past `max_held_mb` in all (4096 by default) the answer is 409, so a caller looping on
/// it cannot take the machine's memory.
pub fn hold(state: &AppState, req: &Request<Incoming>) -> Resp {
    if req.method() != Method::POST {
        return method_not_allowed("POST");
    }
    let mb = req
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix("mb=")))
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|mb| (1..=MAX_HOLD_MB).contains(mb));
    let Some(mb) = mb else {
        return error(
            StatusCode::BAD_REQUEST,
            "give the MiB to hold as ?mb=N, from 1 to 4096",
        );
    };
    let (held, max) = &state.held;
    let mut held = held.lock().unwrap_or_else(PoisonError::into_inner);
    let before: usize = held.iter().map(Vec::len).sum::<usize>() >> 20;
    if before + mb > *max {
        return error(
            StatusCode::CONFLICT,
            &format!("already holding {before} MiB: /admin/hold holds at most {max} MiB in all"),
        );
    }
    // Non-zero bytes: a zeroed allocation may be mapped lazily and never be resident.
    held.push(vec![0x5a_u8; mb << 20]);
    let total: usize = held.iter().map(Vec::len).sum();
    json(
        StatusCode::OK,
        &serde_json::json!({ "held_mb": total >> 20 }),
    )
}
