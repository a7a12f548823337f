//! Messages as proto3 JSON, both ways (prost-reflect's dynamic messages): what a
//! plugin sends is JSON encoded to protobuf, what it reads is protobuf decoded to JSON.
//! A leaf: unary calls, prepared calls and streams all use it.

use super::status::GrpcError;
use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor};

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
