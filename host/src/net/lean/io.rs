//! The transport under a lean connection: plain TCP or TLS over it, on the
//! byte-counting wrapper (`crate::net::plain_or_tls`), so bytes and the last write time
//! are taken exactly as for hyper's connections.

use crate::net::counting_io::CountingIo;
use crate::net::plain_or_tls::PlainOrTls;
use crate::net::tls::Watched;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// A counted TCP stream, or TLS over one (watched for the TLS failure that ends it).
pub(crate) type LeanIo = PlainOrTls<Watched<TlsStream<CountingIo<TcpStream>>>>;
