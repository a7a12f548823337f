//! A hostile recording: its page title, a JSON key, an input's name, a header's name
//! and a method hold line breaks (LF, CR, U+2028) followed by code. Issue 49 item 1
//! reproduced: written raw into comments, each became a statement of the generated
//! script.js, app.py or lib.rs. Each generated file is lexed by a parser of its
//! language (the bundler's tokenizer, Python's own `tokenize` and `ast`, proc-macro2's
//! Rust lexer), and no marker identifier may appear as code.

use super::*;
use serde_json::json;

/// The HAR: the first response hands out three values (a JSON field whose key is the
/// payload, a header whose name is, a hidden input whose name is) that the second and
/// third requests send back, so that correlation describes each in a comment.
fn hostile_har() -> String {
    let key = "k\nPWNED1(open('/etc/hostname'));\n        PWNED2 = open('/etc/hostname')\n//";
    let title = "Home\nconst PWNED3: &str = include_str!(\"/etc/hostname\");\n///\u{2028}PWNED4();\r\nPWNED5 = 1\n";
    let header = "X-Tok\r\nPWNED6(); */ PWNED7";
    let input = "n\u{2029}PWNED8()\u{2028}\n        PWNED9 = 2\n";
    let method = "post\n*/PWNED10()//";
    let mut body = serde_json::Map::new();
    body.insert(key.into(), json!("tok-4f9a8b7c6d5e4f3a2b1c"));
    json!({"log": {
        "pages": [{"id": "p1", "title": title}],
        "entries": [
            {"pageref": "p1", "startedDateTime": "2024-05-01T10:00:00Z", "_resourceType": "xhr",
             "request": {"method": "GET", "url": "http://a.test/app"},
             "response": {"status": 200,
                "headers": [{"name": header, "value": "hdr-9f8e7d6c5b4a3f2e1d0c"}],
                "content": {"mimeType": "application/json", "text": serde_json::Value::Object(body).to_string()}}},
            {"pageref": "p1", "startedDateTime": "2024-05-01T10:00:01Z", "_resourceType": "xhr",
             "request": {"method": "POST", "url": "http://a.test/api/next",
                "postData": {"mimeType": "application/json",
                    "text": "{\"t\":\"tok-4f9a8b7c6d5e4f3a2b1c\",\"h\":\"hdr-9f8e7d6c5b4a3f2e1d0c\"}"}},
             "response": {"status": 200, "content": {"mimeType": "text/html",
                "text": format!("<html><input type=\"hidden\" name=\"{input}\" value=\"inp-1a2b3c4d5e6f7a8b9c\"></html>")}}},
            {"pageref": "p1", "startedDateTime": "2024-05-01T10:00:02Z", "_resourceType": "xhr",
             "request": {"method": method, "url": "http://a.test/api/last",
                "postData": {"mimeType": "application/json", "text": "{\"x\":\"inp-1a2b3c4d5e6f7a8b9c\"}"}},
             "response": {"status": 200}}
        ]}})
    .to_string()
}

const MARKERS: usize = 10;

fn plan() -> plan::Plan {
    let rec = model::parse(&hostile_har()).unwrap();
    let plan = plan_all(&rec, &plan::Options::default());
    // The attack's path is taken: each hostile name became a rule's description.
    let described: Vec<String> = plan.rules.iter().map(|r| r.source.describe()).collect();
    assert_eq!(plan.rules.len(), 3, "{described:?}");
    plan
}

/// The markers that occur in `text` at all (as code, or inside comments and strings).
fn mentioned(text: &str) -> Vec<usize> {
    (1..=MARKERS)
        .filter(|n| {
            let m = format!("PWNED{n}");
            text.match_indices(&m)
                .any(|(at, _)| !text[at + m.len()..].starts_with(|c: char| c.is_ascii_digit()))
        })
        .collect()
}

/// No raw character a language takes as a line end, where a lexer here might not.
fn no_raw_line_ends(lang: &str, text: &str) {
    for c in ['\r', '\u{2028}', '\u{2029}', '\u{85}'] {
        assert!(!text.contains(c), "{lang}: a raw {c:?} in\n{text}");
    }
}

#[test]
fn a_hostile_recording_writes_no_statement_into_the_k6_script() {
    let plan = plan();
    let js = js::script(&plan, "t", "t.har");
    // Every payload is written (in comments or literals), none as code.
    assert_eq!(mentioned(&js).len(), MARKERS, "{js}");
    let toks = crate::author::js::tokens::Tokens::new(&js);
    let code: Vec<&str> = (0..toks.toks.len())
        .filter(|&i| toks.toks[i].kind == crate::author::js::tokens::Kind::Word)
        .map(|i| toks.text(i))
        .filter(|w| w.starts_with("PWNED"))
        .collect();
    assert!(code.is_empty(), "injected code {code:?} in\n{js}");
    no_raw_line_ends("script.js", &js);
}

#[test]
fn a_hostile_recording_writes_no_statement_into_the_python_plugin() {
    let plan = plan();
    let py = py::app_py(&plan, "t", "t.har", &default_config(&plan));
    assert_eq!(mentioned(&py).len(), MARKERS, "{py}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.py");
    std::fs::write(&path, &py).unwrap();
    // Python's own parser: the file must parse, and no marker be a name token.
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import ast, io, sys, tokenize\n\
             src = open(sys.argv[1]).read()\n\
             ast.parse(src)\n\
             names = [t.string for t in tokenize.generate_tokens(io.StringIO(src).readline)\n\
                      if t.type == tokenize.NAME and t.string.startswith('PWNED')]\n\
             print(' '.join(names))",
        )
        .arg(&path)
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim().is_empty(),
        "app.py: {} {stdout}\n{}\n{py}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    no_raw_line_ends("app.py", &py);
}

#[test]
fn a_hostile_recording_writes_no_item_into_the_rust_plugin() {
    let plan = plan();
    let rs = rust::lib_rs(&plan, "t", "t.har");
    assert_eq!(mentioned(&rs).len(), MARKERS, "{rs}");
    // Rust's lexer (doc comments become `#[doc = "..."]` literals): no marker is an
    // identifier.
    let stream: proc_macro2::TokenStream = rs.parse().unwrap_or_else(|e| panic!("{e:?}\n{rs}"));
    fn idents(s: proc_macro2::TokenStream, out: &mut Vec<String>) {
        for t in s {
            match t {
                proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
                proc_macro2::TokenTree::Group(g) => idents(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut all = Vec::new();
    idents(stream, &mut all);
    assert!(all.iter().any(|i| i == "Carried"), "lexed: {all:?}");
    let code: Vec<&String> = all.iter().filter(|i| i.starts_with("PWNED")).collect();
    assert!(code.is_empty(), "injected code {code:?} in\n{rs}");
    no_raw_line_ends("lib.rs", &rs);
}
