//! Metrics: sharded recording on the hot path, a once-a-tick aggregator, and
//! summaries computed from HDR histograms (never from averaged percentiles).

pub mod aggregator;
pub mod endpoints;
pub mod fused;
pub mod recorder;
pub mod registry;
pub mod summary;
pub mod tag_cache;
pub mod tags;
pub mod value;

pub use aggregator::Aggregator;
pub use fused::ResponseTimes;
pub use recorder::{Recorder, SeriesMap, Shard};
pub use registry::{builtin, MetricDef, MetricId, Registry};
pub use tags::TagSet;
pub use value::{MetricKind, Unit, Value};
