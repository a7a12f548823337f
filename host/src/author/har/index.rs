//! The values of the responses seen so far, indexed once each, for correlation to find
//! where a value a request sends came from. Searching each value in every earlier
//! response, re-parsing each body every time, made an import quadratic (1,000 entries of
//! 17 KB JSON took 320 CPU-s, issue 49); here each body is parsed once when its response
//! is added, its header values and JSON leaves go into one map (value → the newest
//! response holding it), and only bodies that are not JSON (pages) are searched as text,
//! after a substring test. The answer is the one a search newest-first gives: the newest
//! response holding the value, and within it a header first, then the body's JSON
//! field (in document order), an `<input>`, a `<script>`'s JSON, or text between
//! boundaries.

use super::html;
use super::model::Entry;
use super::rules::Source;
use serde_json::Value;
use std::collections::HashMap;

/// Values shorter than this are never looked up unless all digits (see `correlate`).
const MIN_LEN: usize = 8;

/// A response whose body is text but not JSON (an HTML page): searched as text.
struct TextBody<'a> {
    /// Which response it is (its position among those added).
    at: usize,
    body: &'a str,
    /// `<input>` values → the input's name (the first input holding a value).
    inputs: HashMap<String, String>,
    /// `<script type=...json id=...>` leaves → where (the first holding a value).
    scripts: HashMap<String, Source>,
}

/// The responses seen so far.
#[derive(Default)]
pub(crate) struct Responses<'a> {
    /// A value (not all digits) → the newest response with it in a header or a JSON
    /// field, and where.
    text: HashMap<String, (usize, Source)>,
    /// An all-digit value under an id-like JSON key → the newest response, and where.
    number: HashMap<String, (usize, Source)>,
    /// The bodies searched as text, oldest first.
    pages: Vec<TextBody<'a>>,
    count: usize,
}

fn id_like(path: &str) -> bool {
    let key = path.rsplit('.').next().unwrap_or("");
    key == "id" || key.ends_with("_id") || key.ends_with("Id")
}

fn digits(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_digit())
}

/// Calls `f` with each leaf of `v` (a value that is not an object or an array) and its
/// dotted path below `path` (`items.0.id`), in document order: the one walk both the
/// index of responses and the values a request sends (`correlate`) are made by.
pub(crate) fn for_each_leaf(v: &Value, path: &str, f: &mut dyn FnMut(&str, &Value)) {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                for_each_leaf(v, &join(k), f);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                for_each_leaf(v, &join(&i.to_string()), f);
            }
        }
        leaf => f(path, leaf),
    }
}

/// The leaves of `v` in document order, as `correlate`'s search would meet them:
/// strings of `MIN_LEN` or more into `text`, id-like numbers (and digit strings) into
/// `number`; the first place of a value wins.
fn leaves(
    v: &Value,
    path: &str,
    place: &dyn Fn(String) -> Source,
    text: &mut HashMap<String, Source>,
    number: &mut HashMap<String, Source>,
) {
    for_each_leaf(v, path, &mut |path, leaf| match leaf {
        Value::String(s) if digits(s) && id_like(path) => {
            number
                .entry(s.clone())
                .or_insert_with(|| place(path.into()));
        }
        // Another all-digit string answers no lookup (see `find`).
        Value::String(s) if digits(s) => {}
        Value::String(s) if s.len() >= MIN_LEN => {
            text.entry(s.clone()).or_insert_with(|| place(path.into()));
        }
        Value::Number(n) if id_like(path) => {
            number
                .entry(n.to_string())
                .or_insert_with(|| place(path.into()));
        }
        _ => {}
    });
}

impl<'a> Responses<'a> {
    /// Adds the response of `e` as the newest.
    pub(crate) fn add(&mut self, e: &'a Entry) {
        let at = self.count;
        self.count += 1;
        let mut text: HashMap<String, Source> = HashMap::new();
        let mut number: HashMap<String, Source> = HashMap::new();
        for h in &e.response.headers {
            let name = h.name.to_ascii_lowercase();
            if name == "set-cookie" || name.starts_with(':') {
                continue;
            }
            if !digits(&h.value) {
                text.entry(h.value.clone())
                    .or_insert_with(|| Source::Header(h.name.clone()));
            }
            if let Some((_, q)) = h.value.split_once('?') {
                for (k, v) in url::form_urlencoded::parse(q.as_bytes()) {
                    if !digits(&v) {
                        text.entry(v.into_owned())
                            .or_insert_with(|| Source::HeaderParam(h.name.clone(), k.into_owned()));
                    }
                }
            }
        }
        if let Some(body) = e.response_text() {
            match serde_json::from_str::<Value>(body) {
                Ok(json) => leaves(&json, "", &Source::Json, &mut text, &mut number),
                Err(_) => self.pages.push(page(at, body)),
            }
        }
        for (k, s) in text {
            self.text.insert(k, (at, s));
        }
        for (k, s) in number {
            self.number.insert(k, (at, s));
        }
    }

    /// Where the newest response holding `want` has it: (which response, where).
    pub(crate) fn find(&self, want: &str) -> Option<(usize, Source)> {
        if digits(want) {
            // Only an id-like JSON field answers an all-digit value.
            return self.number.get(want).cloned();
        }
        let indexed = self.text.get(want);
        let after = indexed.map(|(at, _)| *at);
        for page in self.pages.iter().rev() {
            if after.is_some_and(|a| page.at <= a) {
                break;
            }
            if let Some(s) = page.find(want) {
                return Some((page.at, s));
            }
        }
        indexed.cloned()
    }
}

/// A page indexed: its inputs and its scripts' JSON.
fn page(at: usize, body: &str) -> TextBody<'_> {
    let mut inputs = HashMap::new();
    for (attrs, _) in html::tags(body, "input", false) {
        if let (Some(v), Some(n)) = (
            attrs.get("value"),
            attrs.get("name").filter(|n| !n.is_empty()),
        ) {
            inputs.entry(v.clone()).or_insert_with(|| n.clone());
        }
    }
    let mut scripts = HashMap::new();
    for (attrs, content) in html::tags(body, "script", true) {
        let (Some(id), true) = (
            attrs.get("id"),
            attrs.get("type").is_some_and(|t| t.contains("json")),
        ) else {
            continue;
        };
        if let Ok(json) = serde_json::from_str::<Value>(&content) {
            let mut unused = HashMap::new();
            let place = |p: String| Source::ScriptJson(id.clone(), p);
            leaves(&json, "", &place, &mut scripts, &mut unused);
        }
    }
    TextBody {
        at,
        body,
        inputs,
        scripts,
    }
}

impl TextBody<'_> {
    fn find(&self, want: &str) -> Option<Source> {
        if !self.body.contains(want) {
            return None;
        }
        if let Some(name) = self.inputs.get(want) {
            return Some(Source::Input(name.clone()));
        }
        if let Some(s) = self.scripts.get(want) {
            return Some(s.clone());
        }
        between(self.body, want)
    }
}

/// Boundaries around the first occurrence of `want` that find it again.
pub(crate) fn between(body: &str, want: &str) -> Option<Source> {
    let at = body.find(want)?;
    let right: String = body[at + want.len()..].chars().take(1).collect();
    for k in [12usize, 24, 48] {
        let mut start = at.saturating_sub(k);
        while !body.is_char_boundary(start) {
            start -= 1;
        }
        let left = &body[start..at];
        if left.is_empty() {
            continue;
        }
        if body.find(left) == Some(start) {
            return Some(Source::Between(left.to_string(), right));
        }
    }
    None
}
