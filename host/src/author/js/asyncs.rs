//! The bundle-time rewrite of `async` functions into generator functions that the k6
//! layer drives (`__k6async` in layer/async.js). The vendored QuickJS runtime runs no promise
//! jobs once a call into the component returns, so a real `async` function would stop
//! at its first `await`; a generator is resumed by the layer's own driver with the
//! settled value of what it yielded, on the layer's own microtask queue.
//!
//! `async function f(a) { B }` becomes `function f(a) { return __k6async(this, null,
//! function* () { B' }); }`, an async method the same, `async (a) => E` becomes
//! `(a) => __k6async(this, null, function* () { return E' })`; in `B'`/`E'` each
//! `await X` is `yield X`, parenthesised where `yield`'s lower precedence would change
//! the meaning. `arguments` is handed to the generator where the body reads it.
//! Nothing is added on a new line, so every line keeps its number (stack traces name
//! the user's line). What cannot be rewritten soundly is refused with `file:line`.

use super::exprs::{
    expression_end, starts_operand, unary_end, yield_fits_after, yield_fits_before,
};
use super::scan::line_of;
use super::tokens::{is_keyword, Kind, Tokens};
use anyhow::{bail, Result};

/// A function body: the token range it spans and what it is.
#[derive(Debug, Clone, Copy)]
struct Body {
    /// First token (a block's `{`, or an arrow's expression's first token).
    first: usize,
    /// Last token (the block's `}`, or the expression's last token).
    last: usize,
    /// `{ ... }` or an arrow's expression.
    block: bool,
    /// An arrow function's body (no own `this`, `arguments` or `super`).
    arrow: bool,
    /// Rewritten as async.
    is_async: bool,
}

/// One change to the source: at byte `at`, replace `len` bytes with `text`.
struct Edit {
    at: usize,
    len: usize,
    text: String,
    /// Order among edits at the same byte: closers (0) before openers (1) before
    /// replacements (2); closers of inner constructs first, openers of outer first.
    rank: (u8, i64),
}

/// Rewrites the `async` functions of `src` (`shown` names the file in errors);
/// `None` when the source has none, so a script without `async` costs one search. A
/// top-level `await` is refused (the tests' entry: builds take [`rewrite_module`]).
#[cfg(test)]
pub(crate) fn rewrite(src: &str, shown: &str) -> Result<Option<String>> {
    Ok(rewrite_inner(src, shown, false)?.map(|(out, _, _)| out))
}

/// [`rewrite`] for a whole module: a top-level `await` becomes `yield` too, and the
/// second value says there was one, so that the bundler runs the module's body as a
/// generator the layer drives (`__k6async`), as k6 runs a module with top-level await.
/// The third value is the rewrite's edits, for the columns of stack traces (`colmap`).
pub(crate) fn rewrite_module(
    src: &str,
    shown: &str,
) -> Result<Option<(String, bool, super::colmap::Stage)>> {
    rewrite_inner(src, shown, true)
}

