//! The failed calls of a run by gRPC status, each with the first message a server gave
//! for it: the summary's `grpc_failures`. `grpc_req_failed` alone said "100 %" and
//! nothing else, and a user could not tell INVALID_ARGUMENT from UNAVAILABLE (issue 49
//! item 17). Written on failures only, so a mutex costs the passing calls nothing.

use super::status::GrpcError;
use crate::bounded::{cut_owned, MESSAGE_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// One status the run's calls failed with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrpcFailure {
    /// The gRPC status code.
    pub code: u32,
    /// Its name (`INVALID_ARGUMENT`).
    pub status: String,
    /// Calls that failed with it.
    pub count: u64,
    /// What the first of them said (the server's `grpc-message`, or the host's reason
    /// for a call that got no answer), cut to a line's length.
    pub message: String,
}

/// Failed calls by status, over every VU of a run.
#[derive(Debug, Default)]
pub struct GrpcFailures {
    by_code: Mutex<BTreeMap<u32, (u64, String)>>,
}

impl GrpcFailures {
    /// Counts a failed call.
    pub(crate) fn note(&self, error: &GrpcError) {
        let code = error.code();
        let mut by_code = self.by_code.lock().unwrap_or_else(|p| p.into_inner());
        let entry = by_code.entry(code).or_insert_with(|| {
            let message = match error {
                GrpcError::Status(s) => s.message.clone(),
                other => other.to_string(),
            };
            (0, cut_owned(message, MESSAGE_BYTES))
        });
        entry.0 += 1;
    }

    /// The statuses calls failed with, most frequent first.
    pub fn summary(&self) -> Vec<GrpcFailure> {
        let by_code = self.by_code.lock().unwrap_or_else(|p| p.into_inner());
        let mut all: Vec<GrpcFailure> = by_code
            .iter()
            .map(|(&code, (count, message))| GrpcFailure {
                code,
                status: status_name(code).to_owned(),
                count: *count,
                message: message.clone(),
            })
            .collect();
        all.sort_by(|a, b| b.count.cmp(&a.count).then(a.code.cmp(&b.code)));
        all
    }
}

/// The name gRPC gives a status code (`UNKNOWN` past the 17 it defines, as clients
/// read an unknown code).
pub(crate) fn status_name(code: u32) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    NAMES.get(code as usize).copied().unwrap_or("UNKNOWN")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::grpc::CallStatus;

    #[test]
    fn failures_are_counted_by_status_with_their_first_message() {
        let f = GrpcFailures::default();
        let status = |code, message: &str| {
            GrpcError::Status(Box::new(CallStatus {
                code,
                message: message.into(),
                ..Default::default()
            }))
        };
        f.note(&status(3, "name must not be empty"));
        f.note(&status(3, "a later message"));
        f.note(&GrpcError::Connect("refused".into()));
        f.note(&status(99, "odd"));
        let s = f.summary();
        assert_eq!(s.len(), 3, "{s:?}");
        assert_eq!(
            (
                s[0].code,
                s[0].status.as_str(),
                s[0].count,
                s[0].message.as_str()
            ),
            (3, "INVALID_ARGUMENT", 2, "name must not be empty")
        );
        assert_eq!(
            (s[1].status.as_str(), s[1].message.as_str()),
            ("UNAVAILABLE", "connect: refused")
        );
        assert_eq!(s[2].status, "UNKNOWN");
    }
}
