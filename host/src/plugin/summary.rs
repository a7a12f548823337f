//! The optional `summary` export (contract 0.3.3): a plugin that renders its own
//! end-of-run summary, as a k6 script's `handleSummary(data)` does. It is not part of
//! the `scenario` world every plugin implements, so it is found by name when the plugin
//! is loaded and called through a typed function when it is there: a plugin without it
//! links and runs as before.

use super::bindings::WIT_PACKAGE;
use super::state::VuState;
use super::{outcome, GuestCallError};
use wasmtime::component::{Component, ComponentExportIndex, Instance};
use wasmtime::Store;

/// The exported interface's name without its version (`loadtest:scenario/summary`).
fn interface_prefix() -> String {
    format!("{WIT_PACKAGE}/summary@")
}

/// The `handle-summary` function of the plugin's `summary` export, if it has one of a
/// contract version this host runs.
pub(crate) fn find(
    engine: &wasmtime::Engine,
    component: &Component,
) -> Option<ComponentExportIndex> {
    let prefix = interface_prefix();
    let name = component
        .component_type()
        .exports(engine)
        .map(|(name, _)| name.to_string())
        .find(|name| {
            name.strip_prefix(&prefix)
                .is_some_and(super::validate::runs)
        })?;
    let interface = component.get_export_index(None, name.as_str())?;
    component.get_export_index(Some(&interface), "handle-summary")
}

/// What `handle-summary` returned: each rendering and where it goes.
pub(crate) type Renderings = Vec<(String, Vec<u8>)>;

/// Calls `handle-summary` with the summary's JSON `data` in `instance`.
pub(crate) async fn call(
    store: &mut Store<VuState>,
    instance: &Instance,
    export: &ComponentExportIndex,
    data: &str,
) -> Result<Renderings, GuestCallError> {
    let func = instance
        .get_typed_func::<(&str,), (Result<Renderings, String>,)>(&mut *store, export)
        .map_err(|e| {
            GuestCallError::Returned(format!("has a summary export of another shape: {e:#}"))
        })?;
    let result = func.call_async(&mut *store, (data,)).await.map(|(r,)| r);
    outcome(result, store.data())
}
