//! The static site: a page and its assets, compiled in, served with caching headers.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use hyper::{Method, Request, Response, StatusCode};

use super::{empty, method_not_allowed, not_found, Resp};

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
    /// Strong validator, derived from the content so it changes exactly when it does.
    etag: &'static str,
}

/// FNV-1a, computed at compile time, so ETags cost nothing per request.
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

/// Formats a hash as a quoted 16-digit hex ETag, at compile time.
const fn etag_of(body: &str) -> [u8; 18] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let hash = fnv1a(body.as_bytes());
    let mut out = [b'"'; 18];
    let mut i = 0;
    while i < 16 {
        out[1 + i] = HEX[((hash >> (60 - 4 * i)) & 0xf) as usize];
        i += 1;
    }
    out
}

macro_rules! asset {
    ($name:literal, $content_type:literal) => {{
        const BODY: &str = include_str!(concat!("../../static/", $name));
        const ETAG: [u8; 18] = etag_of(BODY);
        Asset {
            name: $name,
            content_type: $content_type,
            body: BODY,
            etag: match std::str::from_utf8(&ETAG) {
                Ok(etag) => etag,
                Err(_) => panic!("ETag is ASCII"),
            },
        }
    }};
}

static ASSETS: [Asset; 4] = [
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("app.js", "text/javascript; charset=utf-8"),
    asset!("logo.svg", "image/svg+xml"),
];

/// Whether an `If-None-Match` value matches `etag`; RFC 9110 uses weak comparison here.
fn matches(if_none_match: &str, etag: &str) -> bool {
    if_none_match
        .split(',')
        .map(str::trim)
        .any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == etag)
}

/// Serves the embedded file `name`, or 304 when the client's copy is current.
pub fn serve<B>(req: &Request<B>, name: &str) -> Resp {
    if req.method() != Method::GET {
        return method_not_allowed("GET");
    }
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return not_found();
    };
    let fresh = req
        .headers()
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| matches(v, asset.etag));
    let mut resp = if fresh {
        empty(StatusCode::NOT_MODIFIED)
    } else {
        let mut resp = Response::new(Full::new(Bytes::from_static(asset.body.as_bytes())));
        resp.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
        resp
    };
    let headers = resp.headers_mut();
    headers.insert(ETAG, HeaderValue::from_static(asset.etag));
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_are_quoted_and_distinct() {
        for asset in &ASSETS {
            assert_eq!(asset.etag.len(), 18);
            assert!(asset.etag.starts_with('"') && asset.etag.ends_with('"'));
        }
        assert_ne!(ASSETS[0].etag, ASSETS[1].etag);
    }

    #[test]
    fn if_none_match_lists_and_weak_forms_match() {
        let etag = "\"0123456789abcdef\"";
        assert!(matches("\"x\", \"0123456789abcdef\"", etag));
        assert!(matches("W/\"0123456789abcdef\"", etag));
        assert!(matches("*", etag));
        assert!(!matches("\"0123456789abcdeg\"", etag));
    }
}
