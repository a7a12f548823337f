//! HTML pages for plugins (the contract's `html` interface): a document parsed once
//! by html5ever (through `scraper`), its nodes numbered in document order so a plugin
//! can hold and sort them as plain numbers, and queried with CSS selectors.
//!
//! The parser runs on the host rather than in each plugin language: a response's body
//! is already here (parsing it needs no copy into the guest), one parser serves Rust,
//! Python and JavaScript alike, and native code parses a page several times faster
//! than the same parser compiled to WebAssembly (docs/html.md has the figures).

mod error;
pub(crate) mod form;
mod serialize;

pub(crate) use error::HtmlError;

use ego_tree::NodeId;
use rustc_hash::FxHashMap;
use scraper::{ElementRef, Html, Node, Selector};
use std::collections::BTreeSet;

/// What a node is (the WIT `node-kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// The document itself (node 0).
    Document,
    /// An element.
    Element,
    /// A run of text.
    Text,
    /// A comment.
    Comment,
    /// The doctype.
    Doctype,
    /// A processing instruction or a fragment root.
    Other,
}

/// One node as the plugin sees it (the WIT `node`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    /// What it is.
    pub kind: NodeKind,
    /// An element's local name; `#text`, `#comment`, `#document` or the doctype's name.
    pub name: String,
    /// An element's attributes.
    pub attributes: Vec<(String, String)>,
    /// A text or comment node's text.
    pub value: String,
    /// Its parent's number.
    pub parent: Option<u32>,
    /// Its children's numbers, in order.
    pub children: Vec<u32>,
}

/// A parsed document with its nodes numbered in document order.
pub struct Document {
    html: Html,
    /// Node number → tree id, in document order (pre-order: a node before its children).
    order: Vec<NodeId>,
    /// Tree id → node number.
    number: FxHashMap<NodeId, u32>,
}

impl std::fmt::Debug for Document {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Document({} nodes)", self.order.len())
    }
}

impl Document {
    /// Parses `text` as a whole document, as a browser would (html, head and body are
    /// made when missing; malformed markup is repaired, never refused).
    pub fn parse(text: &str) -> Self {
        let html = Html::parse_document(text);
        // html5ever numbers tree nodes in creation order, which is not document order
        // when it repairs markup (foster parenting, adoption): number them by a walk.
        let order: Vec<NodeId> = html.tree.root().descendants().map(|n| n.id()).collect();
        let number = order
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, i as u32))
            .collect();
        Self {
            html,
            order,
            number,
        }
    }

    /// Parses a body that may not be UTF-8 (invalid bytes replaced, as browsers do
    /// with a page whose declared encoding is wrong).
    pub fn parse_bytes(body: &[u8]) -> Self {
        Self::parse(&String::from_utf8_lossy(body))
    }

    /// How many nodes it has.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether it has no node besides the document (never true: html5ever always
    /// makes `html`, `head` and `body`).
    pub fn is_empty(&self) -> bool {
        self.order.len() <= 1
    }

    fn node_ref(&self, id: u32) -> Option<ego_tree::NodeRef<'_, Node>> {
        self.order
            .get(id as usize)
            .and_then(|tree_id| self.html.tree.get(*tree_id))
    }

    fn number_of(&self, node: &ego_tree::NodeRef<'_, Node>) -> u32 {
        self.number[&node.id()]
    }

    /// The element numbered `id`, if it is one.
    pub(crate) fn element(&self, id: u32) -> Option<ElementRef<'_>> {
        self.node_ref(id).and_then(ElementRef::wrap)
    }

    /// The elements matching `selector` under the nodes `scope` (under the whole
    /// document when empty), each once, in document order.
    pub fn select(&self, scope: &[u32], selector: &str) -> Result<Vec<u32>, HtmlError> {
        let selector = parse_selector(selector)?;
        let mut found = BTreeSet::new();
        if scope.is_empty() || scope.contains(&0) {
            found.extend(self.html.select(&selector).map(|e| self.number_of(&e)));
        } else {
            for id in scope {
                if let Some(element) = self.element(*id) {
                    found.extend(element.select(&selector).map(|e| self.number_of(&e)));
                }
            }
        }
        Ok(found.into_iter().collect())
    }

    /// For each node: whether it is an element matching `selector`.
    pub fn matches(&self, nodes: &[u32], selector: &str) -> Result<Vec<bool>, HtmlError> {
        let selector = parse_selector(selector)?;
        Ok(nodes
            .iter()
            .map(|id| self.element(*id).is_some_and(|e| selector.matches(&e)))
            .collect())
    }

    /// The node numbered `id`.
    pub fn node(&self, id: u32) -> Option<NodeView> {
        let node = self.node_ref(id)?;
        let (kind, name, attributes, value) = match node.value() {
            Node::Document => (
                NodeKind::Document,
                "#document".into(),
                vec![],
                String::new(),
            ),
            Node::Element(e) => (
                NodeKind::Element,
                e.name().to_owned(),
                e.attrs()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect(),
                String::new(),
            ),
            Node::Text(t) => (NodeKind::Text, "#text".into(), vec![], t.to_string()),
            Node::Comment(c) => (
                NodeKind::Comment,
                "#comment".into(),
                vec![],
                c.comment.to_string(),
            ),
            Node::Doctype(d) => (
                NodeKind::Doctype,
                d.name().to_owned(),
                vec![],
                String::new(),
            ),
            Node::Fragment | Node::ProcessingInstruction(_) => {
                (NodeKind::Other, "#other".into(), vec![], String::new())
            }
        };
        Some(NodeView {
            kind,
            name,
            attributes,
            value,
            parent: node.parent().map(|p| self.number_of(&p)),
            children: node.children().map(|c| self.number_of(&c)).collect(),
        })
    }

    /// The text of the node and its descendants (`textContent`).
    pub fn text(&self, id: u32) -> String {
        let Some(node) = self.node_ref(id) else {
            return String::new();
        };
        match node.value() {
            Node::Text(t) => t.to_string(),
            Node::Comment(c) => c.comment.to_string(),
            _ => node
                .descendants()
                .filter_map(|n| n.value().as_text().map(|t| &**t))
                .collect(),
        }
    }

    /// The markup of the node's children (`innerHTML`).
    pub fn inner_html(&self, id: u32) -> String {
        match self.node_ref(id) {
            Some(node) => serialize::inner(&self.html, node),
            None => String::new(),
        }
    }

    /// The markup of the node itself (`outerHTML`).
    pub fn outer_html(&self, id: u32) -> String {
        match self.node_ref(id) {
            Some(node) => serialize::outer(&self.html, node),
            None => String::new(),
        }
    }
}

