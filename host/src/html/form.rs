//! Forms as a browser submits them (HTML's "form submission algorithm"): the fields
//! of the entry list, with the pressed button's own; the method, action and encoding,
//! the button's `formmethod`, `formaction` and `formenctype` first. The SDKs then set
//! the fields the plugin fills in and send the request.

use super::{Document, HtmlError};
use scraper::ElementRef;

/// A form as a browser would send it (the WIT `submission`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    /// `GET` or `POST`.
    pub method: String,
    /// Where to send it; for GET with the fields as the query.
    pub url: String,
    /// How a POST encodes the fields.
    pub enctype: String,
    /// The fields, in tree order.
    pub fields: Vec<(String, String)>,
}

/// The form encodings a browser knows; anything else falls back to the first.
const ENCTYPES: &[&str] = &[
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "text/plain",
];

/// `reference` resolved against the absolute URL `base`.
pub(crate) fn resolve(base: &str, reference: &str) -> Result<String, HtmlError> {
    let base = url::Url::parse(base).map_err(|reason| HtmlError::Base {
        reference: reference.to_owned(),
        base: base.to_owned(),
        reason,
    })?;
    match base.join(reference.trim()) {
        Ok(url) => Ok(url.into()),
        Err(reason) => Err(HtmlError::Join {
            reference: reference.to_owned(),
            base,
            reason,
        }),
    }
}

/// The controls that carry a value (`button` only when pressed, which the SDK adds).
const CONTROLS: &[&str] = &["input", "select", "textarea"];

/// Input types never submitted without being pressed, and `file` (a file part needs a
/// file, which a plugin gives as a field of its own).
const NOT_SUBMITTED: &[&str] = &["submit", "image", "reset", "button", "file"];

impl Document {
    /// The fields of form `id`, in document order; a control's own field(s) when `id`
    /// is a control; nothing for any other node.
    pub fn form_fields(&self, id: u32) -> Vec<(String, String)> {
        let Some(element) = self.element(id) else {
            return vec![];
        };
        let name = element.value().name();
        if CONTROLS.contains(&name) {
            return fields_of(element);
        }
        if name != "form" {
            return vec![];
        }
        self.entries(element, None)
    }

    /// How a browser submits form `id` with the button `submitter` pressed.
    pub fn submission(
        &self,
        id: u32,
        submitter: Option<u32>,
        base: &str,
    ) -> Result<Submission, HtmlError> {
        let form = self
            .element(id)
            .filter(|e| e.value().name() == "form")
            .ok_or(HtmlError::NotAForm(id))?;
        let button = match submitter {
            None => None,
            Some(b) => {
                let button = self
                    .element(b)
                    .filter(|e| is_submit_button(*e))
                    .ok_or(HtmlError::NotASubmitButton(b))?;
                if !owner_is(button, form) {
                    return Err(HtmlError::ButtonOfAnotherForm(b));
                }
                Some(button)
            }
        };
        // The button's form* attribute wins over the form's own.
        let pick = |button_attr: &str, form_attr: &str| {
            button
                .and_then(|b| b.value().attr(button_attr))
                .or_else(|| form.value().attr(form_attr))
        };
        let method = match pick("formmethod", "method")
            .unwrap_or("get")
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "post" => "POST",
            "dialog" => return Err(HtmlError::DialogMethod),
            _ => "GET",
        };
        let action = match pick("formaction", "action") {
            Some(a) if !a.trim().is_empty() => resolve(base, a)?,
            _ => resolve(base, "")?,
        };
        let enctype = pick("formenctype", "enctype")
            .map(|e| e.trim().to_ascii_lowercase())
            .filter(|e| ENCTYPES.contains(&e.as_str()))
            .unwrap_or_else(|| ENCTYPES[0].to_owned());
        let fields = self.entries(form, button);
        let url = if method == "GET" {
            // A GET form replaces the action's query with its fields.
            let mut url = url::Url::parse(&action).map_err(HtmlError::Action)?;
            url.set_query(None);
            if !fields.is_empty() {
                url.query_pairs_mut().extend_pairs(fields.iter());
            }
            url.into()
        } else {
            action
        };
        Ok(Submission {
            method: method.into(),
            url,
            enctype,
            fields,
        })
    }

    /// The entry list of `form` with `button` pressed (or none).
    fn entries(
        &self,
        element: ElementRef<'_>,
        button: Option<ElementRef<'_>>,
    ) -> Vec<(String, String)> {
        let mut out = vec![];
        // Every control of the document whose owner is this form: its descendants
        // unless their `form` attribute names another form, and controls elsewhere
        // whose `form` attribute names this one.
        for node in self.html.tree.root().descendants() {
            let Some(control) = ElementRef::wrap(node) else {
                continue;
            };
            if button.is_some_and(|b| b.id() == control.id()) {
                out.extend(button_fields(control));
                continue;
            }
            if CONTROLS.contains(&control.value().name()) && owner_is(control, element) {
                out.extend(fields_of(control));
            }
        }
        out
    }
}

