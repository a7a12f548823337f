//! `grpc`: converts between the WIT channel and stream resources and the host's
//! ([`crate::net::grpc`]). Both live in the VU's resource table, so they outlive
//! iterations and go away with the VU's store; a dropped stream is reset. A prepared
//! call (0.3.6) names its channel by handle; each answer's content is a resource of
//! its own, freed when the plugin drops it.

use crate::metrics::TagSet;
use crate::net::grpc::{
    CallContent, CallOptions, CallStatus, Channel, ChannelOptions, GrpcError, GrpcStream,
    PreparedCall, StreamItem,
};
use crate::net::tls_material::TlsMaterial;
use crate::net::NetShared;
use crate::plugin::bindings::loadtest::scenario::grpc as wit;
use crate::plugin::state::VuState;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::{HasData, Resource, ResourceTable};

/// What `grpc` reaches of a VU's store: the run's network policy, the VU's id (its
/// source address) and tags, and the resource table its channels and streams live in.
pub(crate) struct GrpcView<'a> {
    /// The allowlist, TLS client, counters and recorder.
    pub(crate) net: &'a Arc<NetShared>,
    /// The VU's id, which picks its source address.
    pub(crate) vu_id: u64,
    /// The VU's tags, on its calls' samples.
    pub(crate) vu_tags: &'a TagSet,
    /// The VU's resource table.
    pub(crate) table: &'a mut ResourceTable,
}

/// The `HasData` of `grpc`: its imports see a [`GrpcView`].
pub(crate) struct HasGrpc;

impl HasData for HasGrpc {
    type Data<'a> = GrpcView<'a>;
}

impl VuState {
    /// What `grpc` sees of the store.
    pub(crate) fn grpc_view(&mut self) -> GrpcView<'_> {
        GrpcView {
            net: &self.services.net,
            vu_id: self.identity.vu_id,
            vu_tags: &self.identity.tags,
            table: &mut self.table,
        }
    }
}

fn status_to_wit(s: CallStatus) -> wit::CallStatus {
    wit::CallStatus {
        code: s.code,
        message: s.message,
        headers: s.headers,
        trailers: s.trailers,
    }
}

fn to_wit(e: GrpcError) -> wit::GrpcError {
    match e {
        GrpcError::Denied(m) => wit::GrpcError::Denied(m),
        GrpcError::Invalid(m) => wit::GrpcError::Invalid(m),
        GrpcError::Connect(m) => wit::GrpcError::Connect(m),
        GrpcError::Tls(m) => wit::GrpcError::Tls(m),
        GrpcError::Deadline(m) => wit::GrpcError::Deadline(m),
        GrpcError::Status(s) => wit::GrpcError::Status(status_to_wit(*s)),
        GrpcError::Protocol(m) => wit::GrpcError::Protocol(m),
    }
}

fn options(o: wit::CallOptions) -> CallOptions {
    CallOptions {
        metadata: o.metadata,
        timeout: o.timeout_ms.map(|ms| Duration::from_millis(u64::from(ms))),
        tags: o.tags,
        expected_codes: o.expected_codes,
    }
}

impl GrpcView<'_> {
    fn channel(&mut self, handle: &Resource<Channel>) -> Result<&mut Channel, wit::GrpcError> {
        self.table
            .get_mut(handle)
            .map_err(|e| wit::GrpcError::Invalid(format!("not a channel of this VU: {e}")))
    }

    fn grpc_stream(
        &mut self,
        handle: &Resource<GrpcStream>,
    ) -> Result<&mut GrpcStream, wit::GrpcError> {
        self.table
            .get_mut(handle)
            .map_err(|e| wit::GrpcError::Invalid(format!("not a stream of this VU: {e}")))
    }
}

