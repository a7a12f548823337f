//! `sockets` (contract 0.3.7; `read-frame` 0.3.9): converts between the WIT resources and the host's
//! sockets ([`crate::net::sockets`]), on the capability's own view of the store
//! ([`SocketsView`]). Sockets live in the VU's resource table, so they outlive
//! iterations and close when the plugin drops them or the VU's store goes away.

use crate::net::sockets::account::socket_tags;
use crate::net::sockets::frame::LengthField;
use crate::net::sockets::resp;
use crate::net::sockets::tcp::{self, TcpOptions};
use crate::net::sockets::{udp, SocketError, SocketErrorKind, TcpConn, UdpConn};
use crate::net::sockets::{MAX_READ, MAX_SOCKETS, MAX_WRITE};
use crate::plugin::bindings::loadtest::scenario::sockets as wit;
use crate::plugin::sockets::SocketsView;
use std::time::Duration;
use wasmtime::component::Resource;

fn to_wit(e: SocketError) -> wit::SocketError {
    let m = e.message;
    match e.kind {
        SocketErrorKind::Denied => wit::SocketError::Denied(m),
        SocketErrorKind::Invalid => wit::SocketError::Invalid(m),
        SocketErrorKind::Refused => wit::SocketError::Refused(m),
        SocketErrorKind::Connect => wit::SocketError::Connect(m),
        SocketErrorKind::Tls => wit::SocketError::Tls(m),
        SocketErrorKind::Timeout => wit::SocketError::Timeout(m),
        SocketErrorKind::Closed => wit::SocketError::Closed(m),
        SocketErrorKind::TooLarge => wit::SocketError::TooLarge(m),
        SocketErrorKind::Io => wit::SocketError::Io(m),
    }
}

/// A handle that is not one of this VU's sockets, as the plugin is told.
fn not_a_socket(e: wasmtime::component::ResourceTableError) -> wit::SocketError {
    wit::SocketError::Invalid(format!("not a socket of this VU: {e}"))
}

fn ms(timeout_ms: u32) -> Duration {
    Duration::from_millis(u64::from(timeout_ms))
}

impl SocketsView<'_> {
    /// Refuses a connect past the VU's bound (before anything is opened).
    fn room_for_one(&self) -> Result<(), wit::SocketError> {
        if self.ctx.held >= MAX_SOCKETS {
            return Err(wit::SocketError::Invalid(format!(
                "this VU holds {MAX_SOCKETS} sockets, the most it may: close (or drop) one first"
            )));
        }
        Ok(())
    }

    fn tcp(&mut self, s: &Resource<TcpConn>) -> Result<&mut TcpConn, wit::SocketError> {
        self.table.get_mut(s).map_err(not_a_socket)
    }

    fn udp(&mut self, s: &Resource<UdpConn>) -> Result<&mut UdpConn, wit::SocketError> {
        self.table.get_mut(s).map_err(not_a_socket)
    }
}

