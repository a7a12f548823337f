//! What the VU's state keeps of the k6 layer's numbered custom metrics
//! (`loadtest:k6-layer/samples`), and the contract's metric kind as the host's. A leaf:
//! the state holds these, and the imports that fill and read them (`layer_samples`,
//! `imports::metrics`) import the state.

use crate::metrics::{MetricId, MetricKind};
use crate::plugin::bindings::loadtest::scenario::metrics::MetricKind as WitKind;

/// A series the layer registered: the metric, its kind and name (for warnings), and
/// the sample's own tags (the VU's are added when a sample is recorded, as
/// `metrics.add` adds them).
pub(crate) struct Series {
    /// The metric the samples go to.
    pub(crate) id: MetricId,
    /// Its kind, as registered.
    pub(crate) kind: MetricKind,
    /// Its name, for warnings.
    pub(crate) name: String,
    /// The sample's own tags.
    pub(crate) tags: Vec<(String, String)>,
}

/// The contract's metric kind as the host's.
pub(crate) fn kind_of(kind: WitKind) -> MetricKind {
    match kind {
        WitKind::Counter => MetricKind::Counter,
        WitKind::Gauge => MetricKind::Gauge,
        WitKind::Rate => MetricKind::Rate,
        WitKind::Trend => MetricKind::Trend,
    }
}
