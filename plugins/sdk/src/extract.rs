//! Pulling values out of responses: tokens in an HTML page, a JSON island in a
//! `<script>`, a value after a marker.
//!
//! [`between`] costs nothing extra. HTML and regular expressions are behind cargo
//! features, so a plugin that does not use them does not carry their code (`html`
//! makes the `survey` example 766 KB, against 150 KB for `notes` without it):
//!
//! ```toml
//! loadtest-sdk = { path = "../sdk", features = ["html", "regex"] }
//! ```
//!
// Plain names, not links: the items exist only with their feature, and the docs must
// build without it (`cargo doc` in a copy of this crate alone).
//! - `html`: `Document` (CSS selectors over a parsed page, from the `scraper` crate:
//!   the html5ever parser of Servo, browser-grade on broken markup, and maintained)
//!   and `Response::html`.
//! - `regex`: `capture` and `capture_all` (the `regex` crate; compiled patterns
//!   are kept per VU, so a pattern used in every iteration is compiled once).
//!
//! ```no_run
//! # #[cfg(feature = "html")]
//! # fn f(base: &str) -> Result<(), String> {
//! use loadtest::http;
//! let page = http::get(format!("{base}/survey")).send()?.html();
//! let csrf = page.attr("input[name=csrf]", "value")?.ok_or("no CSRF token")?;
//! #[derive(loadtest::serde::Deserialize)]
//! #[serde(crate = "loadtest::serde")]
//! struct Data { token: String }
//! let data: Data = page.json_script("survey-data")?;
//! # Ok(()) }
//! ```

/// The text between the first `left` and the next `right` after it, as k6's
/// `findBetween` (`None` when either is missing).
pub fn between<'a>(text: &'a str, left: &str, right: &str) -> Option<&'a str> {
    let start = text.find(left)? + left.len();
    let len = text[start..].find(right)?;
    Some(&text[start..start + len])
}

#[cfg(feature = "html")]
pub use html::{Document, Element};

#[cfg(feature = "html")]
mod html {
    use serde::de::DeserializeOwned;

    /// A parsed HTML page, queried with CSS selectors.
    #[derive(Debug)]
    pub struct Document {
        html: scraper::Html,
    }

    /// One element of a [`Document`].
    #[derive(Debug, Clone, Copy)]
    pub struct Element<'a> {
        inner: scraper::ElementRef<'a>,
    }

    fn selector(css: &str) -> Result<scraper::Selector, String> {
        scraper::Selector::parse(css).map_err(|e| format!("invalid CSS selector {css:?}: {e}"))
    }

    impl Document {
        /// Parses a page (never fails: broken markup is repaired as browsers do).
        pub fn parse(html: &str) -> Self {
            Self {
                html: scraper::Html::parse_document(html),
            }
        }

        /// Every element matching `css`, in document order.
        pub fn select(&self, css: &str) -> Result<Vec<Element<'_>>, String> {
            let selector = selector(css)?;
            Ok(self
                .html
                .select(&selector)
                .map(|inner| Element { inner })
                .collect())
        }

        /// The first element matching `css`.
        pub fn first(&self, css: &str) -> Result<Option<Element<'_>>, String> {
            let selector = selector(css)?;
            Ok(self
                .html
                .select(&selector)
                .next()
                .map(|inner| Element { inner }))
        }

        /// Attribute `name` of the first element matching `css`.
        pub fn attr(&self, css: &str, name: &str) -> Result<Option<String>, String> {
            Ok(self
                .first(css)?
                .and_then(|e| e.attr(name).map(str::to_owned)))
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
    }

    impl<'a> Element<'a> {
        /// The element's tag name, in lower case.
        pub fn name(&self) -> &'a str {
            self.inner.value().name()
        }

        /// An attribute's value.
        pub fn attr(&self, name: &str) -> Option<&'a str> {
            self.inner.value().attr(name)
        }

        /// The text inside the element, its descendants' included.
        pub fn text(&self) -> String {
            self.inner.text().collect()
        }

        /// The element's inner HTML.
        pub fn inner_html(&self) -> String {
            self.inner.inner_html()
        }

        /// Elements inside this one matching `css`.
        pub fn select(&self, css: &str) -> Result<Vec<Element<'a>>, String> {
            let selector = selector(css)?;
            Ok(self
                .inner
                .select(&selector)
                .map(|inner| Element { inner })
                .collect())
        }
    }
}

