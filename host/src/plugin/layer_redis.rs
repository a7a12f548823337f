//! k6's Redis client's commands done by the host (`loadtest:k6-layer/redis`): the
//! layer hands over the command's words and the numbers of its three series, the
//! host writes the RESP command on the VU's socket, reads the whole reply in one
//! framed read (`resp::frame_len`), records `redis_cmd_duration`, `redis_cmds` and
//! `redis_cmd_failed`, and returns the reply as one short string
//! ([`resp::to_layer_text`]). In QuickJS the same command cost more than k6's Go
//! client by about an order of magnitude (results/sockets.md).

use super::budget::CallBudget;
use super::imports::metrics::MetricsView;
use super::layer::bindings::loadtest::k6_layer::{redis, samples};
use crate::net::sockets::{resp, SocketError, TcpConn, MAX_READ};
use crate::plugin::state::VuState;
use std::time::{Duration, Instant};
use wasmtime::component::{HasData, Resource, ResourceTable};

/// What the layer's `redis` reaches of a VU's store: the resource table its
/// connection is in, the call's budget (the reply's wait), and the metrics view its
/// three series are recorded through.
pub(crate) struct RedisView<'a> {
    /// The VU's resource table.
    pub(crate) table: &'a mut ResourceTable,
    /// The call's budget.
    pub(crate) budget: &'a mut CallBudget,
    /// Where each command's samples go.
    pub(crate) metrics: MetricsView<'a>,
}

/// The `HasData` of the layer's `redis`: its import sees a [`RedisView`].
pub(crate) struct HasRedis;

impl HasData for HasRedis {
    type Data<'a> = RedisView<'a>;
}

impl VuState {
    /// What the layer's `redis` sees of the store.
    pub(crate) fn redis_view(&mut self) -> RedisView<'_> {
        RedisView {
            table: &mut self.table,
            budget: &mut self.budget,
            metrics: MetricsView {
                state: &mut self.metrics,
                vu_tags: &self.identity.tags,
                services: &self.services,
            },
        }
    }
}

/// The series number that means "not recorded" (the layer records that command
/// itself).
const NONE: u32 = u32::MAX;

impl redis::Host for RedisView<'_> {
    async fn command(
        &mut self,
        s: Resource<TcpConn>,
        args: Vec<String>,
        write_timeout_ms: u32,
        read_timeout_ms: u32,
        duration: u32,
        count: u32,
        failed: u32,
    ) -> wasmtime::Result<String> {
        let started = Instant::now();
        let reply = match self.table.get_mut(&s) {
            Err(e) => format!("!invalid: not a socket of this VU: {e}"),
            Ok(conn) => {
                let budget = &mut *self.budget;
                let exchange = std::pin::pin!(exchange(
                    conn,
                    &args,
                    ms(write_timeout_ms),
                    ms(read_timeout_ms)
                ));
                budget.wait(exchange).await
            }
        };
        let took = started.elapsed().as_secs_f64() * 1000.0;
        // A server's error and a failure alike fail the command, as in the layer.
        let ok = !matches!(reply.as_bytes().first(), Some(b'-' | b'!'));
        for (id, value) in [(duration, took), (count, 1.0), (failed, f64::from(!ok))] {
            if id != NONE {
                samples::Host::add(&mut self.metrics, id, value)?;
            }
        }
        Ok(reply)
    }
}

fn ms(timeout_ms: u32) -> Duration {
    Duration::from_millis(u64::from(timeout_ms))
}

/// Writes the command and reads its reply, as the layer's text.
async fn exchange(
    conn: &mut TcpConn,
    args: &[String],
    write_timeout: Duration,
    read_timeout: Duration,
) -> String {
    let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    resp::encode(args, &mut out);
    if let Err(e) = conn.write(&out, write_timeout).await {
        return failure(&e);
    }
    match conn
        .read_frame(resp::frame_len, MAX_READ, read_timeout, resp::to_layer_text)
        .await
    {
        Ok(Ok(text)) => text,
        Ok(Err(what)) => format!("!protocol: {what}"),
        Err(e) => failure(&e),
    }
}

/// A socket failure as the layer reads it: the contract's name of its kind.
fn failure(e: &SocketError) -> String {
    format!("!{}: {}", e.kind.tag().replace('_', "-"), e.message)
}
