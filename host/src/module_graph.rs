//! A check that no two files of the crate import each other, directly or through others.
//!
//! A cycle between files is a layering mistake in small: two files that must change
//! together but read as if they were apart. The test reads the crate's sources, follows
//! each `use` and each path expression (`crate::a::b`, `super::x`, `child::y`) to the file
//! that defines the item (through re-exports, so `net::HttpError` counts as an edge to the
//! file where `HttpError` is written), and fails naming the first cycle it finds. `mod`
//! declarations are not edges, and `#[cfg(test)]` code is left out: tests may reach
//! anywhere.
//!
//! The parser is a tokenizer plus a walk over items, good enough for this crate's style
//! (no `#[path]`, no macro-generated `use`); it is not a Rust parser.

mod layers;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

/// File → file it imports from → the first path that imports it.
type Edges = BTreeMap<PathBuf, BTreeMap<PathBuf, String>>;

/// One token of Rust source: comments, literals and whitespace are dropped.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// Splits `src` into tokens, dropping comments, string/char literals and numbers.
fn tokenize(src: &str) -> Vec<Tok> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == b'"' || ((c == b'b' || c == b'c') && b.get(i + 1) == Some(&b'"')) {
            i += if c == b'"' { 1 } else { 2 };
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if (c == b'r' || (c == b'b' && b.get(i + 1) == Some(&b'r')))
            && matches!(b.get(i + 1 + usize::from(c == b'b')), Some(b'"' | b'#'))
            && raw_string_end(b, i + 1 + usize::from(c == b'b')).is_some()
        {
            i = raw_string_end(b, i + 1 + usize::from(c == b'b')).unwrap_or(b.len());
        } else if c == b'\'' {
            // A char literal ('a', '\n', '\u{..}') or a lifetime ('a).
            if b.get(i + 1) == Some(&b'\\') {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&b'\'') {
                i += 3;
            } else {
                let ch_len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                if b.get(i + 1 + ch_len) == Some(&b'\'') {
                    i += 2 + ch_len;
                } else {
                    i += 1;
                    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                        i += 1;
                    }
                }
            }
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            let word = &src[start..i];
            // Raw identifiers: `r#type`.
            if word == "r" && b.get(i) == Some(&b'#') {
                i += 1;
                continue;
            }
            out.push(Tok::Ident(word.to_string()));
        } else if b[i..].starts_with(b"::") {
            out.push(Tok::Path);
            i += 2;
        } else {
            out.push(Tok::Punct(c as char));
            i += 1;
        }
    }
    out
}

/// The index just past a raw string whose `#`s (or opening quote) start at `i`.
fn raw_string_end(b: &[u8], mut i: usize) -> Option<usize> {
    let mut hashes = 0;
    while b.get(i) == Some(&b'#') {
        hashes += 1;
        i += 1;
    }
    if b.get(i) != Some(&b'"') {
        return None;
    }
    i += 1;
    while i < b.len() {
        if b[i] == b'"'
            && b[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == b'#')
                .count()
                == hashes
        {
            return Some(i + 1 + hashes);
        }
        i += 1;
    }
    Some(b.len())
}

/// One module of the crate: a file, or an inline `mod x { }` within one.
#[derive(Debug, Default)]
struct Module {
    file: PathBuf,
    parent: Option<usize>,
    children: HashMap<String, usize>,
    /// Names of the items written in this module (fn, struct, const, macro, ...).
    items: BTreeSet<String>,
    /// `use` bindings: name → path, relative to this module.
    uses: HashMap<String, Vec<String>>,
    /// `use path::*`.
    globs: Vec<Vec<String>>,
    /// Paths this module refers to (its `use`s and multi-segment path expressions).
    refs: Vec<Vec<String>>,
    /// `mod x;` declarations still to be read from their files.
    file_children: Vec<String>,
    /// The directory where the files of child modules live.
    dir: PathBuf,
}

/// The crate's modules, read from `lib.rs` down its `mod` declarations.
struct Crate {
    modules: Vec<Module>,
}