#[cfg(feature = "regex")]
pub use self::re::{capture, capture_all};

#[cfg(feature = "regex")]
mod re {
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// Compiled patterns kept per VU; bounded, as a plugin could build patterns.
    const MAX_PATTERNS: usize = 64;

    thread_local! {
        static PATTERNS: RefCell<HashMap<String, regex::Regex>> = RefCell::new(HashMap::new());
    }

    fn with_regex<R>(pattern: &str, f: impl FnOnce(&regex::Regex) -> R) -> Result<R, String> {
        PATTERNS.with(|cache| {
            let mut cache = cache.borrow_mut();
            if !cache.contains_key(pattern) {
                let re = regex::Regex::new(pattern)
                    .map_err(|e| format!("invalid regular expression {pattern:?}: {e}"))?;
                if cache.len() >= MAX_PATTERNS {
                    cache.clear();
                }
                cache.insert(pattern.to_owned(), re);
            }
            Ok(f(&cache[pattern]))
        })
    }

    /// The first capture group of the first match of `pattern` in `text` (the whole
    /// match when the pattern has no group).
    pub fn capture(pattern: &str, text: &str) -> Result<Option<String>, String> {
        with_regex(pattern, |re| {
            re.captures(text)
                .and_then(|c| c.get(1).or_else(|| c.get(0)).map(|m| m.as_str().to_owned()))
        })
    }

    /// The first capture group (or the whole match) of every match, in order.
    pub fn capture_all(pattern: &str, text: &str) -> Result<Vec<String>, String> {
        with_regex(pattern, |re| {
            re.captures_iter(text)
                .filter_map(|c| c.get(1).or_else(|| c.get(0)).map(|m| m.as_str().to_owned()))
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn between_finds_the_first_pair() {
        let text = r#"<input name="csrf" value="abc"><input name="x" value="y">"#;
        assert_eq!(between(text, r#"name="csrf" value=""#, "\""), Some("abc"));
        assert_eq!(between(text, "nope", "\""), None);
        assert_eq!(between(text, "value=\"", "missing"), None);
    }

    #[cfg(feature = "html")]
    #[test]
    fn documents_answer_css_selectors_and_json_islands() {
        let page = Document::parse(
            r#"<html><body><form><input type=hidden name=csrf value="c1">
               <p class="q">How <b>good</b>?</p><p class="q">Why?</p>
               <script type="application/json" id="data">{"token": "t9"}</script>
               <script type="application/json" id="other">nope</script>"#,
        );
        assert_eq!(
            page.attr("input[name=csrf]", "value").unwrap().as_deref(),
            Some("c1")
        );
        assert_eq!(page.text("p.q").unwrap().as_deref(), Some("How good?"));
        assert_eq!(page.select("p.q").unwrap().len(), 2);
        assert_eq!(page.attr("input[name=nope]", "value").unwrap(), None);
        let v: serde_json::Value = page.json_script("data").unwrap();
        assert_eq!(v["token"], "t9");
        assert!(page
            .json_script::<serde_json::Value>("other")
            .unwrap_err()
            .contains("not the expected JSON"));
        assert!(page
            .json_script::<serde_json::Value>("gone")
            .unwrap_err()
            .contains("no <script"));
        assert!(page
            .select("p[")
            .unwrap_err()
            .contains("invalid CSS selector"));
    }

    #[cfg(feature = "regex")]
    #[test]
    fn regex_captures_the_first_group() {
        let text = "token=a1; token=b2";
        assert_eq!(
            capture(r"token=(\w+)", text).unwrap().as_deref(),
            Some("a1")
        );
        assert_eq!(
            capture(r"token=\w+", text).unwrap().as_deref(),
            Some("token=a1")
        );
        assert_eq!(capture_all(r"token=(\w+)", text).unwrap(), vec!["a1", "b2"]);
        assert!(capture("(", text)
            .unwrap_err()
            .contains("invalid regular expression"));
    }
}
