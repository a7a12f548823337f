//! gRPC calls made by the host (contract 0.3.3; descriptor sets, reflection metadata
//! and a channel's own TLS material 0.3.5; prepared calls 0.3.6).
//!
//! A [`Channel`] is one target (`host:port`) with the descriptors of the services it
//! calls: `.proto` text handed to [`ChannelBuilder::proto`] (compiled by the host at
//! run time; a `.proto` file listed in `[data]` is one record holding its text, see
//! [`proto_from_data`]), binary descriptor sets ([`ChannelBuilder::descriptor_set`]),
//! or the server's reflection service ([`ChannelBuilder::reflect`]). Every channel can
//! also call `grpc.health.v1.Health`, which the host carries ([`Channel::health_check`]). Messages are JSON in the proto3 mapping. The host
//! connects at the first call, checks the allowlist before any packet, and records
//! `grpc_reqs`, `grpc_req_duration`, `grpc_req_failed`, `grpc_streams`,
//! `grpc_streams_msgs_sent` and `grpc_streams_msgs_received`.
//!
//! A status other than OK is an error ([`GrpcError::Status`]) unless the call lists it
//! as expected ([`Call::expect_code`]), in which case it is a response without a
//! message and `grpc_req_failed` counts the call as passed.
//!
//! A call made again and again with the same request is cheaper prepared
//! ([`Call::prepare`]): the host resolves the method and encodes the request to
//! protobuf once, and keeps each answer as protobuf until it is read
//! ([`PreparedResponse::message`]). Each [`PreparedCall::invoke`] is counted as
//! [`Call::send`] would be.
//!
//! ```no_run
//! use loadtest::grpc::Channel;
//!
//! # fn f() -> Result<(), String> {
//! let ch = Channel::builder("127.0.0.1:50051").reflect().connect()?;
//! let res = ch.call("helloworld.Greeter/SayHello", r#"{"name":"k6"}"#).send()?;
//! let stream = ch.stream("demo.Jobs/Activate").open()?;
//! stream.send(r#"{"max":10}"#)?;
//! let hello = ch.call("helloworld.Greeter/SayHello", r#"{"name":"k6"}"#).prepare()?;
//! let answer = hello.invoke()?;
//! assert_eq!(answer.code, 0);
//! # Ok(()) }
//! ```

use std::fmt;
use std::time::Duration;

use crate::bindings::loadtest::scenario::grpc as wit;
use crate::tags::{owned, Pairs};

/// The end of a call: status code, message, headers and trailers.
pub type CallStatus = wit::CallStatus;

/// Why a call failed. It converts into `String`, so `?` works in scenario functions.
#[derive(Debug, Clone)]
pub enum GrpcError {
    /// The target is not in the run's allowlist; nothing was sent.
    Denied(String),
    /// A malformed target, method, metadata or JSON message, or a proto that does not compile.
    Invalid(String),
    /// The connection could not be made.
    Connect(String),
    /// The TLS handshake failed.
    Tls(String),
    /// The deadline passed.
    Deadline(String),
    /// The server answered a status that is neither OK nor expected.
    Status(CallStatus),
    /// The peer broke HTTP/2 or gRPC framing.
    Protocol(String),
}

impl GrpcError {
    fn from_wit(e: wit::GrpcError) -> Self {
        match e {
            wit::GrpcError::Denied(m) => Self::Denied(m),
            wit::GrpcError::Invalid(m) => Self::Invalid(m),
            wit::GrpcError::Connect(m) => Self::Connect(m),
            wit::GrpcError::Tls(m) => Self::Tls(m),
            wit::GrpcError::Deadline(m) => Self::Deadline(m),
            wit::GrpcError::Status(s) => Self::Status(s),
            wit::GrpcError::Protocol(m) => Self::Protocol(m),
        }
    }

    /// The status code a gRPC client reports for this failure.
    pub fn code(&self) -> u32 {
        match self {
            Self::Status(s) => s.code,
            Self::Deadline(_) => 4,
            Self::Invalid(_) | Self::Protocol(_) => 13,
            Self::Denied(_) | Self::Connect(_) | Self::Tls(_) => 14,
        }
    }
}

impl fmt::Display for GrpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Denied(m) => write!(f, "grpc denied: {m}"),
            Self::Invalid(m) => write!(f, "grpc invalid: {m}"),
            Self::Connect(m) => write!(f, "grpc connect: {m}"),
            Self::Tls(m) => write!(f, "grpc tls: {m}"),
            Self::Deadline(m) => write!(f, "grpc deadline: {m}"),
            Self::Status(s) => write!(f, "grpc status {}: {}", s.code, s.message),
            Self::Protocol(m) => write!(f, "grpc protocol: {m}"),
        }
    }
}

