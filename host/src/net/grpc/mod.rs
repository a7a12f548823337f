//! The host side of the plugin's `grpc` import: channels to `host:port` over HTTP/2
//! (h2, hyper's HTTP/2, used directly: [`body`]; on the host's own connect, TLS and
//! allowlist code), method descriptors from `.proto` text compiled at run time or
//! binary descriptor sets ([`descriptors`], protox and prost-reflect), the services
//! the host carries (`grpc.health.v1.Health`), or the server's reflection service
//! ([`reflection`]), unary calls ([`unary`]) and client, server and bidirectional
//! streams ([`stream`]) with proto3 JSON messages
//! (prost-reflect). A unary call can be prepared once and made many times
//! ([`prepared`], contract 0.3.6).
//!
//! A channel connects lazily, as gRPC channels do: `connect` checks the target and the
//! allowlist (nothing is sent to a denied target) and compiles the protos; the first
//! call (or reflection) opens the connection, and a call that finds it closed opens a
//! new one. A connection failure is then the failure of that call, counted with its
//! kind (`connect`, `tls`) and the status a gRPC client reports for it (UNAVAILABLE).

mod body;
pub(crate) mod channel;
pub(crate) mod descriptors;
pub(crate) mod failures;
mod frame;
mod json;
pub(crate) mod prepared;
mod record;
mod reflection;
mod status;
pub(crate) mod stream;
mod unary;

pub(crate) use channel::{Channel, ChannelOptions};
pub(crate) use prepared::{CallContent, PreparedCall};
pub(crate) use status::{CallOptions, CallStatus, GrpcError};
pub(crate) use stream::{GrpcStream, StreamItem};
