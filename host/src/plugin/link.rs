//! Links the host's imports into a plugin's linker, interface by interface: the
//! contract's, and the k6 layer's own (`host/src/author/js/layer.wit`). Each interface
//! is linked on a view of its own (wasmtime's `HasData`), made from the VU's store by
//! one of `VuState`'s view functions, as wasmtime-wasi links each WASI interface on its
//! own view: an import sees its capability's state and what it shares (the resource
//! table, the call's budget, the VU's tags), nothing of the other capabilities. The
//! world's generated `Scenario::add_to_linker` would put every interface on one type.

use super::imports::{
    cookies::HasCookies, grpc::HasGrpc, html::HasHtml, http::HasHttp, metrics::HasMetrics,
    run_control::HasRunControl, shared_data::HasSharedData, vu::HasVu, websocket::HasWebSocket,
    HasStateless, Stateless,
};
use super::layer_redis::HasRedis;
use super::state::VuState;
use wasmtime::component::Linker;

/// Links the contract's imports.
pub(crate) fn add_to_linker(linker: &mut Linker<VuState>) -> wasmtime::Result<()> {
    use super::bindings::loadtest::scenario::*;
    types::add_to_linker::<VuState, HasStateless>(linker, |_| Stateless)?;
    http::add_to_linker::<VuState, HasHttp>(linker, VuState::http_view)?;
    cookies::add_to_linker::<VuState, HasCookies>(linker, VuState::cookies_view)?;
    websocket::add_to_linker::<VuState, HasWebSocket>(linker, VuState::websocket_view)?;
    grpc::add_to_linker::<VuState, HasGrpc>(linker, VuState::grpc_view)?;
    sockets::add_to_linker::<VuState, super::sockets::HasSockets>(linker, VuState::sockets)?;
    browser::add_to_linker::<VuState, super::browser::HasBrowser>(linker, VuState::browser)?;
    metrics::add_to_linker::<VuState, HasMetrics>(linker, VuState::metrics_view)?;
    vu::add_to_linker::<VuState, HasVu>(linker, VuState::vu_view)?;
    html::add_to_linker::<VuState, HasHtml>(linker, VuState::html_view)?;
    shared_data::add_to_linker::<VuState, HasSharedData>(linker, VuState::shared_data_view)?;
    run_control::add_to_linker::<VuState, HasRunControl>(linker, VuState::run_control_view)?;
    Ok(())
}

/// Links the k6 layer's imports (a component that does not import them is not
/// affected). Each shares the view of the contract interface it narrows: `responses`
/// and `content` the HTTP one, `checks` and `samples` the metrics one, `sockets` the
/// WebSocket one, `vu` the VU one; `redis` has its socket, budget and metrics; `crypto`
/// needs nothing.
pub(crate) fn add_layer_to_linker(linker: &mut Linker<VuState>) -> wasmtime::Result<()> {
    use super::layer::bindings::loadtest::k6_layer::*;
    checks::add_to_linker::<VuState, HasMetrics>(linker, VuState::metrics_view)?;
    content::add_to_linker::<VuState, HasHttp>(linker, VuState::http_view)?;
    crypto::add_to_linker::<VuState, HasStateless>(linker, |_| Stateless)?;
    redis::add_to_linker::<VuState, HasRedis>(linker, VuState::redis_view)?;
    responses::add_to_linker::<VuState, HasHttp>(linker, VuState::http_view)?;
    samples::add_to_linker::<VuState, HasMetrics>(linker, VuState::metrics_view)?;
    sockets::add_to_linker::<VuState, HasWebSocket>(linker, VuState::websocket_view)?;
    vu::add_to_linker::<VuState, HasVu>(linker, VuState::vu_view)?;
    Ok(())
}
