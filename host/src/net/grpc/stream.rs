//! Client, server and bidirectional streams. The plugin's `send`s feed the request
//! body through a small bounded channel (so a plugin that sends faster than the
//! server reads waits, instead of the host buffering); a task reads the answer into
//! another bounded channel (so a plugin that stops reading stops the task, and
//! HTTP/2 flow control pushes back on the server). Dropping the request side
//! half-closes (END_STREAM); cancelling, dropping the stream or passing the deadline
//! ends the task, which resets the HTTP/2 stream (RST_STREAM CANCEL).

use super::body::{self, next_frame, Part, Response};
use super::channel::{check_head, request_of, Channel};
use super::frame;
use super::json::{decode_json, encode_json};
use super::record::call_tags;
use super::status::{self, code, CallOptions, CallStatus, GrpcError};
use crate::metrics::{builtin, TagSet};
use crate::net::counting_io::IoStats;
use crate::net::NetShared;
use bytes::Bytes;
use prost_reflect::MessageDescriptor;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Messages the plugin may have queued for sending, and received ones waiting for
/// the plugin: small, as the bytes sit outside the plugin's memory cap.
const QUEUE: usize = 8;

/// What the plugin's `recv` gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamItem {
    /// A message, as proto3 JSON.
    Message(String),
    /// Nothing came in time.
    Timeout,
    /// The stream ended with OK or an expected status.
    End(CallStatus),
}

/// What the reading task hands over.
enum Event {
    Message(Bytes),
    End(Result<CallStatus, GrpcError>),
}

/// An open stream held by the host for a plugin.
pub struct GrpcStream {
    method: String,
    outgoing: Option<mpsc::Sender<Bytes>>,
    incoming: mpsc::Receiver<Event>,
    task: tokio::task::AbortHandle,
    input: MessageDescriptor,
    output: MessageDescriptor,
    /// A server stream takes one request, then the host half-closes.
    one_request: bool,
    options: CallOptions,
    ended: Option<Result<CallStatus, GrpcError>>,
    tags: TagSet,
    shared: Arc<NetShared>,
    io: Arc<IoStats>,
}

impl Channel {
    /// Opens a stream of `method`: the request head goes out now, messages as the
    /// plugin sends them.
    pub async fn open_stream(
        &mut self,
        method: &str,
        options: CallOptions,
    ) -> Result<GrpcStream, GrpcError> {
        let desc = self.method(method).await?;
        if !desc.is_client_streaming() && !desc.is_server_streaming() {
            return Err(GrpcError::Invalid(format!(
                "{method} is a unary method; invoke it instead of opening a stream"
            )));
        }
        let tags = call_tags(self, method, &options.tags);
        let path = format!("/{}/{}", desc.parent_service().full_name(), desc.name());
        let (outgoing, body) = mpsc::channel(QUEUE);
        let (uri, headers) = self.head(&path, &options.metadata, options.timeout)?;
        let max = self.shared.max_body;
        let conn = self.connection().await?;
        let io = conn.io.clone();
        let (answer, send) = body::open(conn.sender_mut(), request_of(&uri, headers), None).await?;
        let (events, incoming) = mpsc::channel(QUEUE);
        let deadline = options.timeout;
        let name = method.to_owned();
        let task = tokio::spawn(async move {
            let read = async {
                let response = body::head(answer).await?;
                read_messages(response, max, &events).await
            };
            let read = async {
                match deadline {
                    Some(t) => tokio::time::timeout(t, read).await.unwrap_or_else(|_| {
                        Err(GrpcError::Deadline(format!(
                            "{name}: the stream passed its deadline of {}",
                            crate::config::format_duration(t)
                        )))
                    }),
                    None => read.await,
                }
            };
            // The plugin's messages go out while the answer is read; the answer's end
            // ends the stream (and drops what was still to send).
            let pipe = body::pipe(send, body);
            tokio::pin!(read, pipe);
            let end = tokio::select! {
                end = &mut read => end,
                () = &mut pipe => read.await,
            };
            let _ = events.send(Event::End(end)).await;
        });
        self.shared
            .recorder
            .count(builtin::GRPC_STREAMS, &tags, 1.0);
        Ok(GrpcStream {
            method: method.to_owned(),
            outgoing: Some(outgoing),
            incoming,
            task: task.abort_handle(),
            input: desc.input(),
            output: desc.output(),
            one_request: !desc.is_client_streaming(),
            options,
            ended: None,
            tags,
            shared: self.shared.clone(),
            io,
        })
    }
}