/// Whether `form` owns `control`: by its `form` attribute, else by being inside it.
fn owner_is(control: ElementRef<'_>, form: ElementRef<'_>) -> bool {
    match control.value().attr("form") {
        Some(owner) => form.value().id() == Some(owner),
        None => nearest_form(control).is_some_and(|f| f.id() == form.id()),
    }
}

/// Whether `e` submits its form when pressed.
fn is_submit_button(e: ElementRef<'_>) -> bool {
    let kind = e
        .value()
        .attr("type")
        .map(|t| t.trim().to_ascii_lowercase());
    match e.value().name() {
        // A button with no type (or an unknown one) is a submit button.
        "button" => !matches!(kind.as_deref(), Some("reset" | "button")),
        "input" => matches!(kind.as_deref(), Some("submit" | "image")),
        _ => false,
    }
}

/// The fields of the pressed button: its name and value; an image button's click
/// point (0, 0).
fn button_fields(button: ElementRef<'_>) -> Vec<(String, String)> {
    let e = button.value();
    let name = e.attr("name").unwrap_or("");
    if e.attr("type")
        .is_some_and(|t| t.eq_ignore_ascii_case("image"))
    {
        let prefix = if name.is_empty() {
            String::new()
        } else {
            format!("{name}.")
        };
        return vec![
            (format!("{prefix}x"), "0".into()),
            (format!("{prefix}y"), "0".into()),
        ];
    }
    if name.is_empty() {
        return vec![];
    }
    vec![(name.to_owned(), e.attr("value").unwrap_or("").to_owned())]
}

/// The form element around `control`, if any.
fn nearest_form(control: ElementRef<'_>) -> Option<ElementRef<'_>> {
    control
        .ancestors()
        .filter_map(ElementRef::wrap)
        .find(|a| a.value().name() == "form")
}

/// Whether `control` is disabled: by its own attribute, or inside a disabled
/// fieldset other than in that fieldset's first legend.
fn disabled(control: ElementRef<'_>) -> bool {
    if control.value().attr("disabled").is_some() {
        return true;
    }
    let mut child = control;
    for ancestor in control.ancestors().filter_map(ElementRef::wrap) {
        if ancestor.value().name() == "fieldset" && ancestor.value().attr("disabled").is_some() {
            let first_legend = ancestor
                .children()
                .filter_map(ElementRef::wrap)
                .find(|c| c.value().name() == "legend");
            let in_legend = first_legend.is_some_and(|l| l.id() == child.id());
            if !in_legend {
                return true;
            }
        }
        child = ancestor;
    }
    false
}

/// The field(s) one control contributes.
fn fields_of(control: ElementRef<'_>) -> Vec<(String, String)> {
    let e = control.value();
    let name = match e.attr("name") {
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => return vec![],
    };
    if disabled(control) {
        return vec![];
    }
    match e.name() {
        "input" => {
            let kind = e.attr("type").unwrap_or("text").to_ascii_lowercase();
            if NOT_SUBMITTED.contains(&kind.as_str()) {
                return vec![];
            }
            if kind == "checkbox" || kind == "radio" {
                if e.attr("checked").is_none() {
                    return vec![];
                }
                return vec![(name, e.attr("value").unwrap_or("on").to_owned())];
            }
            vec![(name, e.attr("value").unwrap_or("").to_owned())]
        }
        "textarea" => vec![(name, control.text().collect())],
        "select" => {
            let options: Vec<ElementRef<'_>> = control
                .descendent_elements()
                .filter(|o| o.value().name() == "option" && !disabled(*o))
                .collect();
            let chosen: Vec<ElementRef<'_>> = options
                .iter()
                .copied()
                .filter(|o| o.value().attr("selected").is_some())
                .collect();
            let picked: Vec<ElementRef<'_>> = if e.attr("multiple").is_some() {
                chosen
            } else if let Some(last) = chosen.last() {
                // A single select shows the last option marked selected.
                vec![*last]
            } else {
                // None marked: a browser shows (and submits) the first.
                options.into_iter().take(1).collect()
            };
            picked
                .into_iter()
                .map(|o| (name.clone(), option_value(o)))
                .collect()
        }
        _ => vec![],
    }
}

