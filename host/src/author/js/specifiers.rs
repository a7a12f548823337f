//! Where a module's imports and `open()`s lead, and the literal strings they are
//! written with: a k6 module's name, a refusal naming what this host does not offer, a
//! remote module fetched and pinned at build, or a file inside the script's folder
//! (queued for the bundle). The bundler (bundle.rs) rewrites the statements around them.

use super::known::{is_k6_summary, known_module, K6_SUMMARY, REFUSED};
use super::scan::{line_of, literal_argument};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// A module's id in the bundle: its path from the entry's folder.
pub(crate) fn module_id(root: &Path, path: &Path) -> String {
    if let Some(url) = super::remote::url_of(path) {
        return url;
    }
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Where an import points: a k6 module's name, or a bundled file's id (queued).
pub(crate) fn resolve(
    spec: &str,
    at: &str,
    dir: &Path,
    root: &Path,
    deps: &mut Vec<PathBuf>,
) -> Result<String> {
    if known_module(spec).is_some() {
        return Ok(spec.to_string());
    }
    if is_k6_summary(spec) {
        return Ok(K6_SUMMARY.to_string());
    }
    if let Some((_, why)) = REFUSED.iter().find(|(m, _)| *m == spec) {
        bail!("{at}: `{spec}` is not supported by this host: {why} (see docs/k6-compatibility.md)");
    }
    if spec.starts_with("k6") {
        bail!("{at}: `{spec}` is not a k6 module this host knows (see docs/k6-compatibility.md)");
    }
    // A remote module, or a relative import inside one: fetched (and pinned) at build.
    let remote = if spec.starts_with("http://") || spec.starts_with("https://") {
        Some(spec.to_string())
    } else {
        super::remote::relative_url(dir, spec)
    };
    if let Some(url) = remote {
        let file = super::remote::module(&url, at)?;
        let id = module_id(root, &file);
        deps.push(file);
        return Ok(id);
    }
    if !(spec.starts_with("./") || spec.starts_with("../") || spec.starts_with('/')) {
        bail!("{at}: `{spec}` is neither a k6 module nor a relative path (./file.js)");
    }
    let file = dir.join(spec);
    let file = file.canonicalize().with_context(|| {
        format!(
            "{at}: imports {spec}, which cannot be read ({})",
            file.display()
        )
    })?;
    super::outside::check(root, &file, at, &format!("import {spec:?}"))?;
    let id = module_id(root, &file);
    deps.push(file);
    Ok(id)
}

/// The next string literal at or after `from`: (its text, start of the quote, after the
/// closing quote). `code` is the blanked source, to skip comments.
pub(crate) fn next_string(src: &str, code: &str, from: usize) -> Option<(String, usize, usize)> {
    let start = from + code[from..].find(['\'', '"'])?;
    let quote = src.as_bytes()[start];
    let len = src[start + 1..].find(quote as char)?;
    Some((
        src[start + 1..start + 1 + len].to_string(),
        start,
        start + len + 2,
    ))
}

/// After a statement whose last token ends at `at`: past an optional `;`.
pub(crate) fn statement_end(src: &str, at: usize) -> usize {
    let rest = &src[at..];
    let trimmed = rest.trim_start_matches([' ', '\t']);
    if trimmed.starts_with(';') {
        at + (rest.len() - trimmed.len()) + 1
    } else {
        at
    }
}

/// The files the module `open()`s, by their literal paths (resolved from `dir`).
pub(crate) fn opens(
    src: &str,
    code: &str,
    shown: &str,
    dir: &Path,
) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("open") {
        let at = from + i;
        from = at + 4;
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '.') {
            continue;
        }
        let after = code[at + 4..].trim_start();
        if !after.starts_with('(') {
            continue;
        }
        let paren = code.len() - after.len();
        let Some(literal) = literal_argument(src, paren, shown)? else {
            if code[at..].starts_with("open(") || after.starts_with('(') {
                // `function open(`, `.open(` are not k6's open; a call is.
                if code[..at].trim_end().ends_with("function") {
                    continue;
                }
            }
            bail!(
                "{shown}:{}: open() needs a literal path (open('./data.json')) so that host build can bundle the file",
                line_of(src, at)
            );
        };
        out.push((literal.clone(), dir.join(&literal)));
    }
    Ok(out)
}
