//! Unary calls: the request from JSON (proto3 mapping) to protobuf, one framed
//! message, the answer read to its trailers, the response back to JSON; the deadline
//! enforced by the host too (a server may ignore `grpc-timeout`), and the call
//! recorded once, whatever its outcome. A call is prepared first ([`Prepared`]: once
//! for a prepared call of contract 0.3.6, at every call for `invoke`), then made.

use super::body::{next_frame, Part, Response};
use super::channel::{check_head, request_of, Channel};
use super::frame;
use super::json::{decode_json, encode_json};
use super::prepared::{Answer, CallContent, Prepared};
use super::record::call_tags;
use super::status::{self, code, CallOptions, CallStatus, GrpcError};
use bytes::Bytes;
use http::HeaderMap;
use std::time::Instant;

/// The answer of a unary call that passed (OK, or a status the plugin expects).
#[derive(Debug, Clone)]
pub struct CallResponse {
    /// The response message as proto3 JSON; `None` unless the status is OK.
    pub message: Option<String>,
    /// Status, headers and trailers.
    pub status: CallStatus,
    /// From sending the request to the end of the answer.
    pub duration_us: u64,
}

impl Channel {
    /// Calls `method` (`package.Service/Method`) with the JSON `request`; the answer
    /// converted to JSON at once (an answer that does not decode is a failed call).
    pub async fn invoke(
        &mut self,
        method: &str,
        request: &str,
        options: &CallOptions,
    ) -> Result<CallResponse, GrpcError> {
        let prepared = self.prepare_call(method, request, options, false).await?;
        let (answer, json) = self.make(&prepared, true).await?;
        Ok(CallResponse {
            message: json,
            status: CallStatus {
                code: answer.code,
                message: answer.status_message,
                headers: answer.content.headers(),
                trailers: answer.content.trailers(),
            },
            duration_us: answer.duration.as_micros() as u64,
        })
    }

    /// Prepares a unary call of `method` with the JSON `request` to be made many times
    /// ([`Channel::invoke_prepared`]); nothing is sent.
    pub async fn prepare(
        &mut self,
        method: &str,
        request: &str,
        options: &CallOptions,
    ) -> Result<Prepared, GrpcError> {
        self.prepare_call(method, request, options, true).await
    }

    /// Makes a call prepared on this channel; the answer stays protobuf until read.
    pub async fn invoke_prepared(&mut self, prepared: &Prepared) -> Result<Answer, GrpcError> {
        if prepared.channel != self.id {
            return Err(GrpcError::Invalid(format!(
                "{}: this call was prepared on another channel",
                prepared.method
            )));
        }
        self.make(prepared, false).await.map(|(answer, _)| answer)
    }

    /// Resolves `method`, encodes `request`, builds the head and the tags; `reuse`
    /// makes the tag set of an OK answer now.
    async fn prepare_call(
        &mut self,
        method: &str,
        request: &str,
        options: &CallOptions,
        reuse: bool,
    ) -> Result<Prepared, GrpcError> {
        let desc = self.method(method).await?;
        if desc.is_client_streaming() || desc.is_server_streaming() {
            return Err(GrpcError::Invalid(format!(
                "{method} is a streaming method; open a stream for it"
            )));
        }
        let payload = frame::encode(&encode_json(&desc.input(), request)?);
        let path = format!("/{}/{}", desc.parent_service().full_name(), desc.name());
        let (uri, headers) = self.head(&path, &options.metadata, options.timeout)?;
        let tags = call_tags(self, method, &options.tags);
        let ok_tags = reuse.then(|| tags.with([("status", "0")]));
        Ok(Prepared {
            channel: self.id,
            method: method.to_owned(),
            output: desc.output(),
            uri,
            headers,
            payload,
            timeout: options.timeout,
            expected: options.expected_codes.clone(),
            tags,
            ok_tags,
        })
    }

