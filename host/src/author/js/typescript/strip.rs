//! The walk over a TypeScript module that finds what to blank or rewrite: type
//! annotations and parameters, `as`/`satisfies`/`!`, type-only declarations, class
//! modifiers, enums and parameter properties. What k6 cannot run either (decorators,
//! which k6 1.1.0 spins on at 100 % CPU) or what needs a module system this host has
//! not (`import x = require()`, `export =`, namespaces holding values) is refused with
//! its line.

use super::edit::{Edit, Fill};
use super::imports::{ExportList, ImportStatement};
use oxc_ast::ast::*;
use oxc_ast_visit::{walk, Visit};
use oxc_span::{GetSpan, Span};
use oxc_syntax::scope::ScopeFlags;
use std::collections::BTreeSet;

/// Collects the edits of one module.
pub(super) struct Stripper<'s> {
    pub(super) src: &'s str,
    edits: Vec<Edit>,
    /// Names read as values anywhere (an import none of whose names is read is a type
    /// import, and dropped as TypeScript and esbuild drop it).
    pub(super) refs: BTreeSet<String>,
    /// Names declared as types only (interfaces, type aliases) in this module.
    pub(super) type_names: BTreeSet<String>,
    imports: Vec<ImportStatement>,
    exports: Vec<ExportList>,
    /// The first thing refused: (offset, why).
    refused: Option<(usize, String)>,
}

/// What a walk found: its edits, or the first refusal.
pub(super) struct Found {
    pub edits: Vec<Edit>,
    pub refused: Option<(usize, String)>,
}

impl<'s> Stripper<'s> {
    /// A walk over `src`.
    pub(super) fn new(src: &'s str) -> Self {
        Self {
            src,
            edits: Vec::new(),
            refs: BTreeSet::new(),
            type_names: BTreeSet::new(),
            imports: Vec::new(),
            exports: Vec::new(),
            refused: None,
        }
    }

    /// The edits, with the import and export lists settled now that every name read
    /// is known.
    pub(super) fn finish(mut self) -> anyhow::Result<Found> {
        let imports = std::mem::take(&mut self.imports);
        for import in imports {
            if let Some(edit) = import.edit(self.src, &self.refs) {
                self.edits.push(edit);
            }
        }
        let exports = std::mem::take(&mut self.exports);
        for list in exports {
            if let Some(edit) = list.edit(self.src, &self.type_names) {
                self.edits.push(edit);
            }
        }
        Ok(Found {
            edits: self.edits,
            refused: self.refused,
        })
    }

    fn refuse(&mut self, at: u32, why: &str) {
        if self.refused.is_none() {
            self.refused = Some((at as usize, why.to_string()));
        }
    }

    fn put(&mut self, start: u32, end: u32, fill: Fill) {
        self.edits.push(Edit {
            start: start as usize,
            end: end as usize,
            fill,
        });
    }

    fn blank(&mut self, span: Span) {
        self.put(span.start, span.end, Fill::Blank);
    }

    fn blank_statement(&mut self, span: Span) {
        self.put(span.start, span.end, Fill::Statement);
    }

    /// The offset of the first character at or after `from` that is not blank.
    fn next_char(&self, from: u32) -> Option<(u32, char)> {
        let rest = &self.src[from as usize..];
        let trimmed = rest.trim_start();
        let c = trimmed.chars().next()?;
        Some((from + (rest.len() - trimmed.len()) as u32, c))
    }

    /// Blanks a `?` or `!` right after `from` (an optional or definite name).
    fn blank_mark_after(&mut self, from: u32) {
        if let Some((at, c)) = self.next_char(from) {
            if c == '?' || c == '!' {
                self.put(at, at + 1, Fill::Blank);
            }
        }
    }

    /// Blanks TypeScript's modifier words between `from` and `to` (a class member's
    /// or parameter's head, before its name): `public`, `private`, `readonly`...
    fn blank_modifiers(&mut self, from: u32, to: u32) {
        let head = &self.src[from as usize..to as usize];
        let mut i = 0;
        let bytes = head.as_bytes();
        while i < bytes.len() {
            if bytes[i].is_ascii_alphabetic() {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                let word = &head[start..i];
                if matches!(
                    word,
                    "public"
                        | "private"
                        | "protected"
                        | "readonly"
                        | "override"
                        | "abstract"
                        | "declare"
                ) {
                    let s = from + start as u32;
                    self.put(s, s + word.len() as u32, Fill::Blank);
                }
            } else {
                i += 1;
            }
        }
    }