fn rewrite_inner(
    src: &str,
    shown: &str,
    top_level: bool,
) -> Result<Option<(String, bool, super::colmap::Stage)>> {
    if !src.contains("async") && !src.contains("await") {
        return Ok(None);
    }
    let mut awaits_at_top = false;
    let t = Tokens::new(src);
    let at = |i: usize| format!("{shown}:{}", line_of(src, t.toks[i].start));
    let refuse = |i: usize, what: &str| -> anyhow::Error {
        anyhow::anyhow!(
            "{}: {what} is not supported by this host: async functions run as generators driven by the k6 layer (see docs/js.md, \"Async functions and promises\")",
            at(i)
        )
    };
    let mut bodies = function_bodies(&t);
    let mut edits: Vec<Edit> = Vec::new();
    let mut seq: i64 = 0;
    let mut next_seq = || {
        seq += 1;
        seq
    };
    // The async functions, outermost first (token order).
    for i in 0..t.toks.len() {
        if !t.is(i, "async") || after_dot(&t, i) || t.nl(i + 1) {
            continue;
        }
        let n = i + 1;
        // What follows `async`: the body's first token, and whether it is a method or
        // function (its block is wrapped inside) or an arrow (wrapped around).
        let (first, arrow, name) = if t.is(n, "function") {
            if t.is(n + 1, "*") {
                return Err(refuse(i, "an async generator function (`async function*`)"));
            }
            let mut p = n + 1;
            let mut name = None;
            if t.toks.get(p).is_some_and(|x| x.kind == Kind::Word) {
                name = Some(t.text(p));
                p += 1;
            }
            if !t.is(p, "(") {
                continue;
            }
            let Some(close) = t.group_end(p) else {
                bail!("{}: cannot read this async function's parameters", at(i));
            };
            if !t.is(close + 1, "{") {
                continue;
            }
            (close + 1, false, name)
        } else if t.is(n, "*") {
            return Err(refuse(i, "an async generator method (`async *name()`)"));
        } else if t.toks.get(n).is_some_and(|x| x.kind == Kind::Word)
            && t.is(n + 1, "=>")
            && !is_keyword(t.text(n))
        {
            (n + 2, true, None)
        } else if t.is(n, "(") {
            let Some(close) = t.group_end(n) else {
                bail!(
                    "{}: cannot read this async arrow function's parameters",
                    at(i)
                );
            };
            if !t.is(close + 1, "=>") || t.nl(close + 1) {
                continue; // a call of a function named `async`, or a method named so
            }
            (close + 2, true, None)
        } else if let Some(p) = method_params(&t, n) {
            let Some(close) = t.group_end(p) else {
                bail!("{}: cannot read this async method's parameters", at(i));
            };
            if !t.is(close + 1, "{") {
                continue;
            }
            let name = match t.toks[n].kind {
                Kind::Word => Some(t.text(n)),
                Kind::Private => Some(&t.text(n)[1..]),
                _ => None,
            };
            (close + 1, false, name)
        } else {
            continue; // `async` as a name: `async = 1`, `{ async: 1 }`, `async\nf()`
        };
        let Some(b) = bodies.iter_mut().find(|b| b.first == first) else {
            bail!("{}: cannot read this async function's body", at(i));
        };
        b.is_async = true;
        let b = *b;
        // `super` and `arguments` of this function, not of a function nested in it
        // (an arrow nested in it has none of its own).
        let own = |word: &str| {
            (b.first..=b.last).find(|&k| {
                t.is(k, word)
                    && !after_dot(&t, k)
                    && !bodies
                        .iter()
                        .any(|o| !o.arrow && o.first > b.first && o.first < k && k <= o.last)
            })
        };
        let uses_super = match own("super") {
            Some(k) if arrow => {
                return Err(refuse(k, "`super` inside an async arrow function"));
            }
            Some(_) => {
                super_edits(&t, &b, &bodies, &mut edits).map_err(|(k, what)| refuse(k, what))?;
                true
            }
            None => false,
        };
        // A method's `super` is out of a generator's reach: an arrow made in the method
        // reads it for the generator (`super.m(a)` becomes `__k6s("m").call(this, a)`).
        let lend_super = if uses_super {
            " const __k6s = (k) => super[k];"
        } else {
            ""
        };
        let own_arguments = own("arguments");
        let reads_arguments = own_arguments.is_some();
        if arrow && reads_arguments {
            // The arrow's `arguments` is its enclosing function's; at the top level of a
            // module there is none, and the module's wrapper function would lend its own.
            let enclosed = bodies
                .iter()
                .any(|o| !o.arrow && o.first < b.first && o.last >= b.last);
            if !enclosed {
                return Err(refuse(
                    own_arguments.unwrap_or(i),
                    "`arguments` inside an async arrow function at the top level of a module",
                ));
            }
        }
        let args = if reads_arguments { "arguments" } else { "null" };
        // `async` itself: blanked, so columns stay where they were.
        edits.push(Edit {
            at: t.toks[i].start,
            len: 5,
            text: "     ".into(),
            rank: (2, 0),
        });
        let (open_at, close_at, open, close) = match (arrow, b.block) {
            // A named function's generator is a method of that name, so that stack
            // traces name it (a method binds no name inside itself, which a named
            // function expression would, shadowing the function).
            (false, _) => match name.filter(|n| {
                n.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$')
            }) {
                Some(name) => (
                    t.toks[b.first].end,
                    t.toks[b.last].start,
                    format!("{lend_super} return __k6async(this, {args}, {{ *{name}() {{"),
                    format!("}} }}.{name}); "),
                ),
                None => (
                    t.toks[b.first].end,
                    t.toks[b.last].start,
                    format!("{lend_super} return __k6async(this, {args}, function* () {{"),
                    "}); ".to_string(),
                ),
            },
            (true, true) => (
                t.toks[b.first].start,
                t.toks[b.last].end,
                format!("__k6async(this, {args}, function* () "),
                ")".to_string(),
            ),
            (true, false) => (
                t.toks[b.first].start,
                t.toks[b.last].end,
                format!("__k6async(this, {args}, function* () {{ return "),
                " })".to_string(),
            ),
        };
        let s = next_seq();
        edits.push(Edit {
            at: open_at,
            len: 0,
            text: open,
            rank: (1, s),
        });
        edits.push(Edit {
            at: close_at,
            len: 0,
            text: close,
            rank: (0, -s),
        });
    }
    // `for await`, and each `await` in the function it belongs to.
    for k in 0..t.toks.len() {
        if !t.is(k, "await") || after_dot(&t, k) {
            continue;
        }
        if k > 0 && t.is(k - 1, "for") {
            return Err(refuse(k, "`for await` (an async iteration loop)"));
        }
        if t.is(k + 1, ":") || t.is(k + 1, "=>") {
            continue; // a property's name `{ await: 1 }`
        }
        if t.is(k + 1, "(") && t.group_end(k + 1).is_some_and(|c| t.is(c + 1, "{")) {
            continue; // a method named `await`
        }
        let owner = bodies
            .iter()
            .filter(|b| b.first < k && k <= b.last || !b.block && b.first <= k && k <= b.last)
            .max_by_key(|b| b.first);
        match owner {
            Some(b) if b.is_async => {}
            // Inside a function that is not async: a name (in a module, an error that
            // the engine reports).
            Some(_) => continue,
            None => {
                if !starts_operand(&t, k + 1) {
                    continue;
                }
                if !top_level {
                    return Err(refuse(k, "top-level `await`"));
                }
                awaits_at_top = true;
            }
        }
        let Some(end) = unary_end(&t, k + 1) else {
            bail!("{}: cannot read what this `await` waits for", at(k));
        };
        let bare = yield_fits_before(&t, k) && yield_fits_after(&t, end);
        let s = next_seq();
        if !bare {
            // `(` would call the previous line's expression where the original had the
            // line break end its statement.
            let semi = t.nl(k) && k > 0 && t.ends_expression(k - 1);
            edits.push(Edit {
                at: t.toks[k].start,
                len: 0,
                text: if semi { ";(" } else { "(" }.into(),
                rank: (1, s),
            });
        }
        edits.push(Edit {
            at: t.toks[k].start,
            len: 5,
            text: "yield".into(),
            rank: (2, 0),
        });
        // `yield` takes no operand across a line break; `await` does: keep it attached.
        let detached = t.nl(k + 1);
        if detached {
            edits.push(Edit {
                at: t.toks[k].end,
                len: 0,
                text: " (".into(),
                rank: (1, s),
            });
            edits.push(Edit {
                at: t.toks[end].end,
                len: 0,
                text: ")".into(),
                rank: (0, -s - 1_000_000_000),
            });
        }
        if !bare {
            edits.push(Edit {
                at: t.toks[end].end,
                len: 0,
                text: ")".into(),
                rank: (0, -s),
            });
        }
    }
    if edits.is_empty() {
        return Ok(None);
    }
    edits.sort_by_key(|e| (e.at, e.rank));
    let mut out = String::with_capacity(src.len() + edits.len() * 24);
    let mut from = 0;
    for e in &edits {
        out.push_str(&src[from..e.at]);
        out.push_str(&e.text);
        from = e.at + e.len;
    }
    out.push_str(&src[from..]);
    let stage = super::colmap::Stage(edits.iter().map(|e| (e.at, e.len, e.text.len())).collect());
    Ok(Some((out, awaits_at_top, stage)))
}