impl std::error::Error for GrpcError {}

impl From<GrpcError> for String {
    fn from(e: GrpcError) -> String {
        e.to_string()
    }
}

/// The text of a `.proto` file listed in `[data]` under `name` (the host loads a
/// `.proto` file as one record holding its text).
pub fn proto_from_data(name: &str) -> Option<String> {
    let record = crate::data::get(name, 0)?;
    serde_json::from_str::<String>(&record).ok()
}

/// Opens a [`Channel`].
pub struct ChannelBuilder {
    target: String,
    options: wit::OpenOptions,
}

impl ChannelBuilder {
    /// TLS with the run's `[tls]` settings (plaintext h2c otherwise).
    pub fn tls(mut self, on: bool) -> Self {
        self.options.tls = on;
        self
    }

    /// Adds a binary `FileDescriptorSet` (a protoset: `protoc --descriptor_set_out=FILE
    /// --include_imports`, `buf build -o FILE`), decoded by the host.
    pub fn descriptor_set(mut self, bytes: &[u8]) -> Self {
        self.options.descriptor_sets.push(bytes.to_vec());
        self
    }

    /// Adds a metadata field sent with each reflection request.
    pub fn reflect_metadata(mut self, name: &str, value: &str) -> Self {
        self.options
            .reflect_metadata
            .push((name.to_owned(), value.to_owned()));
        self
    }

    /// The channel's own client certificate chain and key (PEM text; the key not
    /// encrypted), instead of `[tls] client_cert`; used with [`ChannelBuilder::tls`].
    pub fn client_cert(mut self, cert_pem: &str, key_pem: &str) -> Self {
        let m = self.material();
        m.client_cert = Some(cert_pem.to_owned());
        m.client_key = Some(key_pem.to_owned());
        self
    }

    /// Trusts the certificates of `pem` (PEM text) for this channel, besides the run's
    /// roots; used with [`ChannelBuilder::tls`].
    pub fn ca_cert(mut self, pem: &str) -> Self {
        self.material().ca_certs.push(pem.to_owned());
        self
    }

    fn material(&mut self) -> &mut wit::ChannelTls {
        self.options
            .tls_material
            .get_or_insert_with(|| wit::ChannelTls {
                client_cert: None,
                client_key: None,
                ca_certs: Vec::new(),
            })
    }

    /// Adds a `.proto` file: its name (as imports name it) and source text.
    pub fn proto(mut self, name: &str, source: &str) -> Self {
        self.options.protos.push(wit::ProtoFile {
            name: name.to_owned(),
            source: source.to_owned(),
        });
        self
    }

    /// Asks the server's reflection service for services the protos do not define.
    pub fn reflect(mut self) -> Self {
        self.options.reflect = true;
        self
    }

    /// Time to connect.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout_ms = Some(timeout.as_millis().min(u32::MAX as u128) as u32);
        self
    }

    /// Makes the channel (the connection opens at the first call).
    pub fn connect(self) -> Result<Channel, GrpcError> {
        wit::Channel::open(&self.target, &self.options)
            .map(|inner| Channel { inner })
            .map_err(GrpcError::from_wit)
    }
}

/// A channel to one target. Keep it across iterations (a `thread_local!`): it holds
/// the VU's connection.
pub struct Channel {
    inner: wit::Channel,
}

impl Channel {
    /// A builder for a channel to `target` (`host:port`).
    pub fn builder(target: &str) -> ChannelBuilder {
        ChannelBuilder {
            target: target.to_owned(),
            options: wit::OpenOptions {
                tls: false,
                protos: Vec::new(),
                descriptor_sets: Vec::new(),
                reflect: false,
                reflect_metadata: Vec::new(),
                tls_material: None,
                timeout_ms: None,
            },
        }
    }

