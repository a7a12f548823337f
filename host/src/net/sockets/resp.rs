//! RESP (Redis's protocol, versions 2 and 3) on the host: where one reply ends in a
//! socket's buffered bytes (so a read returns a whole reply in one host call), the
//! encoding of a command, and a reply turned into the short text the k6 layer's Redis
//! client reads (one string crosses into QuickJS, not a tree of values).
//!
//! The framer walks the reply without recursion: it counts the values still owed, so
//! nesting costs no stack, and a reply that announces more than arrives waits for
//! more bytes until the read's bound (`too_large`), as any read does.

use super::frame::{Frame, Framed};
use std::fmt::Write as _;

/// Where the first complete RESP value in `buf` ends: `Whole(n)` when `buf[..n]` is
/// one whole value, `AtLeast(n)` when more bytes are needed (a bulk string's announced
/// length counts, so a read bounded below it fails at once), `Err` when the bytes are
/// not RESP (what is wrong, for the error's message).
pub(crate) fn frame_len(buf: &[u8]) -> Framed {
    let mut at = 0usize;
    // Values still owed: the reply itself, then each aggregate's items.
    let mut owed: u64 = 1;
    while owed > 0 {
        let Some(line) = line_at(buf, at)? else {
            return Ok(Frame::AtLeast(buf.len() + 1));
        };
        let kind = buf[at];
        let text = &buf[at + 1..line];
        at = line + 2;
        owed -= 1;
        match kind {
            // Simple lines: status, error, integer, RESP3 null, boolean, double, big number.
            b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => {}
            // Blobs: bulk string, RESP3 blob error and verbatim string.
            b'$' | b'!' | b'=' => {
                let n = number(text)?;
                if n < 0 {
                    continue; // $-1: nil
                }
                let end = at.saturating_add(n as usize).saturating_add(2);
                if buf.len() < end {
                    return Ok(Frame::AtLeast(end));
                }
                if &buf[end - 2..end] != b"\r\n" {
                    return Err(format!("a {n}-byte string not followed by CRLF"));
                }
                at = end;
            }
            // Aggregates: array, set and push hold n values; map and attribute n pairs
            // (an attribute is followed by the value it describes).
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let n = number(text)?;
                if n < 0 {
                    continue; // *-1: nil
                }
                let items = match kind {
                    b'%' => (n as u64).saturating_mul(2),
                    b'|' => (n as u64).saturating_mul(2).saturating_add(1),
                    _ => n as u64,
                };
                owed = owed.saturating_add(items);
            }
            other => return Err(format!("unknown type byte {:?}", other as char)),
        }
    }
    Ok(Frame::Whole(at))
}

/// The end of the line starting at `at` (the place of its CR), `None` until its CRLF
/// arrived; a line without a type byte, or a CR not followed by LF, is not RESP.
fn line_at(buf: &[u8], at: usize) -> Result<Option<usize>, String> {
    let rest = buf.get(at..).unwrap_or_default();
    let Some(cr) = rest.iter().position(|b| *b == b'\r') else {
        return Ok(None);
    };
    match rest.get(cr + 1) {
        None => Ok(None),
        Some(b'\n') if cr > 0 => Ok(Some(at + cr)),
        Some(b'\n') => Err("a line without a type byte".into()),
        Some(_) => Err("a CR not followed by LF".into()),
    }
}

/// A length or count in a type line.
fn number(text: &[u8]) -> Result<i64, String> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse::<i64>().ok())
        .ok_or_else(|| format!("{:?} is not a number", String::from_utf8_lossy(text)))
}

