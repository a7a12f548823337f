//! The k6 layer's JavaScript: one file per k6 module and per part of the layer's own
//! machinery, joined in the order of [`FILES`] into the one scope `host build` puts
//! before the script's bundle. The files are for their authors; at run time the layer
//! is one module as before, so a function of one file calls another file's by name and
//! the snapshot holds one compiled layer. A file may use what an earlier file declares
//! at its top level (a `const` used before its file ran throws), so a new k6 module
//! goes after the files it uses and before `modules.js`, which names every module.
//!
//! # Only the modules a script imports
//!
//! A script's layer ([`text_for`]) holds the files of [`CORE`] and those of the k6
//! modules its files import ([`MODULE_FILES`]), with what those use ([`NEEDS`]); the
//! other files are left out of the join, so their functions, classes and module objects
//! are never made: not in the build's snapshot (whose pages each VU of today's route
//! copies as QuickJS's reference counts and cycle collector write them), not in each
//! VU's context of several VUs per instance (issue #53: the layer's own objects were
//! what bounded a VU's memory there, 1,272 objects a context). `modules.js` makes a
//! module's object on its first import, so it names nothing of a module left out.
//!
//! The graph of the files, as the files use each other's top-level names (a test,
//! `every_use_across_files_is_in_the_graph`, reads the files and fails on a use the
//! tables below do not cover):
//!
//! ```text
//! CORE, in every layer: prelude, text, encoding-text (TextEncoder, TextDecoder),
//!   state (console, __ENV, __VU), k6, http-params, webcrypto (crypto), event-loop
//!   (the main loop, the timers), async (Promise), modules, bundle, options, export,
//!   handle-summary
//! k6/http           → http.js → http-file, http-request, http-response, request-cache,
//!                     localjar, http-digest;  http-request → http-file;
//!                     http-response → http-request, html (Response.html());
//!                     request-cache, localjar → http-response;
//!                     http-digest → http-response, crypto
//! k6/html           → html → http (a form's submit and a link's click send requests)
//! k6/metrics        → metrics
//! k6/execution      → execution
//! k6/data           → data-encoding
//! k6/crypto         → crypto
//! k6-summary        → summary-jslib
//! k6/ws             → ws
//! k6/websockets, k6/experimental/websockets → websockets → ws (its connect and errors)
//! k6/net/grpc       → grpc → ws (its errors are k6/ws's)
//! k6/experimental/redis, k6/x/redis → redis → metrics (its series ids)
//! k6/experimental/fs, k6/experimental/csv → fs-csv → data-encoding (a CSV's records
//!                     are a SharedArray)
//! k6/experimental/streams → streams
//! k6/secrets        → secrets
//! k6/browser        → browser, browser-events, browser-handles (each uses the others)
//! k6, k6/encoding, k6/timers: CORE only
//! ```
//!
//! Two CORE files reach a file outside CORE whatever the script imports: `async.js`
//! adds `asyncRequest` to k6/http's object at its top level, and every call ends with
//! `endCall()` (`http-response.js`: it releases the call's responses). When those files
//! are left out, [`STUBS`] puts in their place the name each needs (an empty object, a
//! function that does nothing). Other uses from CORE into a module's files run only
//! once that module's objects exist (`async.js`'s `asyncRequest` and `flushAsync` send
//! k6/http's requests): [`THROUGH`] lists them, each with why. A module imported by a script that this table lacks gets the whole layer.
//!
//! The stack-trace mapping of the bundle (`mapStack` in bundle.js over `BUNDLE.lines`)
//! counts the joined layer's lines, so a user's error still points at the user's
//! file; [`origin`] says which layer file and line a line of the joined layer is.