impl Crate {
    fn read(root: &Path) -> Crate {
        let mut krate = Crate {
            modules: Vec::new(),
        };
        krate.read_file(root.join("lib.rs"), root.to_path_buf(), None, None);
        krate
    }

    fn read_file(
        &mut self,
        file: PathBuf,
        dir: PathBuf,
        parent: Option<usize>,
        name: Option<&str>,
    ) {
        let src = fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let toks = tokenize(&src);
        let id = self.new_module(file.clone(), dir, parent, name);
        let mut pos = 0;
        self.parse_items(id, &toks, &mut pos, false);
        for child in std::mem::take(&mut self.modules[id].file_children) {
            let dir = self.modules[id].dir.clone();
            let (path, child_dir) = if dir.join(format!("{child}.rs")).exists() {
                (dir.join(format!("{child}.rs")), dir.join(&child))
            } else {
                (dir.join(&child).join("mod.rs"), dir.join(&child))
            };
            self.read_file(path, child_dir, Some(id), Some(&child));
        }
    }

    fn new_module(
        &mut self,
        file: PathBuf,
        dir: PathBuf,
        parent: Option<usize>,
        name: Option<&str>,
    ) -> usize {
        let id = self.modules.len();
        self.modules.push(Module {
            file,
            parent,
            dir,
            ..Module::default()
        });
        if let (Some(p), Some(n)) = (parent, name) {
            self.modules[p].children.insert(n.to_string(), id);
        }
        id
    }

    /// Reads the items of module `m` from `toks[*pos..]` until its closing brace (when
    /// `inline`) or the end of the file.
    fn parse_items(&mut self, m: usize, toks: &[Tok], pos: &mut usize, inline: bool) {
        while *pos < toks.len() {
            match &toks[*pos] {
                Tok::Punct('}') if inline => {
                    *pos += 1;
                    return;
                }
                Tok::Punct('#') => {
                    if is_cfg_test(toks, *pos) {
                        skip_attributes(toks, pos);
                        skip_item(toks, pos);
                    } else {
                        skip_attributes(toks, pos);
                    }
                }
                Tok::Ident(kw) if kw == "mod" => {
                    let name = ident_at(toks, *pos + 1).unwrap_or_default();
                    match toks.get(*pos + 2) {
                        Some(Tok::Punct(';')) => {
                            self.modules[m].file_children.push(name);
                            *pos += 3;
                        }
                        Some(Tok::Punct('{')) => {
                            let dir = self.modules[m].dir.join(&name);
                            let file = self.modules[m].file.clone();
                            let child = self.new_module(file, dir, Some(m), Some(&name));
                            *pos += 3;
                            self.parse_items(child, toks, pos, true);
                        }
                        _ => *pos += 1,
                    }
                }
                Tok::Ident(kw) if kw == "use" => {
                    *pos += 1;
                    let mut trees = Vec::new();
                    parse_use_tree(toks, pos, Vec::new(), &mut trees);
                    for (path, alias) in trees {
                        self.add_use(m, path, alias);
                    }
                }
                Tok::Ident(kw) if kw == "macro_rules" => {
                    // `macro_rules! name { ... }`: the name is an item; the body is not
                    // read (its paths are resolved where the macro is used).
                    if let Some(name) = ident_at(toks, *pos + 2) {
                        self.modules[m].items.insert(name);
                    }
                    *pos += 3;
                    skip_group(toks, pos);
                }
                Tok::Ident(kw)
                    if matches!(
                        kw.as_str(),
                        "fn" | "struct" | "enum" | "trait" | "type" | "const" | "static" | "union"
                    ) =>
                {
                    if let Some(name) = ident_at(toks, *pos + 1) {
                        self.modules[m].items.insert(name);
                    }
                    *pos += 1;
                    self.skip_item_body(m, toks, pos);
                }
                Tok::Ident(_) => self.path_expr(m, toks, pos),
                Tok::Punct('{') => {
                    // An `impl` block or a stray body: read its paths and uses.
                    *pos += 1;
                    self.scan_body(m, toks, pos);
                }
                _ => *pos += 1,
            }
        }
    }

