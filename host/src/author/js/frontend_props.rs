//! Property tests of the JavaScript front end (tokens.rs, scan.rs, exprs.rs, asyncs.rs,
//! bundle.rs): on generated scripts, on the repository's real ones and on real ones cut
//! short, none of them panics (a bad script is an error, never a crash of the host),
//! and the async rewrite is stable (rewriting its own output changes nothing).

use super::{asyncs, bundle, exprs, scan, tokens::Tokens};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Pieces of JavaScript that exercise what the front end tells apart: strings,
/// templates, regexes against division, comments, async forms, imports, brackets.
const PIECES: &[&str] = &[
    "import http from 'k6/http';\n",
    "import { sleep } from 'k6';\n",
    "export default function () {",
    "export const options = { vus: 1 };\n",
    "async function f(a) {",
    "const g = async (x) => {",
    "async () => await x",
    "await ",
    "yield ",
    "return ",
    "}",
    "{",
    "(",
    ")",
    "[",
    "]",
    ";\n",
    "\n",
    " / 2 / ",
    "/ab+c/g",
    "x = a\n/re/.test(s)",
    "'str\\'ing'",
    "\"dq\"",
    "`t ${a + `in ${b}`} x`",
    "`",
    "${",
    "// line comment\n",
    "/* block */",
    "/*",
    "if (a) /x/.exec(b);",
    "http.get('http://127.0.0.1/');",
    "open('./data.json')",
    "require('./m.js')",
    "class C extends D { async m() { super.m(); } }",
    "for await (const x of y) {}",
    "a?.b ?? c",
    "x => x",
    "=> ",
    "\\",
    "é",
    "\u{2028}",
    "0x1F",
    "1e3",
    ".5",
];

/// A script made of `PIECES` in any order (most are not valid JavaScript).
fn script() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|p| p.concat())
}

/// The repository's JavaScript files: k6 scripts the host runs in benches and tests.
fn real_scripts() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    let mut dirs = vec![root.join("bench"), root.join("host/tests/fixtures")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() && !p.ends_with("target") {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "js") {
                if let Ok(text) = std::fs::read_to_string(&p) {
                    out.push((p, text));
                }
            }
        }
    }
    out.sort();
    out
}

/// Runs every part of the front end over `src`; any panic fails the property.
fn front_end(src: &str) {
    let t = Tokens::new(src);
    for i in 0..t.toks.len() {
        let _ = t.group_end(i);
        let _ = exprs::expression_end(&t, i);
        let _ = exprs::unary_end(&t, i);
        let _ = exprs::yield_fits_before(&t, i);
    }
    let _ = scan::scan(src);
    if let Ok(Some(out)) = asyncs::rewrite(src, "gen.js") {
        rewrite_is_stable(&out, || !is_javascript(src));
    }
}

/// Rewriting the rewrite's output changes nothing: it has no `async` left. A second
/// rewrite may refuse the output of a first one only where `refusal_allowed` says so:
/// when the input was not JavaScript. In such text a `/` after the `(yield x)` the
/// rewrite puts in can read as division where it read as a regex before, so a form the
/// first pass saw inside a regex or a comment (`for await`) comes out in the open.
fn rewrite_is_stable(out: &str, refusal_allowed: impl FnOnce() -> bool) {
    match asyncs::rewrite(out, "gen.js") {
        Ok(None) => {}
        Ok(Some(again)) => assert_eq!(again, out, "a second rewrite changed the script"),
        Err(_) if refusal_allowed() => {}
        Err(e) => panic!("the rewrite's own output is refused: {e:#}\n{out}"),
    }
}

/// Whether `src` parses as a JavaScript module (oxc's parser, as TypeScript scripts
/// are read), so that the rewrite's promises hold for it.
fn is_javascript(src: &str) -> bool {
    let allocator = oxc_allocator::Allocator::default();
    let parsed = oxc_parser::Parser::new(&allocator, src, oxc_span::SourceType::mjs()).parse();
    parsed.diagnostics.errors().next().is_none() && !parsed.panicked
}

/// Bundles `src` as the entry script of a fresh folder; an error is fine, a panic not.
fn bundles(src: &str) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let entry = dir.path().join("script.js");
    std::fs::write(&entry, src).expect("the script is written");
    let _ = bundle::bundle(&entry, &BTreeMap::new());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_front_end_never_panics_on_generated_scripts(src in script()) {
        front_end(&src);
    }

    #[test]
    fn the_bundler_never_panics_on_generated_scripts(src in script()) {
        bundles(&src);
    }

    #[test]
    fn real_scripts_cut_anywhere_never_panic(pick in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>()) {
        let scripts = real_scripts();
        let (_, text) = &scripts[pick.index(scripts.len())];
        let mut at = cut.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        front_end(&text[..at]);
    }
}

/// Every real script goes through the whole front end and the bundler; the async ones
/// rewrite stably.
#[test]
fn real_scripts_pass_the_front_end() {
    let scripts = real_scripts();
    assert!(scripts.len() >= 10, "only {} scripts found", scripts.len());
    let mut rewritten = 0;
    for (path, text) in &scripts {
        front_end(text);
        if let Ok(Some(out)) = asyncs::rewrite(text, &path.display().to_string()) {
            rewritten += 1;
            rewrite_is_stable(&out, || false);
        }
        let _ = bundle::bundle(path, &BTreeMap::new());
    }
    assert!(
        rewritten > 0,
        "no real script has async functions to rewrite"
    );
}
