//! The edits the stripper makes to a TypeScript module and how they are applied: a
//! span blanked, a statement removed, or code put in its place, each keeping the lines
//! (and, blanked, the columns) of what it replaces. A leaf of `typescript`: the stripper
//! and the import elision both make edits, and `mod.rs` applies them.

/// What an edit puts in place of its span.
#[derive(Debug, Clone)]
pub(super) enum Fill {
    /// Blanks (the span's line ends kept).
    Blank,
    /// A whole statement removed: `;` then blanks, so that the statement before it
    /// still ends where it did (`a = b\ninterface I {}\n(c)` is not `b(c)`).
    Statement,
    /// Other code, then the span's line ends (its lines keep their count).
    Text(String),
}

/// One edit of the source: the byte range `start..end` and what goes there.
#[derive(Debug, Clone)]
pub(super) struct Edit {
    pub start: usize,
    pub end: usize,
    pub fill: Fill,
}

/// Applies `edits` (any order); an edit inside one already applied is dropped (a
/// whole declaration blanked covers the types inside it).
pub(super) fn apply(src: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| (e.start, std::cmp::Reverse(e.end)));
    let mut out = String::with_capacity(src.len());
    let mut at = 0usize;
    for e in edits {
        if e.start < at {
            continue;
        }
        out.push_str(&src[at..e.start]);
        let old = &src[e.start..e.end];
        match e.fill {
            Fill::Blank => out.push_str(&blank(old)),
            Fill::Statement => {
                let b = blank(old);
                out.push(';');
                out.push_str(b.strip_prefix(' ').unwrap_or(&b));
            }
            Fill::Text(text) => {
                out.push_str(&text);
                out.push_str(&"\n".repeat(old.matches('\n').count()));
            }
        }
        at = e.end;
    }
    out.push_str(&src[at..]);
    out
}

/// `text` as blanks: one space per UTF-16 unit (JavaScript's columns), line ends kept.
fn blank(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\r' | '\u{2028}' | '\u{2029}' => c.to_string(),
            _ => " ".repeat(c.len_utf16()),
        })
        .collect()
}
