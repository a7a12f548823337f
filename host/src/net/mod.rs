//! The host side of the plugin's network imports: HTTP over per-VU connection pools
//! (HTTP/1.1 on hyper or on the host's own lean client, `lean`; HTTP/2 on hyper;
//! HTTP/3 on quinn and h3), WebSockets held by the host, raw TCP/TLS/UDP sockets
//! (`sockets`), and the allowlist every request and connect passes first.
//!
//! `types` holds the leaf types (request, response, protocol, error, bytes) and
//! imports nothing of `net`; the files above it import downwards only: `http` →
//! `connect` → `lean`, `h3`, `tls`, `address` → `types`, `allowlist`. A test
//! (`crate::module_graph`) fails on any import cycle between files.

pub(crate) mod address;
pub(crate) mod allowlist;
pub(crate) mod alt_svc;
pub(crate) mod conn_counts;
pub(crate) mod connect;
pub(crate) mod cookies;
pub(crate) mod counting_io;
pub(crate) mod descriptors;
pub(crate) mod encoding;
pub(crate) mod grpc;
pub(crate) mod h3;
pub(crate) mod http;
pub(crate) mod lean;
pub(crate) mod plain_or_tls;
pub(crate) mod request_tags;
pub(crate) mod shared;
pub(crate) mod sockets;
pub(crate) mod targets;
pub(crate) mod tls;
pub(crate) mod tls_material;
pub(crate) mod types;
pub(crate) mod ws;

pub(crate) use allowlist::Allowlist;
pub(crate) use http::HttpClient;
pub(crate) use shared::NetShared;
pub(crate) use types::{HttpError, HttpRequest, HttpResponse, Proto, ResponseContent};
