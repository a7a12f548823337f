//! A script's component imports only the host interfaces its module can reach (issue
//! #53, host/src/author/js/prune.rs): a script importing no k6/browser, k6/net/grpc,
//! k6/http, k6/html, k6/ws or k6/experimental/redis builds a component without the
//! `browser`, `grpc` and `sockets` interfaces, with nothing of `http`, `html` and
//! `websocket` but the drops of their resources, and still runs; a script importing
//! k6/html keeps `html`; and code that reaches a cut interface anyway (a computed name through
//! `eval`) fails its iteration with an error naming the cut function, never an answer.

use crate::support as common;

use common::output_text as text;
use std::collections::BTreeMap;
use std::path::Path;
use wit_parser::decoding::{decode, DecodedWasm};
use wit_parser::WorldKey;

/// The functions each `loadtest:` interface of the component at `path` imports.
fn imported_functions(path: &Path) -> BTreeMap<String, Vec<String>> {
    let bytes = std::fs::read(path).unwrap();
    let DecodedWasm::Component(resolve, world) = decode(&bytes).unwrap() else {
        panic!("{} is not a component", path.display());
    };
    let mut out = BTreeMap::new();
    for key in resolve.worlds[world].imports.keys() {
        let name = resolve.name_world_key(key);
        if !name.starts_with("loadtest:") {
            continue;
        }
        let WorldKey::Interface(id) = key else {
            continue;
        };
        let functions = resolve.interfaces[*id].functions.keys().cloned().collect();
        out.insert(name, functions);
    }
    out
}

/// `host build script.js` in `dir`; the built component's imported functions.
async fn build(dir: &Path, script: &str) -> BTreeMap<String, Vec<String>> {
    std::fs::write(dir.join("script.js"), script).unwrap();
    let built = common::host_in(dir, ["build", "script.js"]).await;
    assert!(built.status.success(), "{}", text(&built));
    imported_functions(&dir.join("script.wasm"))
}

/// `host run script.js` in `dir` (built there by [`build`]): its output and summary.json.
async fn run_built(dir: &Path) -> (std::process::Output, serde_json::Value) {
    let out = dir.join("results");
    let ran = common::host_in(
        dir,
        [
            "run",
            "script.js",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
    )
    .await;
    let summary = common::summary_json(&common::only_results_dir(&out));
    (ran, summary)
}

/// The interface of `imports` whose name starts with `prefix`, if imported.
fn interface<'a>(
    imports: &'a BTreeMap<String, Vec<String>>,
    prefix: &str,
) -> Option<&'a Vec<String>> {
    imports
        .iter()
        .find(|(name, _)| name.starts_with(prefix))
        .map(|(_, f)| f)
}

const IDLE: &str = r#"
import { check, sleep } from 'k6';

export const options = { vus: 2, iterations: 4 };

export default function () {
  sleep(0.01);
  check(__VU, { 'a VU of two': (v) => v >= 1 && v <= 2 });
}
"#;

const HTML: &str = r#"
import { check } from 'k6';
import { parseHTML } from 'k6/html';

export const options = { vus: 1, iterations: 2 };

export default function () {
  const doc = parseHTML('<p class="a">one</p><p class="a">two</p>');
  check(doc, { 'two paragraphs': (d) => d.find('p.a').size() === 2 });
}
"#;

/// The script reaches the browser interface's binding through `eval`, by a name the
/// build cannot read in its text.
const REACHES_CUT: &str = r#"
import { check } from 'k6';

export const options = { vus: 1, iterations: 1 };

export default function () {
  const name = ['host', 'Browser'].join('');
  const browser = eval(name);
  browser.Context.open({ extraHttpHeaders: [] });
  check(null, { 'reached the cut function': () => true });
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_imports_only_the_interfaces_it_reaches_and_still_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let idle = build(tmp.path(), IDLE).await;
    for cut in [
        "loadtest:scenario/browser@",
        "loadtest:scenario/grpc@",
        "loadtest:scenario/sockets@",
        "loadtest:k6-layer/redis@",
    ] {
        assert!(
            interface(&idle, cut).is_none(),
            "{cut} is imported: {idle:?}"
        );
    }
    // A cut interface's resource that a kept one uses keeps its drop, and only that:
    // the layer's socket events and responses (in every layer) name k6/ws's sockets,
    // k6/http's prepared requests and k6/html's documents.
    for only_drops in [
        "loadtest:scenario/websocket@",
        "loadtest:scenario/http@",
        "loadtest:scenario/html@",
    ] {
        if let Some(f) = interface(&idle, only_drops) {
            assert!(
                f.iter().all(|f| f.starts_with("[resource-drop]")),
                "{only_drops} keeps more than its drops: {f:?}"
            );
        }
    }
    // What every script's layer uses stays: the VU's own calls, checks.
    for kept in ["loadtest:scenario/vu@", "loadtest:k6-layer/checks@"] {
        assert!(
            interface(&idle, kept).is_some_and(|f| !f.is_empty()),
            "{kept}: {idle:?}"
        );
    }
    let (ran, summary) = run_built(tmp.path()).await;
    assert!(ran.status.success(), "{}", text(&ran));
    assert_eq!(
        common::check_counts(&summary, "a VU of two"),
        (4, 0),
        "{summary}"
    );

    let html_dir = tempfile::tempdir().unwrap();
    let html = build(html_dir.path(), HTML).await;
    assert!(
        interface(&html, "loadtest:scenario/html@")
            .is_some_and(|f| f.iter().any(|f| !f.starts_with("[resource-drop]"))),
        "{html:?}"
    );
    assert!(
        interface(&html, "loadtest:scenario/browser@").is_none(),
        "{html:?}"
    );
    let (ran, summary) = run_built(html_dir.path()).await;
    assert!(ran.status.success(), "{}", text(&ran));
    assert_eq!(
        common::check_counts(&summary, "two paragraphs"),
        (2, 0),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_reaching_a_cut_interface_fails_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let imports = build(tmp.path(), REACHES_CUT).await;
    assert!(
        interface(&imports, "loadtest:scenario/browser@").is_none(),
        "{imports:?}"
    );
    let (ran, summary) = run_built(tmp.path()).await;
    assert_eq!(
        summary["checks"].as_array().map_or(0, Vec::len),
        0,
        "the cut function answered: {summary}\n{}",
        text(&ran)
    );
    let said = format!("{}\n{}", summary["plugin_errors"], text(&ran));
    assert!(
        said.contains(
            "the script called loadtest:scenario/browser@0.3.10#[static]context.open, a host \
             function its build left out"
        ),
        "{said}"
    );
}