/// Reads the answer, handing each message over; the status at the end.
async fn read_messages(
    response: Response,
    max: u64,
    events: &mpsc::Sender<Event>,
) -> Result<CallStatus, GrpcError> {
    let (head, mut body) = response.into_parts();
    check_head(&head)?;
    let headers = status::pairs(&head.headers);
    if let Some((code, message)) = status::from_fields(&head.headers) {
        return Ok(CallStatus {
            code,
            message,
            headers,
            trailers: Vec::new(),
        });
    }
    let mut decoder = frame::Decoder::new(max);
    loop {
        match next_frame(&mut body).await? {
            Some(Part::Data(data)) => {
                decoder.push(&data);
                while let Some(m) = decoder.next()? {
                    if events.send(Event::Message(m)).await.is_err() {
                        // The plugin let go of the stream.
                        return Err(GrpcError::Protocol("the stream was dropped".into()));
                    }
                }
            }
            Some(Part::Trailers(trailers)) => {
                let (code, message) = status::from_fields(&trailers).ok_or_else(|| {
                    GrpcError::Protocol("the trailers carry no grpc-status".into())
                })?;
                return Ok(CallStatus {
                    code,
                    message,
                    headers,
                    trailers: status::pairs(&trailers),
                });
            }
            None => {
                return Err(GrpcError::Protocol(
                    "the stream ended without trailers (no grpc-status)".into(),
                ))
            }
        }
    }
}

impl GrpcStream {
    /// Sends one message (proto3 JSON).
    pub async fn send(&mut self, json: &str) -> Result<(), GrpcError> {
        if let Some(end) = &self.ended {
            return Err(self.ended_error(end.clone()));
        }
        let Some(outgoing) = &self.outgoing else {
            return Err(GrpcError::Invalid(format!(
                "{}: the stream is half-closed{}; nothing more can be sent",
                self.method,
                if self.one_request {
                    " (a server stream takes one request)"
                } else {
                    ""
                }
            )));
        };
        let message = frame::encode(&encode_json(&self.input, json)?);
        if outgoing.send(message).await.is_err() {
            return Err(GrpcError::Protocol(format!(
                "{}: the stream ended before the message was sent",
                self.method
            )));
        }
        self.count(builtin::GRPC_STREAMS_MSGS_SENT);
        if self.one_request {
            self.outgoing = None;
        }
        Ok(())
    }

    /// Half-closes the stream: the server sees the end of the requests.
    pub fn close_send(&mut self) -> Result<(), GrpcError> {
        if let Some(end) = &self.ended {
            if end.is_err() {
                return Err(self.ended_error(end.clone()));
            }
        }
        self.outgoing = None;
        Ok(())
    }

    /// The next message or the end, waiting up to `timeout` (zero: only what has
    /// already arrived). After the end, the end again.
    pub async fn recv(&mut self, timeout: Duration) -> Result<StreamItem, GrpcError> {
        if let Some(end) = &self.ended {
            return self.conclude(end.clone());
        }
        let event = if timeout.is_zero() {
            match self.incoming.try_recv() {
                Ok(e) => Some(e),
                Err(mpsc::error::TryRecvError::Empty) => return Ok(StreamItem::Timeout),
                Err(mpsc::error::TryRecvError::Disconnected) => None,
            }
        } else {
            match tokio::time::timeout(timeout, self.incoming.recv()).await {
                Ok(e) => e,
                Err(_) => return Ok(StreamItem::Timeout),
            }
        };
        match event {
            Some(Event::Message(bytes)) => {
                self.count(builtin::GRPC_STREAMS_MSGS_RECEIVED);
                decode_json(&self.output, &bytes).map(StreamItem::Message)
            }
            Some(Event::End(end)) => {
                self.outgoing = None;
                self.ended = Some(end.clone());
                self.bytes();
                self.conclude(end)
            }
            None => {
                let end = Err(GrpcError::Protocol(format!(
                    "{}: the stream was cancelled",
                    self.method
                )));
                self.ended = Some(end.clone());
                self.conclude(end)
            }
        }
    }

    /// Cancels the stream: the HTTP/2 stream is reset; later calls fail.
    pub fn cancel(&mut self) {
        self.task.abort();
        self.outgoing = None;
        if self.ended.is_none() {
            self.ended = Some(Err(GrpcError::Status(Box::new(CallStatus {
                code: code::CANCELLED,
                message: "cancelled by the plugin".into(),
                ..Default::default()
            }))));
        }
        self.bytes();
    }

    fn conclude(&self, end: Result<CallStatus, GrpcError>) -> Result<StreamItem, GrpcError> {
        match end {
            Ok(s) if self.options.expected(s.code) => Ok(StreamItem::End(s)),
            Ok(s) if s.code == code::DEADLINE_EXCEEDED => Err(GrpcError::Deadline(format!(
                "{}: the server answered DEADLINE_EXCEEDED: {}",
                self.method, s.message
            ))),
            Ok(s) => Err(GrpcError::Status(Box::new(s))),
            Err(e) => Err(e),
        }
    }

    fn ended_error(&self, end: Result<CallStatus, GrpcError>) -> GrpcError {
        match self.conclude(end) {
            Ok(_) => GrpcError::Invalid(format!("{}: the stream has ended", self.method)),
            Err(e) => e,
        }
    }

    fn count(&self, metric: crate::metrics::MetricId) {
        let io = self.io.take_unaccounted();
        self.shared.recorder.with_shard(|s| {
            s.count(metric, &self.tags, 1.0);
            io.record(s, &self.tags);
        });
    }

    fn bytes(&self) {
        let io = self.io.take_unaccounted();
        self.shared
            .recorder
            .with_shard(|s| io.record(s, &self.tags));
    }
}

impl Drop for GrpcStream {
    fn drop(&mut self) {
        // A stream dies with its resource: the task ends and the HTTP/2 stream is reset.
        self.task.abort();
    }
}
