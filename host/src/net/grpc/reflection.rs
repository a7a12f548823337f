//! The server reflection client (`grpc.reflection.v1` and, for older servers,
//! `v1alpha`: the same messages under another package). Asks for the file that
//! defines a service, then for the files it imports that the answer left out, each
//! question on its own stream (a request, half-close, one answer), with the channel's
//! reflection metadata (k6's `reflectMetadata`). Reflection calls are the channel's own
//! business: they are not counted in `grpc_reqs`. The
//! channel's method lookup lives here too, as it is what asks the service.

use super::body::{next_frame, Part, Response as Answered};
use super::channel::{check_head, Channel};
use super::status::{self, code, CallStatus, GrpcError};
use super::{descriptors, frame};
use crate::net::allowlist::Origin;
use bytes::Bytes;
use prost::Message;
use prost_reflect::MethodDescriptor;
use prost_types::FileDescriptorProto;
use std::collections::{BTreeSet, HashMap};

/// `ServerReflectionRequest`: only the questions the host asks.
#[derive(Clone, PartialEq, prost::Message)]
struct Request {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(oneof = "Question", tags = "3, 4")]
    question: Option<Question>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Question {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
}

/// `ServerReflectionResponse`: the answers the host reads.
#[derive(Clone, PartialEq, prost::Message)]
struct Response {
    #[prost(oneof = "Answer", tags = "4, 7")]
    answer: Option<Answer>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Answer {
    #[prost(message, tag = "4")]
    Files(FileDescriptorResponse),
    #[prost(message, tag = "7")]
    Error(ErrorResponse),
}

#[derive(Clone, PartialEq, prost::Message)]
struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

impl Channel {
    /// The descriptor of `method`, asking the server's reflection service for its
    /// service when the channel reflects and does not know it yet.
    pub(super) async fn method(&mut self, method: &str) -> Result<MethodDescriptor, GrpcError> {
        if let Some(m) = descriptors::find(&self.pool, method)? {
            return Ok(m);
        }
        let (service, _) = descriptors::split_method(method)?;
        if descriptors::add_carried(&mut self.pool, service)? {
            if let Some(m) = descriptors::find(&self.pool, method)? {
                return Ok(m);
            }
        }
        if !self.reflect {
            let known = self.methods();
            return Err(GrpcError::Invalid(format!(
                "no .proto given to this channel defines service {service} (it knows: {}); \
                 give its .proto or set reflect",
                if known.is_empty() {
                    "nothing".into()
                } else {
                    known.join(", ")
                }
            )));
        }
        // Boxed, as the connection's opening is: it runs once per service.
        let files = Box::pin(fetch(self, service)).await?;
        self.pool.add_file_descriptor_protos(files).map_err(|e| {
            GrpcError::Protocol(format!(
                "{}: the descriptors the reflection service sent do not build: {e}",
                self.origin
            ))
        })?;
        descriptors::find(&self.pool, method)?.ok_or_else(|| {
            GrpcError::Invalid(format!(
                "{}: the reflection service does not know service {service}",
                self.origin
            ))
        })
    }
}

const V1: &str = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
const V1ALPHA: &str = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

/// Files in a server's answers are few; a server that keeps naming new ones is
/// stopped here.
const MAX_FILES: usize = 256;

/// Largest reflection answer read (under `[limits] max_body_mb` when that is
/// smaller): the descriptors of a service and its imports are kilobytes, rarely a
/// few MiB.
const MAX_ANSWER: u64 = 8 << 20;

/// Most bytes of answers one lookup reads, over all of its questions: a server that
/// answers each question with the largest message still stops here.
const MAX_TOTAL: u64 = 32 << 20;

/// The files that define `service` and everything they import, from the server's
/// reflection service (v1, else v1alpha).
pub(super) async fn fetch(
    channel: &mut Channel,
    service: &str,
) -> Result<Vec<FileDescriptorProto>, GrpcError> {
    let first = Question::FileContainingSymbol(service.to_owned());
    let mut budget = MAX_TOTAL;
    let (path, answer) = match ask(channel, V1, first.clone(), &mut budget).await {
        Err(GrpcError::Status(s)) if s.code == code::UNIMPLEMENTED => {
            (V1ALPHA, ask(channel, V1ALPHA, first, &mut budget).await)
        }
        other => (V1, other),
    };
    let answer = answer.map_err(|e| match e {
        GrpcError::Status(s) if s.code == code::UNIMPLEMENTED => GrpcError::Invalid(format!(
            "{}: the server has no reflection service (v1 or v1alpha); give the channel \
             the .proto of {service}",
            channel.origin
        )),
        other => other,
    })?;
    let mut files: HashMap<String, FileDescriptorProto> = HashMap::new();
    let mut order = Vec::new();
    let mut add = |found: Vec<FileDescriptorProto>,
                   files: &mut HashMap<String, FileDescriptorProto>| {
        for f in found {
            let name = f.name().to_owned();
            if let std::collections::hash_map::Entry::Vacant(slot) = files.entry(name.clone()) {
                order.push(name);
                slot.insert(f);
            }
        }
    };
    add(answer, &mut files);
    loop {
        let missing: BTreeSet<String> = files
            .values()
            .flat_map(|f| f.dependency.iter().cloned())
            .filter(|d| !files.contains_key(d))
            .collect();
        let Some(next) = missing.into_iter().next() else {
            break;
        };
        if files.len() >= MAX_FILES {
            return Err(GrpcError::Protocol(format!(
                "{}: the reflection service named more than {MAX_FILES} files",
                channel.origin
            )));
        }
        let found = ask(
            channel,
            path,
            Question::FileByFilename(next.clone()),
            &mut budget,
        )
        .await?;
        if !found.iter().any(|f| f.name() == next) {
            return Err(GrpcError::Protocol(format!(
                "{}: the reflection service did not send {next}, which {service}'s files import",
                channel.origin
            )));
        }
        add(found, &mut files);
    }
    Ok(order.into_iter().filter_map(|n| files.remove(&n)).collect())
}

/// One question on its own stream; the files of the answer. Only the first message
/// of the stream is read (it is the answer; the stream is reset once it is there),
/// and it must fit both [`MAX_ANSWER`] and what is left of the lookup's `budget`.
async fn ask(
    channel: &mut Channel,
    path: &str,
    question: Question,
    budget: &mut u64,
) -> Result<Vec<FileDescriptorProto>, GrpcError> {
    let request = Request {
        host: String::new(),
        question: Some(question),
    };
    let message = frame::encode(&request.encode_to_vec());
    let timeout = channel.shared.default_timeout;
    let max = channel.shared.max_body.min(MAX_ANSWER).min(*budget);
    let metadata = channel.reflect_metadata.clone();
    let origin = channel.origin.clone();
    let exchange = async {
        let response = channel.start(path, &metadata, None, message).await?;
        read_first(response, max, &origin).await
    };
    let first = tokio::time::timeout(timeout, exchange).await.map_err(|_| {
        GrpcError::Deadline(format!(
            "the reflection service did not answer within {}",
            crate::config::format_duration(timeout)
        ))
    })?;
    channel.record_bytes();
    let message = first?;
    *budget = budget.saturating_sub(message.len() as u64);
    let response = Response::decode(message.as_ref()).map_err(|e| {
        GrpcError::Protocol(format!(
            "the reflection service's answer does not decode: {e}"
        ))
    })?;
    match response.answer {
        Some(Answer::Files(f)) => f
            .file_descriptor_proto
            .iter()
            .map(|b| {
                FileDescriptorProto::decode(b.as_slice()).map_err(|e| {
                    GrpcError::Protocol(format!(
                        "a file descriptor from reflection does not decode: {e}"
                    ))
                })
            })
            .collect(),
        Some(Answer::Error(e)) => Err(GrpcError::Invalid(format!(
            "{}: reflection: {} (code {})",
            channel.origin, e.error_message, e.error_code
        ))),
        None => Err(GrpcError::Protocol(
            "the reflection service's answer holds no files".into(),
        )),
    }
}

/// Reads a reflection answer's first message, at most `max` bytes, and stops there:
/// the rest of the stream (a hostile server may send messages without end) is never
/// read, and the stream is reset when the response drops. A status without a message
/// (a trailers-only `UNIMPLEMENTED`, for one) is returned as the error it is.
async fn read_first(response: Answered, max: u64, origin: &Origin) -> Result<Bytes, GrpcError> {
    let (head, mut body) = response.into_parts();
    check_head(&head)?;
    if let Some((code, message)) = status::from_fields(&head.headers) {
        return Err(status_error(
            code,
            message,
            status::pairs(&head.headers),
            Vec::new(),
        ));
    }
    let mut decoder = frame::Decoder::new(max);
    loop {
        match next_frame(&mut body).await? {
            Some(Part::Data(data)) => {
                decoder.push(&data);
                match decoder.next() {
                    Ok(Some(m)) => return Ok(m),
                    Ok(None) => {}
                    Err(frame::FrameError::TooLarge { len, .. }) => {
                        return Err(GrpcError::Protocol(format!(
                            "{origin}: the reflection service's answer is {len} bytes, over \
                             the {max} bytes the host reads from it (descriptors are \
                             kilobytes; {MAX_ANSWER} bytes per answer and {MAX_TOTAL} per \
                             lookup at most); give the channel the service's .proto instead"
                        )))
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Some(Part::Trailers(trailers)) => {
                let (code, message) = status::from_fields(&trailers).ok_or_else(|| {
                    GrpcError::Protocol("the trailers carry no grpc-status".into())
                })?;
                if code == code::OK {
                    return Err(GrpcError::Protocol(
                        "the reflection service answered no message".into(),
                    ));
                }
                return Err(status_error(
                    code,
                    message,
                    Vec::new(),
                    status::pairs(&trailers),
                ));
            }
            None => {
                return Err(GrpcError::Protocol(
                    "the response ended without trailers (no grpc-status)".into(),
                ))
            }
        }
    }
}

/// A status the reflection service answered with, as the error a call would give.
fn status_error(
    code: u32,
    message: String,
    headers: Vec<(String, String)>,
    trailers: Vec<(String, String)>,
) -> GrpcError {
    GrpcError::Status(Box::new(CallStatus {
        code,
        message,
        headers,
        trailers,
    }))
}
