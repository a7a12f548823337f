//! The metrics of a finished request: counts, the failure rate, bytes and timing
//! phases, under the VU's cached tag sets; a request that failed before it was sent
//! is counted apart (`http_reqs_unsent`), so `sent = received + failed + in flight`.
//! A response is one fused record (`metrics::fused`), not a dozen samples.

use super::{HttpClient, HttpError, HttpResponse, Meta};
use crate::metrics::{builtin, ResponseTimes};
use std::time::{Duration, Instant};

fn is_expected(status: u16, expected: &Option<Vec<(u16, u16)>>) -> bool {
    match expected {
        None => (200..=399).contains(&status),
        Some(ranges) => ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&status)),
    }
}

/// What is left of a request once it ended, for recording it.
pub(super) enum Ended {
    /// Refused before it was made (denied, invalid): counted where it was refused.
    NotRecorded,
    /// It was made: its tags, bytes (sent, received) and when it was sent, if it was.
    Request {
        meta: Meta,
        io: (u64, u64),
        sent_at: Option<Instant>,
    },
}

impl HttpClient {
    /// Records a finished request under its cached tag sets. A request that failed
    /// before it was sent (no connection) is counted in `http_reqs_unsent` too; one that
    /// failed after gets its duration so far, like a response.
    pub(super) fn record(&mut self, ended: &Ended, result: Result<&HttpResponse, &HttpError>) {
        let Ended::Request { meta, io, sent_at } = ended else {
            return;
        };
        let us = |d: Duration| d.as_micros() as u64;
        let (status, expected, proto) = match result {
            Ok(r) => (
                r.status,
                is_expected(r.status, &meta.expected),
                Some(r.proto),
            ),
            Err(_) => (0, false, None),
        };
        let tags = self
            .tags
            .outcome(meta.slot, &meta.tags, status, expected, proto);
        let err_tags = match result {
            Err(e) => Some(self.tags.error(meta.slot, &meta.tags, e.kind())),
            Ok(_) => None,
        };
        self.shared.recorder.with_shard(|s| {
            s.http_bytes(&meta.tags, io.0, io.1);
            match result {
                Ok(r) => {
                    let t = &r.timings;
                    let times = ResponseTimes {
                        duration: us(t.duration()),
                        blocked: us(t.blocked),
                        connecting: us(t.connecting),
                        tls_handshaking: us(t.tls_handshaking),
                        sending: us(t.sending),
                        waiting: us(t.waiting),
                        receiving: us(t.receiving),
                    };
                    s.http_response(&tags, expected, &times);
                }
                Err(_) => {
                    s.count(builtin::HTTP_REQS, &tags, 1.0);
                    s.rate(builtin::HTTP_REQ_FAILED, &tags, !expected);
                    if let Some(err_tags) = &err_tags {
                        s.count(builtin::HTTP_REQ_ERRORS, err_tags, 1.0);
                        match sent_at {
                            Some(at) => {
                                s.trend(builtin::HTTP_REQ_DURATION, &tags, us(at.elapsed()))
                            }
                            None => s.count(builtin::HTTP_REQS_UNSENT, err_tags, 1.0),
                        }
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_statuses_default_to_2xx_3xx() {
        assert!(is_expected(200, &None));
        assert!(is_expected(304, &None));
        assert!(!is_expected(404, &None));
        assert!(is_expected(404, &Some(vec![(404, 404)])));
        assert!(!is_expected(200, &Some(vec![(404, 404)])));
    }
}
