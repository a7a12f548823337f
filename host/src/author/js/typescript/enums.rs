//! A TypeScript `enum` as the JavaScript TypeScript emits for it, on one line: an
//! object with each member's value, and for numeric members the reverse mapping
//! (`Color[0] === 'Red'`). Members may use earlier members by name (`B = A << 1`), as
//! in TypeScript. `const enum` gets the same object (esbuild also keeps one).

use oxc_ast::ast::*;
use oxc_span::GetSpan;

/// The code for `it`: `var E = (function (E) { ... return E; })(E || {});`, or where
/// it cannot be written (offset, why).
pub(super) fn code(src: &str, it: &TSEnumDeclaration) -> Result<String, (u32, String)> {
    let enum_name = it.id.name.as_str();
    let mut body = String::new();
    // The previous member: its key as a JavaScript literal, and whether it was a number.
    let mut previous: Option<(String, bool)> = None;
    for m in &it.body.members {
        let name = match &m.id {
            TSEnumMemberName::Identifier(id) => id.name.to_string(),
            TSEnumMemberName::String(s) | TSEnumMemberName::ComputedString(s) => {
                s.value.to_string()
            }
            TSEnumMemberName::ComputedTemplateString(t) => {
                return Err((
                    t.span.start,
                    "an enum member named by a template string is not supported; name it with \
                     a plain string"
                        .into(),
                ))
            }
        };
        let key = serde_json::to_string(&name).expect("a string serialises");
        let (value, numeric) = match &m.initializer {
            Some(init) => {
                let span = init.span();
                let text = src[span.start as usize..span.end as usize].replace(['\n', '\r'], " ");
                let string = matches!(init, Expression::StringLiteral(_))
                    || matches!(init, Expression::TemplateLiteral(t) if t.expressions.is_empty());
                (format!("({text})"), !string)
            }
            None => match &previous {
                None => ("0".to_string(), true),
                Some((prev, true)) => (format!("{enum_name}[{prev}] + 1"), true),
                Some((_, false)) => {
                    return Err((
                        m.span.start,
                        format!(
                            "enum member {name} needs a value: the member before it is a string"
                        ),
                    ))
                }
            },
        };
        // A const of the member's own name lets later initializers read it.
        let value = if is_plain_name(&name) && name != enum_name {
            body.push_str(&format!("const {name} = {value}; "));
            name.clone()
        } else {
            value
        };
        if numeric {
            body.push_str(&format!(
                "{enum_name}[{enum_name}[{key}] = {value}] = {key}; "
            ));
        } else {
            body.push_str(&format!("{enum_name}[{key}] = {value}; "));
        }
        previous = Some((key, numeric));
    }
    Ok(format!(
        "var {enum_name} = (function ({enum_name}) {{ {body}return {enum_name}; }})({enum_name} || {{}});"
    ))
}

/// Whether `name` can be a `const`'s name (an identifier, not a reserved word).
fn is_plain_name(name: &str) -> bool {
    const RESERVED: &[&str] = &[
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "debugger",
        "default",
        "delete",
        "do",
        "else",
        "enum",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "function",
        "if",
        "import",
        "in",
        "instanceof",
        "new",
        "null",
        "return",
        "super",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "typeof",
        "var",
        "void",
        "while",
        "with",
        "yield",
        "let",
        "static",
        "implements",
        "interface",
        "package",
        "private",
        "protected",
        "public",
        "await",
        "arguments",
        "eval",
        "undefined",
        "NaN",
        "Infinity",
    ];
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && !RESERVED.contains(&name)
}