use std::collections::BTreeSet;
/// The layer's files, in the order they are joined: each one's name and text. Adding a
/// k6 module is adding its file here, its case in `modules.js`, its line in
/// [`MODULE_FILES`] and, when it uses files outside [`CORE`], its line in [`NEEDS`] (the
/// graph's test names a use the tables miss).
pub(crate) const FILES: &[(&str, &str)] = &[
    // The header and the host interfaces the layer imports.
    ("prelude.js", include_str!("prelude.js")),
    // UTF-8 and base64 over byte arrays.
    ("text.js", include_str!("text.js")),
    // The TextEncoder and TextDecoder globals.
    ("encoding-text.js", include_str!("encoding-text.js")),
    // The VU's info, group path and tags, console.
    ("state.js", include_str!("state.js")),
    // k6: check, group, sleep, fail, randomSeed and the layer's Math.random.
    ("k6.js", include_str!("k6.js")),
    // k6/metrics.
    ("metrics.js", include_str!("metrics.js")),
    // k6/http: header names, durations, form bodies.
    ("http-params.js", include_str!("http-params.js")),
    // k6/http: http.file and multipart bodies.
    ("http-file.js", include_str!("http-file.js")),
    // k6/http: the response callback and a request's record for the host.
    ("http-request.js", include_str!("http-request.js")),
    // k6/http: responses held on the host by slot, and the Response class.
    ("http-response.js", include_str!("http-response.js")),
    // k6/http: repeated requests sent by prepared handle, found without rebuilding.
    ("request-cache.js", include_str!("request-cache.js")),
    // k6/http: jars of the script's own (`new http.CookieJar()`).
    ("localjar.js", include_str!("localjar.js")),
    // k6/http: request, batch, the cookie jar, the module object.
    ("http.js", include_str!("http.js")),
    // k6/execution.
    ("execution.js", include_str!("execution.js")),
    // k6/data (SharedArray) and k6/encoding.
    ("data-encoding.js", include_str!("data-encoding.js")),
    // k6/crypto: hashes, HMACs and randomBytes, done by the host.
    ("crypto.js", include_str!("crypto.js")),
    // k6/http's auth 'digest' (RFC 7616 MD5), over k6/crypto's md5.
    ("http-digest.js", include_str!("http-digest.js")),
    // WebCrypto: the global `crypto` (getRandomValues, randomUUID, subtle).
    ("webcrypto.js", include_str!("webcrypto.js")),
    // jslib's k6-summary (textSummary, jUnit).
    ("summary-jslib.js", include_str!("summary-jslib.js")),
    // k6/html over the host's `html` interface.
    ("html.js", include_str!("html.js")),
    // The event loop of sockets and timers: the main loop, the global timers (k6/timers).
    ("event-loop.js", include_str!("event-loop.js")),
    // k6/ws.
    ("ws.js", include_str!("ws.js")),
    // k6/websockets (and k6/experimental/websockets).
    ("websockets.js", include_str!("websockets.js")),
    // The layer's Promise, microtasks and the driver of rewritten async functions.
    ("async.js", include_str!("async.js")),
    // k6/net/grpc.
    ("grpc.js", include_str!("grpc.js")),
    // k6/experimental/redis and k6/x/redis over the contract's `sockets`.
    ("redis.js", include_str!("redis.js")),
    // k6/experimental/fs over bundled files, and k6/experimental/csv over them.
    ("fs-csv.js", include_str!("fs-csv.js")),
    // k6/experimental/streams: ReadableStream and its queuing strategies.
    ("streams.js", include_str!("streams.js")),
    // k6/secrets over the host's secret sources.
    ("secrets.js", include_str!("secrets.js")),
    // k6/browser over the contract's `browser` (the host drives Chromium).
    ("browser.js", include_str!("browser.js")),
    // k6/browser: page events (page.on) and routes (page.route).
    ("browser-events.js", include_str!("browser-events.js")),
    // k6/browser: JS and element handles, frames, emulation; completes BrowserPage.
    ("browser-handles.js", include_str!("browser-handles.js")),
    // The table of the modules a script may import, by name.
    ("modules.js", include_str!("modules.js")),
    // Loading the script's bundle, mapping its stack traces, guarding each call.
    ("bundle.js", include_str!("bundle.js")),
    // The script's options as the run's config.
    ("options.js", include_str!("options.js")),
    // The plugin's exports: describe, setup, init, iterations, teardown.
    ("export.js", include_str!("export.js")),
    // handleSummary (the `summary` export).
    ("handle-summary.js", include_str!("handle-summary.js")),
];

/// The files in every script's layer: the machinery that loads the bundle and runs its
/// calls, and the globals k6 gives every script (`console`, `__ENV`, `TextEncoder`,
/// `crypto`, the timers, `Promise`). `modules.js` is CORE: its cases of modules left out
/// are never run.
pub(crate) const CORE: &[&str] = &[
    "prelude.js",
    "text.js",
    "encoding-text.js",
    "state.js",
    "k6.js",
    "http-params.js",
    "webcrypto.js",
    "event-loop.js",
    "async.js",
    "modules.js",
    "bundle.js",
    "options.js",
    "export.js",
    "handle-summary.js",
];

