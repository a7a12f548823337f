//! `metrics`: checks and custom metrics, recorded with the VU's tags. Its imports, and
//! the k6 layer's numbered `checks` and `samples` (layer_samples.rs), see only
//! [`MetricsView`]: the capability's state, the VU's tags and the run's recorder.

use crate::metrics::{builtin, MetricId, MetricKind, RegistryError, TagSet};
use crate::plugin::bindings::loadtest::scenario::metrics as wit;
use crate::plugin::capabilities::MetricsState;
use crate::plugin::layer::bindings::loadtest::k6_layer::samples;
use crate::plugin::layer_series::kind_of;
use crate::plugin::state::{HostServices, VuState};
use wasmtime::component::HasData;

/// What the metric imports reach of a VU's store.
pub(crate) struct MetricsView<'a> {
    /// The capability's state: tag sets made, declarations, numbered checks and series.
    pub(crate) state: &'a mut MetricsState,
    /// The VU's tags, on every sample.
    pub(crate) vu_tags: &'a TagSet,
    /// The run's recorder, and its warnings about refused metrics.
    pub(crate) services: &'a HostServices,
}

/// The `HasData` of the metric interfaces: their imports see a [`MetricsView`].
pub(crate) struct HasMetrics;

impl HasData for HasMetrics {
    type Data<'a> = MetricsView<'a>;
}

impl VuState {
    /// What the metric imports see of the store.
    pub(crate) fn metrics_view(&mut self) -> MetricsView<'_> {
        MetricsView {
            state: &mut self.metrics,
            vu_tags: &self.identity.tags,
            services: &self.services,
        }
    }
}

impl wit::Host for MetricsView<'_> {
    fn check(
        &mut self,
        name: String,
        ok: bool,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<bool> {
        let tags = (self.state.tag_cache).with(self.vu_tags, &tags, Some(("check", name.as_str())));
        self.services.recorder.rate(builtin::CHECKS, &tags, ok);
        Ok(ok)
    }

    fn add(
        &mut self,
        name: String,
        kind: wit::MetricKind,
        value: f64,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<()> {
        let kind = kind_of(kind);
        let id = match self.metric_id(&name, kind) {
            Some(id) => id,
            None => return Ok(()),
        };
        self.record_sample(id, kind, &name, value, &tags);
        Ok(())
    }

    fn add_time(
        &mut self,
        name: String,
        milliseconds: f64,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<()> {
        // Marked before the sample is added, so the first sample's summary row already
        // reads as a time. A name taken by another kind is left to `add`'s warning.
        self.services.recorder.registry().mark_time(&name);
        wit::Host::add(self, name, wit::MetricKind::Trend, milliseconds, tags)
    }

    fn declare(
        &mut self,
        metrics: Vec<wit::MetricDeclaration>,
        tags: Vec<wit::TagDeclaration>,
    ) -> wasmtime::Result<()> {
        let declared = self.state.declared.get_or_insert_with(Default::default);
        for m in metrics {
            declared.add_metric(m.name, kind_of(m.kind));
        }
        for t in tags {
            declared.add_tag(t.name, t.values);
        }
        Ok(())
    }

    // Metrics by number (0.3.9) are the k6 layer's numbered series, offered to every
    // plugin: one table per VU, bounded the same way.
    fn register(
        &mut self,
        name: String,
        kind: wit::MetricKind,
        time: bool,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<Option<u32>> {
        samples::Host::register(self, name, kind, time, tags)
    }

    fn add_registered(&mut self, id: u32, value: f64) -> wasmtime::Result<()> {
        samples::Host::add(self, id, value).map_err(|_| {
            wasmtime::format_err!(
                "metrics.add-registered: {id} is not a number metrics.register returned to this VU"
            )
        })
    }
}

impl MetricsView<'_> {
    /// The registry's number for custom metric `name` of `kind`; `None` (warned once)
    /// when the name is refused: too many metrics, taken by another kind, or a
    /// built-in's (a plugin's samples must not mix with the host's own).
    pub(crate) fn metric_id(&mut self, name: &str, kind: MetricKind) -> Option<MetricId> {
        let recorder = &self.services.recorder;
        match recorder.registry().custom(name, kind) {
            Ok(id) => Some(id),
            Err(e @ RegistryError::TooMany(_)) => {
                // One warning and a count: remembering each refused name (to warn once
                // per name) was itself the unbounded cost.
                self.services
                    .metrics_refused
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.services.warn_once(
                    "metric:too-many",
                    &format!(
                        "plugin metric `{}` ignored: {e}; samples of further new names are \
                         counted in the summary's warnings, not printed",
                        crate::bounded::cut(name, crate::bounded::QUOTED_BYTES)
                    ),
                );
                None
            }
            Err(e @ RegistryError::BuiltIn(_)) => {
                self.services
                    .builtins_refused
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(name.to_string());
                self.services.warn_once(
                    &format!("metric:{name}"),
                    &format!("plugin metric ignored: {e}"),
                );
                None
            }
            Err(e) => {
                self.services.warn_once(
                    &format!("metric:{name}"),
                    &format!("plugin metric ignored: {e}"),
                );
                None
            }
        }
    }

    /// Records one sample of custom metric `id` with the VU's tags and `tags`, as
    /// `metrics.add` does; a value that is not finite is warned about and dropped.
    pub(crate) fn record_sample(
        &mut self,
        id: MetricId,
        kind: MetricKind,
        name: &str,
        value: f64,
        tags: &[(String, String)],
    ) {
        // A value `record` drops (not finite) needs no tag set made for it.
        let tags = if value.is_finite() {
            self.state.tag_cache.with(self.vu_tags, tags, None)
        } else {
            TagSet::empty()
        };
        record(self.services, id, kind, name, value, &tags);
    }
}

/// Records one sample of custom metric `id` under the whole tag set `tags` (the VU's
/// and the sample's own); a value that is not finite is warned about and dropped.
pub(crate) fn record(
    services: &HostServices,
    id: MetricId,
    kind: MetricKind,
    name: &str,
    value: f64,
    tags: &TagSet,
) {
    if !value.is_finite() {
        services.warn_once(
            &format!("metric-value:{name}"),
            &format!("plugin metric `{name}`: non-finite value {value} ignored"),
        );
        return;
    }
    let recorder = &services.recorder;
    match kind {
        MetricKind::Counter => recorder.count(id, tags, value),
        MetricKind::Gauge => recorder.gauge(id, tags, value),
        MetricKind::Rate => recorder.rate(id, tags, value != 0.0),
        // Trends keep thousandths, so milliseconds are held to the microsecond.
        MetricKind::Trend => recorder.trend(id, tags, (value.max(0.0) * 1000.0).round() as u64),
    }
}
