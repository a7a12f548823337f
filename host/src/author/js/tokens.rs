//! A JavaScript tokenizer for the bundle-time rewrite of `async` functions
//! (`asyncs.rs`): strings, template literals with nested `${}`, comments, numbers,
//! punctuators and regular expressions told from division by what precedes them. It
//! gives each token's byte range and whether a line break comes before it (automatic
//! semicolon insertion turns on that), and pairs every bracket with its partner.

use super::scan::{regex_body_end, REGEX_AFTER_WORDS};

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An identifier or a keyword.
    Word,
    /// `#name` (a private class member).
    Private,
    /// A number literal.
    Num,
    /// A string literal.
    Str,
    /// A regular expression literal.
    Regex,
    /// A template literal with no substitution: `` `text` ``.
    Template,
    /// `` `text${ ``: a template's start, before its first substitution.
    TemplateHead,
    /// `}text${`: between two substitutions.
    TemplateMiddle,
    /// `` }text` ``: after the last substitution.
    TemplateTail,
    /// An operator or bracket.
    Punct,
}

/// One token.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tok {
    /// What it is.
    pub kind: Kind,
    /// Its first byte.
    pub start: usize,
    /// The byte after it.
    pub end: usize,
    /// Whether a line break (or a comment holding one) comes before it.
    pub nl: bool,
}

/// A tokenized source with its brackets paired.
pub(crate) struct Tokens<'a> {
    /// The source.
    pub src: &'a str,
    /// The tokens, in order.
    pub toks: Vec<Tok>,
    /// For an opening `(`, `[`, `{` or template head/middle: the index of its partner
    /// (`)`, `]`, `}`, or the template's next middle/tail); `usize::MAX` elsewhere and
    /// for a bracket left open.
    pub partner: Vec<usize>,
    /// For a closing `)`, `]` or `}`: the index of its opening bracket (`usize::MAX`
    /// elsewhere).
    pub opener: Vec<usize>,
}

/// Punctuators, longest first so that the first match is the token.
const PUNCTS: &[&str] = &[
    ">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=", "=>", "==", "!=",
    "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
    "**", "<<", ">>",
];

/// Keywords whose `( ... )` head is followed by a statement, not an expression's end.
pub(crate) const CONTROL: &[&str] = &["if", "while", "for", "with"];

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 || c == b'\\'
}