/// Rewrites the `super` of the async method whose body is `b` to read through
/// `__k6s` (see the caller); what cannot be read so is returned as (token, what).
fn super_edits(
    t: &Tokens,
    b: &Body,
    bodies: &[Body],
    edits: &mut Vec<Edit>,
) -> std::result::Result<(), (usize, &'static str)> {
    let nested = |k: usize| {
        bodies
            .iter()
            .any(|o| !o.arrow && o.first > b.first && o.first < k && k <= o.last)
    };
    let replace = |edits: &mut Vec<Edit>, from: usize, to: usize, text: String| {
        edits.push(Edit {
            at: t.toks[from].start,
            len: t.toks[to].end - t.toks[from].start,
            text,
            rank: (2, 0),
        });
    };
    for k in b.first..=b.last {
        if !t.is(k, "super") || after_dot(t, k) || nested(k) {
            continue;
        }
        let member = if t.is(k + 1, ".") && t.toks.get(k + 2).is_some_and(|x| x.kind == Kind::Word)
        {
            replace(edits, k, k + 2, format!("__k6s({:?})", t.text(k + 2)));
            k + 2
        } else if t.is(k + 1, "[") {
            let Some(close) = t.group_end(k + 1) else {
                return Err((k, "this use of `super` inside an async method"));
            };
            replace(edits, k, k + 1, "__k6s(".into());
            replace(edits, close, close, ")".into());
            close
        } else {
            return Err((k, "this use of `super` inside an async method"));
        };
        let next = t.text(member + 1);
        if t.is(member + 1, "(") {
            let text = if t.is(member + 2, ")") {
                ".call(this"
            } else {
                ".call(this, "
            };
            replace(edits, member + 1, member + 1, text.into());
        } else if matches!(next, "++" | "--")
            || next.ends_with('=') && !matches!(next, "==" | "===" | "!=" | "!==" | "<=" | ">=")
        {
            return Err((k, "assigning to a `super` property inside an async method"));
        }
    }
    Ok(())
}