/// Each k6 module a script may import (`known.rs` names them) and the files outside
/// [`CORE`] that make it; with [`NEEDS`], what the layer holds when a script imports it.
pub(crate) const MODULE_FILES: &[(&str, &[&str])] = &[
    ("k6", &[]),
    ("k6/http", &["http.js"]),
    ("k6/metrics", &["metrics.js"]),
    ("k6/execution", &["execution.js"]),
    ("k6/data", &["data-encoding.js"]),
    ("k6/encoding", &[]),
    ("k6/crypto", &["crypto.js"]),
    ("k6-summary", &["summary-jslib.js"]),
    ("k6/html", &["html.js"]),
    ("k6/ws", &["ws.js"]),
    ("k6/experimental/websockets", &["websockets.js"]),
    ("k6/websockets", &["websockets.js"]),
    ("k6/timers", &[]),
    ("k6/net/grpc", &["grpc.js"]),
    ("k6/experimental/redis", &["redis.js"]),
    ("k6/x/redis", &["redis.js"]),
    ("k6/secrets", &["secrets.js"]),
    ("k6/experimental/fs", &["fs-csv.js"]),
    ("k6/experimental/csv", &["fs-csv.js"]),
    ("k6/experimental/streams", &["streams.js"]),
    ("k6/browser", &["browser.js"]),
];

/// The files outside [`CORE`] that a file outside it uses (calls a function of, reads a
/// binding of, extends a class of): a file in a layer brings these too.
pub(crate) const NEEDS: &[(&str, &[&str])] = &[
    (
        "http.js",
        &[
            "http-file.js",
            "http-request.js",
            "http-response.js",
            "request-cache.js",
            "localjar.js",
            "http-digest.js",
        ],
    ),
    ("http-request.js", &["http-file.js"]),
    ("http-response.js", &["http-request.js", "html.js"]),
    ("request-cache.js", &["http-response.js"]),
    ("localjar.js", &["http-response.js"]),
    ("http-digest.js", &["http-response.js", "crypto.js"]),
    ("html.js", &["http.js"]),
    ("websockets.js", &["ws.js"]),
    ("grpc.js", &["ws.js"]),
    ("redis.js", &["metrics.js"]),
    ("fs-csv.js", &["data-encoding.js"]),
    ("browser.js", &["browser-events.js", "browser-handles.js"]),
    ("browser-events.js", &["browser.js"]),
    ("browser-handles.js", &["browser.js", "browser-events.js"]),
];

/// What the join puts in place of a file it leaves out, for the names a [`CORE`] file
/// reaches in it whatever the script imports: whole lines, declaring only those names.
pub(crate) const STUBS: &[(&str, &str)] = &[
    // async.js's top level adds `asyncRequest` to k6/http's object.
    ("http.js", "const k6http = {};\n"),
    // Every call ends with it (bundle.js's guard, export.js's iteration); with no
    // k6/http there are no responses to release.
    ("http-response.js", "function endCall() {}\n"),
];

/// Uses by a [`CORE`] file of names of a file outside it that run only once that file's
/// module is in the layer: (the CORE file, the file used, why), checked by the test of
/// the graph, which alone reads it (for the build it is the graph's documentation).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const THROUGH: &[(&str, &str, &str)] = &[
    (
        "async.js",
        "http.js",
        "asyncRequest and flushAsync send k6/http's requests: reached through k6http.asyncRequest",
    ),
    (
        "async.js",
        "http-request.js",
        "asyncRequest builds k6/http's requests",
    ),
    (
        "async.js",
        "http-response.js",
        "flushAsync answers requests queued by asyncRequest",
    ),
];

