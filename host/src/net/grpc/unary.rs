//! Unary calls: the request from JSON (proto3 mapping) to protobuf, one framed
//! message, the answer read to its trailers, the response back to JSON; the deadline
//! enforced by the host too (a server may ignore `grpc-timeout`), and the call
//! recorded once, whatever its outcome.

use super::body::GrpcBody;
use super::channel::{read_all, Channel};
use super::frame;
use super::record::call_tags;
use super::status::{code, CallOptions, CallStatus, GrpcError};
use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor};
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

/// `json` as a message of type `desc`, encoded.
pub(super) fn encode_json(desc: &MessageDescriptor, json: &str) -> Result<Vec<u8>, GrpcError> {
    let mut de = serde_json::Deserializer::from_str(json);
    let message = DynamicMessage::deserialize(desc.clone(), &mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| {
            GrpcError::Invalid(format!(
                "the message is not a valid {} in proto3 JSON: {e}",
                desc.full_name()
            ))
        })?;
    Ok(message.encode_to_vec())
}

/// A received message of type `desc` as proto3 JSON.
pub(super) fn decode_json(desc: &MessageDescriptor, bytes: &[u8]) -> Result<String, GrpcError> {
    let message = DynamicMessage::decode(desc.clone(), bytes).map_err(|e| {
        GrpcError::Protocol(format!(
            "the answer is not a valid {}: {e}",
            desc.full_name()
        ))
    })?;
    // Fields at their default values are written too, as k6 (grpc-go's protojson with
    // EmitUnpopulated) gives them to its scripts: `r.message.items.length` on an empty
    // list works in a k6 script, and must work here.
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::new(&mut out);
    let options = prost_reflect::SerializeOptions::new().skip_default_fields(false);
    message
        .serialize_with_options(&mut ser, &options)
        .map_err(|e| GrpcError::Protocol(format!("the answer does not convert to JSON: {e}")))?;
    String::from_utf8(out)
        .map_err(|e| GrpcError::Protocol(format!("the answer does not convert to JSON: {e}")))
}

impl Channel {
    /// Calls `method` (`package.Service/Method`) with the JSON `request`.
    pub async fn invoke(
        &mut self,
        method: &str,
        request: &str,
        options: &CallOptions,
    ) -> Result<CallResponse, GrpcError> {
        let desc = self.method(method).await?;
        if desc.is_client_streaming() || desc.is_server_streaming() {
            return Err(GrpcError::Invalid(format!(
                "{method} is a streaming method; open a stream for it"
            )));
        }
        let payload = encode_json(&desc.input(), request)?;
        let tags = call_tags(self, method, &options.tags);
        let path = format!("/{}/{}", desc.parent_service().full_name(), desc.name());
        let started = Instant::now();
        let max = self.shared.max_body;
        let body = GrpcBody::Once(Some(frame::encode(&payload)));
        let exchange = async {
            let response = self
                .start(&path, &options.metadata, options.timeout, body)
                .await?;
            read_all(response, max).await
        };
        let outcome = match options.timeout {
            Some(t) => tokio::time::timeout(t, exchange).await.unwrap_or_else(|_| {
                Err(GrpcError::Deadline(format!(
                    "{method}: no answer within the deadline of {}",
                    crate::config::format_duration(t)
                )))
            }),
            None => exchange.await,
        };
        let duration = started.elapsed();
        let result = outcome.and_then(|(messages, status)| {
            conclude(&desc.output(), method, messages, status, options)
        });
        let result = result.map(|(message, status)| CallResponse {
            message,
            status,
            duration_us: duration.as_micros() as u64,
        });
        match &result {
            Ok(r) => self.record_call(&tags, r.status.code, true, None, duration),
            Err(GrpcError::Invalid(_)) => {}
            Err(e) => self.record_call(&tags, e.code(), false, Some(e), duration),
        }
        result
    }
}

/// What an answer means for the plugin: the message when OK, the status when
/// expected, else the typed error (DEADLINE_EXCEEDED from the server is `deadline`).
fn conclude(
    output: &MessageDescriptor,
    method: &str,
    messages: Vec<bytes::Bytes>,
    status: CallStatus,
    options: &CallOptions,
) -> Result<(Option<String>, CallStatus), GrpcError> {
    if status.code == code::OK {
        let [message] = messages.as_slice() else {
            return Err(GrpcError::Protocol(format!(
                "{method}: a unary answer must hold one message, it held {}",
                messages.len()
            )));
        };
        return Ok((Some(decode_json(output, message)?), status));
    }
    if options.expected(status.code) {
        return Ok((None, status));
    }
    if status.code == code::DEADLINE_EXCEEDED {
        return Err(GrpcError::Deadline(format!(
            "{method}: the server answered DEADLINE_EXCEEDED: {}",
            status.message
        )));
    }
    Err(GrpcError::Status(Box::new(status)))
}
