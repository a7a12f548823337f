//! HTML pages, forms and links, parsed by the host (the contract's `html` interface:
//! html5ever, the parser of Servo, and CSS selectors). Always available: the parser is
//! the host's, so it adds nothing to the plugin's size, and a response's body is parsed
//! where it already is without being copied into the plugin.
//!
//! A form is submitted as a browser submits it: its hidden inputs (a CSRF field such as
//! `csrfmiddlewaretoken`) are kept, the fields given are set over them, and it goes to
//! its `action` with its `method` and encoding (the pressed button's `formaction`,
//! `formmethod` and `formenctype` first).
//!
//! ```no_run
//! use loadtest::http;
//! # fn f(base: &str) -> Result<(), String> {
//! let page = http::get(format!("{base}/survey")).send()?;
//! #[derive(loadtest::serde::Deserialize)]
//! #[serde(crate = "loadtest::serde")]
//! struct Data { token: String }
//! let data: Data = page.html().json_script("survey-data")?;
//! let answered = page
//!     .form("form[action='/survey/answer']")?
//!     .set("token", &data.token)
//!     .set("answer", "4")
//!     .request()?            // a RequestBuilder: name it, limit redirects, ...
//!     .name("/survey/answer")
//!     .send()?;
//! let next = page.link("a.next")?.send()?;
//! # Ok(()) }
//! ```

use crate::bindings::loadtest::scenario::html as wit;
use crate::http::{self, Multipart, RequestBuilder};
use serde::de::DeserializeOwned;

/// A parsed HTML page, queried with CSS selectors. Dropping it frees it on the host.
#[derive(Debug)]
pub struct Document {
    inner: wit::Document,
    /// The page's URL, against which links and actions resolve (empty for a page
    /// parsed from text).
    url: String,
}

/// One node of a [`Document`] (usually an element).
#[derive(Debug, Clone, Copy)]
pub struct Element<'a> {
    doc: &'a Document,
    id: u32,
}

impl Document {
    /// Parses a page from text (never fails: broken markup is repaired as browsers do).
    pub fn parse(html: &str) -> Self {
        Self {
            inner: wit::Document::new(html),
            url: String::new(),
        }
    }

    /// Parses a response's body on the host, with no copy into the plugin.
    pub(crate) fn from_content(
        content: &crate::bindings::loadtest::scenario::http::ResponseContent,
        url: &str,
    ) -> Self {
        Self {
            inner: wit::Document::from_response(content),
            url: url.to_owned(),
        }
    }

    /// Gives the page a URL, against which its links and form actions resolve.
    pub fn with_url(mut self, url: impl Into<String>) -> Self {
        self.url = url.into();
        self
    }

    /// The page's URL (empty when it was parsed from text).
    pub fn url(&self) -> &str {
        &self.url
    }

    fn element(&self, id: u32) -> Element<'_> {
        Element { doc: self, id }
    }

    /// Every element matching `css`, in document order.
    pub fn select(&self, css: &str) -> Result<Vec<Element<'_>>, String> {
        Ok(self
            .inner
            .select(&[], css)?
            .into_iter()
            .map(|id| self.element(id))
            .collect())
    }

    /// The first element matching `css`.
    pub fn first(&self, css: &str) -> Result<Option<Element<'_>>, String> {
        Ok(self.select(css)?.into_iter().next())
    }

    /// Attribute `name` of the first element matching `css`.
    pub fn attr(&self, css: &str, name: &str) -> Result<Option<String>, String> {
        Ok(self.first(css)?.and_then(|e| e.attr(name)))
    }

    /// The text of the first element matching `css`.
    pub fn text(&self, css: &str) -> Result<Option<String>, String> {
        Ok(self.first(css)?.map(|e| e.text()))
    }

    /// The JSON in `<script type="application/json" id="ID">`, parsed into `T`.
    pub fn json_script<T: DeserializeOwned>(&self, id: &str) -> Result<T, String> {
        let css = format!("script[type=\"application/json\"][id=\"{id}\"]");
        let text = self.text(&css)?.ok_or_else(|| {
            format!("no <script type=\"application/json\" id={id:?}> in the page")
        })?;
        serde_json::from_str(&text)
            .map_err(|e| format!("<script id={id:?}> is not the expected JSON: {e}"))
    }

    /// The JSON inside the first element matching `css` (a `<script>` most often),
    /// parsed into `T`.
    pub fn json<T: DeserializeOwned>(&self, css: &str) -> Result<T, String> {
        let text = self
            .text(css)?
            .ok_or_else(|| format!("no element matches {css:?} in the page"))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("the text of {css:?} is not the expected JSON: {e}"))
    }

    /// The form matching `css`, ready to fill in and submit.
    pub fn form(&self, css: &str) -> Result<Form<'_>, String> {
        let form = self
            .first(css)?
            .filter(|e| e.name() == "form")
            .ok_or_else(|| format!("no form matches {css:?} in the page {}", self.url))?;
        Ok(Form {
            form,
            submitter: None,
            fields: Vec::new(),
        })
    }

    /// A GET of the `href` of the first element matching `css` (say `a.next`),
    /// resolved against the page's URL, as a click on the link would send it.
    pub fn link(&self, css: &str) -> Result<RequestBuilder, String> {
        let link = self
            .first(css)?
            .ok_or_else(|| format!("no element matches {css:?} in the page {}", self.url))?;
        let href = link
            .attr("href")
            .ok_or_else(|| format!("the element matching {css:?} has no href"))?;
        Ok(http::get(self.resolve(&href)?))
    }

    /// Every link (`a[href]` by default: give `css` to narrow), resolved.
    pub fn links(&self, css: &str) -> Result<Vec<String>, String> {
        self.select(css)?
            .into_iter()
            .filter_map(|e| e.attr("href"))
            .map(|href| self.resolve(&href))
            .collect()
    }

    /// `reference` resolved against the page's URL.
    pub fn resolve(&self, reference: &str) -> Result<String, String> {
        if self.url.is_empty() {
            return Err(format!(
                "cannot resolve {reference:?}: the page has no URL (parse it from a response, or give one with with_url)"
            ));
        }
        wit::resolve(&self.url, reference)
    }
}

