//! Stack traces as k6 gives them, side by side with k6 1.1.0: a thrown string (no
//! Error) reports the stack through the imported file where it was thrown, and a
//! bundle's source map (inline `data:` URL, or a file beside it) is honoured, so a
//! frame names the original source's file and line; the columns of a rewritten line
//! (a minified bundle's imports and exports) are the file's own.

use crate::support as common;

use common::k6::k6_in;
use common::{host_in as host, output_text as text};

const LIB: &str = "export function boom() {\n  // a comment\n  throw 'x';\n}\nexport function objects() {\n  throw { code: 7 };\n}\n";

const THROWS: &str = r#"import { boom, objects } from './lib.js';
export const options = { iterations: 1 };
export default function () {
  try { objects(); } catch (e) { console.log('CAUGHT ' + JSON.stringify(e) + ' ' + (e.code === 7)); }
  boom();
}
"#;

/// The original of the bundle below (what its map points at).
const APP: &str = r#"// The original source, as its author wrote it.
import { check } from 'k6';

export const options = { iterations: 1 };

function inner(n) {
  if (n > 1) {
    throw new Error('mapped ' + n);
  }
  return n;
}

export default function () {
  check(inner(1), { one: (v) => v === 1 });
  inner(2);
}
"#;

/// APP minified onto one line after a banner, as a bundler writes it (made by a
/// stand-in bundler: every token of APP mapped to its place).
const BUNDLE: &str = r#"import { check } from 'k6';export const options = { iterations: 1 };function inner(n) { if (n > 1) { throw new Error('mapped ' + n);} return n;} export default function () { check(inner(1), { one: (v) => v === 1 });inner(2);}"#;

const MAP: &str = r#"{"version": 3, "file": "bundle.js", "sources": ["../src/app.js"], "names": [], "mappings": ";AACA,OAAO,EAAE,MAAM,EAAE,KAAK,KAEtB,OAAO,MAAM,QAAQ,EAAE,EAAE,YAAY,EAAE,EAEvC,SAAS,SAAS,EAChB,GAAG,GAAG,EAAE,GAAG,EACT,MAAM,IAAI,cAAc,EAAE,EAAE,GAC9B,EACA,OAAO,EACT,EAEA,OAAO,QAAQ,SAAS,GAAG,EACzB,gBAAgB,EAAE,KAAK,IAAI,GAAG,EAAE,IAAI,EAAE,GACtC,SACF"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thrown_string_has_its_stack_through_the_imported_file_as_in_k6() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.js"), LIB).unwrap();
    std::fs::write(dir.path().join("throws.js"), THROWS).unwrap();
    let h = host(dir.path(), ["run", "throws.js", "-q"]).await;
    let k = k6_in(dir.path(), vec!["throws.js".into(), "-q".into()]).await;
    let (hs, ks) = (
        String::from_utf8_lossy(&h.stderr).into_owned(),
        String::from_utf8_lossy(&k.stderr).replace("\\\"", "\""),
    );
    // lib.js line 3 column 3 throws; throws.js line 5 called it.
    for (who, err) in [("k6", &ks), ("host", &hs)] {
        assert!(err.contains("lib.js:3:3"), "{who}: {err}");
        assert!(err.contains("throws.js:5:"), "{who}: {err}");
        // The object thrown and caught is the script's own, unchanged.
        assert!(err.contains("CAUGHT {\"code\":7} true"), "{who}: {err}");
    }
    assert!(hs.contains("uncaught x"), "{}", text(&h));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundles_source_map_names_the_original_lines_as_in_k6() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("src")).unwrap();
    std::fs::create_dir_all(d.join("dist")).unwrap();
    std::fs::write(d.join("src/app.js"), APP).unwrap();
    std::fs::write(d.join("dist/beside.js.map"), MAP).unwrap();
    std::fs::write(
        d.join("dist/beside.js"),
        format!("/*! bundle */\n{BUNDLE}\n//# sourceMappingURL=beside.js.map\n"),
    )
    .unwrap();
    let inline = base64::engine::general_purpose::STANDARD.encode(MAP);
    std::fs::write(
        d.join("dist/inline.js"),
        format!("/*! bundle */\n{BUNDLE}\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,{inline}\n"),
    )
    .unwrap();
    for bundle in ["dist/beside.js", "dist/inline.js"] {
        let h = host(d, ["run", bundle, "-q"]).await;
        let k = k6_in(d, vec![bundle.into(), "-q".into()]).await;
        let (hs, ks) = (
            String::from_utf8_lossy(&h.stderr),
            String::from_utf8_lossy(&k.stderr),
        );
        // inner() throws at src/app.js line 8 (the `new` at column 10 in k6), called
        // from line 15.
        for (who, err) in [("k6", &ks), ("host", &hs)] {
            assert!(err.contains("mapped 2"), "{who} {bundle}: {err}");
            assert!(err.contains("src/app.js:8:"), "{who} {bundle}: {err}");
            assert!(err.contains("src/app.js:15:"), "{who} {bundle}: {err}");
        }
        assert!(
            !hs.contains("beside.js:2") && !hs.contains("inline.js:2"),
            "{}",
            text(&h)
        );
    }
    // A map the bundle names but that is not there: warned, and the bundle's own lines.
    std::fs::write(
        d.join("dist/nomap.js"),
        format!("/*! bundle */\n{BUNDLE}\n//# sourceMappingURL=nomap.js.map\n"),
    )
    .unwrap();
    let h = host(d, ["run", "dist/nomap.js", "-q"]).await;
    let hs = String::from_utf8_lossy(&h.stderr);
    assert!(hs.contains("its source map is not used"), "{}", text(&h));
    assert!(hs.contains("nomap.js:2:"), "{}", text(&h));
}

/// A minified line whose import and `throw` the build rewrote: the column in the
/// stack is the file's own, where k6 gives it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_of_a_rewritten_line_are_the_files_own() {
    let dir = tempfile::tempdir().unwrap();
    let line = "import{check as c}from\"k6\";export const options={iterations:1};export default function(){c(1,{a:()=>true});throw\"col\"}\n";
    std::fs::write(dir.path().join("min.js"), line).unwrap();
    let h = host(dir.path(), ["run", "min.js", "-q"]).await;
    let k = k6_in(dir.path(), vec!["min.js".into(), "-q".into()]).await;
    let col = line.find("throw").unwrap() + 1;
    let want = format!("min.js:1:{col}");
    for (who, out) in [("k6", &k), ("host", &h)] {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&want), "{who}: want {want}: {err}");
    }
}