    /// Reads an item's remainder up to its `;` or its closing brace, collecting paths.
    fn skip_item_body(&mut self, m: usize, toks: &[Tok], pos: &mut usize) {
        while *pos < toks.len() {
            match &toks[*pos] {
                Tok::Punct(';') => {
                    *pos += 1;
                    return;
                }
                Tok::Punct('{') => {
                    *pos += 1;
                    self.scan_body(m, toks, pos);
                    // A tuple struct or `const X: T = ..;` ends at `;`; a braced item here.
                    if !matches!(toks.get(*pos), Some(Tok::Punct(';'))) {
                        return;
                    }
                }
                Tok::Punct('#') if is_cfg_test(toks, *pos) => {
                    skip_attributes(toks, pos);
                    skip_item(toks, pos);
                }
                Tok::Ident(_) => self.path_expr(m, toks, pos),
                _ => *pos += 1,
            }
        }
    }

    /// Reads a braced body after its `{` up to its matching `}`, collecting paths and
    /// `use`s, skipping `#[cfg(test)]` items.
    fn scan_body(&mut self, m: usize, toks: &[Tok], pos: &mut usize) {
        let mut depth = 1;
        while *pos < toks.len() {
            match &toks[*pos] {
                Tok::Punct('{') => {
                    depth += 1;
                    *pos += 1;
                }
                Tok::Punct('}') => {
                    depth -= 1;
                    *pos += 1;
                    if depth == 0 {
                        return;
                    }
                }
                Tok::Punct('#') if is_cfg_test(toks, *pos) => {
                    skip_attributes(toks, pos);
                    skip_item(toks, pos);
                }
                Tok::Ident(kw) if kw == "use" => {
                    *pos += 1;
                    let mut trees = Vec::new();
                    parse_use_tree(toks, pos, Vec::new(), &mut trees);
                    for (path, alias) in trees {
                        self.add_use(m, path, alias);
                    }
                }
                Tok::Ident(kw) if kw == "macro_rules" => {
                    *pos += 3;
                    skip_group(toks, pos);
                }
                Tok::Ident(_) => self.path_expr(m, toks, pos),
                _ => *pos += 1,
            }
        }
    }

    /// Records `a::b::c` starting at `*pos` when it has two or more segments.
    fn path_expr(&mut self, m: usize, toks: &[Tok], pos: &mut usize) {
        let mut path = Vec::new();
        while let Some(id) = ident_at(toks, *pos) {
            path.push(id);
            *pos += 1;
            if toks.get(*pos) == Some(&Tok::Path) && ident_at(toks, *pos + 1).is_some() {
                *pos += 1;
            } else {
                break;
            }
        }
        if path.len() > 1 {
            self.modules[m].refs.push(path);
        }
    }

    fn add_use(&mut self, m: usize, path: Vec<String>, alias: Option<String>) {
        let module = &mut self.modules[m];
        module.refs.push(path.clone());
        match alias.as_deref() {
            Some("*") => module.globs.push(path),
            Some("_") => {}
            Some(name) => {
                module.uses.insert(name.to_string(), path);
            }
            None => {
                let mut path = path;
                // `use a::b::{self}` binds `b`.
                if path.last().map(String::as_str) == Some("self") {
                    path.pop();
                }
                if let Some(last) = path.last().cloned() {
                    module.uses.insert(last, path);
                }
            }
        }
    }

