//! Form submissions: a urlencoded POST that a form of an earlier page sends (its method
//! and action match) is written as that form's submission (k6's `res.submitForm`, the
//! Python SDK's `res.form(...).set(...).submit()`), as a person using the page sends it.
//! The fields the page's form holds with the recorded value (a CSRF field in a hidden
//! input) are left to the form, which takes them from the live page at run time; the
//! others (typed by the person, or added by the page's script) are set over them.

use super::html;
use super::model::is_static;
use super::model::Recording;
use super::plan::{FormFill, Item, Plan};
use url::Url;

/// How many earlier pages are searched for the form (the latest first).
const PAGES_BACK: usize = 4;

/// One form of a page, as recorded.
struct PageForm {
    /// Where it submits, resolved against the page's URL (no fragment).
    action: Url,
    /// Its `id`.
    id: Option<String>,
    /// Its `action` attribute as written.
    raw_action: Option<String>,
    /// (name, default value) of the inputs a submission sends as they are.
    defaults: Vec<(String, String)>,
}

fn forms_of(page_url: &str, body: &str) -> Vec<PageForm> {
    let Ok(base) = Url::parse(page_url) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (attrs, content) in html::tags(body, "form", true) {
        let method = attrs.get("method").map(|m| m.to_ascii_lowercase());
        let enctype = attrs.get("enctype").map(|m| m.to_ascii_lowercase());
        if method.as_deref() != Some("post")
            || enctype.is_some_and(|e| e != "application/x-www-form-urlencoded")
        {
            // Only urlencoded POSTs are matched: a GET form's fields are its URL's.
            out.push(None);
            continue;
        }
        let raw_action = attrs.get("action").cloned();
        let Ok(mut action) = base.join(raw_action.as_deref().unwrap_or("")) else {
            out.push(None);
            continue;
        };
        action.set_fragment(None);
        let mut defaults = Vec::new();
        for (a, _) in html::tags(&content, "input", false) {
            let kind = a.get("type").map(|t| t.to_ascii_lowercase());
            let plain = !matches!(
                kind.as_deref(),
                Some("checkbox" | "radio" | "submit" | "image" | "button" | "reset" | "file")
            );
            if let (Some(name), true) = (a.get("name"), plain) {
                if !name.is_empty() && !a.contains_key("disabled") {
                    defaults.push((name.clone(), a.get("value").cloned().unwrap_or_default()));
                }
            }
        }
        out.push(Some(PageForm {
            action,
            id: attrs.get("id").cloned(),
            raw_action,
            defaults,
        }));
    }
    out.into_iter().flatten().collect()
}

/// A selector that finds `form` alone among the page's `all` forms (`forms_total` of
/// every kind), or `None`.
fn selector(form: &PageForm, all: &[PageForm], forms_total: usize) -> Option<String> {
    let simple = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if let Some(id) = form.id.as_deref().filter(|id| simple(id)) {
        return Some(format!("form#{id}"));
    }
    // The action says which form it is to a reader; `form` alone when it is the only one.
    if let Some(action) = form.raw_action.as_deref() {
        let quotable = !action.contains(['"', '\\', '\n']);
        let same = all
            .iter()
            .filter(|f| f.raw_action.as_deref() == Some(action))
            .count();
        if quotable && same == 1 {
            return Some(format!("form[action=\"{action}\"]"));
        }
    }
    (forms_total == 1).then(|| "form".to_string())
}

/// Marks each call that submits a form of an earlier page.
pub(crate) fn find(rec: &Recording, plan: &mut Plan) {
    // Pages seen so far: (entry answering, var, step).
    let mut pages: Vec<(usize, String, usize)> = Vec::new();
    for (n, step) in plan.steps.iter_mut().enumerate() {
        for item in &mut step.items {
            let Item::Call(call) = item else { continue };
            if call.method == "POST" {
                if let Some((body, mime)) = &call.body {
                    if mime.contains("x-www-form-urlencoded") {
                        let target = rec.entries[call.entry].request.url.clone();
                        call.form = pages.iter().rev().take(PAGES_BACK).find_map(
                            |(entry, var, page_step)| {
                                let mut form = fill(rec, *entry, var, &target, body)?;
                                form.carried = *page_step != n;
                                Some(form)
                            },
                        );
                    }
                }
            }
            let answer = &rec.entries[call.answered_by];
            let html = answer
                .response
                .content
                .as_ref()
                .is_some_and(|c| c.mime_type.contains("html"));
            if html && !is_static(&rec.entries[call.entry]) && answer.response_text().is_some() {
                pages.push((call.answered_by, call.var.clone(), n));
            }
        }
    }
}

/// The variables of the pages whose form a later step submits: code that keeps each
/// step's responses to itself carries these to that step.
pub(crate) fn carried_pages(plan: &Plan) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for step in &plan.steps {
        for item in &step.items {
            if let Item::Call(super::plan::Call { form: Some(f), .. }) = item {
                if f.carried && !out.contains(&f.page_var) {
                    out.push(f.page_var.clone());
                }
            }
        }
    }
    out
}

/// The form of the page (entry `page`, held in `var`) that sends `body` to `target`.
fn fill(rec: &Recording, page: usize, var: &str, target: &str, body: &str) -> Option<FormFill> {
    let e = &rec.entries[page];
    let text = e.response_text()?;
    let forms_total = html::tags(text, "form", false).len();
    let forms = forms_of(&e.request.url, text);
    let mut target = Url::parse(target).ok()?;
    target.set_fragment(None);
    let form = forms.iter().find(|f| f.action == target)?;
    let selector = selector(form, &forms, forms_total)?;
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    // A name sent twice cannot be split between the page's and ours: a plain request.
    let unique = pairs
        .iter()
        .enumerate()
        .all(|(i, (k, _))| pairs[..i].iter().all(|(k2, _)| k2 != k));
    if !unique {
        return None;
    }
    let mut fields = Vec::new();
    let mut kept = Vec::new();
    for (k, v) in pairs {
        if form.defaults.iter().any(|(n, d)| *n == k && *d == v) {
            kept.push(k);
        } else {
            fields.push((k, v));
        }
    }
    Some(FormFill {
        page_var: var.to_string(),
        carried: false,
        selector,
        fields,
        kept,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_told_apart_and_their_defaults_read() {
        let page = r#"<form method="post" action="/a"><input type="hidden" name="csrf" value="t0k3n">
            <input name="q"><input type="submit" name="go" value="Go"></form>
            <form id="second" method="POST" action="/b?x=1"><input name="n" value="1" disabled></form>
            <form action="/c"></form>"#;
        let forms = forms_of("http://h.test/page", page);
        assert_eq!(forms.len(), 2, "the GET form is not matched");
        assert_eq!(forms[0].action.as_str(), "http://h.test/a");
        assert_eq!(
            forms[0].defaults,
            vec![("csrf".into(), "t0k3n".into()), ("q".into(), String::new())]
        );
        assert!(forms[1].defaults.is_empty(), "disabled inputs are not sent");
        assert_eq!(
            selector(&forms[0], &forms, 3).unwrap(),
            "form[action=\"/a\"]"
        );
        assert_eq!(selector(&forms[1], &forms, 3).unwrap(), "form#second");
    }
}
