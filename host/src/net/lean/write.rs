//! The request on the wire, byte for byte as hyper 1.x's client writes it (its
//! `role::Client::encode` and `set_length`, and `Conn::enforce_version`), so a
//! server sees no difference between the two clients: the request line with the
//! URI as `http::Uri` prints it, the header fields in the map's order with their
//! lowercase names, `content-length` added last for a body of known length unless
//! the request set its own, chunked coding when the request asked for it, and the
//! HTTP/1.0 fallback once the server answered in HTTP/1.0.

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderValue, Method};
use std::io::Write;

/// How the body follows the head.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BodyCoding {
    /// No body.
    None,
    /// As it is, cut to the length the request declared (hyper cuts it too); a
    /// declared length beyond the body fails the request after it is written.
    Length(u64),
    /// In one chunk and the last chunk.
    Chunked,
}

/// What encoding one request decided beyond its bytes.
pub(super) struct Encoded {
    /// How the body goes.
    pub(super) coding: BodyCoding,
    /// The request asked to close the connection after it (`Connection: close`).
    pub(super) close: bool,
}

/// Whether a `Connection` value lists `token` (hyper's `connection_has`).
pub(super) fn connection_has(value: &HeaderValue, token: &str) -> bool {
    value
        .to_str()
        .is_ok_and(|s| s.split(',').any(|v| v.trim().eq_ignore_ascii_case(token)))
}

/// The single length all `Content-Length` values agree on, if they are valid
/// (hyper's `content_length_parse_all`: comma lists allowed, digits only).
pub(super) fn content_length(headers: &HeaderMap) -> Option<Option<u64>> {
    let mut found = None;
    let mut any = false;
    for value in headers.get_all(CONTENT_LENGTH) {
        any = true;
        let text = value.to_str().ok();
        for part in text.into_iter().flat_map(|t| t.split(',')) {
            let part = part.trim();
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Some(None);
            }
            let n: u64 = match part.parse() {
                Ok(n) => n,
                Err(_) => return Some(None),
            };
            if found.is_some_and(|f| f != n) {
                return Some(None);
            }
            found = Some(n);
        }
        if text.is_none() {
            return Some(None);
        }
    }
    any.then_some(found)
}

/// Appends the head of a request to `dst`. `body` is the request's body (empty for
/// none); `http10` is set once the server answered in HTTP/1.0, as hyper then speaks
/// HTTP/1.0 to it and asks for keep-alive explicitly.
pub(super) fn encode_head(
    method: &Method,
    uri: &http::Uri,
    headers: &mut HeaderMap,
    body: &Bytes,
    http10: bool,
    dst: &mut Vec<u8>,
) -> Encoded {
    let close = headers
        .get_all(CONNECTION)
        .iter()
        .any(|v| connection_has(v, "close"));
    if http10
        && !close
        && !headers
            .get(CONNECTION)
            .is_some_and(|v| connection_has(v, "keep-alive"))
    {
        headers.insert(CONNECTION, HeaderValue::from_static("keep-alive"));
    }
    let coding = set_length(headers, body, !http10);
    dst.extend_from_slice(method.as_str().as_bytes());
    dst.push(b' ');
    let _ = write!(dst, "{uri} ");
    dst.extend_from_slice(if http10 {
        b"HTTP/1.0\r\n"
    } else {
        b"HTTP/1.1\r\n"
    });
    for (name, value) in headers.iter() {
        dst.extend_from_slice(name.as_str().as_bytes());
        dst.extend_from_slice(b": ");
        dst.extend_from_slice(value.as_bytes());
        dst.extend_from_slice(b"\r\n");
    }
    dst.extend_from_slice(b"\r\n");
    Encoded { coding, close }
}

/// hyper's `Client::set_length` for a body whose length is known (a `Full` body).
fn set_length(headers: &mut HeaderMap, body: &Bytes, can_chunk: bool) -> BodyCoding {
    if body.is_empty() {
        // An empty `Full` body is no body: hyper removes a transfer coding and leaves
        // any `Content-Length` the request set as it is.
        headers.remove(TRANSFER_ENCODING);
        return BodyCoding::None;
    }
    let existing = content_length(headers).flatten();
    if !can_chunk {
        headers.remove(TRANSFER_ENCODING);
        return match existing {
            Some(n) => BodyCoding::Length(n),
            None => {
                headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len() as u64));
                BodyCoding::Length(body.len() as u64)
            }
        };
    }
    if let Some(te) = headers.get_all(TRANSFER_ENCODING).iter().next_back() {
        // The request's own coding is kept; `chunked` is added when it is not last.
        let chunked = te
            .to_str()
            .ok()
            .and_then(|s| s.rsplit(',').next())
            .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        if !chunked {
            if let http::header::Entry::Occupied(mut entry) = headers.entry(TRANSFER_ENCODING) {
                if let Some(line) = entry.iter_mut().next_back() {
                    let mut joined = line.as_bytes().to_vec();
                    joined.extend_from_slice(b", chunked");
                    if let Ok(v) = HeaderValue::from_bytes(&joined) {
                        *line = v;
                    }
                }
            }
        }
        headers.remove(CONTENT_LENGTH);
        return BodyCoding::Chunked;
    }
    match existing {
        Some(n) => BodyCoding::Length(n),
        None => {
            headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len() as u64));
            BodyCoding::Length(body.len() as u64)
        }
    }
}

/// Appends the body after the head in its coding: the whole of it when it is small
/// (one write for both), else nothing (the caller writes it separately). Returns the
/// part still to write and the trailing bytes (the chunked coding's end).
pub(super) fn body_parts(
    coding: &BodyCoding,
    body: &Bytes,
    dst: &mut Vec<u8>,
) -> (Bytes, &'static [u8]) {
    let (body, tail): (Bytes, &'static [u8]) = match coding {
        BodyCoding::None => return (Bytes::new(), &[]),
        BodyCoding::Length(n) => (body.slice(..(*n).min(body.len() as u64) as usize), &[]),
        BodyCoding::Chunked => {
            let _ = write!(dst, "{:X}\r\n", body.len());
            (body.clone(), &b"\r\n0\r\n\r\n"[..])
        }
    };
    if body.len() <= INLINE_BODY {
        dst.extend_from_slice(&body);
        dst.extend_from_slice(tail);
        return (Bytes::new(), &[]);
    }
    (body, tail)
}

/// Bodies up to this size are copied after the head and written with it in one call;
/// larger ones are written from their own buffer.
const INLINE_BODY: usize = 16 * 1024;
