//! How text from a recording is written into generated code: one escaping per target
//! language, used for its literals and its comments alike. A recording is untrusted
//! (a page title, a JSON key, an input's name, a header's name, a method are whatever
//! the recorded server or the file's author chose); written raw into a comment, a line
//! break in it ends the comment and what follows becomes code of the project. So every
//! character that ends a line or a comment in the language (CR, LF, U+2028, U+2029,
//! NEL, `*/`, a docstring's quotes), every other control character and the
//! bidirectional overrides that make code read other than it runs are written as
//! escapes, in literals and comments alike.

use std::fmt::Write as _;

/// Characters written escaped wherever recording text goes: C0 and C1 controls (line
/// breaks among them), DEL, the Unicode line and paragraph separators (JavaScript line
/// terminators), the byte-order mark and the bidirectional formatting characters.
fn unsafe_char(c: char) -> bool {
    let u = c as u32;
    u < 0x20
        || (0x7f..=0x9f).contains(&u)
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{feff}'
        )
        || (0x202a..=0x202e).contains(&u)
        || (0x2066..=0x2069).contains(&u)
}

/// `s` with `\`, `quote` (if any) and every unsafe character escaped in the common
/// C-like way, `wide` spelling a code point (`\u2028` in JavaScript, `\u{2028}` in Rust).
fn escape(s: &str, quote: Option<char>, wide: fn(&mut String, u32)) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if Some(c) == quote => {
                out.push('\\');
                out.push(c);
            }
            c if unsafe_char(c) => wide(&mut out, c as u32),
            c => out.push(c),
        }
    }
    out
}

/// `*/` (or, for Rust's nesting comments, `/*`) broken by a backslash.
fn break_comment_marks(s: String, rust: bool) -> String {
    let s = s.replace("*/", "*\\/");
    if rust {
        s.replace("/*", "/\\*")
    } else {
        s
    }
}

fn js_wide(out: &mut String, u: u32) {
    let _ = write!(out, "\\u{u:04x}");
}

fn rust_wide(out: &mut String, u: u32) {
    let _ = write!(out, "\\u{{{u:x}}}");
}

fn py_wide(out: &mut String, u: u32) {
    if u < 0x100 {
        let _ = write!(out, "\\x{u:02x}");
    } else {
        let _ = write!(out, "\\u{u:04x}");
    }
}

/// A JavaScript string literal of `s`, in single quotes.
pub(crate) fn js_lit(s: &str) -> String {
    format!("'{}'", escape(s, Some('\''), js_wide))
}

/// `s` as the text of a JavaScript template literal (between backticks).
pub(crate) fn js_template(s: &str) -> String {
    escape(s, Some('`'), js_wide).replace("${", "\\${")
}

/// `s` as the text of a JavaScript `//` comment: on one line, and no `*/`.
pub(crate) fn js_comment(s: &str) -> String {
    break_comment_marks(escape(s, None, js_wide), false)
}

/// A Rust string literal of `s`.
pub(crate) fn rust_lit(s: &str) -> String {
    format!("\"{}\"", escape(s, Some('"'), rust_wide))
}

/// `s` as the text of a Rust `//`, `///` or `//!` comment: on one line (a bare CR is a
/// compile error in a doc comment), and no `/*` or `*/`.
pub(crate) fn rust_comment(s: &str) -> String {
    break_comment_marks(escape(s, None, rust_wide), true)
}

/// `s` as the text of a Python string delimited by `quote`; `braces` doubled for an
/// f-string.
pub(crate) fn py_escaped(s: &str, braces: bool, quote: char) -> String {
    let out = escape(s, Some(quote), py_wide);
    if braces {
        out.replace('{', "{{").replace('}', "}}")
    } else {
        out
    }
}

/// `s` as the text of a Python `#` comment or `"""` docstring: on one line, with no
/// quote that could end the docstring and no backslash that could start an escape.
pub(crate) fn py_comment(s: &str) -> String {
    escape(s, Some('"'), py_wide)
}

/// `s` for the terminal: the same characters escaped, so that a recording cannot move
/// the cursor, clear the screen or reorder what the operator reads.
pub(crate) fn terminal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if unsafe_char(c) {
            rust_wide(&mut out, c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_and_comment_ends_are_escaped_in_every_language() {
        let hostile = "a\nb\rc\u{2028}d\u{2029}e\u{85}f*/g/*h\"\"\"i\\j\u{202e}k\u{1b}[2J";
        for text in [
            js_comment(hostile),
            rust_comment(hostile),
            py_comment(hostile),
            js_lit(hostile),
            rust_lit(hostile),
            terminal(hostile),
        ] {
            assert!(!text.chars().any(unsafe_char), "{text:?}");
        }
        assert_eq!(
            js_comment("k\n*/x\u{2028}"),
            "k\\n*\\/x\\u2028",
            "a JS comment"
        );
        assert_eq!(rust_comment("t\r\n/*"), "t\\r\\n/\\*");
        assert_eq!(py_comment("t\"\"\"\\N"), "t\\\"\\\"\\\"\\\\N");
        assert_eq!(py_escaped("{a}\u{7f}'", true, '\''), "{{a}}\\x7f\\'");
        assert_eq!(rust_lit("a\"\u{0}"), "\"a\\\"\\u{0}\"");
        assert_eq!(js_template("`${x}\u{2029}"), "\\`\\${x}\\u2029");
    }
}
