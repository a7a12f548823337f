//! Imports and export lists of a TypeScript module with their types taken out, as
//! TypeScript and esbuild (k6) emit them: a name imported but never read as a value is
//! a type and goes, and an import left with no name goes whole, so that
//! `import { Options } from 'k6/options'` (a module of types only) loads nothing;
//! `type` names and interfaces leave export lists.

use super::edit::{Edit, Fill};
use oxc_ast::ast::*;
use oxc_span::Span;
use std::collections::BTreeSet;

/// One name of an import: how it is written (`default`, `* as ns`, `a as b`), its
/// local name, and whether `type` marks it.
struct Name {
    text: String,
    local: String,
    kind: NameKind,
    typeonly: bool,
}

#[derive(PartialEq)]
enum NameKind {
    Default,
    Namespace,
    Named,
}

/// An import statement, settled once every name read in the module is known.
pub(super) struct ImportStatement {
    span: Span,
    /// `None` for `import 'x'` (kept: it runs the module).
    names: Option<Vec<Name>>,
    /// From the module specifier to the statement's end (`'x' with {...};`).
    tail: Span,
}

impl ImportStatement {
    /// The import `d`, with its names.
    pub(super) fn of(d: &ImportDeclaration) -> Self {
        let names = d.specifiers.as_ref().map(|list| {
            list.iter()
                .map(|s| match s {
                    ImportDeclarationSpecifier::ImportSpecifier(s) => {
                        let imported = s.imported.name().to_string();
                        let local = s.local.name.to_string();
                        let quoted = matches!(s.imported, ModuleExportName::StringLiteral(_));
                        let imported = if quoted {
                            serde_json::to_string(&imported).expect("a string serialises")
                        } else {
                            imported
                        };
                        Name {
                            text: if imported == local {
                                local.clone()
                            } else {
                                format!("{imported} as {local}")
                            },
                            local,
                            kind: NameKind::Named,
                            typeonly: s.import_kind == ImportOrExportKind::Type,
                        }
                    }
                    ImportDeclarationSpecifier::ImportDefaultSpecifier(s) => Name {
                        text: s.local.name.to_string(),
                        local: s.local.name.to_string(),
                        kind: NameKind::Default,
                        typeonly: false,
                    },
                    ImportDeclarationSpecifier::ImportNamespaceSpecifier(s) => Name {
                        text: format!("* as {}", s.local.name),
                        local: s.local.name.to_string(),
                        kind: NameKind::Namespace,
                        typeonly: false,
                    },
                })
                .collect()
        });
        Self {
            span: d.span,
            names,
            tail: Span::new(d.source.span.start, d.span.end),
        }
    }

    /// The edit of this import: none when every name stays.
    pub(super) fn edit(self, src: &str, refs: &BTreeSet<String>) -> Option<Edit> {
        let names = self.names?;
        if names.is_empty() {
            // `import {} from 'x'`: TypeScript drops it.
            return Some(statement(self.span));
        }
        let kept: Vec<&Name> = names
            .iter()
            .filter(|n| !n.typeonly && refs.contains(&n.local))
            .collect();
        if kept.len() == names.len() {
            return None;
        }
        if kept.is_empty() {
            return Some(statement(self.span));
        }
        let mut parts = Vec::new();
        if let Some(d) = kept.iter().find(|n| n.kind == NameKind::Default) {
            parts.push(d.text.clone());
        }
        if let Some(ns) = kept.iter().find(|n| n.kind == NameKind::Namespace) {
            parts.push(ns.text.clone());
        }
        let named: Vec<&str> = kept
            .iter()
            .filter(|n| n.kind == NameKind::Named)
            .map(|n| n.text.as_str())
            .collect();
        if !named.is_empty() {
            parts.push(format!("{{ {} }}", named.join(", ")));
        }
        let tail = &src[self.tail.start as usize..self.tail.end as usize];
        Some(Edit {
            start: self.span.start as usize,
            end: self.span.end as usize,
            fill: Fill::Text(format!(
                "import {} from {}",
                parts.join(", "),
                tail.replace('\n', " ")
            )),
        })
    }
}

/// `export { a, type B }` (with `from` or not), settled once every type declared in
/// the module is known.
pub(super) struct ExportList {
    span: Span,
    /// (local, exported, marked `type`), as written.
    names: Vec<(String, String, bool)>,
    /// The `from '...'` specifier's span, when the list re-exports.
    from: Option<Span>,
}

impl ExportList {
    /// The list `specifiers` of the statement at `span`.
    pub(super) fn of(span: Span, specifiers: &[ExportSpecifier], from: Option<Span>) -> Self {
        let names = specifiers
            .iter()
            .map(|s| {
                (
                    export_name(&s.local),
                    export_name(&s.exported),
                    s.export_kind == ImportOrExportKind::Type,
                )
            })
            .collect();
        Self { span, names, from }
    }

    /// The edit of this list: none when every name stays.
    pub(super) fn edit(self, src: &str, type_names: &BTreeSet<String>) -> Option<Edit> {
        let local_type = |local: &str| self.from.is_none() && type_names.contains(local);
        let kept: Vec<String> = self
            .names
            .iter()
            .filter(|(local, _, typeonly)| !typeonly && !local_type(local))
            .map(|(local, exported, _)| {
                if local == exported {
                    local.clone()
                } else {
                    format!("{local} as {exported}")
                }
            })
            .collect();
        if kept.len() == self.names.len() {
            return None;
        }
        if kept.is_empty() {
            return Some(statement(self.span));
        }
        let from = self
            .from
            .map(|s| {
                format!(
                    " from {};",
                    &src[s.start as usize..s.end as usize].replace('\n', " ")
                )
            })
            .unwrap_or_else(|| ";".into());
        Some(Edit {
            start: self.span.start as usize,
            end: self.span.end as usize,
            fill: Fill::Text(format!("export {{ {} }}{from}", kept.join(", "))),
        })
    }
}

/// A name in an export list as JavaScript writes it (quoted when it is a string).
fn export_name(n: &ModuleExportName) -> String {
    match n {
        ModuleExportName::StringLiteral(s) => {
            serde_json::to_string(s.value.as_str()).expect("a string serialises")
        }
        other => other.name().to_string(),
    }
}

fn statement(span: Span) -> Edit {
    Edit {
        start: span.start as usize,
        end: span.end as usize,
        fill: Fill::Statement,
    }
}
