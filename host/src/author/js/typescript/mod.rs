//! TypeScript scripts (`host run script.ts`, `import ... from './lib.ts'`): the types are
//! stripped at build, as k6 strips them with esbuild, but in place: every type is
//! overwritten with blanks, so the JavaScript the bundler reads has each statement on
//! the line and column it had in the `.ts` file, and an error or a stack trace names
//! the `.ts` line without a source map. What TypeScript turns into code (enums,
//! constructor parameter properties) is written on the lines it stood on.
//!
//! Parsed with oxc's parser (oxc_parser, the parser alone: its transformer and code
//! generator would reformat the file and need a source map to name its lines).

mod edit;
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
    Ok(edit::apply(src, edits.edits))
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
