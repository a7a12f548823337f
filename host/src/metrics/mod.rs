//! Metrics: sharded recording on the hot path, a once-a-tick aggregator, and
//! summaries computed from HDR histograms (never from averaged percentiles).

pub(crate) mod aggregator;
pub(crate) mod endpoints;
pub(crate) mod fused;
pub(crate) mod recorder;
pub(crate) mod registry;
pub(crate) mod second;
pub(crate) mod series;
pub(crate) mod series_gate;
pub(crate) mod summary;
pub(crate) mod tag_cache;
pub(crate) mod tags;
pub(crate) mod value;

pub(crate) use aggregator::Aggregator;
pub(crate) use fused::ResponseTimes;
pub(crate) use recorder::{Recorder, Shard};
pub(crate) use registry::{builtin, MetricDef, MetricId, Registry, RegistryError, MAX_METRICS};
pub(crate) use second::{Second, SoFar};
pub(crate) use series::SeriesMap;
pub(crate) use tags::TagSet;
pub(crate) use value::{MetricKind, Unit, Value};
