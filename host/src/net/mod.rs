//! The host side of the plugin's network imports: HTTP over per-VU hyper connection
//! pools, WebSockets held by the host, and the allowlist every request passes first.

pub mod allowlist;
pub mod connect;
pub mod cookies;
pub mod counting_io;
pub mod descriptors;
pub mod http;
pub mod redirect;
pub mod request_tags;
pub mod shared;
pub mod targets;
pub mod tls;
pub mod ws;

pub use allowlist::{Allowlist, Origin};
pub use http::{HttpClient, HttpError, HttpRequest, HttpResponse, ResponseContent, Timings};
pub use shared::NetShared;
