//! The `sockets` capability's state: one struct for the capability ([`SocketsCtx`],
//! one field of the VU's store) and the view its imports are implemented on
//! ([`SocketsView`]: the state, the VU's resource table where the sockets live, and
//! the call's budget), as wasmtime-wasi implements each interface on a narrow view of
//! the store (`WasiSocketsCtxView`). The imports themselves are in
//! `imports/sockets.rs`.

use super::budget::CallBudget;
use crate::metrics::TagSet;
use crate::net::NetShared;
use std::net::IpAddr;
use std::sync::Arc;
use wasmtime::component::{HasData, ResourceTable};

/// What one VU's sockets share: the run's network policy, the VU's tags and source
/// address, and how many sockets it holds.
pub(crate) struct SocketsCtx {
    /// The allowlist, TLS client, counters and recorder.
    pub(crate) net: Arc<NetShared>,
    /// The VU's tags, under which its sockets' metrics go.
    pub(crate) tags: TagSet,
    /// The VU's source address (`[http] local_ips`), if the run sets them.
    pub(crate) local: Option<IpAddr>,
    /// Sockets the VU holds now (TCP and UDP), at most `MAX_SOCKETS`.
    pub(crate) held: u32,
}

impl SocketsCtx {
    /// The state of a VU that has `tags` and leaves from `local`.
    pub(crate) fn new(net: Arc<NetShared>, tags: TagSet, local: Option<IpAddr>) -> Self {
        Self {
            net,
            tags,
            local,
            held: 0,
        }
    }
}

/// What the `sockets` imports reach of a VU's store.
pub(crate) struct SocketsView<'a> {
    /// The capability's state.
    pub(crate) ctx: &'a mut SocketsCtx,
    /// The VU's resource table (shared with WASI and the other imports).
    pub(crate) table: &'a mut ResourceTable,
    /// The call's budget: a read that waits gives the thread back, and is noted.
    pub(crate) budget: &'a mut CallBudget,
}

/// The `HasData` of the `sockets` interface: its imports see a [`SocketsView`].
pub(crate) struct HasSockets;

impl HasData for HasSockets {
    type Data<'a> = SocketsView<'a>;
}