impl GrpcView<'_> {
    /// Makes a channel of this VU to `target` and puts it in the VU's table.
    fn new_channel(
        &mut self,
        target: &str,
        options: ChannelOptions,
    ) -> Result<Resource<Channel>, wit::GrpcError> {
        let net = self.net.clone();
        // A VU's channels leave from the same source address as its HTTP requests.
        let local = net.http.local_ip(self.vu_id);
        let channel = Channel::new(net, target, options, self.vu_tags, local).map_err(to_wit)?;
        self.table
            .push(channel)
            .map_err(|e| wit::GrpcError::Invalid(format!("this VU holds too many channels: {e}")))
    }
}

fn timeout(ms: Option<u32>) -> Option<Duration> {
    ms.map(|ms| Duration::from_millis(u64::from(ms)))
}

fn protos(files: Vec<wit::ProtoFile>) -> Vec<(String, String)> {
    files.into_iter().map(|p| (p.name, p.source)).collect()
}

impl wit::HostChannel for GrpcView<'_> {
    async fn connect(
        &mut self,
        target: String,
        o: wit::ChannelOptions,
    ) -> Result<Resource<Channel>, wit::GrpcError> {
        let options = ChannelOptions {
            tls: o.tls,
            protos: protos(o.protos),
            reflect: o.reflect,
            connect_timeout: timeout(o.timeout_ms),
            ..Default::default()
        };
        self.new_channel(&target, options)
    }

    async fn open(
        &mut self,
        target: String,
        o: wit::OpenOptions,
    ) -> Result<Resource<Channel>, wit::GrpcError> {
        let options = ChannelOptions {
            tls: o.tls,
            protos: protos(o.protos),
            descriptor_sets: o.descriptor_sets,
            reflect: o.reflect,
            reflect_metadata: o.reflect_metadata,
            tls_material: o.tls_material.map(|m| TlsMaterial {
                client_cert: m.client_cert,
                client_key: m.client_key,
                ca_certs: m.ca_certs,
            }),
            connect_timeout: timeout(o.timeout_ms),
        };
        self.new_channel(&target, options)
    }

    async fn invoke(
        &mut self,
        c: Resource<Channel>,
        method: String,
        request: String,
        o: wit::CallOptions,
    ) -> Result<wit::CallResponse, wit::GrpcError> {
        let options = options(o);
        let response = self
            .channel(&c)?
            .invoke(&method, &request, &options)
            .await
            .map_err(to_wit)?;
        Ok(wit::CallResponse {
            message: response.message,
            status: status_to_wit(response.status),
            duration_us: response.duration_us,
        })
    }

    async fn open_stream(
        &mut self,
        c: Resource<Channel>,
        method: String,
        o: wit::CallOptions,
    ) -> Result<Resource<GrpcStream>, wit::GrpcError> {
        let stream = self
            .channel(&c)?
            .open_stream(&method, options(o))
            .await
            .map_err(to_wit)?;
        self.table
            .push(stream)
            .map_err(|e| wit::GrpcError::Invalid(format!("this VU holds too many streams: {e}")))
    }

    fn methods(&mut self, c: Resource<Channel>) -> wasmtime::Result<Vec<String>> {
        Ok(self.channel(&c).map(|c| c.methods()).unwrap_or_default())
    }

    async fn describe_method(
        &mut self,
        c: Resource<Channel>,
        method: String,
    ) -> Result<wit::MethodInfo, wit::GrpcError> {
        let (client_streaming, server_streaming) =
            self.channel(&c)?.describe(&method).await.map_err(to_wit)?;
        Ok(wit::MethodInfo {
            name: method,
            client_streaming,
            server_streaming,
        })
    }

    async fn prepare(
        &mut self,
        c: Resource<Channel>,
        method: String,
        request: String,
        o: wit::CallOptions,
    ) -> Result<Resource<PreparedCall>, wit::GrpcError> {
        let options = options(o);
        let call = self
            .channel(&c)?
            .prepare(&method, &request, &options)
            .await
            .map_err(to_wit)?;
        let entry = PreparedCall {
            channel_handle: c.rep(),
            call: std::sync::Arc::new(call),
        };
        self.table.push(entry).map_err(|e| {
            wit::GrpcError::Invalid(format!("this VU holds too many prepared calls: {e}"))
        })
    }

    fn drop(&mut self, channel: Resource<Channel>) -> wasmtime::Result<()> {
        // Dropping the channel drops its connection's sender; the connection closes.
        let _ = self.table.delete(channel);
        Ok(())
    }
}

