//! k6's `page.on('metric', m => m.tag({name, matches: [{url, method}]}))`: a page's
//! metrics whose `url` (or `name`) tag matches one of the rules' regular expressions
//! (and method, when given) carry the rule's `name` in both tags instead, so URLs that
//! differ only by an id are one series. The script gives its handlers' rules once
//! (`page.tag-metrics`); the host applies them to every later sample of the page, the
//! web vitals' and the requests' alike.

use regex::Regex;
use serde_json::Value;
use std::sync::RwLock;

/// Most rules a page keeps; the regular expressions are compiled once.
const MAX_RULES: usize = 256;

struct Rule {
    name: String,
    url: Regex,
    method: Option<String>,
}

/// One page's grouping rules.
#[derive(Default)]
pub(crate) struct MetricNames {
    rules: RwLock<Vec<Rule>>,
}

/// A JavaScript RegExp's source and flags as a Rust regular expression: `\/` (which
/// JavaScript needs inside `/.../`) is `/`, and the `i`, `m`, `s` flags are inline.
fn from_js(source: &str, flags: &str) -> Result<Regex, String> {
    let mut out = String::with_capacity(source.len() + 6);
    let inline: String = flags.chars().filter(|c| "ims".contains(*c)).collect();
    if !inline.is_empty() {
        out.push_str(&format!("(?{inline})"));
    }
    let mut chars = source.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('/') => out.push('/'),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    Regex::new(&out).map_err(|e| {
        format!(
            "metric.tag: /{}/ is not a regular expression this host reads (no look-around or \
             back-references): {e}",
            crate::bounded::cut(source, crate::bounded::QUOTED_BYTES)
        )
    })
}

impl MetricNames {
    /// Replaces the rules with `rules` (`[{name, matches: [{url: {source, flags} |
    /// string, method}]}]`, as the k6 layer writes them); a bad one is refused with
    /// what to fix, and the old rules stay.
    pub(crate) fn set(&self, rules: &Value) -> Result<(), String> {
        let mut out = Vec::new();
        for r in rules.as_array().map(Vec::as_slice).unwrap_or_default() {
            let name = r.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                return Err("metric.tag needs a name that is not empty".into());
            }
            let matches = r
                .get("matches")
                .and_then(Value::as_array)
                .filter(|m| !m.is_empty())
                .ok_or("metric.tag needs matches: [{ url: /regexp/, method: 'GET' }]")?;
            for m in matches {
                let url = match m.get("url") {
                    Some(Value::Object(re)) => from_js(
                        re.get("source").and_then(Value::as_str).unwrap_or(""),
                        re.get("flags").and_then(Value::as_str).unwrap_or(""),
                    )?,
                    Some(Value::String(s)) => from_js(s, "")?,
                    _ => return Err("metric.tag: each match needs a url (a RegExp)".into()),
                };
                let method = match m.get("method").and_then(Value::as_str) {
                    None | Some("") => None,
                    Some(x) => {
                        let upper = x.trim().to_ascii_uppercase();
                        if ![
                            "GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE",
                            "CONNECT",
                        ]
                        .contains(&upper.as_str())
                        {
                            return Err(format!(
                                "metric.tag: method {x:?} is not an HTTP method (GET, POST, \
                                 PUT, DELETE, PATCH, OPTIONS, HEAD, TRACE, CONNECT)"
                            ));
                        }
                        Some(upper)
                    }
                };
                if out.len() >= MAX_RULES {
                    return Err(format!("metric.tag: at most {MAX_RULES} matches per page"));
                }
                out.push(Rule {
                    name: crate::bounded::cut(name, crate::bounded::TAG_BYTES).into_owned(),
                    url,
                    method,
                });
            }
        }
        *self.rules.write().unwrap_or_else(|p| p.into_inner()) = out;
        Ok(())
    }

    /// The name that replaces `url` (requested with `method`, when known), if a rule
    /// matches.
    pub(crate) fn name_of(&self, url: &str, method: Option<&str>) -> Option<String> {
        let rules = self.rules.read().unwrap_or_else(|p| p.into_inner());
        rules
            .iter()
            .find(|r| {
                r.url.is_match(url)
                    && match (&r.method, method) {
                        (None, _) => true,
                        (Some(want), Some(m)) => want.eq_ignore_ascii_case(m),
                        (Some(_), None) => false,
                    }
            })
            .map(|r| r.name.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_that_match_take_the_rules_name() {
        let n = MetricNames::default();
        n.set(&json!([{ "name": "item", "matches": [
            { "url": { "source": "^http:\\/\\/a\\/item\\?id=\\d+$", "flags": "" }, "method": "get" }
        ] }]))
        .unwrap();
        assert_eq!(
            n.name_of("http://a/item?id=42", Some("GET")).as_deref(),
            Some("item")
        );
        assert_eq!(n.name_of("http://a/item?id=42", Some("POST")), None);
        assert_eq!(n.name_of("http://a/item?id=x", Some("GET")), None);
        let e = n
            .set(&json!([{ "name": "x", "matches": [{ "url": { "source": "(?<=a)b", "flags": "" } }] }]))
            .unwrap_err();
        assert!(e.contains("look-around"), "{e}");
        // A refused set keeps the rules there were.
        assert!(n.name_of("http://a/item?id=1", Some("GET")).is_some());
        assert!(n.set(&json!([{ "name": "", "matches": [] }])).is_err());
        n.set(
            &json!([{ "name": "I", "matches": [{ "url": { "source": "ITEM", "flags": "i" } }] }]),
        )
        .unwrap();
        assert_eq!(n.name_of("http://a/item", None).as_deref(), Some("I"));
    }
}
