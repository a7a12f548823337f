//! The host side of `http.send`: a per-VU keep-alive connection pool on hyper's
//! connection API (each VU owns its connections, as each k6 VU does, so no lock is
//! shared between VUs), per-request timeout, bounded bodies, and k6's timing phases.
//!
//! `client` is the VU's client (send, batches, redirect hops); `prepared` a request
//! made ready to go; `pool` the idle connections and a batch's turns; `route` whether a
//! request goes over TCP or HTTP/3 (and what `Alt-Svc` taught the VU); `exchange` one
//! request on the wire; `redirect` the next hop; `record` the one place where a
//! request's outcome becomes metrics. What goes in and out is in [`crate::net::types`].
//!
//! Imports go one way: client → pool, route, redirect, exchange, record → prepared →
//! the leaves of `net`.

mod client;
pub(crate) mod debug;
mod exchange;
mod pool;
pub(crate) mod prepared;
mod record;
mod redirect;
mod route;

pub(crate) use client::HttpClient;
pub(crate) use prepared::PreparedRequest;
