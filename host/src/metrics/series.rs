//! The map of series that shards fill and the aggregator drains: one value per
//! (metric, tag set). A leaf beside `value`, so the recorder and its fused records
//! both write into it without importing each other.

use super::registry::MetricId;
use super::tags::TagSet;
use super::value::Value;

/// Samples gathered since the aggregator last took them, keyed by series. Fx hashing:
/// a tag set carries its own hash, so the key hashes in two multiplications.
pub(crate) type SeriesMap =
    hashbrown::HashMap<(MetricId, TagSet), Value, rustc_hash::FxBuildHasher>;