/// `args` as a RESP array of bulk strings, appended to `out`.
pub(crate) fn encode(args: &[String], out: &mut Vec<u8>) {
    let _ = write!(Counted(out), "*{}\r\n", args.len());
    for a in args {
        let _ = write!(Counted(out), "${}\r\n", a.len());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

/// `fmt::Write` into a byte vector.
struct Counted<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Counted<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Deepest nesting of aggregates turned into text; deeper ones fail the command.
const MAX_DEPTH: usize = 8;

/// One whole reply (as [`frame_len`] found it) as the k6 layer reads it: a type
/// character, then the value. `+text` a status, `-text` a server error, `:n` an
/// integer (or a double, boolean or big number as its digits), `$text` a string
/// (bytes that are not UTF-8 replaced by U+FFFD, as the layer's decoder does), `_`
/// nil, `*json` an aggregate as JSON (strings, numbers, null, nested arrays; a map as
/// its flat key, value list as RESP2 gives it; a server error inside as
/// `{"error": text}`).
pub(crate) fn to_layer_text(frame: &[u8]) -> Result<String, String> {
    let mut at = 0;
    let (kind, text) = header(frame, &mut at)?;
    Ok(match kind {
        b'+' => format!("+{}", String::from_utf8_lossy(text)),
        b'-' | b'!' => {
            let body = blob(frame, &mut at, kind, text)?;
            format!("-{}", String::from_utf8_lossy(body.unwrap_or_default()))
        }
        b':' | b',' | b'(' => format!(":{}", String::from_utf8_lossy(text)),
        b'#' => format!(":{}", if text == b"t" { 1 } else { 0 }),
        b'_' => "_".to_string(),
        b'$' | b'=' => match blob(frame, &mut at, kind, text)? {
            None => "_".to_string(),
            Some(body) => format!("${}", String::from_utf8_lossy(body)),
        },
        _ => {
            at = 0;
            let mut json = String::from("*");
            value_json(frame, &mut at, 0, &mut json)?;
            if json == "*null" {
                "_".to_string()
            } else {
                json
            }
        }
    })
}

/// The type byte and text of the line at `at`, moving past it.
fn header<'a>(frame: &'a [u8], at: &mut usize) -> Result<(u8, &'a [u8]), String> {
    let end = line_at(frame, *at)?.ok_or("a reply cut short")?;
    let kind = frame[*at];
    let text = &frame[*at + 1..end];
    *at = end + 2;
    Ok((kind, text))
}

/// A blob's bytes after its header (`None` for nil); a simple error's text as is.
fn blob<'a>(
    frame: &'a [u8],
    at: &mut usize,
    kind: u8,
    text: &'a [u8],
) -> Result<Option<&'a [u8]>, String> {
    if kind == b'-' {
        return Ok(Some(text));
    }
    let n = number(text)?;
    if n < 0 {
        return Ok(None);
    }
    let start = *at;
    let end = start + n as usize;
    let body = frame.get(start..end).ok_or("a reply cut short")?;
    *at = end + 2;
    // A verbatim string (`=`) starts with its format and a colon: `txt:`.
    Ok(Some(if kind == b'=' && body.len() >= 4 {
        &body[4..]
    } else {
        body
    }))
}

/// The value at `at` as JSON, appended to `out`.
fn value_json(frame: &[u8], at: &mut usize, depth: usize, out: &mut String) -> Result<(), String> {
    let (mut kind, mut text) = header(frame, at)?;
    // An attribute (`|`) describes the value after it: its pairs are read and dropped,
    // and the value is what this is. A loop, not a call per attribute: a server could
    // send a reply of nothing but attributes, as deep as the read's bound.
    while kind == b'|' {
        let n = number(text)?;
        if depth >= MAX_DEPTH {
            return Err("arrays nested too deep".into());
        }
        let mut dropped = String::new();
        for _ in 0..(n.max(0) as usize).saturating_mul(2) {
            value_json(frame, at, depth + 1, &mut dropped)?;
        }
        (kind, text) = header(frame, at)?;
    }
    match kind {
        b'+' => json_string(&String::from_utf8_lossy(text), out),
        b'-' | b'!' => {
            let body = blob(frame, at, kind, text)?.unwrap_or_default();
            out.push_str("{\"error\":");
            json_string(&String::from_utf8_lossy(body), out);
            out.push('}');
        }
        b':' | b',' | b'(' => {
            let t = String::from_utf8_lossy(text);
            match t.parse::<f64>() {
                Ok(v) if v.is_finite() => out.push_str(&t),
                _ => json_string(&t, out),
            }
        }
        b'#' => out.push_str(if text == b"t" { "1" } else { "0" }),
        b'_' => out.push_str("null"),
        b'$' | b'=' => match blob(frame, at, kind, text)? {
            None => out.push_str("null"),
            Some(body) => json_string(&String::from_utf8_lossy(body), out),
        },
        b'*' | b'~' | b'>' | b'%' => {
            let n = number(text)?;
            if n < 0 {
                out.push_str("null");
                return Ok(());
            }
            if depth >= MAX_DEPTH {
                return Err("arrays nested too deep".into());
            }
            let items = match kind {
                b'%' => n as usize * 2,
                _ => n as usize,
            };
            out.push('[');
            for i in 0..items {
                if i > 0 {
                    out.push(',');
                }
                value_json(frame, at, depth + 1, out)?;
            }
            out.push(']');
        }
        other => return Err(format!("unknown type byte {:?}", other as char)),
    }
    Ok(())
}