    /// The file that defines what `path` names, seen from module `m`; `None` for paths
    /// outside the crate.
    fn resolve(&self, m: usize, path: &[String], depth: usize) -> Option<&Path> {
        if depth > 16 {
            return None;
        }
        let mut cur = m;
        let mut inside = false;
        for (i, seg) in path.iter().enumerate() {
            match seg.as_str() {
                "crate" if i == 0 => {
                    cur = 0;
                    inside = true;
                    continue;
                }
                "super" => {
                    cur = self.modules[cur].parent?;
                    inside = true;
                    continue;
                }
                "self" => {
                    inside = true;
                    continue;
                }
                _ => {}
            }
            let module = &self.modules[cur];
            if let Some(&child) = module.children.get(seg) {
                cur = child;
                inside = true;
                continue;
            }
            if module.items.contains(seg) {
                return Some(&module.file);
            }
            if let Some(target) = module.uses.get(seg) {
                if target.as_slice() != &path[i..=i] {
                    let mut full = target.clone();
                    full.extend_from_slice(&path[i + 1..]);
                    if let Some(found) = self.resolve(cur, &full, depth + 1) {
                        return Some(found);
                    }
                }
            }
            for glob in &module.globs {
                let mut full = glob.clone();
                full.extend_from_slice(&path[i..]);
                if let Some(found) = self.resolve(cur, &full, depth + 1) {
                    return Some(found);
                }
            }
            // Not found here: an item made by a macro, or a variant of an enum re-exported
            // by a glob. Counted as this module's.
            return inside.then_some(module.file.as_path());
        }
        inside.then_some(self.modules[cur].file.as_path())
    }

    /// Edges between files: from the file that refers to the one that defines, each
    /// with the first path that makes it (to name it in a failure).
    fn edges(&self) -> Edges {
        let mut edges: Edges = BTreeMap::new();
        for (m, module) in self.modules.iter().enumerate() {
            let from = edges.entry(module.file.clone()).or_default();
            for path in &module.refs {
                if let Some(to) = self.resolve(m, path, 0) {
                    if to != module.file {
                        from.entry(to.to_path_buf())
                            .or_insert_with(|| path.join("::"));
                    }
                }
            }
        }
        edges
    }
}

/// Whether the attribute starting at `toks[pos]` (a `#`) is exactly `#[cfg(test)]`.
fn is_cfg_test(toks: &[Tok], pos: usize) -> bool {
    let want = [
        Tok::Punct('#'),
        Tok::Punct('['),
        Tok::Ident("cfg".into()),
        Tok::Punct('('),
        Tok::Ident("test".into()),
        Tok::Punct(')'),
        Tok::Punct(']'),
    ];
    toks.get(pos..pos + want.len()) == Some(&want[..])
}

/// Skips `#[...]` and `#![...]` attributes starting at `*pos`.
fn skip_attributes(toks: &[Tok], pos: &mut usize) {
    while toks.get(*pos) == Some(&Tok::Punct('#')) {
        *pos += 1;
        if toks.get(*pos) == Some(&Tok::Punct('!')) {
            *pos += 1;
        }
        skip_group(toks, pos);
    }
}

/// Skips one item: up to a `;` outside brackets or past its braced body.
fn skip_item(toks: &[Tok], pos: &mut usize) {
    while *pos < toks.len() {
        match toks[*pos] {
            Tok::Punct(';') => {
                *pos += 1;
                return;
            }
            Tok::Punct('{') => {
                skip_group(toks, pos);
                if toks.get(*pos) == Some(&Tok::Punct(';')) {
                    *pos += 1;
                }
                return;
            }
            Tok::Punct('(' | '[') => skip_group(toks, pos),
            _ => *pos += 1,
        }
    }
}

/// Skips a bracketed group (`(..)`, `[..]`, `{..}`) starting at `*pos`.
fn skip_group(toks: &[Tok], pos: &mut usize) {
    let mut depth = 0usize;
    while *pos < toks.len() {
        match toks[*pos] {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    *pos += 1;
                    return;
                }
            }
            _ => {}
        }
        *pos += 1;
    }
}

fn ident_at(toks: &[Tok], pos: usize) -> Option<String> {
    match toks.get(pos) {
        Some(Tok::Ident(s)) => Some(s.clone()),
        _ => None,
    }
}

