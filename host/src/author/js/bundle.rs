//! Bundles a k6 script: the entry file, the files it imports relatively, and the files
//! it `open()`s, into one table of module functions appended to the k6 layer. Each ES
//! module becomes `function (__require, __exports) { ... }` with its imports turned into
//! `const` bindings and its exports into assignments, on the same lines as in the file
//! (so the stack of an exception names the user's line). What this host does not offer
//! is refused here, naming the API and the line, before anything runs.

use super::clauses::{
    bindings, declared_bindings, declared_name, export_list, first_word, Binding,
};
use super::known::known_module;
use super::scan::{line_of, scan, Keyword};
use super::specifiers::{module_id, next_string, opens, resolve, statement_end};
use anyhow::{anyhow, bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A bundled script.
pub(crate) struct Bundle {
    /// `const BUNDLE = ...;` up to its line table, which [`Bundle::js`] adds.
    head: String,
    /// The rest of `const BUNDLE = ...;`, after the line table.
    tail: String,
    /// Each module's first line, counted from the bundle's first line (0), and its id
    /// as JSON, in order of line.
    lines: Vec<(usize, String)>,
    /// The k6 modules the script's files import: the layer builds only these (and
    /// what they use, see `layer::text_for`).
    pub k6_modules: BTreeSet<String>,
    /// The script's name (the entry file's stem).
    pub name: String,
    /// Every input, for the cache key: (id, bytes), modules then files.
    pub inputs: Vec<(String, Vec<u8>)>,
}

/// A module rewritten as a function body.
struct Module {
    id: String,
    body: String,
    /// Column anchors of the lines the rewrite moved (`colmap`), as JS.
    cols: Option<String>,
    /// The module's source map for the layer (`srcmap`), as JS.
    map: Option<String>,
}

impl Bundle {
    /// `const BUNDLE = ...;`, to append to the k6 layer; `first_line` is the line of the
    /// combined module on which the bundle's text starts (the layer's line count + 1),
    /// which the stack-trace mapping's line table counts from. The table is one line,
    /// after the modules, so the modules' lines do not depend on it.
    pub(crate) fn js(&self, first_line: usize) -> String {
        let lines: Vec<String> = self
            .lines
            .iter()
            .map(|(at, file)| format!("{{ start: {}, file: {file} }}", first_line + at))
            .collect();
        format!(
            "{}BUNDLE.lines = [{}];\n{}",
            self.head,
            lines.join(", "),
            self.tail
        )
    }
}

/// Bundles `entry`; `env` is the build's environment, which `client.load(__ENV.NAME,
/// ...)` reads (k6/net/grpc).
pub(crate) fn bundle(entry: &Path, env: &BTreeMap<String, String>) -> Result<Bundle> {
    let entry = entry
        .canonicalize()
        .with_context(|| format!("cannot read {}", entry.display()))?;
    let root = entry.parent().unwrap_or(Path::new("/")).to_path_buf();
    let name = entry
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("script")
        .to_string();
    let mut modules: Vec<Module> = Vec::new();
    let mut files: BTreeMap<String, (PathBuf, Vec<u8>)> = BTreeMap::new();
    let mut protos: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut protosets: BTreeMap<String, super::protosets::Protoset> = BTreeMap::new();
    let mut inputs = Vec::new();
    let mut k6_modules = BTreeSet::new();
    // The lock of the script's remote modules, for this build (see `remote`).
    let _lock = super::remote::LockGuard::begin(&entry)?;
    let mut queue = vec![entry.clone()];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(path) = queue.pop() {
        let id = module_id(&root, &path);
        if !seen.insert(id.clone()) {
            continue;
        }
        let src = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let remote = super::remote::url_of(&path);
        let shown = remote.clone().unwrap_or_else(|| {
            path.strip_prefix(&root)
                .unwrap_or(&path)
                .display()
                .to_string()
        });
        // TypeScript: types blanked in place, so the lines below are the .ts file's.
        let js = if super::typescript::is_typescript(&path) {
            super::typescript::strip(&src, &shown)?
        } else {
            src.clone()
        };
        let out = transform(&js, &shown, &root, &path, env)?;
        if remote.is_some()
            && !(out.opens.is_empty() && out.protos.is_empty() && out.protosets.is_empty())
        {
            bail!("{shown}: a remote module may not open files (open(), fs.open(), client.load()); only the script's own files may");
        }
        super::whole::check(&out.body, &shown)?;
        for loaded in out.protos {
            if let Some(other) = protos.get(&loaded.given) {
                if *other != loaded.files {
                    bail!(
                        "{shown}: client.load() names {} twice with different contents (other import paths); give the files names that differ",
                        loaded.given
                    );
                }
            }
            protos.insert(loaded.given, loaded.files);
        }
        for set in out.protosets {
            if let Some(other) = protosets.get(&set.given) {
                if other.bytes != set.bytes {
                    bail!(
                        "{shown}: client.loadProtoset() names {} twice with different contents (from other folders); give the files names that differ",
                        set.given
                    );
                }
            }
            protosets.insert(set.given.clone(), set);
        }
        for dep in out.deps {
            queue.push(dep);
        }
        k6_modules.extend(out.k6);
        for (literal, file) in out.opens {
            super::outside::check(&root, &file, &shown, &format!("open({literal:?})"))?;
            let bytes = std::fs::read(&file).with_context(|| {
                format!(
                    "{shown}: open({literal:?}) names {}, which cannot be read",
                    file.display()
                )
            })?;
            if let Some((other, _)) = files.get(&literal) {
                if *other != file {
                    bail!(
                        "open({literal:?}) names two files ({} and {}); use paths that differ",
                        other.display(),
                        file.display()
                    );
                }
            }
            files.insert(literal, (file, bytes));
        }
        let map = super::srcmap::load(&js, &path, &root, &shown, remote.is_some())?;
        let map = map.map(|m| {
            if let Some(input) = m.input {
                inputs.push(input);
            }
            m.js
        });
        inputs.push((id.clone(), src.clone().into_bytes()));
        modules.push(Module {
            id,
            body: out.body,
            cols: cols_js(&out.cols),
            map,
        });
    }
    let mut js = String::new();
    let mut line = 0;
    let mut lines = Vec::new();
    js.push_str(&format!(
        "const BUNDLE = {{ entry: {}, name: {}, modules: {{}} }};\n",
        json(&module_id(&root, &entry)),
        json(&name)
    ));
    line += 1;
    for m in &modules {
        js.push_str(&format!(
            "BUNDLE.modules[{}] = function (__require, __exports) {{\n",
            json(&m.id)
        ));
        line += 1;
        lines.push((line, json(&m.id)));
        js.push_str(&m.body);
        line += m.body.matches('\n').count();
        js.push_str("\n};\n");
        line += 2;
    }
    lines.sort_by_key(|l| l.0);
    let head = std::mem::take(&mut js);
    // Columns the rewrite moved, and the bundles' source maps (stack traces).
    js.push_str("BUNDLE.cols = {");
    for m in &modules {
        if let Some(cols) = &m.cols {
            js.push_str(&format!("{}: {cols},\n", json(&m.id)));
        }
    }
    js.push_str("};\nBUNDLE.maps = {");
    for m in &modules {
        if let Some(map) = &m.map {
            js.push_str(&format!("{}: {map},\n", json(&m.id)));
        }
    }
    js.push_str("};\n");
    js.push_str("BUNDLE.files = {");
    for (literal, (_, bytes)) in &files {
        match std::str::from_utf8(bytes) {
            Ok(text) => js.push_str(&format!("{}: {{ text: {} }},\n", json(literal), json(text))),
            Err(_) => {
                use base64::Engine as _;
                let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
                js.push_str(&format!("{}: {{ b64: {} }},\n", json(literal), json(&b64)))
            }
        }
        inputs.push((format!("file:{literal}"), bytes.clone()));
    }
    js.push_str("};\n");
    // k6/net/grpc: each file `client.load` names, with the files it imports.
    js.push_str("BUNDLE.protos = {");
    for (given, list) in &protos {
        let items: Vec<String> = list
            .iter()
            .map(|(n, s)| format!("{{ name: {}, source: {} }}", json(n), json(s)))
            .collect();
        js.push_str(&format!("{}: [{}],\n", json(given), items.join(", ")));
        for (n, s) in list {
            inputs.push((format!("proto:{given}:{n}"), s.clone().into_bytes()));
        }
    }
    js.push_str("};\n");
    // k6/net/grpc: each protoset `client.loadProtoset` names, with its methods.
    js.push_str("BUNDLE.protosets = {");
    for (given, set) in &protosets {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&set.bytes);
        js.push_str(&format!(
            "{}: {{ b64: {}, methods: {} }},\n",
            json(given),
            json(&b64),
            set.methods
        ));
        inputs.push((format!("protoset:{given}"), set.bytes.clone()));
    }
    js.push_str("};\n");
    _lock.save()?;
    Ok(Bundle {
        head,
        tail: js,
        lines,
        k6_modules,
        name,
        inputs,
    })
}

