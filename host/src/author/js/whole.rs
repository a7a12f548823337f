//! A module of a script must be whole on its own. The bundler wraps each module in
//! `function (__require, __exports) { ... }` without parsing it, so a module with a `}`
//! it never opened would close the wrapper, and what follows would run at the top of
//! the bundle: while the component is pre-initialised at build time, not in a VU
//! (issue 49). Each module is tokenized inside the wrapper with the bundler's own
//! tokenizer, and refused, naming the file and line, unless the wrapper's `{` is closed
//! by the wrapper's own `}` with every bracket between paired with one of its kind
//! (which also refuses a module ending inside a comment or a template literal, as
//! either swallows the wrapper's `}`).

use super::scan::line_of;
use super::tokens::{Kind, Tokens};
use anyhow::{bail, Result};

const HEAD: &str = "function (__require, __exports) {\n";

/// Refuses `body` (the module `shown`, as rewritten for the bundle, on its own lines)
/// unless it is whole on its own.
pub(crate) fn check(body: &str, shown: &str) -> Result<()> {
    let wrapped = format!("{HEAD}{body}\n}}");
    let t = Tokens::new(&wrapped);
    let line = |tok: usize| line_of(body, t.toks[tok].start.saturating_sub(HEAD.len()));
    let outer = (0..t.toks.len())
        .find(|&i| t.is(i, "{"))
        .expect("the wrapper has a brace");
    let last = t.toks.len() - 1;
    let pairs =
        |open: &str, close: &str| matches!((open, close), ("(", ")") | ("[", "]") | ("{", "}"));
    for i in outer + 1..last {
        if t.toks[i].kind != Kind::Punct {
            continue;
        }
        let text = t.text(i);
        if !matches!(text, ")" | "]" | "}") {
            continue;
        }
        let o = t.opener[i];
        if o == outer || o == usize::MAX {
            bail!(
                "{shown}:{}: this `{text}` closes a bracket the file never opened; a script's \
                 file must be whole on its own (the bundle wraps each file in a function, and \
                 code after such a `{text}` would run outside it, at build time)",
                line(i)
            );
        }
        if !pairs(t.text(o), text) {
            bail!(
                "{shown}:{}: this `{text}` closes the `{}` of line {}",
                line(i),
                t.text(o),
                line(o)
            );
        }
    }
    if t.partner[outer] != last {
        // Something swallowed the wrapper's `}`: a bracket left open (which took it),
        // else a comment or a template literal running to the end.
        let o = t.opener[last];
        if t.toks[last].kind == Kind::Punct && o != usize::MAX && o != outer {
            bail!(
                "{shown}:{}: this `{}` is never closed in the file; a script's file must be \
                 whole on its own",
                line(o),
                t.text(o)
            );
        }
        bail!(
            "{shown}: the file ends inside a comment, a string or a template literal; a \
             script's file must be whole on its own"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn a_file_that_closes_its_wrapper_is_refused_with_its_line() {
        check(
            "export default function () {}\nconst a = [1, (2)];\n",
            "ok.js",
        )
        .unwrap();
        check(
            "const t = `a${ {b: 1}.b }c`; // }\n/* } */ const r = /}/;\n",
            "ok.js",
        )
        .unwrap();
        let e = check(
            "export default function () {}\n}\nwhile (true) {}\n{",
            "a.js",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("a.js:2: this `}` closes a bracket"), "{e}");
        let e = check("const x = (1];\n", "b.js").unwrap_err().to_string();
        assert!(e.starts_with("b.js:1: this `]` closes the `(`"), "{e}");
        for (src, want) in [
            ("f(1);\n/* open comment", "b.js: the file ends inside"),
            ("const s = `open ${1}", "b.js: the file ends inside"),
            ("if (x) {\n", "b.js:1: this `{` is never closed"),
        ] {
            let e = check(src, "b.js").unwrap_err().to_string();
            assert!(e.starts_with(want), "{src:?}: {e}");
        }
        // A line comment ends at every JavaScript line terminator, as the engine ends it.
        let e = check("// note\u{2028}}\nevil();\n{", "c.js")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.js:1: this `}` closes"), "{e}");
    }
}