impl wit::HostPreparedCall for GrpcView<'_> {
    async fn invoke(
        &mut self,
        p: Resource<PreparedCall>,
    ) -> Result<wit::PreparedResponse, wit::GrpcError> {
        let (handle, call) = {
            let entry = self.table.get(&p).map_err(|e| {
                wit::GrpcError::Invalid(format!("not a prepared call of this VU: {e}"))
            })?;
            (entry.channel_handle, entry.call.clone())
        };
        let channel = self
            .table
            .get_mut(&Resource::<Channel>::new_borrow(handle))
            .map_err(|_| {
                wit::GrpcError::Invalid(format!(
                    "{}: the channel this call was prepared on was dropped",
                    call.method()
                ))
            })?;
        let answer = channel.invoke_prepared(&call).await.map_err(to_wit)?;
        let content = self
            .table
            .push(answer.content)
            .map_err(|e| wit::GrpcError::Invalid(format!("this VU holds too many answers: {e}")))?;
        Ok(wit::PreparedResponse {
            code: answer.code,
            status_message: answer.status_message,
            duration_us: answer.duration.as_micros() as u64,
            content,
        })
    }

    fn drop(&mut self, p: Resource<PreparedCall>) -> wasmtime::Result<()> {
        let _ = self.table.delete(p);
        Ok(())
    }
}

impl wit::HostCallContent for GrpcView<'_> {
    fn message(
        &mut self,
        c: Resource<CallContent>,
    ) -> wasmtime::Result<Result<Option<String>, wit::GrpcError>> {
        Ok(self
            .table
            .get(&c)
            .map_err(|e| wit::GrpcError::Invalid(format!("not an answer of this VU: {e}")))
            .and_then(|c| c.message().map_err(to_wit)))
    }

    fn headers(&mut self, c: Resource<CallContent>) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(self.table.get(&c)?.headers())
    }

    fn trailers(&mut self, c: Resource<CallContent>) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(self.table.get(&c)?.trailers())
    }

    fn drop(&mut self, c: Resource<CallContent>) -> wasmtime::Result<()> {
        let _ = self.table.delete(c);
        Ok(())
    }
}

impl wit::HostGrpcStream for GrpcView<'_> {
    async fn send(
        &mut self,
        s: Resource<GrpcStream>,
        message: String,
    ) -> Result<(), wit::GrpcError> {
        self.grpc_stream(&s)?.send(&message).await.map_err(to_wit)
    }

    async fn close_send(&mut self, s: Resource<GrpcStream>) -> Result<(), wit::GrpcError> {
        self.grpc_stream(&s)?.close_send().map_err(to_wit)
    }

    async fn recv(
        &mut self,
        s: Resource<GrpcStream>,
        timeout_ms: u32,
    ) -> Result<wit::StreamItem, wit::GrpcError> {
        let timeout = Duration::from_millis(u64::from(timeout_ms));
        match self.grpc_stream(&s)?.recv(timeout).await.map_err(to_wit)? {
            StreamItem::Message(m) => Ok(wit::StreamItem::Message(m)),
            StreamItem::Timeout => Ok(wit::StreamItem::Timeout),
            StreamItem::End(status) => Ok(wit::StreamItem::End(status_to_wit(status))),
        }
    }

    fn cancel(&mut self, s: Resource<GrpcStream>) -> wasmtime::Result<()> {
        if let Ok(stream) = self.grpc_stream(&s) {
            stream.cancel();
        }
        Ok(())
    }

    fn drop(&mut self, stream: Resource<GrpcStream>) -> wasmtime::Result<()> {
        let _ = self.table.delete(stream);
        Ok(())
    }
}

impl wit::Host for GrpcView<'_> {}