impl<'a> Element<'a> {
    fn node(&self) -> Option<wit::Node> {
        self.doc.inner.node(self.id)
    }

    /// The element's tag name, in lower case.
    pub fn name(&self) -> String {
        self.node().map(|n| n.name).unwrap_or_default()
    }

    /// An attribute's value.
    pub fn attr(&self, name: &str) -> Option<String> {
        self.node()?
            .attributes
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }

    /// Every attribute, sorted by name.
    pub fn attrs(&self) -> Vec<(String, String)> {
        self.node().map(|n| n.attributes).unwrap_or_default()
    }

    /// The text inside the element, its descendants' included.
    pub fn text(&self) -> String {
        self.doc.inner.text(self.id)
    }

    /// The element's inner HTML.
    pub fn inner_html(&self) -> String {
        self.doc.inner.inner_html(self.id)
    }

    /// The element's own HTML.
    pub fn outer_html(&self) -> String {
        self.doc.inner.outer_html(self.id)
    }

    /// Elements inside this one matching `css`.
    pub fn select(&self, css: &str) -> Result<Vec<Element<'a>>, String> {
        Ok(self
            .doc
            .inner
            .select(&[self.id], css)?
            .into_iter()
            .map(|id| self.doc.element(id))
            .collect())
    }

    /// Whether the element matches `css`.
    pub fn is(&self, css: &str) -> Result<bool, String> {
        Ok(self.doc.inner.matches(&[self.id], css)?[0])
    }

    /// The element's parent, if it is an element.
    pub fn parent(&self) -> Option<Element<'a>> {
        let parent = self.node()?.parent?;
        let el = self.doc.element(parent);
        (el.node()?.kind == wit::NodeKind::Element).then_some(el)
    }

    /// The fields a browser would submit for this form (or this control).
    pub fn form_fields(&self) -> Vec<(String, String)> {
        self.doc.inner.form_fields(self.id)
    }
}

/// A form being filled in; [`request`](Form::request) makes the request a browser
/// would send.
#[derive(Debug, Clone)]
#[must_use = "a form does nothing until it is submitted"]
pub struct Form<'a> {
    form: Element<'a>,
    submitter: Option<String>,
    fields: Vec<(String, String)>,
}

impl Form<'_> {
    /// Sets field `name` to `value`, replacing the page's value(s) of that name (or
    /// adding the field). Set a name twice to send it twice.
    pub fn set(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.fields.push((name.into(), value.into()));
        self
    }

    /// Presses the submit button matching `css` (inside the form, or tied to it by
    /// its `form` attribute): its name and value are sent, and its `formaction`,
    /// `formmethod` and `formenctype` win over the form's. Without it no button is
    /// pressed, as when a user presses Enter in a field.
    pub fn press(mut self, css: impl Into<String>) -> Self {
        self.submitter = Some(css.into());
        self
    }

    /// The fields as they would be sent: the page's (hidden inputs included), then
    /// those set.
    pub fn fields(&self) -> Result<Vec<(String, String)>, String> {
        Ok(self.submission()?.fields)
    }

    fn submission(&self) -> Result<wit::Submission, String> {
        let doc = self.form.doc;
        let submitter = match &self.submitter {
            None => None,
            Some(css) => Some(
                doc.inner
                    .select(&[], css)?
                    .into_iter()
                    .next()
                    .ok_or_else(|| format!("no submit button matches {css:?} in the page"))?,
            ),
        };
        if doc.url.is_empty() {
            return Err("the form's page has no URL: take it from a response (Response::form), or give one with Document::with_url".into());
        }
        let mut sub = doc.inner.submission(self.form.id, submitter, &doc.url)?;
        let set = |name: &str| self.fields.iter().any(|(k, _)| k == name);
        sub.fields.retain(|(k, _)| !set(k.as_str()));
        sub.fields.extend(self.fields.iter().cloned());
        if sub.method == "GET" {
            // The host put the page's fields in the query: put them all.
            let base = sub
                .url
                .split(['?', '#'])
                .next()
                .unwrap_or_default()
                .to_owned();
            let query = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(sub.fields.iter())
                .finish();
            sub.url = if query.is_empty() {
                base
            } else {
                format!("{base}?{query}")
            };
        }
        Ok(sub)
    }

    /// The request a browser would send for this form (not sent yet: name it, limit
    /// its redirects, ... then [`send`](RequestBuilder::send) it).
    pub fn request(&self) -> Result<RequestBuilder, String> {
        let sub = self.submission()?;
        if sub.method == "GET" {
            return Ok(http::get(sub.url));
        }
        let req = http::request(sub.method, sub.url);
        Ok(match sub.enctype.as_str() {
            "multipart/form-data" => {
                let mut parts = Multipart::new();
                for (k, v) in sub.fields {
                    parts = parts.text(k, v);
                }
                req.multipart(parts)
            }
            "text/plain" => {
                let body: String = sub
                    .fields
                    .iter()
                    .map(|(k, v)| format!("{k}={v}\r\n"))
                    .collect();
                req.header("Content-Type", "text/plain").body(body)
            }
            _ => req.form(&sub.fields),
        })
    }

    /// Submits the form (the request of [`request`](Form::request), sent).
    pub fn submit(&self) -> Result<http::Response, String> {
        Ok(self.request()?.send()?)
    }
}