impl<'a> Tokens<'a> {
    /// Tokenizes `src`.
    pub(crate) fn new(src: &'a str) -> Self {
        let b = src.as_bytes();
        let mut toks: Vec<Tok> = Vec::new();
        let mut partner: Vec<usize> = Vec::new();
        let mut opener: Vec<usize> = Vec::new();
        // Open brackets (token indices); a template head or middle is one too.
        let mut open: Vec<usize> = Vec::new();
        // For each open `(`: whether it is a control statement's head (`if (`).
        let mut control_heads: Vec<bool> = Vec::new();
        // Whether the last `)` closed a control head.
        let mut last_close_control = false;
        let mut nl = false;
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c == b'\n'
                || c == b'\r'
                || c == 0xe2
                    && b.get(i + 1) == Some(&0x80)
                    && matches!(b.get(i + 2), Some(0xa8 | 0xa9))
            {
                nl = true;
                i += if c == 0xe2 { 3 } else { 1 };
                continue;
            }
            if c.is_ascii_whitespace() || c == 0xc2 && b.get(i + 1) == Some(&0xa0) {
                i += if c == 0xc2 { 2 } else { 1 };
                continue;
            }
            if c == b'/' && b.get(i + 1) == Some(&b'/') {
                // Ends at any line terminator, as the engine ends it: a `}` after a
                // U+2028 is code, not comment.
                i = src[i..]
                    .find(['\n', '\r', '\u{2028}', '\u{2029}'])
                    .map_or(b.len(), |n| i + n);
                continue;
            }
            if c == b'/' && b.get(i + 1) == Some(&b'*') {
                let end = src[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
                if src[i..end].contains('\n') {
                    nl = true;
                }
                i = end;
                continue;
            }
            let start = i;
            let idx = toks.len();
            let kind = match c {
                b'\'' | b'"' => {
                    i += 1;
                    while i < b.len() && b[i] != c && b[i] != b'\n' {
                        i += if b[i] == b'\\' { 2 } else { 1 };
                    }
                    i = (i + 1).min(b.len());
                    Kind::Str
                }
                b'`' => {
                    let (end, head) = template_text(b, i + 1);
                    i = end;
                    if head {
                        open.push(idx);
                        Kind::TemplateHead
                    } else {
                        Kind::Template
                    }
                }
                b'}' if open.last().is_some_and(|&o| {
                    matches!(toks[o].kind, Kind::TemplateHead | Kind::TemplateMiddle)
                }) =>
                {
                    let o = open.pop().expect("checked");
                    partner[o] = idx;
                    let (end, head) = template_text(b, i + 1);
                    i = end;
                    if head {
                        open.push(idx);
                        Kind::TemplateMiddle
                    } else {
                        Kind::TemplateTail
                    }
                }
                b'/' if regex_allowed(src, toks.last(), last_close_control) => {
                    i = regex_body_end(b, i + 1);
                    i = (i + 1).min(b.len());
                    while i < b.len() && is_ident(b[i]) {
                        i += 1; // flags
                    }
                    Kind::Regex
                }
                b'#' if b.get(i + 1).is_some_and(|&n| is_ident(n)) => {
                    i += 1;
                    while i < b.len() && is_ident(b[i]) {
                        i += 1;
                    }
                    Kind::Private
                }
                c if c.is_ascii_digit()
                    || c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit) =>
                {
                    while i < b.len() {
                        let d = b[i];
                        let exp_sign = (d == b'+' || d == b'-')
                            && matches!(b[i - 1], b'e' | b'E')
                            && !src[start..].starts_with("0x")
                            && !src[start..].starts_with("0X");
                        if d.is_ascii_alphanumeric() || d == b'_' || d == b'.' || exp_sign {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    Kind::Num
                }
                c if is_ident(c) => {
                    while i < b.len() && is_ident(b[i]) {
                        i += if b[i] == b'\\' { 2 } else { 1 };
                    }
                    // A multi-byte character's tail bytes are >= 0x80 too.
                    i = i.min(b.len());
                    Kind::Word
                }
                _ => {
                    let rest = &src[i..];
                    let p = PUNCTS
                        .iter()
                        .find(|p| {
                            rest.starts_with(**p)
                                && !(**p == "?."
                                    && rest.as_bytes().get(2).is_some_and(u8::is_ascii_digit))
                        })
                        .map_or(1, |p| p.len());
                    // One character: step over a whole UTF-8 sequence.
                    let mut len = p;
                    while !src.is_char_boundary(i + len) {
                        len += 1;
                    }
                    i += len;
                    Kind::Punct
                }
            };
            toks.push(Tok {
                kind,
                start,
                end: i,
                nl,
            });
            partner.push(usize::MAX);
            opener.push(usize::MAX);
            nl = false;
            if kind == Kind::Punct {
                match &src[start..i] {
                    "(" => {
                        let head = idx > 0
                            && toks[idx - 1].kind == Kind::Word
                            && CONTROL.contains(&&src[toks[idx - 1].start..toks[idx - 1].end]);
                        control_heads.push(head);
                        open.push(idx);
                    }
                    "[" | "{" => open.push(idx),
                    ")" | "]" | "}" => {
                        if let Some(o) = open.pop() {
                            partner[o] = idx;
                            opener[idx] = o;
                        }
                        if &src[start..i] == ")" {
                            last_close_control = control_heads.pop().unwrap_or(false);
                        }
                    }
                    _ => {}
                }
            }
        }
        Tokens {
            src,
            toks,
            partner,
            opener,
        }
    }

    /// The text of token `i` ("" past the end).
    pub(crate) fn text(&self, i: usize) -> &'a str {
        self.toks.get(i).map_or("", |t| &self.src[t.start..t.end])
    }

    /// Whether token `i` is the punctuator or word `s`.
    pub(crate) fn is(&self, i: usize, s: &str) -> bool {
        self.toks
            .get(i)
            .is_some_and(|t| matches!(t.kind, Kind::Punct | Kind::Word) && self.text(i) == s)
    }

    /// Whether token `i` is a line break away from the one before it.
    pub(crate) fn nl(&self, i: usize) -> bool {
        self.toks.get(i).is_some_and(|t| t.nl)
    }

    /// The last token of the bracketed group or template opened at `i` (`i` itself
    /// for any other token); `None` for a bracket left open.
    pub(crate) fn group_end(&self, i: usize) -> Option<usize> {
        let t = self.toks.get(i)?;
        let mut j = match t.kind {
            Kind::TemplateHead => self.partner[i],
            Kind::Punct if matches!(self.text(i), "(" | "[" | "{") => self.partner[i],
            _ => return Some(i),
        };
        // A template: from head through middles to its tail.
        while j != usize::MAX && self.toks[j].kind == Kind::TemplateMiddle {
            j = self.partner[j];
        }
        (j != usize::MAX).then_some(j)
    }

