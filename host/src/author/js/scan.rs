//! A JavaScript scanner just deep enough to bundle k6 scripts: it finds the top-level
//! `import` and `export` keywords and blanks out comments, strings, template literals and
//! regular expressions, so that later searches (for `open(`, unsupported calls) see
//! code only. It is not a parser: the statements it rewrites are the forms k6 scripts use.

/// What the scanner found in a source file.
pub(crate) struct Scanned {
    /// The source with every comment, string, template and regex body replaced by
    /// spaces (newlines kept), byte for byte the same length.
    pub code: Vec<u8>,
    /// Byte offsets of `import` / `export` keywords at the top level of the module.
    pub keywords: Vec<(usize, Keyword)>,
}

/// A top-level module keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keyword {
    /// `import` (a static import: not `import(` nor `import.meta`).
    Import,
    /// `export`.
    Export,
}

/// Where the body of a regular expression literal that starts at `from` (just past its
/// opening `/`) ends: the index of its closing `/`, or of the line break or end of
/// text that cuts it short. A `/` inside a `[...]` class or after `\\` does not close it.
pub(super) fn regex_body_end(b: &[u8], from: usize) -> usize {
    let mut i = from;
    let mut class = false;
    while i < b.len() && b[i] != b'\n' {
        match b[i] {
            b'\\' => i += 1,
            b'[' => class = true,
            b']' => class = false,
            b'/' if !class => break,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Words after which a `/` starts a regular expression, not a division.
pub(super) const REGEX_AFTER_WORDS: &[&str] = &[
    "return",
    "typeof",
    "case",
    "do",
    "else",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "yield",
    "await",
    "instanceof",
];

/// Scans `src`.
pub(crate) fn scan(src: &str) -> Scanned {
    let b = src.as_bytes();
    let mut code = b.to_vec();
    let mut keywords = Vec::new();
    let mut depth: i64 = 0;
    // Each open template literal's brace depth at its `${`.
    let mut templates: Vec<i64> = Vec::new();
    let mut last_sig: u8 = b';';
    let mut last_word = String::new();
    let mut i = 0;
    let blank = |code: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut code[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = src[i..].find('\n').map_or(b.len(), |n| i + n);
                blank(&mut code, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = src[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
                blank(&mut code, i, end);
                i = end;
            }
            b'\'' | b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != c && b[j] != b'\n' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(b.len());
                blank(&mut code, i + 1, end.saturating_sub(1).max(i + 1));
                last_sig = c;
                last_word.clear();
                i = end;
            }
            b'`' => {
                i = template_part(b, &mut code, i + 1, &blank);
                if i <= b.len() && i >= 2 && b.get(i - 2..i) == Some(b"${") {
                    templates.push(depth);
                    depth += 1;
                    last_sig = b'{';
                } else {
                    last_sig = b'`';
                }
                last_word.clear();
            }
            b'}' if templates.last() == Some(&(depth - 1)) => {
                // The end of a `${...}`: the template goes on.
                templates.pop();
                depth -= 1;
                i = template_part(b, &mut code, i + 1, &blank);
                if b.get(i.saturating_sub(2)..i) == Some(b"${") {
                    templates.push(depth);
                    depth += 1;
                    last_sig = b'{';
                } else {
                    last_sig = b'`';
                }
                last_word.clear();
            }
            b'/' if regex_allowed(last_sig, &last_word) => {
                let j = regex_body_end(b, i + 1);
                blank(&mut code, i + 1, j.min(b.len()));
                i = (j + 1).min(b.len());
                last_sig = b')';
                last_word.clear();
            }
            b'{' | b'(' | b'[' => {
                depth += 1;
                last_sig = c;
                last_word.clear();
                i += 1;
            }
            b'}' | b')' | b']' => {
                depth -= 1;
                last_sig = c;
                last_word.clear();
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$')
                {
                    i += 1;
                }
                let word = &src[start..i];
                if depth == 0 && last_sig != b'.' {
                    let next = src[i..].trim_start().as_bytes().first().copied();
                    if word == "import" && next != Some(b'(') && next != Some(b'.') {
                        keywords.push((start, Keyword::Import));
                    } else if word == "export" {
                        keywords.push((start, Keyword::Export));
                    }
                }
                last_sig = b'a';
                last_word = word.to_string();
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                last_sig = c;
                last_word.clear();
                i += 1;
            }
        }
    }
    Scanned { code, keywords }
}

/// Blanks a template literal's text from `i` to its closing backtick or its next `${`;
/// returns the offset after it.
fn template_part(
    b: &[u8],
    code: &mut Vec<u8>,
    mut i: usize,
    blank: &dyn Fn(&mut Vec<u8>, usize, usize),
) -> usize {
    let start = i;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => {
                blank(code, start, i);
                return i + 1;
            }
            b'$' if b.get(i + 1) == Some(&b'{') => {
                blank(code, start, i);
                return i + 2;
            }
            _ => i += 1,
        }
    }
    blank(code, start, b.len());
    b.len()
}