/// `s` as a JSON string literal.
fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_replies_are_found_and_partial_ones_wait() {
        let cases: [&[u8]; 7] = [
            b"+OK\r\n",
            b"-ERR wrong\r\n",
            b":42\r\n",
            b"$2\r\nv1\r\n",
            b"$-1\r\n",
            b"*2\r\n$1\r\na\r\n*1\r\n:1\r\n",
            b"%1\r\n+k\r\n$1\r\nv\r\n",
        ];
        for reply in cases {
            let mut with_next = reply.to_vec();
            with_next.extend_from_slice(b"+NEXT\r\n");
            assert_eq!(
                frame_len(&with_next),
                Ok(Frame::Whole(reply.len())),
                "{reply:?}"
            );
            for cut in 0..reply.len() {
                assert!(
                    matches!(frame_len(&reply[..cut]), Ok(Frame::AtLeast(n)) if n > cut && n <= reply.len()),
                    "{reply:?} cut at {cut}: {:?}",
                    frame_len(&reply[..cut])
                );
            }
        }
    }

    #[test]
    fn bytes_that_are_not_resp_are_named() {
        assert!(frame_len(b"HTTP/1.1 200 OK\r\n")
            .unwrap_err()
            .contains("type byte"));
        assert!(frame_len(b"$x\r\n").unwrap_err().contains("not a number"));
        assert!(frame_len(b"$2\r\nabcd\r\n").unwrap_err().contains("CRLF"));
    }

    #[test]
    fn a_huge_announced_array_waits_instead_of_allocating() {
        assert!(matches!(
            frame_len(b"*9223372036854775807\r\n:1\r\n"),
            Ok(Frame::AtLeast(_))
        ));
        // A bulk string announces its length: a read bounded below it fails at once.
        assert_eq!(
            frame_len(b"$100000000\r\n"),
            Ok(Frame::AtLeast(100_000_014))
        );
    }

    #[test]
    fn replies_become_the_layers_text() {
        let text = |b: &[u8]| to_layer_text(b).unwrap();
        assert_eq!(text(b"+OK\r\n"), "+OK");
        assert_eq!(text(b"-ERR no\r\n"), "-ERR no");
        assert_eq!(text(b":-7\r\n"), ":-7");
        assert_eq!(text(b"$5\r\na\r\nb\"\r\n"), "$a\r\nb\"");
        assert_eq!(text(b"$-1\r\n"), "_");
        assert_eq!(text(b"*-1\r\n"), "_");
        assert_eq!(
            text(b"*4\r\n$1\r\na\r\n:2\r\n$-1\r\n-ERR x\r\n"),
            r#"*["a",2,null,{"error":"ERR x"}]"#
        );
        assert_eq!(
            text(b"*1\r\n*1\r\n$2\r\n\xff\"\r\n"),
            "*[[\"\u{fffd}\\\"\"]]"
        );
    }

    #[test]
    fn attributes_are_dropped_where_they_stand_without_a_call_each() {
        // Before, a nested attribute wiped what was already written of the reply, and
        // each attribute of a chain cost a call: a server answering with a reply of
        // nothing but attributes, up to the read's 4 MiB, overflowed the host's stack.
        assert_eq!(
            to_layer_text(b"*2\r\n:1\r\n|1\r\n+k\r\n+v\r\n:2\r\n").unwrap(),
            "*[1,2]"
        );
        assert_eq!(
            to_layer_text(b"|1\r\n+k\r\n+v\r\n$1\r\nx\r\n").unwrap(),
            "*\"x\""
        );
        let mut chain = b"|0\r\n".repeat(1 << 20);
        chain.extend_from_slice(b":1\r\n");
        assert!(matches!(frame_len(&chain), Ok(Frame::Whole(n)) if n == chain.len()));
        assert_eq!(to_layer_text(&chain).unwrap(), "*1");
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        encode(&["SET".into(), "k".into(), "v1".into()], &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n");
    }
}