impl wit::HostTcpSocket for SocketsView<'_> {
    async fn connect(
        &mut self,
        host: String,
        port: u16,
        options: wit::ConnectOptions,
    ) -> Result<Resource<TcpConn>, wit::SocketError> {
        self.room_for_one()?;
        let net = self.ctx.net.clone();
        let proto = if options.tls.is_some() { "tls" } else { "tcp" };
        let name = crate::net::sockets::target::display_name(&host, port);
        let tags = socket_tags(&self.ctx.tags, proto, &name, &options.tags);
        let opts = TcpOptions {
            tls: options.tls.map(|t| t.server_name),
            timeout: options.timeout_ms.map_or(net.default_timeout, ms),
            local: self.ctx.local,
        };
        let connect = std::pin::pin!(tcp::connect(&net, &host, port, opts, tags));
        let conn = self.budget.wait(connect).await.map_err(to_wit)?;
        let handle = self.table.push(conn).map_err(|e| {
            wit::SocketError::Invalid(format!("this VU holds too many resources: {e}"))
        })?;
        self.ctx.held += 1;
        Ok(handle)
    }

    async fn write(
        &mut self,
        s: Resource<TcpConn>,
        data: Vec<u8>,
        timeout_ms: u32,
    ) -> Result<(), wit::SocketError> {
        let conn = self.table.get_mut(&s).map_err(not_a_socket)?;
        let write = std::pin::pin!(conn.write(&data, ms(timeout_ms)));
        self.budget.wait(write).await.map_err(to_wit)
    }

    async fn read(
        &mut self,
        s: Resource<TcpConn>,
        max: u32,
        timeout_ms: u32,
    ) -> Result<Vec<u8>, wit::SocketError> {
        let conn = self.table.get_mut(&s).map_err(not_a_socket)?;
        let read = std::pin::pin!(conn.read(max.min(MAX_READ), ms(timeout_ms)));
        self.budget.wait(read).await.map_err(to_wit)
    }

    async fn read_exact(
        &mut self,
        s: Resource<TcpConn>,
        n: u32,
        timeout_ms: u32,
    ) -> Result<Vec<u8>, wit::SocketError> {
        let conn = self.table.get_mut(&s).map_err(not_a_socket)?;
        let read = std::pin::pin!(conn.read_exact(n, ms(timeout_ms)));
        self.budget.wait(read).await.map_err(to_wit)
    }

    async fn read_until(
        &mut self,
        s: Resource<TcpConn>,
        delimiter: Vec<u8>,
        max: u32,
        timeout_ms: u32,
    ) -> Result<Vec<u8>, wit::SocketError> {
        let conn = self.table.get_mut(&s).map_err(not_a_socket)?;
        let read = std::pin::pin!(conn.read_until(&delimiter, max, ms(timeout_ms)));
        self.budget.wait(read).await.map_err(to_wit)
    }

    async fn read_frame(
        &mut self,
        s: Resource<TcpConn>,
        framing: wit::Framing,
        max: u32,
        timeout_ms: u32,
    ) -> Result<Vec<u8>, wit::SocketError> {
        let conn = self.table.get_mut(&s).map_err(not_a_socket)?;
        let timeout = ms(timeout_ms);
        let copy = |bytes: &[u8]| bytes.to_vec();
        match framing {
            wit::Framing::Resp => {
                let read = std::pin::pin!(conn.read_frame(resp::frame_len, max, timeout, copy));
                self.budget.wait(read).await.map_err(to_wit)
            }
            wit::Framing::LengthField(f) => {
                let field = LengthField::new(f.offset, f.size, f.adjust)
                    .map_err(wit::SocketError::Invalid)?;
                let frame = move |buf: &[u8]| field.frame_len(buf);
                let read = std::pin::pin!(conn.read_frame(frame, max, timeout, copy));
                self.budget.wait(read).await.map_err(to_wit)
            }
        }
    }

    async fn shutdown_write(&mut self, s: Resource<TcpConn>) -> Result<(), wit::SocketError> {
        let timeout = self.ctx.net.default_timeout;
        let conn = self.tcp(&s)?;
        conn.shutdown_write(timeout).await.map_err(to_wit)
    }

    fn close(&mut self, s: Resource<TcpConn>) -> wasmtime::Result<()> {
        // A handle that is not a socket of this VU closes nothing: the plugin holds
        // none such, so there is nothing to tell it.
        if let Ok(conn) = self.tcp(&s) {
            conn.close();
        }
        Ok(())
    }

    fn drop(&mut self, s: Resource<TcpConn>) -> wasmtime::Result<()> {
        if self.table.delete(s).is_ok() {
            self.ctx.held = self.ctx.held.saturating_sub(1);
        }
        Ok(())
    }
}

impl wit::HostUdpSocket for SocketsView<'_> {
    async fn connect(
        &mut self,
        host: String,
        port: u16,
        tags: Vec<(String, String)>,
    ) -> Result<Resource<UdpConn>, wit::SocketError> {
        self.room_for_one()?;
        let net = self.ctx.net.clone();
        let name = crate::net::sockets::target::display_name(&host, port);
        let tags = socket_tags(&self.ctx.tags, "udp", &name, &tags);
        let connect = std::pin::pin!(udp::connect(&net, &host, port, self.ctx.local, tags));
        let conn = self.budget.wait(connect).await.map_err(to_wit)?;
        let handle = self.table.push(conn).map_err(|e| {
            wit::SocketError::Invalid(format!("this VU holds too many resources: {e}"))
        })?;
        self.ctx.held += 1;
        Ok(handle)
    }

    async fn send(&mut self, s: Resource<UdpConn>, data: Vec<u8>) -> Result<(), wit::SocketError> {
        self.udp(&s)?.send(&data).await.map_err(to_wit)
    }

    async fn recv(
        &mut self,
        s: Resource<UdpConn>,
        timeout_ms: u32,
    ) -> Result<Vec<u8>, wit::SocketError> {
        let conn = self.table.get_mut(&s).map_err(not_a_socket)?;
        let recv = std::pin::pin!(conn.recv(ms(timeout_ms)));
        self.budget.wait(recv).await.map_err(to_wit)
    }

    fn drop(&mut self, s: Resource<UdpConn>) -> wasmtime::Result<()> {
        if self.table.delete(s).is_ok() {
            self.ctx.held = self.ctx.held.saturating_sub(1);
        }
        Ok(())
    }
}

impl wit::Host for SocketsView<'_> {
    fn max_read(&mut self) -> wasmtime::Result<u32> {
        Ok(MAX_READ)
    }

    fn max_write(&mut self) -> wasmtime::Result<u32> {
        Ok(MAX_WRITE)
    }

    fn max_sockets(&mut self) -> wasmtime::Result<u32> {
        Ok(MAX_SOCKETS)
    }
}
