//! The metrics of calls and streams, with k6's names: `grpc_reqs` and
//! `grpc_req_duration` (tags `method`, `name`, `status`, and `error` with the failure's
//! kind), `grpc_req_failed` (a status that is neither OK nor expected, or no answer),
//! and `grpc_streams`, `grpc_streams_msgs_sent`, `grpc_streams_msgs_received`; bytes
//! go to `data_sent` and `data_received` as for HTTP.

use super::channel::Channel;
use crate::metrics::{builtin, TagSet};
use std::time::Duration;

/// The tags of a call or stream of `method` (`package.Service/Method`): `method` is
/// the HTTP/2 path, as k6 tags it; `name` defaults to it.
pub(super) fn call_tags(
    channel: &Channel,
    method: &str,
    plugin_tags: &[(String, String)],
) -> TagSet {
    let path = format!("/{}", method.trim_start_matches('/'));
    let name = plugin_tags
        .iter()
        .find(|(k, _)| k == "name")
        .map_or(path.as_str(), |(_, v)| v.as_str())
        .to_owned();
    channel.base_tags.with(
        plugin_tags
            .iter()
            .filter(|(k, _)| k != "name")
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain([("method", path.as_str()), ("name", name.as_str())]),
    )
}

impl Channel {
    /// Records a unary call under `tags` (its status, and `error` with the failure's
    /// kind, among them) after `duration`; `passed` is whether `grpc_req_failed`
    /// counts it as passed.
    pub(super) fn record_call(&self, tags: &TagSet, passed: bool, duration: Duration) {
        let io = self.io_delta();
        self.shared.recorder.with_shard(|s| {
            s.count(builtin::GRPC_REQS, tags, 1.0);
            s.trend(
                builtin::GRPC_REQ_DURATION,
                tags,
                duration.as_micros() as u64,
            );
            s.rate(builtin::GRPC_REQ_FAILED, tags, !passed);
            io.record(s, tags);
        });
    }

    /// Counts the bytes the connection moved since the last count, under the VU's tags.
    pub(super) fn record_bytes(&self) {
        let io = self.io_delta();
        self.shared
            .recorder
            .with_shard(|s| io.record(s, &self.base_tags));
    }
}