    /// A unary call of `method` (`package.Service/Method`) with a JSON request.
    pub fn call<'a>(&'a self, method: &str, request: &str) -> Call<'a> {
        Call {
            channel: self,
            method: method.to_owned(),
            request: request.to_owned(),
            options: CallOptionsBuilder::default(),
        }
    }

    /// A stream of `method` (client, server or bidirectional).
    pub fn stream<'a>(&'a self, method: &str) -> StreamCall<'a> {
        StreamCall {
            channel: self,
            method: method.to_owned(),
            options: CallOptionsBuilder::default(),
        }
    }

    /// The methods the channel knows so far.
    pub fn methods(&self) -> Vec<String> {
        self.inner.methods()
    }

    /// Asks the server's health service (`grpc.health.v1.Health/Check`, which the host
    /// carries) about `service` (`""`: the server as a whole). The call is counted as
    /// any other; a status other than OK (NOT_FOUND for a service the server does not
    /// know) is an error.
    pub fn health_check(&self, service: &str) -> Result<HealthStatus, GrpcError> {
        let request = serde_json::json!({ "service": service }).to_string();
        let response = self.call(HEALTH_CHECK, &request).send()?;
        let message = response.message.unwrap_or_default();
        let status = serde_json::from_str::<serde_json::Value>(&message)
            .ok()
            .and_then(|v| v.get("status").cloned());
        Ok(match status.as_ref().and_then(|s| s.as_str()) {
            Some("SERVING") => HealthStatus::Serving,
            Some("NOT_SERVING") => HealthStatus::NotServing,
            Some("SERVICE_UNKNOWN") => HealthStatus::ServiceUnknown,
            _ => HealthStatus::Unknown,
        })
    }
}

/// The health service's method, which every channel can call.
pub const HEALTH_CHECK: &str = "grpc.health.v1.Health/Check";

/// What the health service answered (`grpc.health.v1.HealthCheckResponse.ServingStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthStatus {
    /// `UNKNOWN` (0), or a status this SDK does not know.
    Unknown,
    /// `SERVING` (1).
    Serving,
    /// `NOT_SERVING` (2).
    NotServing,
    /// `SERVICE_UNKNOWN` (3; only Watch answers it).
    ServiceUnknown,
}

#[derive(Default)]
struct CallOptionsBuilder {
    metadata: Pairs,
    timeout_ms: Option<u32>,
    tags: Pairs,
    expected: Vec<u32>,
}

impl CallOptionsBuilder {
    fn wit(&self) -> wit::CallOptions {
        wit::CallOptions {
            metadata: self.metadata.clone(),
            timeout_ms: self.timeout_ms,
            tags: self.tags.clone(),
            expected_codes: self.expected.clone(),
        }
    }
}

macro_rules! call_options {
    () => {
        /// Adds a metadata field (sent as a header; `-bin` names take base64 values).
        pub fn metadata(mut self, name: &str, value: &str) -> Self {
            self.options
                .metadata
                .push((name.to_owned(), value.to_owned()));
            self
        }

        /// The deadline (sent as `grpc-timeout` and enforced by the host).
        pub fn timeout(mut self, timeout: Duration) -> Self {
            self.options.timeout_ms = Some(timeout.as_millis().min(u32::MAX as u128) as u32);
            self
        }

        /// The `name` tag of the call's metrics (the method by default).
        pub fn name(mut self, name: &str) -> Self {
            self.options.tags.push(("name".to_owned(), name.to_owned()));
            self
        }

        /// More tags for the call's metrics.
        pub fn tags(mut self, tags: &[(&str, &str)]) -> Self {
            self.options.tags.extend(owned(tags));
            self
        }

        /// A status code other than OK that counts as expected.
        pub fn expect_code(mut self, code: u32) -> Self {
            self.options.expected.push(code);
            self
        }
    };
}

/// A unary call being built.
pub struct Call<'a> {
    channel: &'a Channel,
    method: String,
    request: String,
    options: CallOptionsBuilder,
}

impl Call<'_> {
    call_options!();

    /// Makes the call and waits for its answer.
    pub fn send(self) -> Result<Response, GrpcError> {
        self.channel
            .inner
            .invoke(&self.method, &self.request, &self.options.wit())
            .map(|r| Response {
                message: r.message,
                status: r.status,
                duration: Duration::from_micros(r.duration_us),
            })
            .map_err(GrpcError::from_wit)
    }
}

impl Call<'_> {
    /// Prepares the call to be made many times ([`PreparedCall::invoke`]): the host
    /// resolves the method (asking the reflection service when needed), encodes the
    /// request and checks the metadata now, failing as [`Call::send`] would before
    /// sending anything. Nothing is sent. The prepared call belongs to this channel;
    /// keep both (a `thread_local!`).
    pub fn prepare(self) -> Result<PreparedCall, GrpcError> {
        self.channel
            .inner
            .prepare(&self.method, &self.request, &self.options.wit())
            .map(|inner| PreparedCall { inner })
            .map_err(GrpcError::from_wit)
    }
}

/// A unary call prepared once ([`Call::prepare`]) and made by [`PreparedCall::invoke`].
pub struct PreparedCall {
    inner: wit::PreparedCall,
}

