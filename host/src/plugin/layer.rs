//! The k6 layer's own imports (`host/src/author/js/layer.wit`): narrower forms of
//! contract functions that only the host's JavaScript components call. Linked for
//! every plugin (a component that does not import them is not affected).

use crate::metrics::builtin;
use crate::plugin::state::VuState;

/// Bindings generated from `layer.wit`, over the contract's own types.
#[allow(unreachable_pub, missing_docs)]
pub mod bindings {
    wasmtime::component::bindgen!({
        path: ["../wit", "src/author/js/layer.wit"],
        world: "loadtest:k6-layer/layer",
        imports: { default: trappable },
        with: {
            "loadtest:scenario/types": crate::plugin::bindings::loadtest::scenario::types,
        },
    });
}

use bindings::loadtest::k6_layer::checks;

/// Checks one VU may register (`checks.register`): a script that makes a new check
/// name per iteration would otherwise grow the host's memory; past it the layer
/// records with `metrics.check`.
pub(crate) const MAX_CHECKS: usize = 10_000;

/// Adds the layer's imports to a plugin's linker (the contract's are added apart).
pub(crate) fn add_to_linker(
    linker: &mut wasmtime::component::Linker<VuState>,
) -> anyhow::Result<()> {
    type Own = wasmtime::component::HasSelf<VuState>;
    checks::add_to_linker::<VuState, Own>(linker, |s| s)?;
    Ok(())
}

impl checks::Host for VuState {
    fn register(
        &mut self,
        name: String,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<Option<u32>> {
        if self.layer_checks.len() >= MAX_CHECKS {
            return Ok(None);
        }
        self.layer_checks.push((name, tags));
        Ok(Some(self.layer_checks.len() as u32 - 1))
    }

    fn add(&mut self, id: u32, ok: bool) -> wasmtime::Result<()> {
        let Some((name, tags)) = self.layer_checks.get(id as usize) else {
            wasmtime::bail!("the k6 layer recorded check {id}, which it never registered");
        };
        let tags = self
            .tag_cache
            .with(&self.identity.tags, tags, Some(("check", name.as_str())));
        self.services.recorder.rate(builtin::CHECKS, &tags, ok);
        Ok(())
    }
}