/// Parses a use tree (`a::b::{c, d as e, f::*}`) into (path, alias) pairs; the alias is
/// `Some("*")` for a glob.
fn parse_use_tree(
    toks: &[Tok],
    pos: &mut usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    if toks.get(*pos) == Some(&Tok::Path) {
        *pos += 1;
    }
    loop {
        match toks.get(*pos) {
            Some(Tok::Ident(id)) => {
                prefix.push(id.clone());
                *pos += 1;
                match toks.get(*pos) {
                    Some(Tok::Path) => *pos += 1,
                    Some(Tok::Ident(kw)) if kw == "as" => {
                        let alias = ident_at(toks, *pos + 1).unwrap_or_else(|| "_".into());
                        *pos += 2;
                        out.push((prefix, Some(alias)));
                        finish_use(toks, pos);
                        return;
                    }
                    _ => {
                        out.push((prefix, None));
                        finish_use(toks, pos);
                        return;
                    }
                }
            }
            Some(Tok::Punct('*')) => {
                *pos += 1;
                out.push((prefix, Some("*".into())));
                finish_use(toks, pos);
                return;
            }
            Some(Tok::Punct('{')) => {
                *pos += 1;
                loop {
                    match toks.get(*pos) {
                        Some(Tok::Punct('}')) => {
                            *pos += 1;
                            break;
                        }
                        Some(Tok::Punct(',')) => *pos += 1,
                        None => return,
                        _ => parse_use_subtree(toks, pos, prefix.clone(), out),
                    }
                }
                finish_use(toks, pos);
                return;
            }
            _ => {
                finish_use(toks, pos);
                return;
            }
        }
    }
}

/// One branch inside `{ }` of a use tree; stops before its `,` or `}`.
fn parse_use_subtree(
    toks: &[Tok],
    pos: &mut usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    loop {
        match toks.get(*pos) {
            Some(Tok::Ident(id)) => {
                prefix.push(id.clone());
                *pos += 1;
                match toks.get(*pos) {
                    Some(Tok::Path) => *pos += 1,
                    Some(Tok::Ident(kw)) if kw == "as" => {
                        let alias = ident_at(toks, *pos + 1).unwrap_or_else(|| "_".into());
                        *pos += 2;
                        out.push((prefix, Some(alias)));
                        return;
                    }
                    _ => {
                        out.push((prefix, None));
                        return;
                    }
                }
            }
            Some(Tok::Punct('*')) => {
                *pos += 1;
                out.push((prefix, Some("*".into())));
                return;
            }
            Some(Tok::Punct('{')) => {
                *pos += 1;
                loop {
                    match toks.get(*pos) {
                        Some(Tok::Punct('}')) => {
                            *pos += 1;
                            return;
                        }
                        Some(Tok::Punct(',')) => *pos += 1,
                        None => return,
                        _ => parse_use_subtree(toks, pos, prefix.clone(), out),
                    }
                }
            }
            _ => {
                *pos += 1;
                return;
            }
        }
    }
}

/// Moves past the `;` that ends a `use`.
fn finish_use(toks: &[Tok], pos: &mut usize) {
    while *pos < toks.len() {
        let end = toks[*pos] == Tok::Punct(';');
        *pos += 1;
        if end {
            return;
        }
    }
}

/// The cycles of the graph, one per strongly connected component of two or more files,
/// each as a closed walk `a → b → … → a`.
fn cycles(edges: &Edges) -> Vec<Vec<PathBuf>> {
    let nodes: Vec<&PathBuf> = edges.keys().collect();
    let index: HashMap<&PathBuf, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let succ: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            edges[*n]
                .keys()
                .filter_map(|t| index.get(t).copied())
                .collect()
        })
        .collect();
    // Tarjan's strongly connected components, iteratively.
    let n = nodes.len();
    let (mut idx, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut comps, mut next) = (Vec::new(), Vec::new(), 0);
    for start in 0..n {
        if idx[start] != usize::MAX {
            continue;
        }
        let mut work = vec![(start, 0usize)];
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            if *i == 0 && idx[v] == usize::MAX {
                idx[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on[v] = true;
            }
            if let Some(&w) = succ[v].get(*i) {
                *i += 1;
                if idx[w] == usize::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(idx[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == idx[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comps.push(comp);
                }
            }
        }
    }
    // One shortest cycle through the first file of each component (breadth first).
    comps
        .into_iter()
        .map(|comp| {
            let inside: BTreeSet<usize> = comp.iter().copied().collect();
            let start = *comp.iter().min_by_key(|&&c| nodes[c]).unwrap_or(&comp[0]);
            let mut prev = vec![usize::MAX; n];
            let mut queue = std::collections::VecDeque::from([start]);
            'search: while let Some(v) = queue.pop_front() {
                for &w in &succ[v] {
                    if !inside.contains(&w) {
                        continue;
                    }
                    if w == start {
                        prev[start] = v;
                        break 'search;
                    }
                    if prev[w] == usize::MAX {
                        prev[w] = v;
                        queue.push_back(w);
                    }
                }
            }
            let mut walk = vec![nodes[start].clone()];
            let mut v = prev[start];
            while v != start && v != usize::MAX {
                walk.push(nodes[v].clone());
                v = prev[v];
            }
            walk.push(nodes[start].clone());
            walk.reverse();
            walk
        })
        .collect()
}

