//! `websocket`: converts between the WIT socket resource and the host's sockets
//! ([`crate::net::ws`]). Sockets live in the VU's resource table, so they outlive
//! iterations and are closed when the plugin drops them or the VU's store goes away.

use crate::metrics::TagSet;
use crate::net::ws::{self, WsError, WsMessage};
use crate::net::NetShared;
use crate::plugin::bindings::loadtest::scenario::websocket as wit;
use crate::plugin::budget::CallBudget;
use crate::plugin::state::VuState;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::{HasData, Resource, ResourceTable};

/// What `websocket` (and the k6 layer's `sockets.recv-text`) reach of a VU's store:
/// the run's network policy, the VU's id (its source address) and tags, the resource
/// table its sockets live in, and the call's budget (a receive that waits gives the
/// thread back).
pub(crate) struct WebSocketView<'a> {
    /// The allowlist, TLS client, counters and recorder.
    pub(crate) net: &'a Arc<NetShared>,
    /// The VU's id, which picks its source address.
    pub(crate) vu_id: u64,
    /// The VU's tags, on its sockets' samples.
    pub(crate) vu_tags: &'a TagSet,
    /// The VU's resource table.
    pub(crate) table: &'a mut ResourceTable,
    /// The call's budget.
    pub(crate) budget: &'a mut CallBudget,
}

/// The `HasData` of `websocket`: its imports see a [`WebSocketView`].
pub(crate) struct HasWebSocket;

impl HasData for HasWebSocket {
    type Data<'a> = WebSocketView<'a>;
}

impl VuState {
    /// What `websocket` sees of the store.
    pub(crate) fn websocket_view(&mut self) -> WebSocketView<'_> {
        WebSocketView {
            net: &self.services.net,
            vu_id: self.identity.vu_id,
            vu_tags: &self.identity.tags,
            table: &mut self.table,
            budget: &mut self.budget,
        }
    }
}

/// A socket held by the host for a plugin.
pub(crate) use crate::net::ws::Socket;

fn to_wit(e: WsError) -> wit::WsError {
    match e {
        WsError::Denied(m) => wit::WsError::Denied(m),
        WsError::Invalid(m) => wit::WsError::Invalid(m),
        WsError::Connect(m) => wit::WsError::Connect(m),
        WsError::Closed(code, reason) => wit::WsError::Closed((code, reason)),
        WsError::Protocol(m) => wit::WsError::Protocol(m),
    }
}

impl WebSocketView<'_> {
    fn socket(&mut self, handle: &Resource<Socket>) -> Result<&mut Socket, wit::WsError> {
        self.table.get_mut(handle).map_err(not_a_socket)
    }

    /// A socket and the call's budget at once: a receive that waits is counted as a
    /// wait, so the next epoch tick does not make the VU yield again.
    pub(crate) fn socket_and_budget(
        &mut self,
        socket: &Resource<Socket>,
    ) -> Result<(&mut Socket, &mut CallBudget), wasmtime::component::ResourceTableError> {
        Ok((self.table.get_mut(socket)?, &mut *self.budget))
    }
}

/// A handle that is not one of this VU's sockets, as the plugin is told.
fn not_a_socket(e: wasmtime::component::ResourceTableError) -> wit::WsError {
    wit::WsError::Invalid(format!("not a socket of this VU: {e}"))
}

impl wit::HostSocket for WebSocketView<'_> {
    async fn connect(
        &mut self,
        url: String,
        headers: Vec<(String, String)>,
        tags: Vec<(String, String)>,
    ) -> Result<Resource<Socket>, wit::WsError> {
        let net = self.net.clone();
        // A VU's sockets leave from the same source address as its HTTP requests.
        let local = net.http.local_ip(self.vu_id);
        let socket = ws::connect_from(&net, &url, &headers, &tags, self.vu_tags, local)
            .await
            .map_err(to_wit)?;
        self.table
            .push(socket)
            .map_err(|e| wit::WsError::Connect(format!("this VU holds too many sockets: {e}")))
    }

    async fn send_text(&mut self, s: Resource<Socket>, text: String) -> Result<(), wit::WsError> {
        self.socket(&s)?.send_text(text).await.map_err(to_wit)
    }

    async fn send_binary(
        &mut self,
        s: Resource<Socket>,
        data: Vec<u8>,
    ) -> Result<(), wit::WsError> {
        self.socket(&s)?.send_binary(data).await.map_err(to_wit)
    }

    async fn recv(
        &mut self,
        s: Resource<Socket>,
        timeout_ms: u32,
    ) -> Result<Option<wit::Message>, wit::WsError> {
        let timeout = Duration::from_millis(u64::from(timeout_ms));
        let (socket, budget) = self.socket_and_budget(&s).map_err(not_a_socket)?;
        // A wait for a message gives the thread back: noted, so that the epoch tick
        // after it does not make the VU yield once more (two fiber switches and a
        // round through the scheduler per message on a socket that is mostly idle).
        let recv = std::pin::pin!(socket.recv(timeout));
        match budget.wait(recv).await {
            Ok(m) => Ok(m.map(|m| match m {
                WsMessage::Text(t) => wit::Message::Text(t),
                WsMessage::Binary(b) => wit::Message::Binary(b),
            })),
            Err(e) => Err(to_wit(e)),
        }
    }

    async fn close(
        &mut self,
        s: Resource<Socket>,
        code: u16,
        reason: String,
    ) -> Result<(), wit::WsError> {
        self.socket(&s)?.close(code, reason).await.map_err(to_wit)
    }

    fn drop(&mut self, socket: Resource<Socket>) -> wasmtime::Result<()> {
        // Dropping the socket closes its channels; its task closes the connection.
        let _ = self.table.delete(socket);
        Ok(())
    }
}

impl wit::Host for WebSocketView<'_> {}
