//! Where JavaScript expressions end, read from tokens (`tokens.rs`): an arrow
//! function's expression body, the operand of `await`, and whether `yield` can stand
//! in `await`'s place without parentheses. Used by the async rewrite (`asyncs.rs`);
//! it follows the grammar only as far as these questions need.

use super::tokens::{Kind, Tokens};

/// The last token of the assignment expression starting at `first` (an arrow's
/// expression body): up to a `,`, `;`, closing bracket, an unmatched `:`, or a line
/// break where the statement ends.
pub(crate) fn expression_end(t: &Tokens, first: usize) -> usize {
    let mut i = first;
    let mut ternary = 0usize;
    while i < t.toks.len() {
        if i > first && t.nl(i) && t.ends_expression(i - 1) && !continues(t, i) {
            return i - 1;
        }
        let tok = t.toks[i];
        match (tok.kind, t.text(i)) {
            (Kind::Punct, "(" | "[" | "{") | (Kind::TemplateHead, _) => {
                match t.group_end(i) {
                    Some(end) => i = end + 1,
                    None => return t.toks.len() - 1,
                }
                continue;
            }
            (Kind::Punct, ")" | "]" | "}" | "," | ";")
            | (Kind::TemplateMiddle | Kind::TemplateTail, _) => {
                return i.saturating_sub(1).max(first)
            }
            (Kind::Punct, "?") => ternary += 1,
            (Kind::Punct, ":") => {
                if ternary == 0 {
                    return i.saturating_sub(1).max(first);
                }
                ternary -= 1;
            }
            _ => {}
        }
        i += 1;
    }
    t.toks.len() - 1
}

/// Whether token `i`, after a line break, goes on with the expression before it (an
/// operator, `.`, `(`, `[`, a template) rather than starting a statement.
fn continues(t: &Tokens, i: usize) -> bool {
    let tok = t.toks[i];
    match tok.kind {
        Kind::Punct => !matches!(t.text(i), "{" | "++" | "--" | "!" | "~" | ";" | "}"),
        Kind::Word => matches!(t.text(i), "in" | "instanceof" | "of"),
        Kind::Template | Kind::TemplateHead => true,
        _ => false,
    }
}

/// Whether token `i` can start the operand of a top-level `await` on its line.
pub(crate) fn starts_operand(t: &Tokens, i: usize) -> bool {
    let Some(tok) = t.toks.get(i) else {
        return false;
    };
    if tok.nl {
        return false;
    }
    match tok.kind {
        Kind::Word => !matches!(t.text(i), "in" | "instanceof" | "of"),
        Kind::Punct => matches!(t.text(i), "(" | "[" | "{" | "!" | "~" | "++" | "--"),
        Kind::TemplateMiddle | Kind::TemplateTail => false,
        _ => true,
    }
}

/// The last token of the unary expression starting at `i` (what `await` applies to).
pub(crate) fn unary_end(t: &Tokens, mut i: usize) -> Option<usize> {
    while matches!(
        t.text(i),
        "!" | "~" | "+" | "-" | "++" | "--" | "typeof" | "void" | "delete" | "await"
    ) {
        i += 1;
    }
    t.toks.get(i)?;
    let mut j = if t.is(i, "new") {
        if t.is(i + 1, ".") {
            i + 2 // new.target
        } else {
            let callee = member_end(t, i + 1, false)?;
            if t.is(callee + 1, "(") {
                t.group_end(callee + 1)?
            } else {
                callee
            }
        }
    } else {
        primary_end(t, i)?
    };
    j = member_end_from(t, j, true)?;
    if (t.is(j + 1, "++") || t.is(j + 1, "--")) && !t.nl(j + 1) {
        j += 1;
    }
    Some(j)
}

/// The last token of the primary expression at `i`: a name, literal, bracketed group,
/// template, `function`/`class` expression.
fn primary_end(t: &Tokens, i: usize) -> Option<usize> {
    let mut i = i;
    if t.is(i, "async") && t.is(i + 1, "function") {
        i += 1;
    }
    if t.is(i, "function") || t.is(i, "class") {
        // Its body is the first `{` after its head (the `(...)` of a function, the
        // `extends` expression of a class, skipped as groups).
        let mut j = i + 1;
        while j < t.toks.len() && !t.is(j, "{") {
            j = t.group_end(j)? + 1;
        }
        return t.group_end(j);
    }
    t.group_end(i)
}

/// From `new X` at `i`: the member expression's last token (no calls).
fn member_end(t: &Tokens, i: usize, calls: bool) -> Option<usize> {
    let j = if t.is(i, "new") {
        unary_end(t, i)?
    } else {
        primary_end(t, i)?
    };
    member_end_from(t, j, calls)
}

/// After a primary ending at `j`: `.name`, `?.name`, `[...]`, `(...)` (if `calls`),
/// tagged templates.
fn member_end_from(t: &Tokens, mut j: usize, calls: bool) -> Option<usize> {
    loop {
        let n = j + 1;
        let Some(tok) = t.toks.get(n) else {
            return Some(j);
        };
        j = match (tok.kind, t.text(n)) {
            (Kind::Punct, ".") => n + 1,
            (Kind::Punct, "?.") => {
                if t.is(n + 1, "(") || t.is(n + 1, "[") {
                    t.group_end(n + 1)?
                } else {
                    n + 1
                }
            }
            (Kind::Punct, "[") => t.group_end(n)?,
            (Kind::Punct, "(") if calls => t.group_end(n)?,
            (Kind::Template | Kind::TemplateHead, _) => t.group_end(n)?,
            _ => return Some(j),
        };
        if j >= t.toks.len() {
            return Some(t.toks.len() - 1);
        }
    }
}

/// Whether `yield` can stand where the `await` at `k` is without parentheses: where
/// an assignment expression may start.
pub(crate) fn yield_fits_before(t: &Tokens, k: usize) -> bool {
    if k == 0 {
        return true;
    }
    let p = k - 1;
    if t.nl(k) && t.ends_expression(p) {
        return true; // a statement starts here
    }
    match t.toks[p].kind {
        Kind::TemplateHead | Kind::TemplateMiddle => true,
        Kind::Word => matches!(
            t.text(p),
            "return" | "case" | "throw" | "of" | "else" | "do"
        ),
        Kind::Punct => match t.text(p) {
            ")" => t.closes_control_head(p),
            "(" | "[" | "{" | "}" | "," | ";" | "=>" | ":" | "?" | "..." => true,
            op => op.ends_with('=') && !matches!(op, "==" | "===" | "!=" | "!==" | "<=" | ">="),
        },
        _ => false,
    }
}

/// Whether the operand ending at `end` is followed by what ends an assignment
/// expression (so `yield` takes no more than `await` did).
pub(crate) fn yield_fits_after(t: &Tokens, end: usize) -> bool {
    let n = end + 1;
    let Some(tok) = t.toks.get(n) else {
        return true;
    };
    if tok.nl && !continues(t, n) {
        return true;
    }
    match tok.kind {
        Kind::TemplateMiddle | Kind::TemplateTail => true,
        Kind::Punct => matches!(t.text(n), ")" | "]" | "}" | "," | ";" | ":"),
        _ => false,
    }
}