fn regex_allowed(last_sig: u8, last_word: &str) -> bool {
    if last_sig == b'a' {
        return REGEX_AFTER_WORDS.contains(&last_word);
    }
    b"(,=:[!&|?{};+-*%<>~^".contains(&last_sig)
}

/// Where `code` (strings and comments blanked) calls the method `name` (`.load`):
/// each call's offset and the offset of its `(`. A longer name (`.loadProtoset` for
/// `.load`) is not a call of `name`: no `(` follows it.
pub(crate) fn call_sites<'a>(
    code: &'a str,
    name: &'a str,
) -> impl Iterator<Item = (usize, usize)> + 'a {
    code.match_indices(name).filter_map(move |(at, _)| {
        let rest = code[at + name.len()..].trim_start();
        rest.starts_with('(').then(|| (at, code.len() - rest.len()))
    })
}

/// The string literal that a call's first argument is, the call's `(` at `paren` of
/// `src`: `Ok(None)` when the argument is not a literal (the caller says what it
/// needs), an error naming `shown` and the line when the literal is never closed.
pub(crate) fn literal_argument(
    src: &str,
    paren: usize,
    shown: &str,
) -> anyhow::Result<Option<String>> {
    let arg = src[paren + 1..].trim_start();
    let arg_at = src.len() - arg.len();
    let Some(q) = arg.chars().next().filter(|c| matches!(c, '\'' | '"')) else {
        return Ok(None);
    };
    let len = arg[1..]
        .find(q)
        .ok_or_else(|| anyhow::anyhow!("{shown}:{}: unclosed string", line_of(src, arg_at)))?;
    Ok(Some(arg[1..1 + len].to_string()))
}

/// The 1-based line of byte offset `at`.
pub(crate) fn line_of(src: &str, at: usize) -> usize {
    src.as_bytes()[..at.min(src.len())]
        .iter()
        .filter(|&&c| c == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_only_at_the_top_level_and_outside_text() {
        let src = "import a from 'x';\n// import b\nconst s = 'import c';\nconst t = `${'export'} x`;\nfunction f() { import('y'); }\nconst r = /import\\//;\nexport default 1;\n";
        let s = scan(src);
        let kinds: Vec<_> = s
            .keywords
            .iter()
            .map(|(at, k)| (line_of(src, *at), *k))
            .collect();
        assert_eq!(kinds, vec![(1, Keyword::Import), (7, Keyword::Export)]);
        let code = String::from_utf8(s.code).unwrap();
        assert!(!code.contains("import c"), "{code}");
        assert!(code.contains("import a from"));
        assert_eq!(code.len(), src.len());
    }

    #[test]
    fn division_is_not_a_regex() {
        let src = "const a = b / 2; const c = 'x/y';\nexport const d = a / c;\n";
        let s = scan(src);
        assert_eq!(s.keywords.len(), 1);
        assert_eq!(line_of(src, s.keywords[0].0), 2);
    }
}
