//! The transport under a WebSocket: plain TCP for `ws://`, TLS over it for `wss://`,
//! on the byte-counting wrapper (`crate::net::plain_or_tls`).

use crate::net::counting_io::CountingIo;
use crate::net::plain_or_tls::PlainOrTls;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The transport under every socket, as tungstenite drives it.
pub(super) type Stream = tokio_tungstenite::WebSocketStream<Transport>;

/// A socket's byte stream; bytes are counted on the wire (under TLS).
pub(super) type Transport = PlainOrTls<TlsStream<CountingIo<TcpStream>>>;
