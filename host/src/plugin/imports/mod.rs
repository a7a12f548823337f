//! The host's implementations of the plugin's imports, one file per WIT interface.

pub mod cookies;
pub mod http;
pub mod metrics;
pub mod vu;
pub mod websocket;

use super::bindings::loadtest::scenario::types;
use super::state::VuState;

impl types::Host for VuState {}