impl PreparedCall {
    /// Makes the call and waits for its answer (OK, or a status the call expects;
    /// another status is [`GrpcError::Status`], as for [`Call::send`]).
    pub fn invoke(&self) -> Result<PreparedResponse, GrpcError> {
        self.inner
            .invoke()
            .map(|r| PreparedResponse {
                code: r.code,
                status_message: r.status_message,
                duration: Duration::from_micros(r.duration_us),
                content: r.content,
            })
            .map_err(GrpcError::from_wit)
    }
}

/// The answer of a prepared call. The message, headers and trailers stay on the host
/// until asked for: reading only the code costs no conversion and no copy.
pub struct PreparedResponse {
    /// The status code (0 = OK, or an expected code).
    pub code: u32,
    /// `grpc-message`, percent-decoded.
    pub status_message: String,
    /// From sending the request to the end of the answer.
    pub duration: Duration,
    content: wit::CallContent,
}

impl PreparedResponse {
    /// The message as proto3 JSON (`None` for an expected non-OK status), converted by
    /// the host now; an answer that is not a valid message of the method's output
    /// type is [`GrpcError::Protocol`].
    pub fn message(&self) -> Result<Option<String>, GrpcError> {
        self.content.message().map_err(GrpcError::from_wit)
    }

    /// The response's header fields (metadata).
    pub fn headers(&self) -> Vec<(String, String)> {
        self.content.headers()
    }

    /// The trailers (`grpc-status` and `grpc-message` included).
    pub fn trailers(&self) -> Vec<(String, String)> {
        self.content.trailers()
    }
}

impl fmt::Debug for PreparedResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedResponse")
            .field("code", &self.code)
            .field("status_message", &self.status_message)
            .field("duration", &self.duration)
            .finish_non_exhaustive()
    }
}

/// The answer of a unary call.
#[derive(Debug, Clone)]
pub struct Response {
    /// The message as proto3 JSON (`None` for an expected non-OK status).
    pub message: Option<String>,
    /// Status code, message, headers and trailers.
    pub status: CallStatus,
    /// From sending the request to the end of the answer.
    pub duration: Duration,
}

/// A stream being opened.
pub struct StreamCall<'a> {
    channel: &'a Channel,
    method: String,
    options: CallOptionsBuilder,
}

impl StreamCall<'_> {
    call_options!();

    /// Opens the stream.
    pub fn open(self) -> Result<Stream, GrpcError> {
        self.channel
            .inner
            .open_stream(&self.method, &self.options.wit())
            .map(|inner| Stream { inner })
            .map_err(GrpcError::from_wit)
    }
}

/// What [`Stream::recv`] gives.
#[derive(Debug, Clone)]
pub enum Item {
    /// A message as proto3 JSON.
    Message(String),
    /// Nothing came in time.
    Timeout,
    /// The server ended the stream with OK or an expected status.
    End(CallStatus),
}

/// An open stream; dropping it cancels it.
pub struct Stream {
    inner: wit::GrpcStream,
}

impl Stream {
    /// Sends a message (JSON). A server stream takes one, then is half-closed.
    pub fn send(&self, message: &str) -> Result<(), GrpcError> {
        self.inner.send(message).map_err(GrpcError::from_wit)
    }

    /// Half-closes: no more messages will be sent.
    pub fn close_send(&self) -> Result<(), GrpcError> {
        self.inner.close_send().map_err(GrpcError::from_wit)
    }

    /// The next message or the end, waiting up to `timeout`.
    pub fn recv(&self, timeout: Duration) -> Result<Item, GrpcError> {
        let ms = timeout.as_millis().min(u32::MAX as u128) as u32;
        self.inner
            .recv(ms)
            .map(|i| match i {
                wit::StreamItem::Message(m) => Item::Message(m),
                wit::StreamItem::Timeout => Item::Timeout,
                wit::StreamItem::End(s) => Item::End(s),
            })
            .map_err(GrpcError::from_wit)
    }

    /// Cancels the stream.
    pub fn cancel(&self) {
        self.inner.cancel()
    }
}

/// What kind of call a method is.
pub type MethodInfo = wit::MethodInfo;

impl Channel {
    /// Whether `method` streams from the client and from the server (asking the
    /// reflection service when the channel reflects and does not know it yet).
    pub fn describe_method(&self, method: &str) -> Result<MethodInfo, GrpcError> {
        self.inner
            .describe_method(method)
            .map_err(GrpcError::from_wit)
    }
}
