//! Just enough HTML reading to find where a recorded value came from: the `<input>`
//! fields of a page (a CSRF field is a hidden input) and the JSON of its
//! `<script type="application/json">` elements. Recorded pages are the server's own
//! markup, so a tag scanner suffices here; the generated scenario extracts with the
//! same rules at run time.

use std::collections::BTreeMap;

/// The attributes of every `<NAME ...>` tag in `html`, in order, with the text up to
/// its closing tag when `with_content` is set (for `<script>`).
pub(crate) fn tags(html: &str, name: &str, with_content: bool) -> Vec<(Attrs, String)> {
    let lower = html.to_ascii_lowercase();
    let open = format!("<{name}");
    let close = format!("</{name}");
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(pos) = lower[at..].find(&open) {
        let start = at + pos + open.len();
        // `<input` but not `<inputs`.
        if !lower[start..].starts_with(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/') {
            at = start;
            continue;
        }
        let Some(end) = tag_end(&html[start..]) else {
            break;
        };
        let attrs = attributes(&html[start..start + end]);
        let after = start + end + 1;
        let mut content = String::new();
        if with_content {
            if let Some(c) = lower[after..].find(&close) {
                content = html[after..after + c].to_string();
            }
        }
        out.push((attrs, content));
        at = after;
    }
    out
}

/// Attribute name (lower case) → value (entities decoded).
pub(crate) type Attrs = BTreeMap<String, String>;

/// Where the tag that starts at `text` ends (its `>`, outside quotes).
fn tag_end(text: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(i),
            _ => {}
        }
    }
    None
}

fn attributes(text: &str) -> Attrs {
    let mut attrs = Attrs::new();
    let mut rest = text.trim_start_matches('/');
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '/');
        if rest.is_empty() {
            return attrs;
        }
        let name_end = rest
            .find(|c: char| c.is_ascii_whitespace() || c == '=' || c == '/')
            .unwrap_or(rest.len());
        let name = rest[..name_end].to_ascii_lowercase();
        rest = rest[name_end..].trim_start();
        let mut value = String::new();
        if let Some(after_eq) = rest.strip_prefix('=') {
            let v = after_eq.trim_start();
            let (raw, next) = match v.chars().next() {
                Some(q @ ('"' | '\'')) => match v[1..].find(q) {
                    Some(e) => (&v[1..1 + e], &v[e + 2..]),
                    None => (&v[1..], ""),
                },
                _ => {
                    let e = v.find(|c: char| c.is_ascii_whitespace()).unwrap_or(v.len());
                    (&v[..e], &v[e..])
                }
            };
            value = decode(raw);
            rest = next;
        }
        if name.is_empty() {
            return attrs;
        }
        attrs.entry(name).or_insert(value);
    }
}

/// Decodes the entities a server writes into attribute values.
pub(crate) fn decode(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_and_script_json_are_found() {
        let page = r#"<form><INPUT type="hidden" name='csrf' value="a&amp;b"><input name=answer>
            <inputs x=1></form><script type="application/json" id="d">{"token":"t<\/x"}</script>"#;
        let inputs = tags(page, "input", false);
        assert_eq!(inputs.len(), 2);
        assert_eq!(inputs[0].0["name"], "csrf");
        assert_eq!(inputs[0].0["value"], "a&b");
        assert_eq!(inputs[1].0["name"], "answer");
        let scripts = tags(page, "script", true);
        assert_eq!(scripts[0].0["id"], "d");
        assert_eq!(scripts[0].1, r#"{"token":"t<\/x"}"#);
    }
}
