//! `html`: documents parsed on the host (see [`crate::html`]), held in the VU's
//! resource table, so a response's body is parsed where it already is.

use crate::html::{Document, NodeKind};
use crate::net::ResponseContent;
use crate::plugin::bindings::loadtest::scenario::html as wit;
use crate::plugin::capabilities::HtmlState;
use crate::plugin::state::VuState;
use wasmtime::component::{HasData, Resource, ResourceTable};

/// The most documents one VU may hold at once: a plugin that parses in a loop and
/// never drops what it parsed is stopped with a message, not left to grow the host.
pub(crate) const MAX_LIVE_DOCUMENTS: u64 = 1_000;

/// What `html` reaches of a VU's store: how many documents it holds, and the resource
/// table they are held in (where a response's content also is).
pub(crate) struct HtmlView<'a> {
    /// The capability's count of documents held.
    pub(crate) html: &'a mut HtmlState,
    /// The VU's resource table.
    pub(crate) table: &'a mut ResourceTable,
}

/// The `HasData` of `html`: its imports see an [`HtmlView`].
pub(crate) struct HasHtml;

impl HasData for HasHtml {
    type Data<'a> = HtmlView<'a>;
}

impl VuState {
    /// What `html` sees of the store.
    pub(crate) fn html_view(&mut self) -> HtmlView<'_> {
        HtmlView {
            html: &mut self.html,
            table: &mut self.table,
        }
    }
}

impl HtmlView<'_> {
    /// Puts `doc` in the table, or traps (the call cannot return an error) with what
    /// the plugin must change.
    pub(crate) fn hold_document(&mut self, doc: Document) -> wasmtime::Result<Resource<Document>> {
        if self.html.live_documents >= MAX_LIVE_DOCUMENTS {
            return Err(wasmtime::format_err!(
                "this VU holds {} parsed HTML documents (the most is {MAX_LIVE_DOCUMENTS}); \
                 drop documents once read instead of keeping them",
                self.html.live_documents
            ));
        }
        let handle = self.table.push(doc)?;
        self.html.live_documents += 1;
        Ok(handle)
    }
}

impl wit::Host for HtmlView<'_> {
    fn resolve(
        &mut self,
        base: String,
        reference: String,
    ) -> wasmtime::Result<Result<String, String>> {
        Ok(crate::html::form::resolve(&base, &reference).map_err(String::from))
    }
}

impl wit::HostDocument for HtmlView<'_> {
    fn new(&mut self, text: String) -> wasmtime::Result<Resource<Document>> {
        self.hold_document(Document::parse(&text))
    }

    fn from_response(
        &mut self,
        content: Resource<ResponseContent>,
    ) -> wasmtime::Result<Resource<Document>> {
        let doc = Document::parse_bytes(&self.table.get(&content)?.body);
        self.hold_document(doc)
    }

    fn select(
        &mut self,
        doc: Resource<Document>,
        scope: Vec<u32>,
        selector: String,
    ) -> wasmtime::Result<Result<Vec<u32>, String>> {
        Ok(self
            .table
            .get(&doc)?
            .select(&scope, &selector)
            .map_err(String::from))
    }

    fn matches(
        &mut self,
        doc: Resource<Document>,
        nodes: Vec<u32>,
        selector: String,
    ) -> wasmtime::Result<Result<Vec<bool>, String>> {
        Ok(self
            .table
            .get(&doc)?
            .matches(&nodes, &selector)
            .map_err(String::from))
    }

    fn node(&mut self, doc: Resource<Document>, id: u32) -> wasmtime::Result<Option<wit::Node>> {
        Ok(self.table.get(&doc)?.node(id).map(|n| wit::Node {
            kind: match n.kind {
                NodeKind::Document => wit::NodeKind::Document,
                NodeKind::Element => wit::NodeKind::Element,
                NodeKind::Text => wit::NodeKind::Text,
                NodeKind::Comment => wit::NodeKind::Comment,
                NodeKind::Doctype => wit::NodeKind::Doctype,
                NodeKind::Other => wit::NodeKind::Other,
            },
            name: n.name,
            attributes: n.attributes,
            value: n.value,
            parent: n.parent,
            children: n.children,
        }))
    }

    fn text(&mut self, doc: Resource<Document>, id: u32) -> wasmtime::Result<String> {
        Ok(self.table.get(&doc)?.text(id))
    }

    fn inner_html(&mut self, doc: Resource<Document>, id: u32) -> wasmtime::Result<String> {
        Ok(self.table.get(&doc)?.inner_html(id))
    }

    fn outer_html(&mut self, doc: Resource<Document>, id: u32) -> wasmtime::Result<String> {
        Ok(self.table.get(&doc)?.outer_html(id))
    }

    fn form_fields(
        &mut self,
        doc: Resource<Document>,
        form: u32,
    ) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(self.table.get(&doc)?.form_fields(form))
    }

    fn submission(
        &mut self,
        doc: Resource<Document>,
        form: u32,
        submitter: Option<u32>,
        base: String,
    ) -> wasmtime::Result<Result<wit::Submission, String>> {
        let submission = self.table.get(&doc)?.submission(form, submitter, &base);
        Ok(submission
            .map(|s| wit::Submission {
                method: s.method,
                url: s.url,
                enctype: s.enctype,
                fields: s.fields,
            })
            .map_err(String::from))
    }

    fn drop(&mut self, doc: Resource<Document>) -> wasmtime::Result<()> {
        self.table.delete(doc)?;
        self.html.live_documents = self.html.live_documents.saturating_sub(1);
        Ok(())
    }
}
