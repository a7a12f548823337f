//! `--http-debug[=full]`, as k6's: each request as it goes on the wire and each response
//! as it came back, printed to stderr (`Request:` then the request line and header
//! fields; `Response:` then the status line and header fields; with `full`, the bodies
//! too). Everything printed comes from outside (a target's headers and bodies): terminal
//! control characters are escaped, and a body is cut at [`BODY_MAX`] bytes.

use bytes::Bytes;
use std::fmt::Write;
use std::sync::atomic::{AtomicU8, Ordering};

/// Most bytes of a body printed; the rest is counted.
pub(crate) const BODY_MAX: usize = 64 * 1024;

/// What `--http-debug` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Nothing (no flag).
    Off,
    /// Request and response lines and header fields (`--http-debug`).
    Headers,
    /// With their bodies (`--http-debug=full`).
    Full,
}

static MODE: AtomicU8 = AtomicU8::new(0);

/// Sets the mode for the runs of this process (the command line, once).
pub(crate) fn set(mode: Mode) {
    MODE.store(
        match mode {
            Mode::Off => 0,
            Mode::Headers => 1,
            Mode::Full => 2,
        },
        Ordering::Relaxed,
    );
}

/// The mode set; `Off` unless the command line asked.
pub(crate) fn mode() -> Mode {
    match MODE.load(Ordering::Relaxed) {
        0 => Mode::Off,
        1 => Mode::Headers,
        _ => Mode::Full,
    }
}

/// `Request:` and the request as sent: line, header fields and (full) body.
pub(crate) fn request_text(
    method: &http::Method,
    uri: &http::Uri,
    version: http::Version,
    headers: &http::HeaderMap,
    body: Option<&Bytes>,
) -> String {
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut out = format!("Request:\n{method} {path} {}\n", version_text(version));
    if !headers.contains_key(http::header::HOST) {
        if let Some(authority) = uri.authority() {
            let _ = writeln!(out, "Host: {authority}");
        }
    }
    header_lines(&mut out, headers);
    if let Some(body) = body {
        if !body.is_empty() && !headers.contains_key(http::header::CONTENT_LENGTH) {
            let _ = writeln!(out, "Content-Length: {}", body.len());
        }
    }
    out.push('\n');
    if let Some(body) = body {
        body_text(&mut out, body);
    }
    out
}

/// `Response:` and the response as received: status line, header fields, (full) body.
pub(crate) fn response_text(
    status: u16,
    version: &str,
    headers: &http::HeaderMap,
    body: Option<&[u8]>,
) -> String {
    let reason = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut out = format!("Response:\n{version} {status} {reason}\n");
    header_lines(&mut out, headers);
    out.push('\n');
    if let Some(body) = body {
        body_text(&mut out, body);
    }
    out
}

/// Writes `text` to stderr with the target's terminal escapes made harmless.
pub(crate) fn print(text: &str) {
    crate::stderr::line(text.trim_end_matches('\n'));
}

/// `HTTP/1.1`, as a request line writes it.
pub(crate) fn version_text(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "HTTP/0.9",
        http::Version::HTTP_10 => "HTTP/1.0",
        http::Version::HTTP_2 => "HTTP/2.0",
        http::Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

/// Each header field as `Name: value`, names in the canonical case Go (and k6) print.
fn header_lines(out: &mut String, headers: &http::HeaderMap) {
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes());
        let _ = writeln!(out, "{}: {value}", canonical(name.as_str()));
    }
}

/// `content-type` → `Content-Type`.
fn canonical(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        out.push(if upper { c.to_ascii_uppercase() } else { c });
        upper = c == '-';
    }
    out
}

/// The body as text (lossy UTF-8), cut at [`BODY_MAX`].
fn body_text(out: &mut String, body: &[u8]) {
    let shown = &body[..body.len().min(BODY_MAX)];
    out.push_str(&String::from_utf8_lossy(shown));
    if body.len() > shown.len() {
        let _ = write!(out, "… ({} more bytes not shown)", body.len() - shown.len());
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_prints_as_k6_prints_it() {
        let mut headers = http::HeaderMap::new();
        headers.insert("user-agent", "k6".parse().unwrap());
        let uri: http::Uri = "http://127.0.0.1:80/x?a=1".parse().unwrap();
        let body = Bytes::from_static(b"hello");
        let text = request_text(
            &http::Method::POST,
            &uri,
            http::Version::HTTP_11,
            &headers,
            Some(&body),
        );
        assert_eq!(
            text,
            "Request:\nPOST /x?a=1 HTTP/1.1\nHost: 127.0.0.1:80\nUser-Agent: k6\nContent-Length: 5\n\nhello\n"
        );
    }

    #[test]
    fn a_long_body_is_cut() {
        let body = vec![b'a'; BODY_MAX + 10];
        let text = response_text(200, "HTTP/1.1", &http::HeaderMap::new(), Some(&body));
        assert!(text.starts_with("Response:\nHTTP/1.1 200 OK\n\n"), "{text}");
        assert!(text.ends_with("(10 more bytes not shown)\n"), "{text}");
    }
}
