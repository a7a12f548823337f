//! The response head: parsed by httparse with hyper's parser settings, informational
//! (1xx) responses skipped, then the body's framing and whether the connection stays
//! open decided by the rules of hyper 1.x's `Client::decoder` (RFC 9112 §6.3), so
//! that both clients agree on every response.

use super::error::LeanError;
use super::write::{connection_has, content_length};
use bytes::BytesMut;
use http::header::{CONNECTION, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Version};
use std::mem::MaybeUninit;

/// Bytes a response head may take before it is refused as too large: hyper's
/// default read buffer limit (8 KiB + 100 × 4 KiB).
pub(super) const MAX_HEAD: usize = 8192 + 4096 * 100;

/// How a response body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// None (HEAD, 1xx, 204, 304, a `Content-Length` of 0, an upgrade).
    Empty,
    /// `Content-Length`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the server closes the connection.
    Close,
}

/// A final response head.
pub(super) struct Head {
    /// Status, version, header fields.
    pub(super) parts: http::response::Parts,
    /// How its body is delimited.
    pub(super) framing: Framing,
    /// The response lets the connection carry another request.
    pub(super) keep_alive: bool,
    /// An upgrade (101, or 2xx to CONNECT): the connection is no longer HTTP's.
    pub(super) upgrade: bool,
}

/// Where a header field lies in the head: name and value as byte ranges.
type Indices = [(usize, usize); 2];

/// Parses the final response head at the start of `buf`, consuming it (and any 1xx
/// heads before it); `None` while it is incomplete. `indices` is scratch space kept
/// by the connection so that no parse allocates it; `headers` is an empty map whose
/// room is reused (the request's, as hyper reuses it), taken when the head is whole.
pub(super) fn parse(
    buf: &mut BytesMut,
    method: &Method,
    max_headers: usize,
    indices: &mut Vec<Indices>,
    headers: &mut HeaderMap,
) -> Result<Option<Head>, LeanError> {
    loop {
        if buf.is_empty() {
            return Ok(None);
        }
        let Some((len, code, version)) = parse_indices(buf, max_headers, indices)? else {
            return Ok(None);
        };
        // A head that arrived whole in one large read is held to the same limit as
        // one that arrived in pieces (hyper's buffer never holds more).
        if len > MAX_HEAD {
            return Err(LeanError::too_large());
        }
        let status = StatusCode::from_u16(code)
            .map_err(|_| LeanError::parse("invalid HTTP status-code parsed"))?;
        let head = buf.split_to(len).freeze();
        if matches!(code, 100 | 102..=199) {
            // Informational: skipped, as hyper does (101 is final: an upgrade).
            continue;
        }
        headers.clear();
        headers.reserve(indices.len());
        let mut keep_alive = version == Version::HTTP_11;
        let mut saw_close = false;
        for [(n0, n1), (v0, v1)] in indices.iter().copied() {
            let name = HeaderName::from_bytes(&head[n0..n1])
                .map_err(|_| LeanError::parse("invalid HTTP header parsed"))?;
            let value = HeaderValue::from_maybe_shared(head.slice(v0..v1))
                .map_err(|_| LeanError::parse("invalid HTTP header parsed"))?;
            if name == CONNECTION {
                // Once one `Connection` line asks to close, a later keep-alive does
                // not undo it; HTTP/1.0 stays open only when asked to.
                if saw_close || connection_has(&value, "close") {
                    saw_close = true;
                    keep_alive = false;
                } else if !keep_alive {
                    keep_alive = connection_has(&value, "keep-alive");
                }
            }
            headers.append(name, value);
        }
        let (framing, upgrade) = framing(code, version, method, headers)?;
        let mut parts = http::Response::new(()).into_parts().0;
        parts.status = status;
        parts.version = version;
        parts.headers = std::mem::take(headers);
        return Ok(Some(Head {
            parts,
            framing,
            keep_alive: keep_alive && !upgrade,
            upgrade,
        }));
    }
}

/// Runs httparse over `buf`: the head's length, status code and version, with the
/// field positions in `indices`; `None` while incomplete. The field slots are left
/// uninitialised (as hyper leaves them), so a parse does not clear 100 of them.
fn parse_indices(
    buf: &[u8],
    max_headers: usize,
    indices: &mut Vec<Indices>,
) -> Result<Option<(usize, u16, Version)>, LeanError> {
    let mut stack = [MaybeUninit::<httparse::Header<'_>>::uninit(); 100];
    let mut heap;
    let slots: &mut [MaybeUninit<httparse::Header<'_>>] = if max_headers <= stack.len() {
        &mut stack[..max_headers]
    } else {
        heap = vec![MaybeUninit::uninit(); max_headers];
        &mut heap
    };
    let mut response = httparse::Response::new(&mut []);
    let status = httparse::ParserConfig::default()
        .parse_response_with_uninit_headers(&mut response, buf, slots)
        .map_err(|e| {
            LeanError::parse(match e {
                httparse::Error::TooManyHeaders => return LeanError::too_large(),
                httparse::Error::Status => "invalid HTTP status-code parsed",
                httparse::Error::Version => "invalid HTTP version parsed",
                _ => "invalid HTTP header parsed",
            })
        });
    let len = match status {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(e),
    };
    let base = buf.as_ptr() as usize;
    indices.clear();
    for field in response.headers.iter() {
        let n0 = field.name.as_ptr() as usize - base;
        let v0 = field.value.as_ptr() as usize - base;
        indices.push([(n0, n0 + field.name.len()), (v0, v0 + field.value.len())]);
    }
    let version = match response.version {
        Some(1) => Version::HTTP_11,
        _ => Version::HTTP_10,
    };
    Ok(Some((len, response.code.unwrap_or(0), version)))
}

/// The body's framing and whether the response is an upgrade (hyper's
/// `Client::decoder`): 101, and 2xx to CONNECT, end the HTTP exchange.
fn framing(
    code: u16,
    version: Version,
    method: &Method,
    headers: &HeaderMap,
) -> Result<(Framing, bool), LeanError> {
    match code {
        101 => return Ok((Framing::Empty, true)),
        204 | 304 => return Ok((Framing::Empty, false)),
        _ => {}
    }
    if *method == Method::HEAD {
        return Ok((Framing::Empty, false));
    }
    if *method == Method::CONNECT && (200..300).contains(&code) {
        return Ok((Framing::Empty, true));
    }
    if headers.contains_key(TRANSFER_ENCODING) {
        if version == Version::HTTP_10 {
            return Err(LeanError::parse("unexpected transfer-encoding parsed"));
        }
        let chunked = headers
            .get_all(TRANSFER_ENCODING)
            .iter()
            .next_back()
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.rsplit(',').next())
            .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        return Ok((
            if chunked {
                Framing::Chunked
            } else {
                Framing::Close
            },
            false,
        ));
    }
    match content_length(headers) {
        // hyper's `DecodedLength` keeps the top two values for itself.
        Some(Some(n)) if n <= u64::MAX - 2 => Ok((
            if n == 0 {
                Framing::Empty
            } else {
                Framing::Length(n)
            },
            false,
        )),
        Some(_) => Err(LeanError::parse("invalid content-length parsed")),
        None => Ok((Framing::Close, false)),
    }
}