/// The crate's `src` directory.
fn src_dir() -> PathBuf {
    match option_env!("CARGO_MANIFEST_DIR") {
        Some(dir) => Path::new(dir).join("src"),
        None => PathBuf::from(std::env::var("MODULE_GRAPH_SRC").expect("MODULE_GRAPH_SRC")),
    }
}

#[test]
fn no_import_cycle_between_files() {
    let root = src_dir();
    let krate = Crate::read(&root);
    let edges = krate.edges();
    let name = |p: &Path| p.strip_prefix(&root).unwrap_or(p).display().to_string();
    let found: Vec<Vec<PathBuf>> = cycles(&edges);
    let shown: Vec<String> = found
        .iter()
        .map(|walk| {
            let mut line = name(&walk[0]);
            for pair in walk.windows(2) {
                let why = &edges[&pair[0]][&pair[1]];
                line.push_str(&format!(" → ({why}) {}", name(&pair[1])));
            }
            line
        })
        .collect();
    assert!(
        shown.is_empty(),
        "{} import cycle(s) between files of src/ (move the shared type into a leaf \
         module both can import):\n  {}",
        shown.len(),
        shown.join("\n  ")
    );
}

#[test]
fn the_graph_is_read() {
    // The check would pass vacuously on a parser that finds nothing: make sure it sees
    // known edges.
    let root = src_dir();
    let edges = Crate::read(&root).edges();
    assert!(edges.len() > 100, "only {} files read", edges.len());
    let lib = &edges[&root.join("lib.rs")];
    assert!(!lib.is_empty(), "lib.rs imports nothing?");
}

#[test]
fn a_cycle_is_found_and_named() {
    let mut edges = BTreeMap::new();
    let p = |s: &str| PathBuf::from(s);
    let to = |s: &str| BTreeMap::from([(p(s), String::new())]);
    edges.insert(p("a.rs"), to("b.rs"));
    edges.insert(p("b.rs"), to("c.rs"));
    edges.insert(p("c.rs"), to("a.rs"));
    edges.insert(p("d.rs"), to("a.rs"));
    let found = cycles(&edges);
    assert_eq!(
        found,
        vec![vec![p("a.rs"), p("b.rs"), p("c.rs"), p("a.rs")]]
    );
}

#[test]
fn uses_resolve_through_re_exports_and_skip_test_code() {
    let toks = tokenize(
        "use a::{b::{self, C as D}, e::*}; #[cfg(test)] mod tests { use crate::x; } \
         fn f() { let s = \"crate::y\"; crate::z::w(); }",
    );
    let mut pos = 0;
    let mut krate = Crate {
        modules: Vec::new(),
    };
    let m = krate.new_module(PathBuf::from("m.rs"), PathBuf::new(), None, None);
    krate.parse_items(m, &toks, &mut pos, false);
    let module = &krate.modules[m];
    assert_eq!(module.uses["b"], vec!["a", "b"]);
    assert_eq!(module.uses["D"], vec!["a", "b", "C"]);
    assert_eq!(module.globs, vec![vec!["a".to_string(), "e".to_string()]]);
    assert!(module.items.contains("f"));
    let refs: Vec<String> = module.refs.iter().map(|r| r.join("::")).collect();
    assert!(refs.contains(&"crate::z::w".to_string()), "{refs:?}");
    assert!(
        !refs.iter().any(|r| r.contains('x') || r.contains('y')),
        "{refs:?}"
    );
}
