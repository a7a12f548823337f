//! What an ES module's clauses bind, read by the bundler: the names an `import`
//! clause makes, an `export { ... }` list, and the names a declaration binds, so each
//! becomes a `const` binding or an assignment to the module's exports.

/// A binding an import clause makes.
pub(crate) enum Binding {
    Default(String),
    Namespace(String),
    Named { imported: String, local: String },
}

/// An import clause the bundler cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ClauseError {
    /// `{` without `}`.
    #[error("unclosed `{{` in the import")]
    Unclosed,
    /// `*` not followed by `as NAME`.
    #[error("expected `* as NAME`")]
    Namespace,
    /// Anything else.
    #[error("cannot read the import clause `{0}`")]
    Unreadable(String),
}

/// The bindings of an import clause (`a`, `* as a`, `{ a, b as c }`, `a, { b }`).
pub(crate) fn bindings(clause: &str) -> std::result::Result<Vec<Binding>, ClauseError> {
    let mut out = Vec::new();
    let mut rest = clause.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('{') {
            let close = r.find('}').ok_or(ClauseError::Unclosed)?;
            for (imported, local) in export_list(&rest[..close + 2]) {
                out.push(Binding::Named { imported, local });
            }
            rest = r[close + 1..].trim_start();
        } else if let Some(r) = rest.strip_prefix('*') {
            let r = r
                .trim_start()
                .strip_prefix("as")
                .ok_or(ClauseError::Namespace)?;
            let name = first_word(r.trim_start()).to_string();
            rest = r.trim_start()[name.len()..].trim_start();
            out.push(Binding::Namespace(name));
        } else {
            let name = first_word(rest).to_string();
            if name.is_empty() {
                return Err(ClauseError::Unreadable(clause.to_owned()));
            }
            rest = rest[name.len()..].trim_start();
            out.push(Binding::Default(name));
        }
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    Ok(out)
}

/// `{ a, b as c }` → [(a, a), (b, c)]: (name inside, name outside).
pub(crate) fn export_list(list: &str) -> Vec<(String, String)> {
    list.trim_matches(|c| c == '{' || c == '}')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| match item.split_once(" as ") {
            Some((a, b)) => (a.trim().to_string(), b.trim().to_string()),
            None => (item.to_string(), item.to_string()),
        })
        .collect()
}

pub(crate) fn first_word(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The name of `function NAME`, `async function NAME`, `function* NAME`, `class NAME`.
pub(crate) fn declared_name(s: &str) -> Option<String> {
    let mut rest = s.trim_start();
    for kw in ["async", "function", "class"] {
        if first_word(rest) == kw {
            rest = rest[kw.len()..].trim_start();
        }
    }
    rest = rest.strip_prefix('*').unwrap_or(rest).trim_start();
    let name = first_word(rest);
    (!name.is_empty() && name != "extends").then(|| name.to_string())
}

/// The names a `const`/`let`/`var` declaration binds: `a = 1`, `{ a, b: c } = x`, `[a, b] = y`
/// (the first declarator only).
pub(crate) fn declared_bindings(s: &str) -> Vec<String> {
    let s = s.trim_start();
    if s.starts_with('{') || s.starts_with('[') {
        let close = s.find(['}', ']']).unwrap_or(s.len());
        return s[1..close]
            .split(',')
            .filter_map(|part| {
                let part = part.split('=').next()?.trim();
                let name = part.rsplit(':').next()?.trim().trim_start_matches("...");
                (!name.is_empty()).then(|| name.to_string())
            })
            .collect();
    }
    let name = first_word(s);
    if name.is_empty() {
        Vec::new()
    } else {
        vec![name.to_string()]
    }
}
