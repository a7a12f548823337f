//! The host's implementations of the plugin's imports, one file per WIT interface.

pub(crate) mod browser;
pub(crate) mod browser_context;
pub(crate) mod browser_view;
pub(crate) mod cookies;
pub(crate) mod grpc;
pub(crate) mod html;
pub(crate) mod http;
pub(crate) mod metrics;
pub(crate) mod run_control;
pub(crate) mod shared_data;
pub(crate) mod sockets;
pub(crate) mod vu;
pub(crate) mod websocket;

use super::bindings::loadtest::scenario::types;
use wasmtime::component::HasData;

/// The view of an interface that needs nothing of the VU's store (`types`, which has
/// no functions; the k6 layer's `crypto`, which computes from its arguments alone).
pub(crate) struct Stateless;

/// The `HasData` of the interfaces that see [`Stateless`].
pub(crate) struct HasStateless;

impl HasData for HasStateless {
    type Data<'a> = Stateless;
}

impl types::Host for Stateless {}
