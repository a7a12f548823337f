//! Pulling values out of responses: tokens in an HTML page, a JSON island in a
//! `<script>`, a value after a marker.
//!
//! [`between`] and HTML pages ([`Document`], on the host: see [`crate::html`]) are
//! always there; regular expressions are behind a cargo feature, so a plugin that does
//! not use them does not carry their code:
//!
//! ```toml
//! loadtest-sdk = { path = "../sdk", features = ["regex"] }
//! ```
//!
// Plain names, not links: the items exist only with their feature, and the docs must
// build without it (`cargo doc` in a copy of this crate alone).
//! - `regex`: `capture` and `capture_all` (the `regex` crate; compiled patterns
//!   are kept per VU, so a pattern used in every iteration is compiled once).
//!
//! ```no_run
//! # fn f(base: &str) -> Result<(), String> {
//! use loadtest::http;
//! let res = http::get(format!("{base}/survey")).send()?;
//! let page = res.html();
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

/// HTML pages, parsed by the host (kept here too: plugins written before
/// [`crate::html`] name them through this module).
pub use crate::html::{Document, Element};

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