    /// A declaration that is a type only, or ambient (`declare`), or a function's
    /// overload: it has no code. `None` when it has.
    fn typeonly(&mut self, decl: &Declaration) -> Option<()> {
        match decl {
            Declaration::TSTypeAliasDeclaration(d) => {
                self.type_names.insert(d.id.name.to_string());
            }
            Declaration::TSInterfaceDeclaration(d) => {
                self.type_names.insert(d.id.name.to_string());
            }
            Declaration::VariableDeclaration(d) if d.declare => {}
            Declaration::FunctionDeclaration(f) if f.declare || f.body.is_none() => {}
            Declaration::ClassDeclaration(c) if c.declare => {}
            Declaration::TSEnumDeclaration(e) if e.declare => {}
            Declaration::TSExternalModuleDeclaration(_) | Declaration::TSGlobalDeclaration(_) => {}
            Declaration::TSNamespaceDeclaration(n) => {
                if !n.declare && namespace_has_values(n) {
                    self.refuse(
                        n.span.start,
                        "a TypeScript namespace holding values is not supported by host build; \
                         move its contents to a module of their own and import it",
                    );
                }
            }
            Declaration::TSImportEqualsDeclaration(d) => {
                if d.import_kind != ImportOrExportKind::Type {
                    self.refuse(
                        d.span.start,
                        "`import NAME = ...` (TypeScript's CommonJS import) is not supported; \
                         write `import NAME from '...'`",
                    );
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// `this.x = x;` for each parameter property of `ctor`, placed at the start of its
    /// body (after `super(...)` in a derived class), where TypeScript puts them.
    fn parameter_properties(&mut self, ctor: &Function, derived: bool) {
        let mut assigns = String::new();
        for p in &ctor.params.items {
            if p.accessibility.is_none() && !p.readonly && !p.r#override {
                continue;
            }
            let name = match &p.pattern {
                BindingPattern::BindingIdentifier(id) => id.name.to_string(),
                _ => {
                    self.refuse(
                        p.span.start,
                        "a parameter property must be a plain name (`private x: T`)",
                    );
                    return;
                }
            };
            self.blank_modifiers(p.span.start, p.pattern.span().start);
            assigns.push_str(&format!(" this.{name} = {name};"));
        }
        if assigns.is_empty() {
            return;
        }
        let Some(body) = &ctor.body else { return };
        let at = if derived {
            let call = body.statements.iter().find(|s| {
                matches!(s, Statement::ExpressionStatement(e)
                    if matches!(&e.expression, Expression::CallExpression(c)
                        if matches!(c.callee, Expression::Super(_))))
            });
            match call {
                Some(s) => s.span().end,
                None => {
                    self.refuse(
                        body.span.start,
                        "a derived class's constructor with parameter properties must call \
                         `super(...)` as a statement of its own",
                    );
                    return;
                }
            }
        } else {
            body.span.start + 1
        };
        self.put(at, at, Fill::Text(assigns));
    }
}

/// Whether a namespace declares anything but types (TypeScript emits no code for one
/// that holds only types).
fn namespace_has_values(n: &TSNamespaceDeclaration) -> bool {
    let TSNamespaceDeclarationBody::TSModuleBlock(block) = &n.body else {
        if let TSNamespaceDeclarationBody::TSNamespaceDeclaration(inner) = &n.body {
            return namespace_has_values(inner);
        }
        return true;
    };
    block.body.iter().any(|s| {
        let decl = match s {
            Statement::ExportDeclaration(e) => &e.declaration,
            other => match other.as_declaration() {
                Some(d) => d,
                None => return true,
            },
        };
        match decl {
            Declaration::TSInterfaceDeclaration(_) | Declaration::TSTypeAliasDeclaration(_) => {
                false
            }
            Declaration::TSNamespaceDeclaration(inner) => namespace_has_values(inner),
            _ => true,
        }
    })
}

impl<'a> Visit<'a> for Stripper<'_> {
    fn visit_statement(&mut self, it: &Statement<'a>) {
        match it {
            Statement::ImportDeclaration(d) => {
                if d.import_kind == ImportOrExportKind::Type {
                    self.blank_statement(d.span);
                } else {
                    self.imports.push(ImportStatement::of(d));
                }
                return;
            }
            Statement::ExportDeclaration(e) => {
                if self.typeonly(&e.declaration).is_some() {
                    self.blank_statement(e.span);
                    return;
                }
            }
            Statement::ExportNamedDeclaration(e) => {
                if e.export_kind == ImportOrExportKind::Type {
                    self.blank_statement(e.span);
                    return;
                }
                for s in &e.specifiers {
                    if s.export_kind == ImportOrExportKind::Value {
                        if let ModuleExportName::IdentifierReference(r) = &s.local {
                            self.refs.insert(r.name.to_string());
                        }
                    }
                }
                self.exports
                    .push(ExportList::of(e.span, &e.specifiers, None));
                return;
            }
            Statement::ExportFromDeclaration(e) => {
                if e.export_kind == ImportOrExportKind::Type
                    || (!e.specifiers.is_empty()
                        && e.specifiers
                            .iter()
                            .all(|s| s.export_kind == ImportOrExportKind::Type))
                {
                    self.blank_statement(e.span);
                } else {
                    self.exports
                        .push(ExportList::of(e.span, &e.specifiers, Some(e.source.span)));
                }
                return;
            }
            Statement::ExportAllDeclaration(e) => {
                if e.export_kind == ImportOrExportKind::Type {
                    self.blank_statement(e.span);
                }
                return;
            }
            Statement::ExportDefaultDeclaration(e) => match &e.declaration {
                ExportDefaultDeclarationKind::TSInterfaceDeclaration(_) => {
                    self.blank_statement(e.span);
                    return;
                }
                ExportDefaultDeclarationKind::FunctionDeclaration(f) if f.body.is_none() => {
                    self.blank_statement(e.span);
                    return;
                }
                _ => {}
            },
            Statement::TSExportAssignment(e) => {
                self.refuse(
                    e.span.start,
                    "`export = ...` (TypeScript's CommonJS export) is not supported; write \
                     `export default ...`",
                );
                return;
            }
            Statement::TSNamespaceExportDeclaration(e) => {
                self.blank_statement(e.span);
                return;
            }
            _ => {
                if let Some(decl) = it.as_declaration() {
                    if self.typeonly(decl).is_some() {
                        self.blank_statement(it.span());
                        return;
                    }
                }
            }
        }
        walk::walk_statement(self, it);
    }

    fn visit_identifier_reference(&mut self, it: &IdentifierReference<'a>) {
        self.refs.insert(it.name.to_string());
    }

    fn visit_ts_type_annotation(&mut self, it: &TSTypeAnnotation<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_type_parameter_declaration(&mut self, it: &TSTypeParameterDeclaration<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_type_parameter_instantiation(&mut self, it: &TSTypeParameterInstantiation<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_type(&mut self, _it: &TSType<'a>) {}

    fn visit_ts_class_implements(&mut self, _it: &TSClassImplements<'a>) {}

    fn visit_ts_as_expression(&mut self, it: &TSAsExpression<'a>) {
        self.visit_expression(&it.expression);
        self.put(it.expression.span().end, it.span.end, Fill::Blank);
    }

    fn visit_ts_satisfies_expression(&mut self, it: &TSSatisfiesExpression<'a>) {
        self.visit_expression(&it.expression);
        self.put(it.expression.span().end, it.span.end, Fill::Blank);
    }

    fn visit_ts_non_null_expression(&mut self, it: &TSNonNullExpression<'a>) {
        self.visit_expression(&it.expression);
        self.put(it.expression.span().end, it.span.end, Fill::Blank);
    }

    fn visit_ts_type_assertion(&mut self, it: &TSTypeAssertion<'a>) {
        self.put(it.span.start, it.expression.span().start, Fill::Blank);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_instantiation_expression(&mut self, it: &TSInstantiationExpression<'a>) {
        self.visit_expression(&it.expression);
        self.blank(it.type_arguments.span);
    }

    fn visit_decorator(&mut self, it: &Decorator<'a>) {
        self.refuse(
            it.span.start,
            "decorators are not supported by host build (k6 1.1.0 does not run them either: \
             it spins at 100 % CPU); call the function yourself",
        );
    }

    fn visit_ts_enum_declaration(&mut self, it: &TSEnumDeclaration<'a>) {
        if it.declare {
            self.blank_statement(it.span);
            return;
        }
        for m in &it.body.members {
            if let Some(init) = &m.initializer {
                self.visit_expression(init);
            }
        }
        match super::enums::code(self.src, it) {
            Ok(text) => self.put(it.span.start, it.span.end, Fill::Text(text)),
            Err((at, why)) => self.refuse(at, &why),
        }
    }

    fn visit_function(&mut self, it: &Function<'a>, flags: ScopeFlags) {
        if let Some(this) = &it.this_param {
            let mut end = this.span.end;
            if let Some((at, ',')) = self.next_char(end) {
                end = at + 1;
            }
            self.put(this.span.start, end, Fill::Blank);
        }
        walk::walk_function(self, it, flags);
    }

    fn visit_formal_parameter(&mut self, it: &FormalParameter<'a>) {
        if it.optional {
            self.blank_mark_after(it.pattern.span().end);
        }
        walk::walk_formal_parameter(self, it);
    }

    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if it.definite {
            self.blank_mark_after(it.id.span().end);
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        let head_end = it.body.span.start;
        if it.r#abstract {
            self.blank_modifiers(it.span.start, head_end.min(class_keyword(self.src, it)));
        }
        if let (Some(first), Some(last)) = (it.implements.first(), it.implements.last()) {
            let before = &self.src[it.span.start as usize..first.span.start as usize];
            if let Some(i) = before.rfind("implements") {
                self.put(it.span.start + i as u32, last.span.end, Fill::Blank);
            }
        }
        let derived = it.heritage.is_some();
        for element in &it.body.body {
            if let ClassElement::MethodDefinition(m) = element {
                if m.kind == MethodDefinitionKind::Constructor && m.value.body.is_some() {
                    self.parameter_properties(&m.value, derived);
                }
            }
        }
        walk::walk_class(self, it);
    }

    fn visit_class_element(&mut self, it: &ClassElement<'a>) {
        match it {
            ClassElement::TSIndexSignature(s) => {
                self.blank_statement(s.span);
                return;
            }
            ClassElement::MethodDefinition(m) => {
                if m.r#type == MethodDefinitionType::TSAbstractMethodDefinition
                    || m.value.body.is_none()
                {
                    self.blank(m.span);
                    return;
                }
                for d in &m.decorators {
                    self.visit_decorator(d);
                }
                self.blank_modifiers(m.span.start, m.key.span().start);
                if m.optional {
                    self.blank_mark_after(key_end(self.src, &m.key, m.computed));
                }
            }
            ClassElement::PropertyDefinition(p) => {
                if p.declare || p.r#type == PropertyDefinitionType::TSAbstractPropertyDefinition {
                    self.blank(p.span);
                    return;
                }
                for d in &p.decorators {
                    self.visit_decorator(d);
                }
                self.blank_modifiers(p.span.start, p.key.span().start);
                self.blank_mark_after(key_end(self.src, &p.key, p.computed));
            }
            ClassElement::AccessorProperty(p) => {
                self.blank_modifiers(p.span.start, p.key.span().start);
            }
            ClassElement::StaticBlock(_) => {}
        }
        walk::walk_class_element(self, it);
    }
}

/// Where a class member's name ends (past `]` for a computed one).
fn key_end(src: &str, key: &PropertyKey, computed: bool) -> u32 {
    let end = key.span().end;
    if computed {
        let rest = &src[end as usize..];
        if let Some(i) = rest.find(']') {
            return end + i as u32 + 1;
        }
    }
    end
}

/// The offset of the `class` keyword in a class's head (after `abstract`).
fn class_keyword(src: &str, it: &Class) -> u32 {
    let head = &src[it.span.start as usize..it.body.span.start as usize];
    let mut from = 0;
    while let Some(i) = head[from..].find("class") {
        let at = from + i;
        let before_ok = at == 0 || !head.as_bytes()[at - 1].is_ascii_alphanumeric();
        let after_ok = head
            .as_bytes()
            .get(at + 5)
            .is_none_or(|b| !b.is_ascii_alphanumeric());
        if before_ok && after_ok {
            return it.span.start + at as u32;
        }
        from = at + 5;
    }
    it.body.span.start
}