/// Whether token `i` follows `.` or `?.` (a property's name, not a keyword).
fn after_dot(t: &Tokens, i: usize) -> bool {
    i > 0 && (t.is(i - 1, ".") || t.is(i - 1, "?."))
}

/// For `async NAME(` in a class or an object literal: the index of the `(`.
fn method_params(t: &Tokens, n: usize) -> Option<usize> {
    let tok = t.toks.get(n)?;
    match tok.kind {
        Kind::Word | Kind::Str | Kind::Num | Kind::Private => t.is(n + 1, "(").then_some(n + 1),
        Kind::Punct if t.text(n) == "[" => {
            let close = t.group_end(n)?;
            t.is(close + 1, "(").then_some(close + 1)
        }
        _ => None,
    }
}

/// Every function body: `function (...) {`, a method's `name(...) {`, an arrow's
/// block or expression.
fn function_bodies(t: &Tokens) -> Vec<Body> {
    let mut out = Vec::new();
    for i in 0..t.toks.len() {
        if t.is(i, ")") && t.is(i + 1, "{") {
            let o = t.opener[i];
            // `if (...) {`, `switch (...) {`, `catch (e) {` are statements' blocks.
            let control = o == usize::MAX
                || o > 0
                    && matches!(
                        t.text(o - 1),
                        "if" | "for" | "while" | "with" | "switch" | "catch"
                    );
            if !control {
                if let Some(last) = t.group_end(i + 1) {
                    out.push(Body {
                        first: i + 1,
                        last,
                        block: true,
                        arrow: false,
                        is_async: false,
                    });
                }
            }
        } else if t.is(i, "=>") && i + 1 < t.toks.len() {
            let body = if t.is(i + 1, "{") {
                t.group_end(i + 1).map(|last| (last, true))
            } else {
                Some((expression_end(t, i + 1), false))
            };
            if let Some((last, block)) = body {
                out.push(Body {
                    first: i + 1,
                    last,
                    block,
                    arrow: true,
                    is_async: false,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(src: &str) -> String {
        let out = rewrite(src, "t.js")
            .unwrap()
            .unwrap_or_else(|| src.to_string());
        assert_eq!(
            out.matches('\n').count(),
            src.matches('\n').count(),
            "lines kept: {out}"
        );
        out
    }

    fn refused(src: &str) -> String {
        rewrite(src, "t.js").expect_err("refused").to_string()
    }

    #[test]
    fn a_script_without_async_is_left_alone() {
        assert!(
            rewrite("const a = 1;\nexport default function () {}\n", "t.js")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn declarations_expressions_and_default_exports_become_generators() {
        let out = rw(
            "export default async function (data) {\n  const r = await get(1);\n  return r;\n}\n",
        );
        assert_eq!(
            out,
            "export default       function (data) { return __k6async(this, null, function* () {\n  const r = yield get(1);\n  return r;\n}); }\n"
        );
        let out = rw("const f = async function named() { return arguments[0] + await g(); };");
        assert!(
            out.contains("function named() { return __k6async(this, arguments, { *named() { return arguments[0] + (yield g()); } }.named); }"),
            "{out}"
        );
    }

    #[test]
    fn arrows_with_and_without_parentheses_and_bodies() {
        assert_eq!(
            rw("const a = async x => await x * 2, b = 1;"),
            "const a =       x => __k6async(this, null, function* () { return (yield x) * 2 }), b = 1;"
        );
        assert_eq!(
            rw("p.then(async (r) => { await r; });"),
            "p.then(      (r) => __k6async(this, null, function* () { yield r; }));"
        );
        assert_eq!(
            rw("f(async () => await g(), 2)"),
            "f(      () => __k6async(this, null, function* () { return yield g() }), 2)"
        );
        // The body ends where the line break ends the statement.
        assert_eq!(
            rw("const h = async () => await g()\nh()\n"),
            "const h =       () => __k6async(this, null, function* () { return yield g() })\nh()\n"
        );
    }

    #[test]
    fn methods_in_classes_and_object_literals() {
        let out =
            rw("class A { static async m(a) { return await this.x(a); } async #p() { await 1; } }");
        assert!(out.contains("static       m(a) { return __k6async(this, null, { *m() { return yield this.x(a); } }.m); }"), "{out}");
        assert!(
            out.contains("      #p() { return __k6async(this, null, { *p() { yield 1; } }.p); }"),
            "{out}"
        );
        let out = rw("const o = { async get() { await 1; }, async ['k'](x) { await x; }, async: 1, async() { return async; } };");
        assert!(out.contains("      get() { return __k6async("), "{out}");
        assert!(out.contains("      ['k'](x) { return __k6async("), "{out}");
        assert!(out.contains("async: 1, async() { return async; }"), "{out}");
    }

    #[test]
    fn await_keeps_its_precedence_and_statements_their_ends() {
        assert!(rw("async function f() { return await a + await b; }")
            .contains("return (yield a) + (yield b);"));
        assert!(rw("async function f() { x = !await a.b[c](d)?.e; }")
            .contains("x = !(yield a.b[c](d)?.e);"));
        assert!(
            rw("async function f() { const [a, b] = await Promise.all([p, q]); }")
                .contains("= yield Promise.all([p, q]);")
        );
        // A line break ended the statement before: `(` must not call it.
        assert!(
            rw("async function f() {\n  g()\n  await a + 1\n}").contains("g()\n  ;(yield a) + 1\n")
        );
        // `yield` takes no operand across a line break.
        assert!(
            rw("async function f() { return await\n  g(); }").contains("return yield (\n  g()); }")
        );
        assert!(
            rw("async function f() { const s = `${await a}-${b}`; }").contains("`${yield a}-${b}`")
        );
    }

    #[test]
    fn await_in_text_comments_regexes_and_as_a_name_is_kept() {
        let src = "async function f() {\n  const s = 'await x'; const t = `await ${'await'}`; // await y\n  /* await z */ const r = /await w/g; return o.await + { await: 1 }.await;\n}\nfunction g(await) { return await; }\n";
        let out = rw(src);
        assert_eq!(out.matches("yield").count(), 0, "{out}");
        assert_eq!(
            out.matches("await").count(),
            src.matches("await").count(),
            "{out}"
        );
    }

    #[test]
    fn division_and_template_nesting_do_not_confuse_it() {
        let out = rw("async function f(a) { const x = a / 2 / await g(`${ `${await h()}` }`); }");
        assert!(
            out.contains("a / 2 / (yield g(`${ `${yield h()}` }`));"),
            "{out}"
        );
    }

    #[test]
    fn what_cannot_be_rewritten_is_refused_with_its_line() {
        for (src, what) in [
            ("\nasync function* g() {}", "async generator function"),
            ("class A {\n  async *g() {}\n}", "async generator method"),
            (
                "async function f() {\n  for await (const x of y) {}\n}",
                "`for await`",
            ),
            ("\nconst r = await fetch();\n", "top-level `await`"),
            (
                "class A extends B {\n  m() { return async () => super.m(); }\n}",
                "`super`",
            ),
            (
                "class A extends B {\n  async m() { super.x = 1; }\n}",
                "assigning to a `super`",
            ),
            ("\nconst f = async () => arguments[0];", "`arguments`"),
        ] {
            let err = refused(src);
            assert!(err.contains(what), "{src}: {err}");
            assert!(err.contains("t.js:2"), "{src}: {err}");
        }
        // A method's `super` is read through an arrow made in the method.
        assert_eq!(
            rw("class A extends B { async m(a) { return super.m(a) + super['n']() + await super.o; } }"),
            "class A extends B {       m(a) { const __k6s = (k) => super[k]; return __k6async(this, null, { *m() { return __k6s(\"m\").call(this, a) + __k6s('n').call(this) + (yield __k6s(\"o\")); } }.m); } }"
        );
        // A function nested in the async one has its own `arguments` and `super`.
        let out = rw("const f = async () => { o.warn = function () { return arguments[0]; }; class B extends A { m() { return super.m(); } } };");
        assert!(
            out.contains("__k6async(this, null, function* () {"),
            "{out}"
        );
        // `arguments` of an enclosing function is the arrow's own: kept.
        assert!(rw("function o() { return async () => arguments[0]; }")
            .contains("__k6async(this, arguments, function* () { return arguments[0] })"));
    }
}
