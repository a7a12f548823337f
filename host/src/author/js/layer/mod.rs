//! The k6 layer's JavaScript: one file per k6 module and per part of the layer's own
//! machinery, joined in the order of [`FILES`] into the one scope `host build` puts
//! before the script's bundle. The files are for their authors; at run time the layer
//! is one module as before, so a function of one file calls another file's by name and
//! the snapshot holds one compiled layer. A file may use what an earlier file declares
//! at its top level (a `const` used before its file ran throws), so a new k6 module
//! goes after the files it uses and before `modules.js`, which names every module.
//!
//! The stack-trace mapping of the bundle (`mapStack` in bundle.js over `BUNDLE.lines`)
//! counts the joined layer's lines, so a user's error still points at the user's
//! file; [`origin`] says which layer file and line a line of the joined layer is.

use std::sync::OnceLock;

/// The layer's files, in the order they are joined: each one's name and text. Adding a
/// k6 module is adding its file here and its entry in `modules.js`.
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
    // The event loop of sockets and timers (k6/timers).
    ("event-loop.js", include_str!("event-loop.js")),
    // k6/ws.
    ("ws.js", include_str!("ws.js")),
    // k6/websockets (and k6/experimental/websockets), the global timers.
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

/// The whole layer: [`FILES`] joined in order, made once per process.
pub(crate) fn text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let mut out = String::with_capacity(FILES.iter().map(|(_, t)| t.len()).sum());
        for (_, t) in FILES {
            out.push_str(t);
        }
        out
    })
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
    use super::{origin, text, FILES};

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
