//! The k6 layer's own imports (`host/src/author/js/layer.wit`): narrower forms of
//! contract functions that only the host's JavaScript components call. Linked for
//! every plugin (a component that does not import them is not affected).

/// Bindings generated from `layer.wit`, over the contract's own types.
#[allow(unreachable_pub, missing_docs)]
pub mod bindings {
    wasmtime::component::bindgen!({
        path: ["../wit", "src/author/js/layer.wit"],
        world: "loadtest:k6-layer/layer",
        imports: {
            "loadtest:k6-layer/responses.send": async,
            "loadtest:k6-layer/responses.send-prepared": async,
            "loadtest:k6-layer/responses.send-batch": async,
            "loadtest:k6-layer/sockets.recv-text": async | trappable,
            "loadtest:k6-layer/redis.command": async | trappable,
            default: trappable,
        },
        with: {
            "loadtest:scenario/types": crate::plugin::bindings::loadtest::scenario::types,
            "loadtest:scenario/http": crate::plugin::bindings::loadtest::scenario::http,
            "loadtest:scenario/html": crate::plugin::bindings::loadtest::scenario::html,
            "loadtest:scenario/metrics": crate::plugin::bindings::loadtest::scenario::metrics,
            "loadtest:scenario/websocket": crate::plugin::bindings::loadtest::scenario::websocket,
            "loadtest:scenario/sockets": crate::plugin::bindings::loadtest::scenario::sockets,
        },
    });
}

/// Bytes as text the way k6 (Go) turns a body into a string: UTF-8, and each byte of a
/// sequence that is not UTF-8 becomes one U+FFFD (Go decodes an invalid byte as a
/// one-byte `RuneError`; Rust's `from_utf8_lossy` would give one per maximal invalid
/// sequence, so the text's length would differ from k6's).
pub(crate) fn text_as_k6_reads_it(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(valid) => {
                out.push_str(valid);
                return out;
            }
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                // The first `valid_up_to` bytes are UTF-8, by the error's contract.
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                let bad = e.error_len().unwrap_or(rest.len());
                out.extend(std::iter::repeat_n('\u{FFFD}', bad));
                bytes = &rest[bad..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::text_as_k6_reads_it;

    /// Valid UTF-8 is kept; each byte that is not part of a UTF-8 sequence is one
    /// U+FFFD, a truncated sequence one per byte, as the layer's own decoder gave.
    #[test]
    fn each_byte_that_is_not_utf8_is_one_replacement_character() {
        assert_eq!(text_as_k6_reads_it(b"plain"), "plain");
        assert_eq!(text_as_k6_reads_it("é€😀".as_bytes()), "é€😀");
        assert_eq!(text_as_k6_reads_it(b"a\xffb"), "a\u{FFFD}b");
        assert_eq!(text_as_k6_reads_it(b"a\xe2\x82b"), "a\u{FFFD}\u{FFFD}b");
        assert_eq!(text_as_k6_reads_it(b"end\xe2\x82"), "end\u{FFFD}\u{FFFD}");
        assert_eq!(
            text_as_k6_reads_it(b"\xc3\xa9\xff\xfe"),
            "é\u{FFFD}\u{FFFD}"
        );
        assert_eq!(text_as_k6_reads_it(b""), "");
    }
}
