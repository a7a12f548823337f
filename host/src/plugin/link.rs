//! Links the contract's imports into a plugin's linker, interface by interface.

/// Links the contract's imports: each interface on the VU's store, except `sockets`
/// and `browser`, whose imports see only their own view (`super::sockets::SocketsView`,
/// `super::browser::BrowserView`), as
/// wasmtime-wasi links each WASI interface on its own view. The world's generated
/// `Scenario::add_to_linker` would put every interface on one type.
pub(crate) fn add_to_linker(
    linker: &mut wasmtime::component::Linker<super::state::VuState>,
) -> wasmtime::Result<()> {
    use super::bindings::loadtest::scenario::*;
    use super::state::VuState;
    type Own = wasmtime::component::HasSelf<VuState>;
    types::add_to_linker::<VuState, Own>(linker, |s| s)?;
    http::add_to_linker::<VuState, Own>(linker, |s| s)?;
    cookies::add_to_linker::<VuState, Own>(linker, |s| s)?;
    websocket::add_to_linker::<VuState, Own>(linker, |s| s)?;
    grpc::add_to_linker::<VuState, Own>(linker, |s| s)?;
    sockets::add_to_linker::<VuState, super::sockets::HasSockets>(linker, VuState::sockets)?;
    browser::add_to_linker::<VuState, super::browser::HasBrowser>(linker, VuState::browser)?;
    metrics::add_to_linker::<VuState, Own>(linker, |s| s)?;
    vu::add_to_linker::<VuState, Own>(linker, |s| s)?;
    html::add_to_linker::<VuState, Own>(linker, |s| s)?;
    shared_data::add_to_linker::<VuState, Own>(linker, |s| s)?;
    run_control::add_to_linker::<VuState, Own>(linker, |s| s)?;
    Ok(())
}
