//! A plugin's UDP socket: bound on a free local port and connected to one peer (the
//! kernel then drops datagrams from anyone else), after the allowlist. Payload bytes
//! count in `data_sent` and `data_received`.

use super::account::{connect_failed, Account};
use super::error::{SocketError, SocketErrorKind};
use super::limits::MAX_DATAGRAM;
use super::target;
use crate::metrics::TagSet;
use crate::net::counting_io::IoStats;
use crate::net::NetShared;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// An open UDP socket (public: the contract's `udp-socket` resource is this type).
pub struct UdpConn {
    socket: UdpSocket,
    name: String,
    sent: u64,
    received: u64,
    account: Account,
}

/// Opens a UDP socket to `host:port` (from `local` when given), its metrics tagged
/// `tags`; a failure is counted.
pub(crate) async fn connect(
    shared: &Arc<NetShared>,
    host: &str,
    port: u16,
    local: Option<IpAddr>,
    tags: TagSet,
) -> Result<UdpConn, SocketError> {
    let opened = open(shared, host, port, local, tags.clone()).await;
    if let Err(e) = &opened {
        connect_failed(shared, &tags, e, None);
    }
    opened
}

async fn open(
    shared: &Arc<NetShared>,
    host: &str,
    port: u16,
    local: Option<IpAddr>,
    tags: TagSet,
) -> Result<UdpConn, SocketError> {
    let target = target::check(shared, "udp", host, port)?;
    let started = Instant::now();
    let addrs = target::resolve(&target).await?;
    let addr = addrs
        .iter()
        .find(|a| local.is_none_or(|ip| ip.is_ipv4() == a.is_ipv4()))
        .copied()
        .ok_or_else(|| {
            SocketError::new(
                SocketErrorKind::Connect,
                format!("{}: no address of the source address's family", target.name),
            )
        })?;
    let bind = local.unwrap_or(if addr.is_ipv4() {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    });
    let name = target.name;
    let socket = UdpSocket::bind(SocketAddr::new(bind, 0))
        .await
        .map_err(|e| SocketError::io(&name, &e))?;
    socket
        .connect(addr)
        .await
        .map_err(|e| SocketError::io(&name, &e))?;
    Ok(UdpConn {
        socket,
        account: Account::open(
            shared,
            tags,
            Arc::new(IoStats::default()),
            started.elapsed(),
        ),
        name,
        sent: 0,
        received: 0,
    })
}

impl UdpConn {
    /// Sends one datagram.
    pub(crate) async fn send(&mut self, data: &[u8]) -> Result<(), SocketError> {
        let r = self.send_inner(data).await;
        self.settle(r)
    }

    /// The next datagram, waiting up to `timeout`.
    pub(crate) async fn recv(&mut self, timeout: Duration) -> Result<Vec<u8>, SocketError> {
        let r = self.recv_inner(timeout).await;
        self.settle(r)
    }

    fn settle<T>(&self, r: Result<T, SocketError>) -> Result<T, SocketError> {
        self.account.stats().observe(self.sent, self.received);
        match &r {
            Ok(_) => self.account.flush(),
            Err(e) => self.account.failed(e),
        }
        r
    }

    async fn send_inner(&mut self, data: &[u8]) -> Result<(), SocketError> {
        if data.len() > MAX_DATAGRAM {
            return Err(SocketError::new(
                SocketErrorKind::TooLarge,
                format!(
                    "{}: a datagram holds at most {MAX_DATAGRAM} bytes; it was {}",
                    self.name,
                    data.len()
                ),
            ));
        }
        let n = self
            .socket
            .send(data)
            .await
            .map_err(|e| SocketError::io(&self.name, &e))?;
        self.sent += n as u64;
        Ok(())
    }

    async fn recv_inner(&mut self, timeout: Duration) -> Result<Vec<u8>, SocketError> {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let n = match tokio::time::timeout(timeout, self.socket.recv(&mut buf)).await {
            Err(_) => {
                return Err(SocketError::new(
                    SocketErrorKind::Timeout,
                    format!(
                        "{}: no datagram within {}",
                        self.name,
                        crate::config::format_duration(timeout)
                    ),
                ))
            }
            Ok(r) => r.map_err(|e| SocketError::io(&self.name, &e))?,
        };
        self.received += n as u64;
        buf.truncate(n);
        Ok(buf)
    }
}
