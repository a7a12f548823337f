//! `/admin/faults`: reading and switching the injected faults at runtime.

use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use serde::{Deserialize, Serialize};

use super::{error, json, method_not_allowed, read_json, Resp};
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
            let faults = Faults::from(wanted);
            state.faults.set(faults.clone());
            json(StatusCode::OK, &FaultsJson::from(&faults))
        }
        _ => method_not_allowed("GET, PUT"),
    }
}