/// An option's value: its `value` attribute, else its text with white space collapsed.
fn option_value(option: ElementRef<'_>) -> String {
    match option.value().attr("value") {
        Some(v) => v.to_owned(),
        None => option
            .text()
            .collect::<String>()
            .split_ascii_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(page: &str, selector: &str) -> Vec<(String, String)> {
        let d = Document::parse(page);
        let form = d.select(&[], selector).unwrap()[0];
        d.form_fields(form)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn hidden_text_checked_and_selected_controls_are_submitted_in_order() {
        let page = r#"<form id=f method=post action="/a">
            <input type=hidden name=csrfmiddlewaretoken value="tok">
            <input name=user value=ann><input name=noval>
            <input type=checkbox name=c1 checked><input type=checkbox name=c2 value=x>
            <input type=radio name=r value=1><input type=radio name=r value=2 checked>
            <select name=s><option>first  one</option><option value=2>two</option></select>
            <select name=s2><option selected value=a>a</option><option selected value=b>b</option></select>
            <select name=m multiple><option selected>x</option><option>y</option><option selected>z</option></select>
            <textarea name=t>hello
world</textarea>
            <input type=submit name=go value=Go><button name=b value=v>B</button>
            <input type=file name=up><input type=image name=img><input type=reset name=rs>
            <input name="" value=nameless><input value=unnamed>
            <input name=off value=1 disabled>
            <fieldset disabled><legend><input name=inlegend value=1></legend><input name=infs value=1></fieldset>
        </form>"#;
        assert_eq!(
            fields(page, "form"),
            pairs(&[
                ("csrfmiddlewaretoken", "tok"),
                ("user", "ann"),
                ("noval", ""),
                ("c1", "on"),
                ("r", "2"),
                ("s", "first one"),
                ("s2", "b"),
                ("m", "x"),
                ("m", "z"),
                ("t", "hello\nworld"),
                ("inlegend", "1"),
            ])
        );
    }

    #[test]
    fn the_form_attribute_moves_controls_between_forms() {
        let page = r#"<form id=one><input name=a value=1><input name=b value=2 form=two></form>
            <form id=two><input name=c value=3></form><input name=d value=4 form=two>
            <input name=e value=5>"#;
        assert_eq!(fields(page, "#one"), pairs(&[("a", "1")]));
        assert_eq!(
            fields(page, "#two"),
            pairs(&[("b", "2"), ("c", "3"), ("d", "4")])
        );
        // A control alone gives its own field; any other element gives none.
        assert_eq!(fields(page, "input[name=e]"), pairs(&[("e", "5")]));
        assert!(fields(page, "body").is_empty());
    }

    #[test]
    fn a_submission_takes_method_action_and_encoding_from_the_button_first() {
        let page = r#"<form id=f method=post action="answer?x=1" enctype="multipart/form-data">
            <input type=hidden name=csrf value=c>
            <button name=go value=yes>Go</button>
            <input type=submit name=alt value=Alt formmethod=get formaction="/elsewhere?q=old">
            <input type=image name=map>
            <button type=button name=nope>No</button>
            </form><form id=g><input name=a value="x y"></form><form id=h method=dialog></form>"#;
        let d = Document::parse(page);
        let at = |css: &str| d.select(&[], css).unwrap()[0];
        let base = "http://127.0.0.1:8080/survey/page";
        let plain = d.submission(at("#f"), None, base).unwrap();
        assert_eq!(plain.method, "POST");
        assert_eq!(plain.url, "http://127.0.0.1:8080/survey/answer?x=1");
        assert_eq!(plain.enctype, "multipart/form-data");
        assert_eq!(plain.fields, pairs(&[("csrf", "c")]));
        let go = d
            .submission(at("#f"), Some(at("button[name=go]")), base)
            .unwrap();
        assert_eq!(go.fields, pairs(&[("csrf", "c"), ("go", "yes")]));
        let alt = d
            .submission(at("#f"), Some(at("input[name=alt]")), base)
            .unwrap();
        assert_eq!(alt.method, "GET");
        assert_eq!(alt.url, "http://127.0.0.1:8080/elsewhere?csrf=c&alt=Alt");
        let map = d
            .submission(at("#f"), Some(at("input[name=map]")), base)
            .unwrap();
        assert_eq!(map.fields[1..], pairs(&[("map.x", "0"), ("map.y", "0")]));
        let err = d
            .submission(at("#f"), Some(at("button[name=nope]")), base)
            .unwrap_err();
        assert_eq!(err, HtmlError::NotASubmitButton(at("button[name=nope]")));
        assert!(err.to_string().contains("not a submit button"), "{err}");
        let err = d
            .submission(at("#g"), Some(at("button[name=go]")), base)
            .unwrap_err();
        assert_eq!(err, HtmlError::ButtonOfAnotherForm(at("button[name=go]")));
        assert!(err.to_string().contains("not one of the form's"), "{err}");
        // No method, no action: a GET to the page itself, fields as its query.
        let g = d
            .submission(at("#g"), None, "http://h/p?old=1#frag")
            .unwrap();
        assert_eq!(
            (g.method.as_str(), g.url.as_str()),
            ("GET", "http://h/p?a=x+y")
        );
        assert_eq!(g.enctype, "application/x-www-form-urlencoded");
        assert_eq!(
            d.submission(at("#h"), None, base).unwrap_err().to_string(),
            "a form with method=dialog closes a dialog; it sends nothing"
        );
        assert_eq!(
            d.submission(at("#g"), None, "not a url")
                .unwrap_err()
                .to_string(),
            "cannot resolve \"\" against \"not a url\": relative URL without a base"
        );
        let not_a_form = at("input[name=a]");
        assert_eq!(
            d.submission(not_a_form, None, base)
                .unwrap_err()
                .to_string(),
            format!("node {not_a_form} is not a form")
        );
    }

    #[test]
    fn links_resolve_as_a_browser_resolves_them() {
        let base = "http://127.0.0.1:8080/a/b/page?q=1";
        assert_eq!(resolve(base, "c").unwrap(), "http://127.0.0.1:8080/a/b/c");
        assert_eq!(
            resolve(base, "../c?x").unwrap(),
            "http://127.0.0.1:8080/a/c?x"
        );
        assert_eq!(
            resolve(base, "/root").unwrap(),
            "http://127.0.0.1:8080/root"
        );
        assert_eq!(
            resolve(base, "?z").unwrap(),
            "http://127.0.0.1:8080/a/b/page?z"
        );
        assert_eq!(resolve(base, "//other/x").unwrap(), "http://other/x");
        assert_eq!(
            resolve(base, " https://x.test/ ").unwrap(),
            "https://x.test/"
        );
        assert!(resolve("relative", "x").is_err());
    }
}
