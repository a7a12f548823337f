//! What the VU's state keeps of the k6 layer's numbered custom metrics
//! (`loadtest:k6-layer/samples`), and the contract's metric kind as the host's. A leaf:
//! the state holds these, and the imports that fill and read them (`layer_samples`,
//! `imports::metrics`) import the state.

use crate::metrics::{MetricId, MetricKind, TagSet};
use crate::plugin::bindings::loadtest::scenario::metrics::MetricKind as WitKind;

/// A series the layer registered: the metric, its kind and name (for warnings), and
/// the sample's own tags (the VU's are added when a sample is recorded, as
/// `metrics.add` adds them), with the whole tag set its last sample was recorded under.
pub(crate) struct Series {
    /// The metric the samples go to.
    pub(crate) id: MetricId,
    /// Its kind, as registered.
    pub(crate) kind: MetricKind,
    /// Its name, for warnings.
    pub(crate) name: String,
    /// The sample's own tags.
    pub(crate) tags: Vec<(String, String)>,
    /// The VU's tags the last sample was recorded with and the whole set made of them
    /// and [`Series::tags`]: while the VU's tags are the same set, a sample is recorded
    /// under it as it is. A `Counter.add` per WebSocket message otherwise spelled the
    /// tags into the VU's tag cache's key and looked them up there per message: cache
    /// lines of the VU's own that a cold wake-up reads (issue #53).
    pub(crate) made: Option<(TagSet, TagSet)>,
}

impl Series {
    /// The whole tag set of a sample recorded now with the VU's tags `vu_tags`, if the
    /// last one made is still it.
    pub(crate) fn tags_for(&self, vu_tags: &TagSet) -> Option<&TagSet> {
        match &self.made {
            // `==` is a pointer comparison first: the VU's set is the same Arc until its
            // tags change.
            Some((made_from, whole)) if made_from == vu_tags => Some(whole),
            _ => None,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn series(made: Option<(TagSet, TagSet)>) -> Series {
        Series {
            id: MetricId::default(),
            kind: MetricKind::Counter,
            name: "pushes".into(),
            tags: vec![("name".into(), "/ws".into())],
            made,
        }
    }

    #[test]
    fn a_series_reuses_its_tag_set_only_while_the_vus_tags_are_the_same() {
        let vu = TagSet::from_pairs([("scenario", "sockets")]);
        let whole = vu.with([("name", "/ws")]);
        assert!(series(None).tags_for(&vu).is_none(), "none made yet");
        let s = series(Some((vu.clone(), whole.clone())));
        assert_eq!(s.tags_for(&vu), Some(&whole), "the same set");
        let same = TagSet::from_pairs([("scenario", "sockets")]);
        assert_eq!(s.tags_for(&same), Some(&whole), "an equal set made anew");
        let other = TagSet::from_pairs([("scenario", "browse")]);
        assert!(s.tags_for(&other).is_none(), "other VU tags make a new set");
    }
}
