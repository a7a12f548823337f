//! The host's implementations of the plugin's imports, one file per WIT interface.

pub(crate) mod browser;
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
use super::state::VuState;

impl types::Host for VuState {}
