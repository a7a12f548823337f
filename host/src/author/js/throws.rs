//! `throw X` becomes `throw __k6throw((X))` at build time, on the same line, so that a
//! thrown value that is not an `Error` (`throw 'x'`, `throw {code: 1}`) still has a
//! stack: the engine gives only an `Error` one, while k6 prints the stack of any thrown
//! value through the files it passed (`x\n\tat boom (lib.js:3:3)`). The layer's
//! `__k6throw` (layer/bundle.js) keeps the stack of its call beside the value and hands
//! the value back unchanged, so `catch (e) { e === 'x' }` still holds.
//!
//! The expression ends where the statement does: at a `;`, at a bracket that closes
//! around it, or at a line break after a token that can end an expression when the
//! next token cannot carry it on (automatic semicolon insertion). A `throw` whose end
//! cannot be told is left as it was (its value then has no stack, as before).

use super::tokens::{Kind, Tokens};

/// `src` with each `throw X` wrapped, and the edits made (for `colmap`); `None` when
/// the module throws nothing.
pub(crate) fn rewrite(src: &str) -> Option<(String, super::colmap::Stage)> {
    if !src.contains("throw") {
        return None;
    }
    let t = Tokens::new(src);
    let mut edits: Vec<(usize, usize)> = Vec::new(); // (`throw`, end of X)
    for i in 0..t.toks.len() {
        if !t.is(i, "throw") || (i > 0 && (t.is(i - 1, ".") || t.is(i - 1, "?."))) {
            continue;
        }
        // A property named `throw` (`{ throw: true }`, a method `throw() {}`), not
        // the statement.
        if t.is(i + 1, ":")
            || (t.is(i + 1, "(") && t.group_end(i + 1).is_some_and(|c| t.is(c + 1, "{")))
        {
            continue;
        }
        // `throw` cannot be followed by a line break (a syntax error the engine reports).
        if i + 1 >= t.toks.len() || t.nl(i + 1) {
            continue;
        }
        if let Some(last) = expression_end(&t, i + 1) {
            edits.push((t.toks[i].start, t.toks[last].end));
        }
    }
    if edits.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(src.len() + edits.len() * 16);
    let mut at = 0;
    // Edits may nest (`throw f(() => { throw 1 })`): opening and closing texts are
    // inserted at their offsets in order.
    // (offset, opening): `throw` is written again with the call after it, so that the
    // call's column maps back to the `throw` (where k6 places such a frame).
    let mut inserts: Vec<(usize, bool)> = Vec::new();
    for (open, close) in &edits {
        inserts.push((*open, true));
        inserts.push((*close, false));
    }
    // At one offset, closings first (an inner end before an outer one is the same spot).
    inserts.sort_by_key(|(at, opening)| (*at, *opening));
    let mut stage = super::colmap::Stage::default();
    for (offset, opening) in inserts {
        out.push_str(&src[at..offset]);
        let (text, len) = if opening {
            ("throw __k6throw((", "throw".len())
        } else {
            ("))", 0)
        };
        out.push_str(text);
        stage.0.push((offset, len, text.len()));
        at = offset + len;
    }
    out.push_str(&src[at..]);
    Some((out, stage))
}

/// The last token of the expression that starts at token `first`.
fn expression_end(t: &Tokens, first: usize) -> Option<usize> {
    let mut i = first;
    let mut last: Option<usize> = None;
    while i < t.toks.len() {
        let text = t.text(i);
        let punct = t.toks[i].kind == Kind::Punct;
        if punct && matches!(text, ";" | ")" | "]" | "}") {
            break;
        }
        if let Some(prev) = last {
            if t.nl(i) && t.ends_expression(prev) && !continues(t, i) {
                break;
            }
        }
        let end = t.group_end(i)?;
        last = Some(end);
        i = end + 1;
    }
    // `throw` alone (`throw;`) is a syntax error: left for the engine to report.
    last
}

/// Whether token `i`, after a line break, carries the expression before it on.
fn continues(t: &Tokens, i: usize) -> bool {
    let tok = t.toks[i];
    match tok.kind {
        Kind::Word => matches!(t.text(i), "in" | "instanceof"),
        Kind::Template | Kind::TemplateHead => true, // a tagged template
        Kind::Punct => !matches!(t.text(i), "++" | "--" | "{" | "!" | "~"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(src: &str) -> String {
        rewrite(src).map_or_else(|| src.to_string(), |(out, _)| out)
    }

    #[test]
    fn each_throw_is_wrapped_on_its_line() {
        for (src, want) in [
            ("throw 'x';", "throw __k6throw(( 'x'));"),
            ("throw'x'", "throw __k6throw(('x'))"),
            (
                "if (a) throw e\nelse b()",
                "if (a) throw __k6throw(( e))\nelse b()",
            ),
            ("{ throw a, b }", "{ throw __k6throw(( a, b)) }"),
            (
                "throw new Error('a' +\n 'b');",
                "throw __k6throw(( new Error('a' +\n 'b')));",
            ),
            ("throw x\n  .y\nz()", "throw __k6throw(( x\n  .y))\nz()"),
            (
                "f(() => { throw {code: 1} })",
                "f(() => { throw __k6throw(( {code: 1})) })",
            ),
            (
                "if (a) throw (e)\nb()",
                "if (a) throw __k6throw(( (e)))\nb()",
            ),
            (
                "switch (a) { case 1: throw `t${a}` }",
                "switch (a) { case 1: throw __k6throw(( `t${a}`)) }",
            ),
            (
                "a ? b : c; throw a ? b : c;",
                "a ? b : c; throw __k6throw(( a ? b : c));",
            ),
        ] {
            let got = rw(src);
            assert_eq!(
                got.matches('\n').count(),
                src.matches('\n').count(),
                "{got}"
            );
            assert_eq!(got, want, "{src}");
        }
    }

    #[test]
    fn names_strings_and_comments_are_not_throws() {
        for src in [
            "const s = 'throw x';",
            "// throw x\n",
            "o.throw(x);",
            "gen.throw(new Error('x'));",
            "const options = { throw: true, iterations: 1 };",
            "const it = { throw(e) { return e; } };",
            "class G { throw(e) {} }",
            "g?.throw(1);",
        ] {
            assert!(rewrite(src).is_none(), "{src}");
        }
    }
}
