//! One module of the k6 layer tested without writing a script for it, as k6's
//! js/modulestest tests one of its modules: one harness script, built once (the build
//! cache serves every later run), imports the layer's synchronous modules and runs the
//! cases it is handed at run time (`-e CASES=<json>`), each a function body that returns
//! `true` when the module behaved. A case that returns anything else, or throws, fails
//! its check, and the harness prints why (`case NAME: ...`).
//!
//! The cases below check the modules against published vectors (RFC 4648, RFC 1321,
//! FIPS 180-4, RFC 4231) and k6's documented behaviour; each would fail if the module
//! gave another answer.

use crate::support as common;

use common::{host_in as host, output_text as text};
use std::path::Path;

/// The harness: every synchronous module the layer carries, as `m['k6/...']`.
const HARNESS: &str = r#"import * as k6 from 'k6';
import encoding from 'k6/encoding';
import * as k6crypto from 'k6/crypto';
import { SharedArray } from 'k6/data';
import exec from 'k6/execution';
import { parseHTML } from 'k6/html';
import * as metrics from 'k6/metrics';

export const options = { vus: 1, iterations: 1 };

const m = {
  k6,
  'k6/encoding': encoding,
  'k6/crypto': k6crypto,
  'k6/data': { SharedArray },
  'k6/execution': exec,
  'k6/html': { parseHTML },
  'k6/metrics': metrics,
};

const data = new SharedArray('harness', () => [{ n: 1 }, { n: 2 }, { n: 3 }]);

export default function () {
  const cases = JSON.parse(__ENV.CASES);
  for (const [name, body] of cases) {
    let ok = false;
    let why = 'returned something other than true';
    try {
      ok = new Function('m', 'data', body)(m, data) === true;
    } catch (e) {
      why = 'threw ' + String(e);
    }
    if (!ok) console.error(`case ${name}: ${why}`);
    k6.check(null, { [name]: () => ok });
  }
}
"#;

/// Runs `cases` (name, function body) in the harness, in `dir`; returns each case's
/// name and whether it passed, in order, and the run's stderr.
async fn run_cases(dir: &Path, cases: &[(&str, &str)]) -> (Vec<(String, bool)>, String) {
    let script = dir.join("harness.js");
    if !script.exists() {
        std::fs::write(&script, HARNESS).unwrap();
    }
    let out = dir.join(format!("results-{}", cases.len()));
    let json = serde_json::to_string(cases).unwrap();
    let output = host(
        dir,
        [
            "run".to_string(),
            "harness.js".into(),
            "-e".into(),
            format!("CASES={json}"),
            "--out".into(),
            out.to_str().unwrap().into(),
            "--quiet".into(),
        ],
    )
    .await;
    let stderr = text(&output);
    // A run that never started (its build failed) leaves no results folder: say why.
    assert!(out.exists(), "the harness did not run: {stderr}");
    let summary = common::summary_json(&common::only_results_dir(&out));
    let checks = summary["checks"].as_array().cloned().unwrap_or_default();
    let passed = cases
        .iter()
        .map(|(name, _)| {
            let check = checks.iter().find(|c| c["name"] == *name);
            let ok = check.is_some_and(|c| c["passes"] == 1 && c["fails"] == 0);
            (name.to_string(), ok)
        })
        .collect();
    (passed, stderr)
}

/// Asserts every case passed, naming those that did not with the harness's reason.
fn assert_all_passed(results: &[(String, bool)], stderr: &str) {
    let failed: Vec<&str> = results
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(failed.is_empty(), "cases failed: {failed:?}\n{stderr}");
}

/// The modules' answers to published vectors and k6's documented behaviour.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_module_answers_as_k6_documents_it() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "encoding: b64encode of RFC 4648's vectors",
            "const e = m['k6/encoding']; return ['', 'f', 'fo', 'foo', 'foob', 'fooba', 'foobar']
               .map((s) => e.b64encode(s)).join(',') === ',Zg==,Zm8=,Zm9v,Zm9vYg==,Zm9vYmE=,Zm9vYmFy';",
        ),
        (
            "encoding: rawurl and url alphabets",
            "const e = m['k6/encoding']; return e.b64encode('\\xfb\\xff', 'rawurl') === 'w7vDvw'
               && e.b64decode('Zm9vYg', 'rawstd', 's') === 'foob';",
        ),
        (
            "crypto: md5 of RFC 1321's abc",
            "return m['k6/crypto'].md5('abc', 'hex') === '900150983cd24fb0d6963f7d28e17f72';",
        ),
        (
            "crypto: sha256 of FIPS 180-4's abc",
            "return m['k6/crypto'].sha256('abc', 'hex')
               === 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';",
        ),
        (
            "crypto: HMAC-SHA-256 of RFC 4231 case 2",
            "return m['k6/crypto'].hmac('sha256', 'Jefe', 'what do ya want for nothing?', 'hex')
               === '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843';",
        ),
        (
            "crypto: randomBytes gives fresh bytes of the length asked",
            "const a = new Uint8Array(m['k6/crypto'].randomBytes(16));
             const b = new Uint8Array(m['k6/crypto'].randomBytes(16));
             return a.length === 16 && a.some((x, i) => x !== b[i]);",
        ),
        (
            "data: a SharedArray reads as an array and refuses writes",
            "let threw = false; try { data[0] = 9; data.push(4); } catch (e) { threw = true; }
             return data.length === 3 && data[1].n === 2 && data[0].n === 1
               && JSON.stringify(data.map((r) => r.n)) === '[1,2,3]' && (threw || data.length === 3);",
        ),
        (
            "html: parseHTML finds, reads attributes and text",
            "const doc = m['k6/html'].parseHTML('<ul><li class=\"a\" data-x=\"1\">one</li><li>two</li></ul>');
             return doc.find('li').size() === 2 && doc.find('li.a').attr('data-x') === '1'
               && doc.find('li').last().text() === 'two';",
        ),
        (
            "execution: the VU and iteration as k6 numbers them",
            "const e = m['k6/execution']; return e.vu.idInTest === 1 && e.vu.iterationInScenario === 0
               && e.scenario.name === 'default';",
        ),
        (
            "metrics: a name k6 refuses throws",
            "try { new (m['k6/metrics'].Counter)('bad name!'); return false; } catch (e) { return true; }",
        ),
    ];
    let (results, stderr) = run_cases(dir.path(), cases).await;
    assert_eq!(results.len(), cases.len());
    assert_all_passed(&results, &stderr);
}

/// The harness itself fails a case that is wrong: a false answer and a throw each fail
/// their check and are named with why, while the others still pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_answer_fails_its_case_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "right",
            "return m['k6/encoding'].b64encode('f') === 'Zg==';",
        ),
        (
            "wrong",
            "return m['k6/encoding'].b64encode('f') === 'Zh==';",
        ),
        ("throws", "return m['k6/encoding'].nothing();"),
    ];
    let (results, stderr) = run_cases(dir.path(), cases).await;
    assert_eq!(
        results,
        vec![
            ("right".to_string(), true),
            ("wrong".to_string(), false),
            ("throws".to_string(), false)
        ],
        "{stderr}"
    );
    assert!(
        stderr.contains("case wrong: returned something other than true"),
        "{stderr}"
    );
    assert!(stderr.contains("case throws: threw"), "{stderr}");
}