    /// Whether token `i` can end an expression (so that a line break after it may end
    /// the statement): a name, a literal, `)` (not of `if (...)`), `]`, `}`, `++`, `--`.
    pub(crate) fn ends_expression(&self, i: usize) -> bool {
        let Some(t) = self.toks.get(i) else {
            return false;
        };
        match t.kind {
            Kind::Word => {
                let w = self.text(i);
                !is_keyword(w) || matches!(w, "this" | "super" | "null" | "true" | "false")
            }
            Kind::Private
            | Kind::Num
            | Kind::Str
            | Kind::Regex
            | Kind::Template
            | Kind::TemplateTail => true,
            Kind::TemplateHead | Kind::TemplateMiddle => false,
            Kind::Punct => match self.text(i) {
                "]" | "}" | "++" | "--" => true,
                ")" => !self.closes_control_head(i),
                _ => false,
            },
        }
    }

    /// Whether the `)` at `i` closes `if (`, `while (`, `for (` or `with (`.
    pub(crate) fn closes_control_head(&self, i: usize) -> bool {
        let o = self.opener.get(i).copied().unwrap_or(usize::MAX);
        o != usize::MAX && o > 0 && CONTROL.contains(&self.text(o - 1))
    }
}

/// Reserved words (and the contextual ones that start statements) that are not names.
pub(crate) fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "break"
            | "case"
            | "catch"
            | "class"
            | "const"
            | "continue"
            | "debugger"
            | "default"
            | "delete"
            | "do"
            | "else"
            | "export"
            | "extends"
            | "finally"
            | "for"
            | "function"
            | "if"
            | "import"
            | "in"
            | "instanceof"
            | "new"
            | "return"
            | "switch"
            | "throw"
            | "try"
            | "typeof"
            | "var"
            | "let"
            | "void"
            | "while"
            | "with"
            | "yield"
            | "await"
            | "of"
            | "this"
            | "super"
            | "null"
            | "true"
            | "false"
    )
}

/// Reads a template's text from `i` to its closing backtick or its next `${`: the
/// offset after it, and whether it stopped at a `${`.
fn template_text(b: &[u8], mut i: usize) -> (usize, bool) {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => return (i + 1, false),
            b'$' if b.get(i + 1) == Some(&b'{') => return (i + 2, true),
            _ => i += 1,
        }
    }
    (b.len(), false)
}

/// Whether a `/` after `prev` starts a regular expression (rather than dividing).
fn regex_allowed(src: &str, prev: Option<&Tok>, last_close_control: bool) -> bool {
    let Some(p) = prev else {
        return true;
    };
    let text = &src[p.start..p.end];
    match p.kind {
        Kind::Word => REGEX_AFTER_WORDS.contains(&text),
        Kind::Private
        | Kind::Num
        | Kind::Str
        | Kind::Regex
        | Kind::Template
        | Kind::TemplateTail => false,
        Kind::TemplateHead | Kind::TemplateMiddle => true,
        Kind::Punct => match text {
            ")" => last_close_control,
            "]" | "++" | "--" => false,
            // `}` mostly ends a block, after which an expression statement starts.
            _ => true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Kind, String)> {
        let t = Tokens::new(src);
        (0..t.toks.len())
            .map(|i| (t.toks[i].kind, t.text(i).to_string()))
            .collect()
    }

    #[test]
    fn strings_templates_comments_and_regexes_are_single_tokens() {
        let src = "a = 'it\\'s' + `x${ {b: `in${c}`}.b }y` // await\n/* await */ r = /a\\/[/]b/g; d = e / f / g;";
        let k = kinds(src);
        assert!(k.contains(&(Kind::Str, "'it\\'s'".into())), "{k:?}");
        assert!(k.contains(&(Kind::TemplateHead, "`x${".into())), "{k:?}");
        assert!(k.contains(&(Kind::TemplateHead, "`in${".into())), "{k:?}");
        assert!(k.contains(&(Kind::TemplateTail, "}`".into())), "{k:?}");
        assert!(k.contains(&(Kind::TemplateTail, "}y`".into())), "{k:?}");
        assert!(k.contains(&(Kind::Regex, "/a\\/[/]b/g".into())), "{k:?}");
        assert!(!k.iter().any(|(_, t)| t.contains("await")), "{k:?}");
        assert_eq!(
            k.iter()
                .filter(|(kind, t)| *kind == Kind::Punct && t == "/")
                .count(),
            2,
            "{k:?}"
        );
        let t = Tokens::new(src);
        let head = t
            .toks
            .iter()
            .position(|x| x.kind == Kind::TemplateHead)
            .unwrap();
        let end = t.group_end(head).unwrap();
        assert_eq!(t.text(end), "}y`");
    }

    #[test]
    fn a_regex_after_a_control_head_and_division_after_a_call() {
        let k = kinds("if (x) /re/.test(y); z = f(x) / 2;");
        assert!(k.contains(&(Kind::Regex, "/re/".into())), "{k:?}");
        assert!(k.contains(&(Kind::Punct, "/".into())), "{k:?}");
    }
}
