//! `websocket`: declared by the contract; this host build refuses connections with a
//! clear error until the socket implementation lands.

use crate::plugin::bindings::loadtest::scenario::websocket as wit;
use crate::plugin::state::VuState;
use wasmtime::component::Resource;

/// A socket held by the host for a plugin.
pub struct Socket;

const UNSUPPORTED: &str = "WebSockets are not supported by this host build yet";

impl wit::HostSocket for VuState {
    async fn connect(
        &mut self,
        _url: String,
        _headers: Vec<(String, String)>,
        _tags: Vec<(String, String)>,
    ) -> Result<Resource<Socket>, wit::WsError> {
        Err(wit::WsError::Connect(UNSUPPORTED.into()))
    }

    async fn send_text(&mut self, _s: Resource<Socket>, _text: String) -> Result<(), wit::WsError> {
        Err(wit::WsError::Protocol(UNSUPPORTED.into()))
    }

    async fn send_binary(
        &mut self,
        _s: Resource<Socket>,
        _data: Vec<u8>,
    ) -> Result<(), wit::WsError> {
        Err(wit::WsError::Protocol(UNSUPPORTED.into()))
    }

    async fn recv(
        &mut self,
        _s: Resource<Socket>,
        _timeout_ms: u32,
    ) -> Result<Option<wit::Message>, wit::WsError> {
        Err(wit::WsError::Protocol(UNSUPPORTED.into()))
    }

    async fn close(
        &mut self,
        _s: Resource<Socket>,
        _code: u16,
        _reason: String,
    ) -> Result<(), wit::WsError> {
        Err(wit::WsError::Protocol(UNSUPPORTED.into()))
    }

    fn drop(&mut self, socket: Resource<Socket>) -> wasmtime::Result<()> {
        let _ = self.table().delete(socket);
        Ok(())
    }
}

impl wit::Host for VuState {}
