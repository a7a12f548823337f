//! What of `k6/experimental/streams` the layer does not build, refused at build with
//! its line (as k6 1.1.0 lacks them too: it throws `NotSupportedError` when they are
//! called): `tee()`, `pipeTo()`, `pipeThrough()`. Checked only in a module that
//! imports `k6/experimental/streams`. Byte streams (`type: 'bytes'`) and BYOB readers
//! (`getReader({mode: 'byob'})`) are options, not calls: they throw k6's
//! `NotSupportedError` when the stream or reader is made.

use super::scan::call_sites;
use anyhow::{bail, Result};

/// Methods not built.
const NOT_BUILT: &[&str] = &[".tee", ".pipeTo", ".pipeThrough"];

/// Refuses the first call of a method not built; `code` is `src` with comments and
/// strings blanked, `at` names a byte offset's file and line.
pub(crate) fn check(code: &str, at: &dyn Fn(usize) -> String) -> Result<()> {
    for name in NOT_BUILT {
        if let Some((offset, _)) = call_sites(code, name).next() {
            bail!(
                "{}: `{}()` of k6/experimental/streams is not supported by this host (nor by k6: see docs/k6-compatibility.md)",
                at(offset),
                &name[1..]
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tee_and_pipes_are_refused_with_their_line() {
        let at = |o: usize| format!("s.js@{o}");
        assert!(check("const r = s.getReader(); r.read();", &at).is_ok());
        let e = check("s.read();\nconst [a, b] = s.tee();", &at)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`tee()`") && e.contains("s.js@"), "{e}");
        assert!(check("s.pipeTo(w)", &at).is_err());
    }
}
