//! The one place where a request's outcome becomes metrics. Every way a request can
//! end is an [`Outcome`]: refused by the allowlist, failed before it was written,
//! interrupted by the end of its iteration, failed by kind after it was written, or
//! answered. A request that failed before it was sent is counted apart
//! (`http_reqs_unsent`), so `sent = received + failed + in flight`. A response is one
//! fused record (`metrics::fused`), not a dozen samples.

use super::prepared::Meta;
use crate::metrics::{builtin, ResponseTimes, TagSet};
use crate::net::request_tags::RequestTags;
use crate::net::types::{HttpError, HttpResponse, IoBytes};
use crate::net::NetShared;
use std::time::{Duration, Instant};

/// How one request ended: all its record is made from.
pub(super) enum Outcome<'a> {
    /// The allowlist refused its target (or a redirect's): `http_reqs_denied`, under
    /// the VU's tags, and nothing else (nothing was made).
    Denied(&'a TagSet),
    /// It was made and ended with a response or an error.
    Ended {
        /// Its tag sets.
        meta: &'a Meta,
        /// Its bytes on the wire.
        io: IoBytes,
        /// When it was written, if it was: an error before is `http_reqs_unsent`.
        sent_at: Option<Instant>,
        /// The response, or why it failed (its kind is the `error` tag).
        result: Result<&'a HttpResponse, &'a HttpError>,
    },
    /// Its iteration ended first (iteration timeout, graceful stop, a stop of the
    /// run): a failure of kind `interrupted`, with its duration so far if sent.
    Interrupted {
        /// Its tag sets.
        meta: &'a Meta,
        /// When it was written, if it was.
        sent_at: Option<Instant>,
    },
}

/// The error kind of a request cut short by the end of its iteration.
const INTERRUPTED: &str = "interrupted";

/// Records `outcome`. `cache` is the VU's tag cache; `None` when it is out of reach
/// (an interrupted call held it), and the tag sets are made afresh: the same sets,
/// slower.
pub(super) fn record(shared: &NetShared, cache: Option<&mut RequestTags>, outcome: Outcome<'_>) {
    let (meta, io, sent_at, result) = match outcome {
        Outcome::Denied(base_tags) => {
            shared
                .recorder
                .count(builtin::HTTP_REQS_DENIED, base_tags, 1.0);
            return;
        }
        Outcome::Ended {
            meta,
            io,
            sent_at,
            result,
        } => (meta, Some(io), sent_at, result.map_err(Some)),
        Outcome::Interrupted { meta, sent_at } => (meta, None, sent_at, Err(None)),
    };
    let (status, expected, proto) = match result {
        Ok(r) => (
            r.status,
            is_expected(r.status, &meta.expected),
            Some(r.proto),
        ),
        Err(_) => (0, false, None),
    };
    let kind = match result {
        Ok(_) => None,
        Err(Some(e)) => Some(e.kind().tag()),
        Err(None) => Some(INTERRUPTED),
    };
    let (tags, err_tags) = match cache {
        Some(cache) => (
            cache.outcome(meta.slot, &meta.tags, status, expected, proto),
            kind.map(|kind| cache.error(meta.slot, &meta.tags, kind)),
        ),
        // Only an interrupted request comes without the cache: it failed, unanswered.
        None => (
            meta.tags
                .with([("status", "0"), ("expected_response", "false")]),
            kind.map(|kind| meta.tags.with([("error", kind)])),
        ),
    };
    let us = |d: Duration| d.as_micros() as u64;
    shared.recorder.with_shard(|s| {
        if let Some(io) = io {
            s.http_bytes(&meta.tags, io.sent, io.received);
        }
        match (result, err_tags) {
            (Ok(r), _) => {
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
            (Err(_), err_tags) => {
                s.count(builtin::HTTP_REQS, &tags, 1.0);
                s.rate(builtin::HTTP_REQ_FAILED, &tags, !expected);
                if let Some(err_tags) = &err_tags {
                    s.count(builtin::HTTP_REQ_ERRORS, err_tags, 1.0);
                    match sent_at {
                        Some(at) => s.trend(builtin::HTTP_REQ_DURATION, &tags, us(at.elapsed())),
                        None => s.count(builtin::HTTP_REQS_UNSENT, err_tags, 1.0),
                    }
                }
            }
        }
    });
}

fn is_expected(status: u16, expected: &Option<Vec<(u16, u16)>>) -> bool {
    match expected {
        None => (200..=399).contains(&status),
        Some(ranges) => ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&status)),
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