/// The files of a layer for a script importing `modules`, in [`FILES`]'s order: [`CORE`]
/// and each module's files with what they need; `None` when a module is not in
/// [`MODULE_FILES`] (the caller then takes every file).
fn files_for<'a>(modules: impl IntoIterator<Item = &'a str>) -> Option<BTreeSet<&'static str>> {
    let mut set: BTreeSet<&'static str> = CORE.iter().copied().collect();
    let mut todo: Vec<&'static str> = Vec::new();
    for m in modules {
        let (_, files) = MODULE_FILES.iter().find(|(name, _)| *name == m)?;
        todo.extend(files.iter().copied());
    }
    while let Some(f) = todo.pop() {
        if set.insert(f) {
            if let Some((_, more)) = NEEDS.iter().find(|(name, _)| *name == f) {
                todo.extend(more.iter().copied());
            }
        }
    }
    Some(set)
}

/// The layer for a script whose files import the k6 `modules`: [`FILES`] in order,
/// those [`files_for`] leaves out replaced by their [`STUBS`] (or by nothing). A module
/// this table does not know gets every file.
pub(crate) fn text_for<'a>(modules: impl IntoIterator<Item = &'a str>) -> String {
    let Some(set) = files_for(modules) else {
        return all_files();
    };
    let mut out = String::with_capacity(FILES.iter().map(|(_, t)| t.len()).sum());
    for (name, t) in FILES {
        if set.contains(name) {
            out.push_str(t);
        } else if let Some((_, stub)) = STUBS.iter().find(|(n, _)| n == name) {
            out.push_str(stub);
        }
    }
    out
}

/// Every file of the layer, [`FILES`] joined in order.
fn all_files() -> String {
    FILES.iter().map(|(_, t)| *t).collect()
}

/// The whole layer: [`FILES`] joined in order, made once per process.
#[cfg(test)]
pub(crate) fn text() -> &'static str {
    use std::sync::OnceLock;
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(all_files)
}