    /// Makes the call `p` and records it; with `decode`, the message is converted to
    /// JSON before the call is recorded (so an answer that does not decode counts as
    /// failed, as `invoke` always did).
    async fn make(
        &mut self,
        p: &Prepared,
        decode: bool,
    ) -> Result<(Answer, Option<String>), GrpcError> {
        let started = Instant::now();
        let max = self.shared.max_body;
        let exchange = async {
            let response = self
                .send(request_of(&p.uri, p.headers.clone()), p.payload.clone())
                .await?;
            read_unary(response, max).await
        };
        let outcome = match p.timeout {
            Some(t) => tokio::time::timeout(t, exchange).await.unwrap_or_else(|_| {
                Err(GrpcError::Deadline(format!(
                    "{}: no answer within the deadline of {}",
                    p.method,
                    crate::config::format_duration(t)
                )))
            }),
            None => exchange.await,
        };
        let duration = started.elapsed();
        let result = outcome.and_then(|reply| conclude(p, reply, decode));
        match &result {
            Ok((reply, _)) => self.record_call(&p.tags_for(reply.code, None), true, duration),
            Err(GrpcError::Invalid(_)) => {}
            Err(e) => {
                self.shared.grpc_failures.note(e);
                self.record_call(&p.tags_for(e.code(), Some(e)), false, duration)
            }
        }
        let (reply, json) = result?;
        let answer = Answer {
            code: reply.code,
            status_message: reply.status_message,
            duration,
            content: CallContent {
                message: reply.message,
                output: p.output.clone(),
                headers: reply.headers,
                trailers: reply.trailers,
            },
        };
        Ok((answer, json))
    }
}

/// A unary answer as read: the status, the first message and how many came, the
/// header maps.
struct Reply {
    code: u32,
    status_message: String,
    message: Option<Bytes>,
    messages: usize,
    headers: HeaderMap,
    trailers: HeaderMap,
}

/// Reads a unary response to its end: the status (from the trailers, or the headers
/// of a trailers-only answer) and the messages. An HTTP status other than 200 is a
/// protocol error naming it.
async fn read_unary(response: Response, max: u64) -> Result<Reply, GrpcError> {
    let (head, mut body) = response.into_parts();
    check_head(&head)?;
    if let Some((code, status_message)) = status::from_fields(&head.headers) {
        return Ok(Reply {
            code,
            status_message,
            message: None,
            messages: 0,
            headers: head.headers,
            trailers: HeaderMap::new(),
        });
    }
    let mut decoder = frame::Decoder::new(max);
    let (mut message, mut messages) = (None, 0);
    loop {
        match next_frame(&mut body).await? {
            Some(Part::Data(data)) => {
                decoder.push(&data);
                while let Some(m) = decoder.next()? {
                    messages += 1;
                    message.get_or_insert(m);
                }
            }
            Some(Part::Trailers(trailers)) => {
                let (code, status_message) = status::from_fields(&trailers).ok_or_else(|| {
                    GrpcError::Protocol("the trailers carry no grpc-status".into())
                })?;
                return Ok(Reply {
                    code,
                    status_message,
                    message,
                    messages,
                    headers: head.headers,
                    trailers,
                });
            }
            None => {
                return Err(GrpcError::Protocol(
                    "the response ended without trailers (no grpc-status)".into(),
                ))
            }
        }
    }
}

/// What an answer means for the plugin: the message when OK (converted to JSON with
/// `decode`), none when the status is expected, else the typed error
/// (DEADLINE_EXCEEDED from the server is `deadline`).
fn conclude(
    p: &Prepared,
    mut reply: Reply,
    decode: bool,
) -> Result<(Reply, Option<String>), GrpcError> {
    if reply.code == code::OK {
        if reply.messages != 1 {
            return Err(GrpcError::Protocol(format!(
                "{}: a unary answer must hold one message, it held {}",
                p.method, reply.messages
            )));
        }
        let json = match (&reply.message, decode) {
            (Some(m), true) => Some(decode_json(&p.output, m)?),
            _ => None,
        };
        return Ok((reply, json));
    }
    if p.expects(reply.code) {
        reply.message = None;
        return Ok((reply, None));
    }
    if reply.code == code::DEADLINE_EXCEEDED {
        return Err(GrpcError::Deadline(format!(
            "{}: the server answered DEADLINE_EXCEEDED: {}",
            p.method, reply.status_message
        )));
    }
    Err(GrpcError::Status(Box::new(CallStatus {
        code: reply.code,
        message: reply.status_message,
        headers: status::pairs(&reply.headers),
        trailers: status::pairs(&reply.trailers),
    })))
}
