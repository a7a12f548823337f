//! The k6 layer's own imports (`host/src/author/js/layer.wit`): narrower forms of
//! contract functions that only the host's JavaScript components call. Linked for
//! every plugin (a component that does not import them is not affected).

use crate::metrics::builtin;
use crate::plugin::state::VuState;

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
            "loadtest:k6-layer/sockets.recv-text": async,
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

use crate::net::types::ResponseContent;
use bindings::loadtest::k6_layer::{checks, content, crypto, redis, responses, samples, sockets};
use wasmtime::component::Resource;

/// Checks one VU may register (`checks.register`): a script that makes a new check
/// name per iteration would otherwise grow the host's memory; past it the layer
/// records with `metrics.check`.
pub(crate) const MAX_CHECKS: usize = 10_000;

/// Adds the layer's imports to a plugin's linker (the contract's are added apart).
pub(crate) fn add_to_linker(
    linker: &mut wasmtime::component::Linker<VuState>,
) -> anyhow::Result<()> {
    type Own = wasmtime::component::HasSelf<VuState>;
    checks::add_to_linker::<VuState, Own>(linker, |s| s)?;
    content::add_to_linker::<VuState, Own>(linker, |s| s)?;
    crypto::add_to_linker::<VuState, Own>(linker, |s| s)?;
    redis::add_to_linker::<VuState, Own>(linker, |s| s)?;
    responses::add_to_linker::<VuState, Own>(linker, |s| s)?;
    samples::add_to_linker::<VuState, Own>(linker, |s| s)?;
    sockets::add_to_linker::<VuState, Own>(linker, |s| s)?;
    Ok(())
}

impl checks::Host for VuState {
    fn register(
        &mut self,
        name: String,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<Option<u32>> {
        if self.layer.checks.len() >= MAX_CHECKS {
            return Ok(None);
        }
        self.layer.checks.push((name, tags));
        Ok(Some(self.layer.checks.len() as u32 - 1))
    }

    fn add(&mut self, id: u32, ok: bool) -> wasmtime::Result<()> {
        let Some((name, tags)) = self.layer.checks.get(id as usize) else {
            wasmtime::bail!("the k6 layer recorded check {id}, which it never registered");
        };
        let tags =
            self.metrics
                .tag_cache
                .with(&self.identity.tags, tags, Some(("check", name.as_str())));
        self.services.recorder.rate(builtin::CHECKS, &tags, ok);
        Ok(())
    }
}

impl content::Host for VuState {
    fn text(&mut self, content: Resource<ResponseContent>) -> wasmtime::Result<String> {
        Ok(text_as_k6_reads_it(&self.table().get(&content)?.body))
    }
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
