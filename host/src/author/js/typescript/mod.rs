//! TypeScript scripts (`host run script.ts`, `import ... from './lib.ts'`): the types are
//! stripped at build, as k6 strips them with esbuild, but in place: every type is
//! overwritten with blanks, so the JavaScript the bundler reads has each statement on
//! the line and column it had in the `.ts` file, and an error or a stack trace names
//! the `.ts` line without a source map. What TypeScript turns into code (enums,
//! constructor parameter properties) is written on the lines it stood on.
//!
//! Parsed with oxc's parser (oxc_parser, the parser alone: its transformer and code
//! generator would reformat the file and need a source map to name its lines).

mod enums;
mod imports;
mod strip;
#[cfg(test)]
mod tests;

use anyhow::{bail, Result};
use oxc_allocator::Allocator;
use oxc_ast_visit::Visit;
use oxc_parser::Parser;
use oxc_span::SourceType;
use std::path::Path;

/// Whether `path` is a TypeScript file by its extension (k6 takes `.ts`; `.mts` is
/// TypeScript's name for an ES module, which every k6 script is).
pub(crate) fn is_typescript(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("ts" | "mts")
    )
}

/// The JavaScript of the TypeScript module `src`, each line where it was; `shown`
/// names the file in errors (`lib.ts:12:5: ...`).
pub(crate) fn strip(src: &str, shown: &str) -> Result<String> {
    let allocator = Allocator::default();
    let source_type = SourceType::ts().with_module(true);
    let parsed = Parser::new(&allocator, src, source_type).parse();
    if let Some(e) = parsed.diagnostics.errors().next() {
        let at = e
            .labels
            .first()
            .map(|l| position(src, l.offset() as usize))
            .unwrap_or_default();
        bail!("{shown}{at}: {} (TypeScript syntax error)", e.message);
    }
    let mut v = strip::Stripper::new(src);
    v.visit_program(&parsed.program);
    let edits = v.finish()?;
    if let Some((offset, why)) = edits.refused {
        bail!("{shown}{}: {why}", position(src, offset));
    }
    Ok(apply(src, edits.edits))
}

/// `:LINE:COLUMN` of a byte offset, both from 1 (the column in characters).
fn position(src: &str, offset: usize) -> String {
    let offset = offset.min(src.len());
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    format!(":{line}:{col}")
}

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
fn apply(src: &str, mut edits: Vec<Edit>) -> String {
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
