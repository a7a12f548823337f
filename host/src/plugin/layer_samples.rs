//! The k6 layer's numbered checks and custom metrics (`loadtest:k6-layer/checks` and
//! `/samples`): what a `Counter.add(1)` per WebSocket message costs the runtime, cut to
//! a number.

use super::imports::metrics::{record, MetricsView};
use super::layer::bindings::loadtest::k6_layer::{checks, samples};
use super::layer_series::{kind_of, Series};
use crate::metrics::{builtin, MetricKind};
use crate::plugin::bindings::loadtest::scenario::metrics::MetricKind as WitKind;

/// Series one VU may register (`samples.register`): a script that adds with new tag
/// values per iteration would otherwise grow the host's memory; past it the layer
/// records with `metrics.add`.
pub(crate) const MAX_SERIES: usize = 10_000;

/// Checks one VU may register (`checks.register`): a script that makes a new check
/// name per iteration would otherwise grow the host's memory; past it the layer
/// records with `metrics.check`.
pub(crate) const MAX_CHECKS: usize = 10_000;

impl checks::Host for MetricsView<'_> {
    fn register(
        &mut self,
        name: String,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<Option<u32>> {
        if self.state.checks.len() >= MAX_CHECKS {
            return Ok(None);
        }
        self.state.checks.push((name, tags));
        Ok(Some(self.state.checks.len() as u32 - 1))
    }

    fn add(&mut self, id: u32, ok: bool) -> wasmtime::Result<()> {
        let Some((name, tags)) = self.state.checks.get(id as usize) else {
            wasmtime::bail!("the k6 layer recorded check {id}, which it never registered");
        };
        let tags = (self.state.tag_cache).with(self.vu_tags, tags, Some(("check", name.as_str())));
        self.services.recorder.rate(builtin::CHECKS, &tags, ok);
        Ok(())
    }
}

impl samples::Host for MetricsView<'_> {
    fn register(
        &mut self,
        name: String,
        kind: WitKind,
        time: bool,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<Option<u32>> {
        if self.state.series.len() >= MAX_SERIES {
            return Ok(None);
        }
        let kind = kind_of(kind);
        if time && kind == MetricKind::Trend {
            // As `metrics.add-time`: marked before the first sample.
            self.services.recorder.registry().mark_time(&name);
        }
        let Some(id) = self.metric_id(&name, kind) else {
            return Ok(None);
        };
        self.state.series.push(Series {
            id,
            kind,
            name,
            tags,
            made: None,
        });
        Ok(Some(self.state.series.len() as u32 - 1))
    }

    fn add(&mut self, id: u32, value: f64) -> wasmtime::Result<()> {
        let Some(s) = self.state.series.get(id as usize) else {
            wasmtime::bail!("the k6 layer added to series {id}, which it never registered");
        };
        if let Some(whole) = s.tags_for(self.vu_tags) {
            record(self.services, s.id, s.kind, &s.name, value, whole);
            return Ok(());
        }
        // The series and the tag cache are two fields of the state: borrowed apart.
        let state = &mut *self.state;
        let s = &mut state.series[id as usize];
        let whole = state.tag_cache.with(self.vu_tags, &s.tags, None);
        record(self.services, s.id, s.kind, &s.name, value, &whole);
        s.made = Some((self.vu_tags.clone(), whole));
        Ok(())
    }
}