/// `{LINE: [f, o, fixed, ...]}` of a module's column anchors (`colmap::Anchor`);
/// `None` when no line moved.
fn cols_js(cols: &BTreeMap<usize, Vec<super::colmap::Anchor>>) -> Option<String> {
    if cols.is_empty() {
        return None;
    }
    let lines: Vec<String> = cols
        .iter()
        .map(|(line, list)| {
            let flat: Vec<String> = list
                .iter()
                .map(|a| format!("{},{},{}", a.f, a.o, u8::from(a.fixed)))
                .collect();
            format!("{line}: [{}]", flat.join(","))
        })
        .collect();
    Some(format!("{{{}}}", lines.join(", ")))
}

fn json(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

/// A module rewritten, with what it needs.
struct Transformed {
    body: String,
    deps: Vec<PathBuf>,
    /// `open()` literals and the files they name.
    opens: Vec<(String, PathBuf)>,
    /// The `.proto` files of `client.load` calls (k6/net/grpc).
    protos: Vec<super::protos::Loaded>,
    /// The protosets of `client.loadProtoset` calls (k6/net/grpc).
    protosets: Vec<super::protosets::Protoset>,
    /// Per line, where the rewrite moved columns (`colmap::anchors`).
    cols: BTreeMap<usize, Vec<super::colmap::Anchor>>,
    /// The k6 modules the module imports (or re-exports from).
    k6: BTreeSet<String>,
}

/// Rewrites one module; `shown` names it in errors.
fn transform(
    src: &str,
    shown: &str,
    root: &Path,
    path: &Path,
    env: &BTreeMap<String, String>,
) -> Result<Transformed> {
    let src = if src.starts_with("#!") {
        // A shebang line stays a line.
        let end = src.find('\n').unwrap_or(src.len());
        format!("{}{}", " ".repeat(end), &src[end..])
    } else {
        src.to_string()
    };
    // `async` functions become generators the layer drives (the runtime runs no
    // promise jobs); a module without `async` or `await` is not tokenized.
    let first = src.clone();
    let mut stages = Vec::new();
    let (src, awaits_at_top) = match super::asyncs::rewrite_module(&src, shown)? {
        Some((out, top, stage)) => {
            stages.push(stage);
            (out, top)
        }
        None => (src, false),
    };
    // A thrown value that is no Error gets a stack too (see `throws`).
    let src = match super::throws::rewrite(&src) {
        Some((out, stage)) => {
            stages.push(stage);
            out
        }
        None => src,
    };
    let scanned = scan(&src);
    let code = String::from_utf8_lossy(&scanned.code).into_owned();
    let dir = path.parent().unwrap_or(root);
    let at = |offset: usize| format!("{shown}:{}", line_of(&src, offset));
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut hoisted = Vec::new(); // `__exports.x = x;` for function declarations
    let mut trailing = Vec::new(); // the same for bindings, after the body
    let mut deps = Vec::new();
    let mut k6 = BTreeSet::new();
    let mut n = 0usize;
    let mut uses_browser = false;
    let mut uses_streams = false;
    for &(start, kw) in &scanned.keywords {
        n += 1;
        let rest = &src[start..];
        match kw {
            Keyword::Import => {
                let (spec, spec_start, spec_end) =
                    next_string(&src, &code, start + 6).ok_or_else(|| {
                        anyhow!("{}: cannot read this import (no module named)", at(start))
                    })?;
                let clause = src[start + 6..spec_start].trim();
                let clause = clause.strip_suffix("from").unwrap_or(clause).trim();
                let end = statement_end(&src, spec_end);
                let target = resolve(&spec, &at(start), dir, root, &mut deps)?;
                if known_module(&target).is_some() {
                    k6.insert(target.clone());
                }
                uses_browser |= target == "k6/browser";
                uses_streams |= target == "k6/experimental/streams";
                let module = format!("__m{n}");
                let mut out = format!("const {module} = __require({});", json(&target));
                for binding in bindings(clause).map_err(|e| anyhow!("{}: {e}", at(start)))? {
                    if let Some((k6, names)) = known_module(&target) {
                        if let Binding::Named { imported, .. } = &binding {
                            if imported != "default" && !names.contains(&imported.as_str()) {
                                bail!(
                                    "{}: `{imported}` from `{k6}` is not supported by this host (see docs/k6-compatibility.md)",
                                    at(start)
                                );
                            }
                        }
                    }
                    out.push_str(&match binding {
                        Binding::Default(local) => format!(" const {local} = {module}.default;"),
                        Binding::Namespace(local) => format!(" const {local} = {module};"),
                        Binding::Named { imported, local } => {
                            format!(" const {local} = {module}[{}];", json(&imported))
                        }
                    });
                }
                edits.push((start, end, out));
            }
            Keyword::Export => {
                let after = rest[6..].trim_start();
                let after_at = start + (rest.len() - after.len());
                let word = first_word(after);
                match word {
                    "default" => {
                        let body = after[7..].trim_start();
                        let decl = first_word(body);
                        let name = declared_name(body);
                        match (decl, name) {
                            ("function" | "async" | "class", Some(name)) => {
                                edits.push((start, after_at + 7, String::new()));
                                let assign = format!("__exports.default = {name};");
                                if decl == "class" {
                                    trailing.push(assign);
                                } else {
                                    hoisted.push(assign);
                                }
                            }
                            _ => edits.push((start, after_at + 7, "__exports.default =".into())),
                        }
                    }
                    "function" | "async" | "class" => {
                        let name = declared_name(after).ok_or_else(|| {
                            anyhow!("{}: cannot read the exported name", at(start))
                        })?;
                        edits.push((start, after_at, String::new()));
                        let assign = format!("__exports[{}] = {name};", json(&name));
                        if word == "class" {
                            trailing.push(assign);
                        } else {
                            hoisted.push(assign);
                        }
                    }
                    "const" | "let" | "var" => {
                        let names = declared_bindings(&after[word.len()..]);
                        if names.is_empty() {
                            bail!("{}: cannot read the exported names", at(start));
                        }
                        edits.push((start, after_at, String::new()));
                        for name in names {
                            trailing.push(format!("__exports[{}] = {name};", json(&name)));
                        }
                    }
                    _ if after.starts_with('{') || after.starts_with('*') => {
                        let close = if after.starts_with('{') {
                            after.find('}').map(|i| after_at + i + 1)
                        } else {
                            Some(after_at + 1)
                        }
                        .ok_or_else(|| anyhow!("{}: unclosed export list", at(start)))?;
                        let list = &src[after_at..close];
                        let tail = src[close..].trim_start();
                        if let Some(from) = tail.strip_prefix("from") {
                            let from_at = src.len() - from.len();
                            let (spec, _, spec_end) = next_string(&src, &code, from_at)
                                .ok_or_else(|| anyhow!("{}: cannot read this export", at(start)))?;
                            let target = resolve(&spec, &at(start), dir, root, &mut deps)?;
                            if known_module(&target).is_some() {
                                k6.insert(target.clone());
                            }
                            let end = statement_end(&src, spec_end);
                            let module = format!("__m{n}");
                            let mut out = format!("const {module} = __require({});", json(&target));
                            if list.starts_with('*') {
                                let ns = src[close..from_at - 4].trim();
                                if let Some(ns) = ns.strip_prefix("as") {
                                    out.push_str(&format!(
                                        " __exports[{}] = {module};",
                                        json(ns.trim())
                                    ));
                                } else {
                                    out.push_str(&format!(
                                        " for (const k in {module}) if (k !== 'default') __exports[k] = {module}[k];"
                                    ));
                                }
                            } else {
                                for (local, exported) in export_list(list) {
                                    out.push_str(&format!(
                                        " __exports[{}] = {module}[{}];",
                                        json(&exported),
                                        json(&local)
                                    ));
                                }
                            }
                            edits.push((start, end, out));
                        } else {
                            let end = statement_end(&src, close);
                            edits.push((start, end, String::new()));
                            for (local, exported) in export_list(list) {
                                trailing.push(format!("__exports[{}] = {local};", json(&exported)));
                            }
                        }
                    }
                    _ => bail!("{}: cannot read this export", at(start)),
                }
            }
        }
    }
    let mut opens = opens(&src, &code, shown, dir)?;
    // k6/experimental/fs's `fs.open(path)`: bundled as open()'s files are.
    opens.extend(super::fs_opens::fs_opens(&src, &code, shown, dir)?);
    // What of k6/browser is not built is refused now, with its line.
    if uses_browser {
        super::browser_api::check(&src, &code, &at)?;
    }
    if uses_streams {
        super::streams_api::check(&code, &at)?;
    }
    // Only a module that imports k6/net/grpc has a gRPC client's `.load(`.
    let (protos, protosets) = if src.contains("k6/net/grpc") {
        (
            super::protos::loads(&src, &code, shown, dir, root, env)?,
            super::protosets::protosets(&src, &code, shown, dir, root, env)?,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    // Apply the edits back to front, each keeping its line count.
    let mut body = src.clone();
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut stage = super::colmap::Stage::default();
    for (from, to, text) in edits {
        let newlines = src[from..to].matches('\n').count();
        let new = format!("{text}{}", "\n".repeat(newlines));
        stage.0.push((from, to - from, new.len()));
        body.replace_range(from..to, &new);
    }
    stage.0.reverse();
    stages.push(stage);
    let prefix = hoisted.join(" ");
    let body = format!("{prefix}{body} {}", trailing.join(" "));
    // A module with top-level `await` runs as a generator the layer drives; its
    // promise settles in `require` (layer/bundle.js). On the lines the body already
    // has, so that every line keeps its number.
    let (body, prefix_len) = if awaits_at_top {
        let wrap = "return __k6async(this, null, function* () { ";
        (format!("{wrap}{body}\n}});"), wrap.len() + prefix.len())
    } else {
        (body, prefix.len())
    };
    if prefix_len > 0 {
        stages.push(super::colmap::Stage(vec![(0, 0, prefix_len)]));
    }
    let cols = super::colmap::anchors(&first, &body, &stages);
    Ok(Transformed {
        body,
        deps,
        opens,
        protos,
        protosets,
        cols,
        k6,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(src: &str) -> String {
        let dir = std::env::temp_dir();
        transform(src, "t.js", &dir, &dir.join("t.js"), &BTreeMap::new())
            .unwrap()
            .body
    }

    #[test]
    fn imports_and_exports_become_bindings_on_their_lines() {
        let src = "import http from 'k6/http';\nimport { check, sleep as nap } from 'k6';\nexport const options = { vus: 1 };\nexport default function () {\n  http.get('x');\n}\nexport function named() {}\n";
        let b = body(src);
        assert_eq!(b.matches('\n').count(), src.matches('\n').count(), "{b}");
        assert!(b.contains("const http = __m1.default;"), "{b}");
        assert!(b.contains("const nap = __m2[\"sleep\"];"), "{b}");
        assert!(b.contains("__exports[\"options\"] = options;"), "{b}");
        assert!(
            b.contains("__exports.default =function ()")
                || b.contains("__exports.default = function ()"),
            "{b}"
        );
        assert!(b.starts_with("__exports[\"named\"] = named;"), "{b}");
    }

    #[test]
    fn refused_modules_and_names_say_which_and_where() {
        let dir = std::env::temp_dir();
        let err = transform(
            "\n\nimport { chromium } from 'k6/browser';\n",
            "s.js",
            &dir,
            &dir.join("s.js"),
            &BTreeMap::new(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("s.js:3") && err.contains("k6/browser"),
            "{err}"
        );
        let err = transform(
            "import { nope } from 'k6/http';\n",
            "s.js",
            &dir,
            &dir.join("s.js"),
            &BTreeMap::new(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("`nope`") && err.contains("s.js:1"), "{err}");
        for (code, what) in [
            ("import { md6 } from 'k6/crypto';\n", "`md6`"),
            (
                "import grpc from 'k6/net/grpc';\nconst c = new grpc.Client();\nc.loadProtoset('x.pb');\n",
                "x.pb",
            ),
            ("import { HealthCheckNope } from 'k6/net/grpc';\n", "`HealthCheckNope`"),
        ] {
            let err = transform(code, "s.js", &dir, &dir.join("s.js"), &BTreeMap::new())
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains(what) && err.contains("s.js:"), "{err}");
        }
    }

    #[test]
    fn open_needs_a_literal() {
        let dir = std::env::temp_dir();
        let t = transform(
            "const a = open('./a.json');\n",
            "s.js",
            &dir,
            &dir.join("s.js"),
            &BTreeMap::new(),
        )
        .unwrap();
        assert_eq!(t.opens[0].0, "./a.json");
        let err = transform(
            "const p = 'x';\nconst a = open(p);\n",
            "s.js",
            &dir,
            &dir.join("s.js"),
            &BTreeMap::new(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("s.js:2") && err.contains("literal"), "{err}");
    }
}
