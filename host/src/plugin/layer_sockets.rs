//! The k6 layer's text receive (`loadtest:k6-layer/sockets`): a WebSocket message as a
//! string, on a socket named by a number rather than a `borrow<socket>`.
//!
//! A borrowed handle costs wasmtime, per call, a lend in the instance's handle table,
//! the check that the lend ended when the call returns and a look-up of the resource's
//! type (issue #53: about 3 % of the host's CPU in capacity.js, where every message is
//! one call). The number is the socket's place in the VU's own [`ResourceTable`]
//! (`sockets.id`, asked once per socket), checked there on each call: a number that
//! is not one of the VU's sockets is refused, and no number reaches another VU's
//! table.
//!
//! [`ResourceTable`]: wasmtime::component::ResourceTable

use super::imports::websocket::WebSocketView;
use super::layer::bindings::loadtest::k6_layer::sockets;
use crate::net::ws::Socket;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wasmtime::component::Resource;

impl sockets::Host for WebSocketView<'_> {
    fn id(&mut self, socket: Resource<Socket>) -> wasmtime::Result<u32> {
        // Lifted from a handle of this VU's instance, so the rep is the socket's index
        // in this VU's table.
        Ok(socket.rep())
    }

    async fn recv_text(
        &mut self,
        id: u32,
        until_ms: f64,
        timeout_ms: u32,
    ) -> wasmtime::Result<Option<String>> {
        let Ok((socket, budget)) = self.socket_and_budget(&Resource::new_borrow(id)) else {
            // Only the layer passes numbers, each one `id` gave for a socket it still
            // holds: any other is its mistake, stopped here rather than answered with
            // nothing (the layer would then ask the socket's `recv`, which has the
            // message, and loop).
            wasmtime::bail!(
                "the k6 layer received on socket {id}, which is not a socket of this VU"
            );
        };
        let mut timeout = Duration::from_millis(u64::from(timeout_ms));
        // No timer in the layer's loop (`until` is infinite): no clock read.
        if until_ms != f64::INFINITY {
            let now_ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64()
                * 1000.0;
            let left = until_ms - now_ms;
            // A deadline passed (or not a number) ends the wait before any message is
            // taken: the layer's timer is due first.
            if left.is_nan() || left <= 0.0 {
                return Ok(None);
            }
            timeout = timeout.min(Duration::from_secs_f64((left / 1000.0).min(1e9)));
        }
        let recv = std::pin::pin!(socket.recv_text(timeout));
        Ok(budget.wait(recv).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WebSocketOptions;
    use crate::metrics::{Recorder, Registry, TagSet};
    use crate::net::{Allowlist, NetShared};
    use crate::plugin::budget::CallBudget;
    use futures::{SinkExt, StreamExt};
    use std::sync::Arc;
    use tokio::net::TcpListener;
    use tokio_tungstenite::tungstenite::Message;
    use wasmtime::component::ResourceTable;

    /// A server on 127.0.0.1 that sends `text` on each socket it accepts.
    async fn pusher(text: &'static str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
                    if ws.send(Message::text(text)).await.is_ok() {
                        while let Some(Ok(_)) = ws.next().await {}
                    }
                });
            }
        });
        url
    }

    /// One VU's part of the store: its resource table and call budget.
    struct Vu {
        table: ResourceTable,
        budget: CallBudget,
    }

    impl Vu {
        fn new() -> Self {
            Self {
                table: ResourceTable::new(),
                budget: CallBudget::new(Duration::from_secs(10)),
            }
        }

        fn view<'a>(&'a mut self, net: &'a Arc<NetShared>, tags: &'a TagSet) -> WebSocketView<'a> {
            WebSocketView {
                net,
                vu_id: 1,
                vu_tags: tags,
                table: &mut self.table,
                budget: &mut self.budget,
            }
        }
    }

    /// A socket's number reaches that socket in its VU's table; in another VU's table
    /// the same number reaches only that VU's own socket at that place, or is refused
    /// (nothing there, or something that is not a socket), as is a number past the
    /// end: an error, no panic, and no message taken from anyone.
    #[tokio::test]
    async fn a_socket_number_reaches_only_its_own_vus_socket() {
        let net = Arc::new(
            NetShared::new(
                Allowlist::new(&[]).unwrap(),
                Duration::from_secs(10),
                1 << 20,
                Arc::new(Recorder::new(Arc::new(Registry::new()))),
            )
            .with_websocket(WebSocketOptions {
                ping_interval: None,
                ..WebSocketOptions::default()
            }),
        );
        let tags = TagSet::empty();
        let (to_a, to_b) = (pusher("for a").await, pusher("for b").await);
        let connect = |url: String| {
            let net = net.clone();
            async move {
                crate::net::ws::connect_from(&net, &url, &[], &[], &TagSet::empty(), None)
                    .await
                    .unwrap()
            }
        };

        let mut a = Vu::new();
        let socket = a.table.push(connect(to_a.clone()).await).unwrap();
        let id = sockets::Host::id(&mut a.view(&net, &tags), socket).unwrap();

        // B holds something else where A's socket is: refused.
        let mut b = Vu::new();
        let other = b.table.push(String::from("not a socket")).unwrap();
        assert_eq!(
            other.rep(),
            id,
            "the test wants B's string at A's socket's place"
        );
        let refused = sockets::Host::recv_text(&mut b.view(&net, &tags), id, f64::INFINITY, 50)
            .await
            .unwrap_err();
        assert!(
            refused.to_string().contains("not a socket of this VU"),
            "{refused}"
        );
        // Past the end of A's table: refused.
        assert!(
            sockets::Host::recv_text(&mut a.view(&net, &tags), id + 7, f64::INFINITY, 50)
                .await
                .is_err()
        );

        // B's own socket, at another place: A's number there is still refused, and B's
        // own number reaches B's socket.
        let b_socket = b.table.push(connect(to_b).await).unwrap();
        let b_id = sockets::Host::id(&mut b.view(&net, &tags), b_socket).unwrap();
        assert_ne!(b_id, id);
        assert!(
            sockets::Host::recv_text(&mut b.view(&net, &tags), id, f64::INFINITY, 50)
                .await
                .is_err()
        );
        let got = sockets::Host::recv_text(&mut b.view(&net, &tags), b_id, f64::INFINITY, 5000)
            .await
            .unwrap();
        assert_eq!(got.as_deref(), Some("for b"));

        // A's message was left for A.
        let got = sockets::Host::recv_text(&mut a.view(&net, &tags), id, f64::INFINITY, 5000)
            .await
            .unwrap();
        assert_eq!(got.as_deref(), Some("for a"));
    }
}