/// The layer file and the line in it (both from 1) of line `line` of the joined
/// layer, or `None` past its end: what a layer author looks up from a stack frame.
#[cfg(test)]
pub(crate) fn origin(line: usize) -> Option<(&'static str, usize)> {
    let mut first = 1;
    for (name, t) in FILES {
        let n = t.matches('\n').count();
        if line >= first && line < first + n {
            return Some((name, line - first + 1));
        }
        first += n;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{
        files_for, origin, text, text_for, CORE, FILES, MODULE_FILES, NEEDS, STUBS, THROUGH,
    };
    use std::collections::{BTreeMap, BTreeSet};

    /// Words that are no names: the reserved words, and the contextual ones the layer
    /// writes before a name (`get x()`, `for (const a of b)`).
    const KEYWORDS: &str = "async await break case catch class const continue debugger \
        default delete do else export extends finally for function get if import in \
        instanceof let new of return set static super switch this throw try typeof var \
        void while with yield";

    fn is_ident_byte(c: u8) -> bool {
        c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
    }

    /// The identifiers of `code` (comments and strings blanked), with their offsets.
    fn idents(code: &[u8]) -> Vec<(usize, &str)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < code.len() {
            if is_ident_byte(code[i]) && !code[i].is_ascii_digit() {
                let start = i;
                while i < code.len() && is_ident_byte(code[i]) {
                    i += 1;
                }
                out.push((start, std::str::from_utf8(&code[start..i]).unwrap()));
            } else if code[i].is_ascii_digit() {
                while i < code.len() && is_ident_byte(code[i]) {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        out
    }

    /// The byte before `at` that is not white space, and the one from `at` on.
    fn before(code: &[u8], at: usize) -> u8 {
        code[..at]
            .iter()
            .rev()
            .find(|c| !c.is_ascii_whitespace())
            .copied()
            .unwrap_or(b';')
    }
    fn after(code: &[u8], at: usize) -> u8 {
        code[at..]
            .iter()
            .find(|c| !c.is_ascii_whitespace())
            .copied()
            .unwrap_or(b';')
    }

    /// The offset just past the group that opens at `at` (a `(`, `[` or `{`).
    fn group_end(code: &[u8], at: usize) -> usize {
        let mut depth = 0i32;
        for (i, c) in code.iter().enumerate().skip(at) {
            match c {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return i + 1;
                    }
                }
                _ => {}
            }
        }
        code.len()
    }

    /// The names a file declares at its top level (a line that starts with the
    /// declaration): what other files may use.
    fn top_level(text: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for line in text.lines() {
            let rest = line
                .strip_prefix("async ")
                .unwrap_or(line)
                .trim_start_matches("export ");
            for kw in [
                "function* ",
                "function ",
                "class ",
                "const ",
                "let ",
                "var ",
                "import ",
            ] {
                if let Some(r) = rest.strip_prefix(kw) {
                    let name: String = r
                        .trim_start_matches('*')
                        .trim_start()
                        .bytes()
                        .take_while(|c| is_ident_byte(*c))
                        .map(char::from)
                        .collect();
                    if !name.is_empty() {
                        out.insert(name);
                    }
                    break;
                }
            }
        }
        out
    }

    /// The names a file binds anywhere below its top level (parameters, local
    /// bindings): a file that binds a name of its own is not read as using another
    /// file's top-level name of the same spelling (`url`, `file`, `request`), the
    /// analysis's one blind spot.
    fn local_names(code: &[u8]) -> BTreeSet<String> {
        let ids = idents(code);
        let mut out = BTreeSet::new();
        let binding = |from: usize, to: usize, out: &mut BTreeSet<String>| {
            for (at, id) in idents(&code[from..to]) {
                let opens = at == 0
                    || matches!(
                        before(&code[from..], at),
                        b'(' | b',' | b'{' | b'[' | b':' | b'.'
                    );
                if opens && after(&code[from..to], at + id.len()) != b':' {
                    out.insert(id.to_string());
                }
            }
        };
        for (k, &(at, id)) in ids.iter().enumerate() {
            let end = at + id.len();
            match id {
                "const" | "let" | "var" | "catch" => {
                    let mut p = end;
                    while p < code.len() && code[p].is_ascii_whitespace() {
                        p += 1;
                    }
                    if p < code.len() && matches!(code[p], b'{' | b'[' | b'(') {
                        let close = group_end(code, p);
                        binding(p + 1, close - 1, &mut out);
                    } else if let Some((_, name)) = ids.get(k + 1) {
                        out.insert(name.to_string());
                    }
                }
                _ => {
                    if after(code, end).eq(&b'=')
                        && code[end..].trim_ascii_start().starts_with(b"=>")
                    {
                        out.insert(id.to_string());
                    }
                }
            }
        }
        // Parameter lists: a `( ... )` followed by `{` or `=>`, not a statement's head.
        let mut i = 0;
        while i < code.len() {
            if code[i] == b'(' {
                let close = group_end(code, i);
                let next = &code[close.min(code.len())..].trim_ascii_start();
                let word_before = ids
                    .iter()
                    .rev()
                    .find(|(at, id)| at + id.len() <= i)
                    .filter(|(at, id)| code[at + id.len()..i].iter().all(u8::is_ascii_whitespace))
                    .map(|(_, id)| *id);
                let head = matches!(
                    word_before,
                    Some("if" | "for" | "while" | "switch" | "with")
                );
                if !head && (next.starts_with(b"{") || next.starts_with(b"=>")) {
                    binding(i + 1, close - 1, &mut out);
                }
            }
            i += 1;
        }
        out
    }

    /// The names a file reads or calls that are not its own: identifiers that are no
    /// property (`a.name`), no key (`{ name: ... }`), no method being defined
    /// (`name(...) {`), and that the file does not bind itself.
    fn used_names(text: &str) -> BTreeSet<String> {
        let code = crate::author::js::scan::scan(text).code;
        let own = top_level(text);
        let locals = local_names(&code);
        let mut out = BTreeSet::new();
        for (at, id) in idents(&code) {
            let end = at + id.len();
            let prev = before(&code, at);
            if prev == b'.' && !code[..at].ends_with(b"...") {
                continue;
            }
            if matches!(prev, b'{' | b',') && after(&code, end) == b':' {
                continue;
            }
            if after(&code, end) == b'(' {
                let p = end + code[end..].iter().position(|c| *c == b'(').unwrap();
                let close = group_end(&code, p);
                if code[close..].trim_ascii_start().starts_with(b"{") {
                    continue;
                }
            }
            if own.contains(id)
                || locals.contains(id)
                || KEYWORDS.split_whitespace().any(|k| k == id)
            {
                continue;
            }
            out.insert(id.to_string());
        }
        out
    }

    /// Every use of a top-level name across files is covered by the tables: a file
    /// outside CORE uses CORE or what [`NEEDS`] brings with it; a CORE file uses CORE,
    /// a stub's name, or a file [`THROUGH`] says it reaches only once its module is in.
    #[test]
    fn every_use_across_files_is_in_the_graph() {
        let mut owner: BTreeMap<String, &str> = BTreeMap::new();
        for (name, t) in FILES {
            for n in top_level(t) {
                if let Some(other) = owner.insert(n.clone(), name) {
                    panic!("{n} is declared at the top level of {other} and {name}");
                }
            }
        }
        let mut uncovered = Vec::new();
        let mut through_used = BTreeSet::new();
        // modules.js's cases name every module's object; a case runs only for a module
        // the script imports (checked by `every_known_module_is_in_the_table_...`).
        for (name, t) in FILES.iter().filter(|(n, _)| *n != "modules.js") {
            let core = CORE.contains(name);
            let mut with_needs: BTreeSet<&str> = CORE.iter().copied().collect();
            let mut todo = vec![*name];
            while let Some(f) = todo.pop() {
                if let Some((_, more)) = NEEDS.iter().find(|(n, _)| *n == f) {
                    for m in *more {
                        if with_needs.insert(m) {
                            todo.push(m);
                        }
                    }
                }
            }
            for used in used_names(t) {
                let Some(&from) = owner.get(&used) else {
                    continue;
                };
                if from == *name || with_needs.contains(from) {
                    continue;
                }
                if core {
                    let stubbed = STUBS
                        .iter()
                        .any(|(f, stub)| *f == from && top_level(stub).contains(&used));
                    let through = THROUGH.iter().any(|(c, f, _)| c == name && *f == from);
                    if through {
                        through_used.insert((*name, from));
                    }
                    if stubbed || through {
                        continue;
                    }
                }
                uncovered.push(format!("{name} uses {used} of {from}"));
            }
        }
        assert!(
            uncovered.is_empty(),
            "uses the graph in layer/mod.rs does not cover (add the file to NEEDS, or for a CORE file a stub or a THROUGH entry): {uncovered:#?}"
        );
        for (c, f, why) in THROUGH {
            assert!(
                through_used.contains(&(*c, *f)),
                "THROUGH lists {c} → {f} ({why}), which {c} no longer uses"
            );
        }
    }

    /// The analysis above sees the uses it must: a call, a read in an expression, a
    /// class extended, a shorthand property; and not a property, a key, a method being
    /// defined, or a parameter of the same name.
    #[test]
    fn the_use_analysis_reads_uses_and_not_keys_or_locals() {
        let src = "function f(url, { a, b: c }) {\n  const d = g(url) + h.i + j;\n  return { k: 1, m, n() { return o; } };\n}\nclass P extends Q {}\nconst r = (s) => s + t;\n";
        let used = used_names(src);
        let want: BTreeSet<String> = ["g", "h", "j", "m", "o", "Q", "t"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(used, want);
    }

    /// The tables name files of the folder, and every file is in a layer: CORE, or
    /// reached from a module.
    #[test]
    fn the_tables_name_layer_files_and_reach_every_file() {
        let names: BTreeSet<&str> = FILES.iter().map(|(n, _)| *n).collect();
        let mut reached: BTreeSet<&str> = CORE.iter().copied().collect();
        for (m, files) in MODULE_FILES {
            for f in *files {
                assert!(names.contains(f), "{m}: {f} is no layer file");
            }
            reached.extend(files_for([*m]).unwrap());
        }
        for (f, more) in NEEDS {
            assert!(names.contains(f) && !CORE.contains(f), "NEEDS: {f}");
            for m in *more {
                assert!(names.contains(m) && !CORE.contains(m), "NEEDS {f}: {m}");
            }
        }
        for (f, stub) in STUBS {
            assert!(names.contains(f) && !CORE.contains(f), "STUBS: {f}");
            assert!(stub.ends_with('\n'), "the stub of {f} is whole lines");
        }
        assert_eq!(reached, names, "a file no layer holds");
    }

    /// Every k6 module the bundler accepts has its files, and `modules.js` a case for
    /// it; the names that case reads are declared in the layer of a script importing
    /// only that module, by the module's own files (not a stub).
    #[test]
    fn every_known_module_is_in_the_table_and_its_layer_declares_it() {
        let modules_js = FILES.iter().find(|(n, _)| *n == "modules.js").unwrap().1;
        for name in crate::author::js::known::all_module_names() {
            assert!(
                MODULE_FILES.iter().any(|(m, _)| *m == name),
                "{name} is not in layer/mod.rs's MODULE_FILES"
            );
            let case = format!("case '{name}': return ");
            let line = modules_js
                .lines()
                .find(|l| l.trim_start().starts_with(&case))
                .unwrap_or_else(|| panic!("modules.js has no case for {name}"));
            let files = files_for([name]).unwrap();
            let declared: BTreeSet<String> = FILES
                .iter()
                .filter(|(f, _)| files.contains(f))
                .flat_map(|(_, t)| top_level(t))
                .collect();
            let all: BTreeSet<String> = FILES.iter().flat_map(|(_, t)| top_level(t)).collect();
            let code = crate::author::js::scan::scan(line).code;
            for (_, id) in idents(&code) {
                if all.contains(id) {
                    assert!(declared.contains(id), "{name}: {id} is not in its layer");
                }
            }
        }
    }

    /// A script importing only `k6` gets CORE and nothing else: no file of another
    /// module, and none of their module objects (`k6http`, `k6grpc`, ...) declared but
    /// by a stub. The same for each module: what it does not need is not joined.
    #[test]
    fn an_unimported_module_is_not_built() {
        let idle = text_for(["k6"]);
        let mut objects = 0;
        let modules_js = FILES.iter().find(|(n, _)| *n == "modules.js").unwrap().1;
        let declared = top_level(&idle);
        let stubbed: BTreeSet<String> = STUBS.iter().flat_map(|(_, s)| top_level(s)).collect();
        for line in modules_js.lines().filter(|l| l.contains("case 'k6/")) {
            let code = crate::author::js::scan::scan(line).code;
            for (_, id) in idents(&code) {
                if id.starts_with("k6") && id.len() > 2 {
                    objects += 1;
                    assert!(
                        !declared.contains(id) || stubbed.contains(id),
                        "{id} is built for a script importing only k6"
                    );
                }
            }
        }
        assert!(objects > 10, "the check read modules.js's module objects");
        for (name, t) in FILES {
            assert_eq!(
                idle.contains(t),
                CORE.contains(name),
                "{name}: in an idle script's layer exactly when it is CORE"
            );
        }
        for (m, _) in MODULE_FILES {
            let layer = text_for([*m]);
            let files = files_for([*m]).unwrap();
            for (name, t) in FILES {
                assert_eq!(layer.contains(t), files.contains(name), "{m}: {name}");
            }
        }
        // The whole layer for a module the table does not know.
        assert_eq!(text_for(["k6/unknown"]), text());
    }

    /// Each file is whole lines (it ends with a newline), so the joined layer's line
    /// numbers are the files' lines end to end and no statement spans two files.
    #[test]
    fn every_layer_file_is_whole_lines_and_named_once() {
        let mut names = std::collections::BTreeSet::new();
        for (name, t) in FILES {
            assert!(t.ends_with('\n'), "{name} ends with a newline");
            assert!(names.insert(*name), "{name} is listed once");
        }
    }

    /// The project's size rule holds for the layer's JavaScript too.
    #[test]
    fn no_layer_file_is_over_600_lines() {
        for (name, t) in FILES {
            let n = t.lines().count();
            assert!(n <= 600, "{name} has {n} lines; split it");
        }
    }

    /// Every file in the folder is in the list (a file left out would build fine and
    /// be missing from every script), and every listed file is in the folder.
    #[test]
    fn the_list_names_every_file_of_the_folder() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/author/js/layer");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".js"))
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = FILES.iter().map(|(n, _)| n.to_string()).collect();
        listed.sort();
        assert_eq!(on_disk, listed);
    }

    /// A line of the joined layer maps back to its file: the first and last line of
    /// every file, and nothing past the end.
    #[test]
    fn a_joined_line_maps_to_its_file_and_line() {
        let joined: Vec<&str> = text().lines().collect();
        let mut first = 1;
        for (name, t) in FILES {
            let n = t.lines().count();
            assert_eq!(origin(first), Some((*name, 1)));
            assert_eq!(origin(first + n - 1), Some((*name, n)));
            assert_eq!(joined[first + n - 2], t.lines().last().unwrap());
            first += n;
        }
        assert_eq!(origin(first), None);
        assert_eq!(origin(0), None);
    }
}
