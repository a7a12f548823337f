//! Markup of any node of a document: elements and the document through html5ever's
//! serializer (as `scraper` does), text and comments by hand, since the serializer
//! starts only from an element or the document.

use ego_tree::NodeRef;
use scraper::{ElementRef, Html, Node};

/// The markup of `node`'s children (`innerHTML`).
pub(super) fn inner(html: &Html, node: NodeRef<'_, Node>) -> String {
    match node.value() {
        Node::Document => html.html(),
        // html5ever's serializer, started at the children, does not know their parent
        // and escapes a script's text (`&&` would come back as `&amp;&amp;`, and its
        // JSON would no longer parse): raw-text elements are written child by child.
        Node::Element(e) if !RAW_TEXT.contains(&e.name()) => ElementRef::wrap(node)
            .map(|e| e.inner_html())
            .unwrap_or_default(),
        _ => node.children().map(|c| outer(html, c)).collect(),
    }
}

/// Elements whose text is written as is.
const RAW_TEXT: &[&str] = &[
    "script",
    "style",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "plaintext",
];

/// The markup of `node` itself (`outerHTML`).
pub(super) fn outer(html: &Html, node: NodeRef<'_, Node>) -> String {
    match node.value() {
        Node::Document => html.html(),
        Node::Element(_) => ElementRef::wrap(node).map(|e| e.html()).unwrap_or_default(),
        Node::Text(t) => {
            // The text of script, style and the like is written as is (as the
            // serializer writes it), any other text escaped.
            let raw = node
                .parent()
                .and_then(|p| p.value().as_element().map(|e| e.name()))
                .is_some_and(|name| RAW_TEXT.contains(&name));
            if raw {
                t.to_string()
            } else {
                escape_text(t)
            }
        }
        Node::Comment(c) => format!("<!--{}-->", &**c),
        Node::Doctype(d) => format!("<!DOCTYPE {}>", d.name()),
        Node::Fragment | Node::ProcessingInstruction(_) => String::new(),
    }
}

/// Text escaped as the HTML serializer escapes it outside attributes.
fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\u{a0}' => out.push_str("&nbsp;"),
            c => out.push(c),
        }
    }
    out
}