/// A selector, or the parser's message naming what is wrong with it.
fn parse_selector(selector: &str) -> Result<Selector, HtmlError> {
    Selector::parse(selector).map_err(|e| HtmlError::Selector {
        selector: selector.to_owned(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str =
        "<!doctype html><title>T</title><div id=a class='x y'>one <b>two</b><!--c--></div>\
        <p>three<p>four<table><tr><td>cell</td></tr>stray</table>";

    #[test]
    fn nodes_are_numbered_in_document_order_even_when_markup_is_repaired() {
        let d = Document::parse(PAGE);
        let all: Vec<u32> = (0..d.len() as u32).collect();
        // "stray" text is foster-parented before the table: its number must still
        // fall where the tree (not the source) puts it, and every parent comes first.
        for id in &all {
            let n = d.node(*id).unwrap();
            if let Some(p) = n.parent {
                assert!(p < *id, "{n:?}");
            }
            for w in n.children.windows(2) {
                assert!(w[0] < w[1], "{n:?}");
            }
        }
        assert_eq!(d.node(0).unwrap().kind, NodeKind::Document);
        assert_eq!(d.node(1).unwrap().kind, NodeKind::Doctype);
        assert!(d.node(d.len() as u32).is_none());
    }

    #[test]
    fn select_is_scoped_deduplicated_and_ordered() {
        let d = Document::parse(PAGE);
        let ps = d.select(&[], "p").unwrap();
        assert_eq!(ps.len(), 2);
        assert_eq!(d.text(ps[1]), "four");
        let div = d.select(&[], "#a").unwrap();
        assert_eq!(d.select(&div, "b").unwrap().len(), 1);
        // The scope's own element is not among its descendants.
        assert!(d.select(&div, "div").unwrap().is_empty());
        // Two scopes reaching the same element give it once.
        let body = d.select(&[], "body").unwrap();
        let both = [body[0], div[0]];
        assert_eq!(d.select(&both, "b").unwrap().len(), 1);
        assert_eq!(d.matches(&[div[0], ps[0]], ".y").unwrap(), [true, false]);
        let err = d.select(&[], "div[").unwrap_err();
        assert!(matches!(&err, HtmlError::Selector { selector, .. } if selector == "div["));
        assert!(
            err.to_string()
                .starts_with("invalid CSS selector \"div[\": "),
            "{err}"
        );
    }

    #[test]
    fn text_and_markup() {
        let d = Document::parse(PAGE);
        let div = d.select(&[], "#a").unwrap()[0];
        assert_eq!(d.text(div), "one two");
        assert_eq!(d.inner_html(div), "one <b>two</b><!--c-->");
        assert_eq!(
            d.outer_html(div),
            "<div class=\"x y\" id=\"a\">one <b>two</b><!--c--></div>"
        );
        let n = d.node(div).unwrap();
        assert_eq!(n.name, "div");
        assert!(n.attributes.contains(&("class".into(), "x y".into())));
        let comment = *n.children.last().unwrap();
        assert_eq!(d.node(comment).unwrap().kind, NodeKind::Comment);
        assert_eq!(d.outer_html(comment), "<!--c-->");
        let text = n.children[0];
        assert_eq!(d.node(text).unwrap().value, "one ");
        assert_eq!(d.outer_html(text), "one ");
        let escaped = Document::parse("<p>a &lt; b</p><script>if (a < b && c) {}</script>");
        let p = escaped.select(&[], "p").unwrap()[0];
        assert_eq!(escaped.text(p), "a < b");
        let t = escaped.node(p).unwrap().children[0];
        assert_eq!(escaped.outer_html(t), "a &lt; b");
        let script = escaped.select(&[], "script").unwrap()[0];
        assert_eq!(escaped.inner_html(script), "if (a < b && c) {}");
        assert!(escaped.outer_html(0).starts_with("<html>"));
    }

    #[test]
    fn invalid_utf8_is_replaced_not_refused() {
        let d = Document::parse_bytes(b"<p>caf\xe9</p>");
        let p = d.select(&[], "p").unwrap()[0];
        assert_eq!(d.text(p), "caf\u{fffd}");
    }
}
