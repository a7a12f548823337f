//! One VU's cookie jar, as a browser keeps it and with k6's semantics: cookies that
//! responses set are stored and sent on matching requests (domain, path, `Secure`,
//! expiry: RFC 6265, by the `cookie_store` crate). Each iteration starts from what the
//! jar held when `init` returned (a VU that signed in from `init` stays signed in),
//! unless the run keeps cookies across iterations (`[http] no_cookies_reset`).
//!
//! A plugin that never sees a cookie pays one emptiness test per request and one
//! header lookup per response: URLs are parsed only when the jar has cookies or a
//! response sets one.

use cookie_store::CookieStore;
use url::Url;

/// Attributes of a cookie set by the plugin (the WIT `cookie-options`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CookieOptions {
    /// Sent to this domain and its subdomains; host-only when `None`.
    pub domain: Option<String>,
    /// Path prefix; the URL's directory when `None`.
    pub path: Option<String>,
    /// Lifetime in seconds; for the session when `None`.
    pub max_age_s: Option<u64>,
    /// Only over https.
    pub secure: bool,
    /// `HttpOnly`.
    pub http_only: bool,
}

/// A VU's cookies.
#[derive(Debug, Default)]
pub struct CookieJar {
    store: CookieStore,
    /// What the jar held after `init`; `None` until then (and when never reset).
    baseline: Option<CookieStore>,
    /// Whether each iteration starts from `baseline`.
    reset: bool,
    /// Whether the jar may hold anything (false until the first cookie is stored,
    /// so requests of plugins that use no cookies skip every lookup).
    used: bool,
    /// Whether the store may differ from `baseline` (a cookie stored or removed since
    /// the last reset): an iteration that changed nothing is not followed by a copy of
    /// the baseline, which cost more than the request's cookie lookup.
    changed: bool,
}

/// Why the plugin's cookie call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CookieError {
    /// The URL does not parse.
    #[error("invalid URL {url:?}: {reason}")]
    Url {
        /// The URL given.
        url: String,
        /// The URL parser's reason.
        reason: url::ParseError,
    },
    /// A name a `Cookie` header could not carry.
    #[error(
        "invalid cookie name {0:?}: it must be non-empty, without spaces, `=`, `;` or control characters"
    )]
    Name(String),
    /// A value a `Cookie` header could not carry.
    #[error(
        "invalid value for cookie {name}: {value:?} (`;` and control characters are not allowed)"
    )]
    Value {
        /// The cookie's name.
        name: String,
        /// The value given.
        value: String,
    },
    /// The jar refused the cookie (for example a domain the URL is not in).
    #[error("cannot set cookie {name} for {url}: {reason}")]
    Refused {
        /// The cookie's name.
        name: String,
        /// The URL it was set for.
        url: String,
        /// The jar's reason.
        reason: String,
    },
}

impl From<CookieError> for String {
    /// The message the WIT `result<_, string>` carries to the plugin.
    fn from(e: CookieError) -> Self {
        e.to_string()
    }
}

/// Parses `url` for the jar, with a message that names it.
pub(crate) fn parse_url(url: &str) -> Result<Url, CookieError> {
    Url::parse(url).map_err(|reason| CookieError::Url {
        url: url.to_owned(),
        reason,
    })
}

impl CookieJar {
    /// An empty jar; `reset`: each iteration starts from the jar as `init` left it.
    pub fn new(reset: bool) -> Self {
        Self {
            reset,
            ..Self::default()
        }
    }

    /// The `Cookie` header value for a request to `url`, if the jar has cookies for it.
    pub fn header_for(&self, url: &str) -> Option<String> {
        if !self.used {
            return None;
        }
        let url = Url::parse(url).ok()?;
        let mut cookies = self.store.matches(&url);
        // RFC 6265 5.4: longer paths first; then by name, so the order is stable.
        cookies.sort_by(|a, b| {
            b.path
                .len()
                .cmp(&a.path.len())
                .then_with(|| a.name().cmp(b.name()))
        });
        let mut header = String::new();
        for cookie in cookies {
            if !header.is_empty() {
                header.push_str("; ");
            }
            header.push_str(cookie.name());
            header.push('=');
            header.push_str(cookie.value());
        }
        (!header.is_empty()).then_some(header)
    }

    /// Stores the `Set-Cookie` fields of a response from `url`.
    pub fn store_response(&mut self, url: &str, headers: &http::HeaderMap) {
        let mut fields = headers.get_all(http::header::SET_COOKIE).iter().peekable();
        if fields.peek().is_none() {
            return;
        }
        let Ok(url) = Url::parse(url) else { return };
        for field in fields {
            if let Ok(text) = field.to_str() {
                // A malformed or foreign-domain cookie is ignored, as browsers do.
                let _ = self.store.parse(text, &url);
                self.used = true;
                self.changed = true;
            }
        }
    }

    /// Called when `init` returned: each iteration will start from the jar as it is now.
    pub fn init_done(&mut self) {
        if self.reset {
            self.baseline = Some(self.store.clone());
            self.changed = false;
        }
    }

    /// Called before each iteration: back to the jar as `init` left it (unless
    /// the run keeps cookies across iterations).
    pub fn start_iteration(&mut self) {
        if !self.reset || !self.used || !self.changed {
            return;
        }
        self.changed = false;
        match &self.baseline {
            Some(baseline) => self.store.clone_from(baseline),
            None => self.store.clear(),
        }
        self.used = self.store.iter_any().next().is_some();
    }

    /// The name/value pairs the jar would send to `url`.
    pub fn cookies_for(&self, url: &str) -> Result<Vec<(String, String)>, CookieError> {
        let url = parse_url(url)?;
        Ok(self
            .store
            .get_request_values(&url)
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect())
    }

    /// Stores a cookie as if `url` had set it.
    pub fn set(
        &mut self,
        url: &str,
        name: &str,
        value: &str,
        options: &CookieOptions,
    ) -> Result<(), CookieError> {
        let parsed = parse_url(url)?;
        let bad = |what: &str, text: &str| {
            text.is_empty() && what == "name"
                || text.chars().any(|c| {
                    c.is_control() || c == ';' || (what == "name" && (c == '=' || c == ' '))
                })
        };
        if bad("name", name) {
            return Err(CookieError::Name(name.to_owned()));
        }
        if bad("value", value) {
            return Err(CookieError::Value {
                name: name.to_owned(),
                value: value.to_owned(),
            });
        }
        let mut text = format!("{name}={value}");
        if let Some(domain) = &options.domain {
            text.push_str("; Domain=");
            text.push_str(domain);
        }
        if let Some(path) = &options.path {
            text.push_str("; Path=");
            text.push_str(path);
        }
        if let Some(age) = options.max_age_s {
            text.push_str(&format!("; Max-Age={age}"));
        }
        if options.secure {
            text.push_str("; Secure");
        }
        if options.http_only {
            text.push_str("; HttpOnly");
        }
        self.store
            .parse(&text, &parsed)
            .map_err(|e| CookieError::Refused {
                name: name.to_owned(),
                url: url.to_owned(),
                reason: e.to_string(),
            })?;
        self.used = true;
        self.changed = true;
        Ok(())
    }

    /// Removes the cookies the jar would send to `url` (only those called `name`
    /// when given).
    pub fn remove(&mut self, url: &str, name: Option<&str>) -> Result<(), CookieError> {
        let url = parse_url(url)?;
        let doomed: Vec<(String, String, String)> = self
            .store
            .matches(&url)
            .into_iter()
            .filter(|c| name.is_none_or(|n| c.name() == n))
            .map(|c| {
                (
                    String::from(&c.domain),
                    String::from(&c.path),
                    c.name().to_owned(),
                )
            })
            .collect();
        for (domain, path, name) in doomed {
            self.store.remove(&domain, &path, &name);
            self.changed = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_cookie(fields: &[&str]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for f in fields {
            h.append(http::header::SET_COOKIE, f.parse().unwrap());
        }
        h
    }

    #[test]
    fn cookies_go_only_where_they_match() {
        let mut jar = CookieJar::new(true);
        assert_eq!(jar.header_for("http://127.0.0.1:1/"), None);
        jar.store_response(
            "http://127.0.0.1:1/survey/login",
            &set_cookie(&["s=1; Path=/survey; HttpOnly", "all=2; Path=/"]),
        );
        // Longer paths first.
        assert_eq!(
            jar.header_for("http://127.0.0.1:1/survey").as_deref(),
            Some("s=1; all=2")
        );
        assert_eq!(
            jar.header_for("http://127.0.0.1:1/other").as_deref(),
            Some("all=2")
        );
        // Another host (even on the same machine) gets nothing; ports do not matter.
        assert_eq!(jar.header_for("http://localhost:1/survey"), None);
        assert_eq!(
            jar.header_for("http://127.0.0.1:2/").as_deref(),
            Some("all=2")
        );
        // Secure cookies only over https (and to loopback, which browsers count as a
        // secure context).
        jar.store_response("http://h/", &set_cookie(&["sec=3; Secure; Path=/"]));
        assert_eq!(jar.header_for("http://h/"), None);
        assert_eq!(jar.header_for("https://h/").as_deref(), Some("sec=3"));
    }

    #[test]
    fn expired_cookies_are_dropped() {
        let mut jar = CookieJar::new(true);
        jar.store_response("http://h/", &set_cookie(&["a=1; Path=/", "b=2; Path=/"]));
        jar.store_response("http://h/", &set_cookie(&["a=; Path=/; Max-Age=0"]));
        assert_eq!(jar.header_for("http://h/").as_deref(), Some("b=2"));
    }

    #[test]
    fn iterations_start_from_what_init_left() {
        let mut jar = CookieJar::new(true);
        jar.store_response("http://h/", &set_cookie(&["login=1; Path=/"]));
        jar.init_done();
        jar.store_response("http://h/", &set_cookie(&["cart=2; Path=/"]));
        assert_eq!(
            jar.header_for("http://h/").as_deref(),
            Some("cart=2; login=1")
        );
        jar.start_iteration();
        assert_eq!(jar.header_for("http://h/").as_deref(), Some("login=1"));
        // An iteration that changed nothing keeps the jar; one that removed or set a
        // cookie is undone, one after the other.
        jar.start_iteration();
        assert_eq!(jar.header_for("http://h/").as_deref(), Some("login=1"));
        jar.remove("http://h/", Some("login")).unwrap();
        assert_eq!(jar.header_for("http://h/"), None);
        jar.start_iteration();
        assert_eq!(jar.header_for("http://h/").as_deref(), Some("login=1"));
        jar.set("http://h/", "x", "1", &CookieOptions::default())
            .unwrap();
        jar.start_iteration();
        assert_eq!(jar.header_for("http://h/").as_deref(), Some("login=1"));
        // Without the reset, cookies stay.
        let mut kept = CookieJar::new(false);
        kept.init_done();
        kept.store_response("http://h/", &set_cookie(&["cart=2; Path=/"]));
        kept.start_iteration();
        assert_eq!(kept.header_for("http://h/").as_deref(), Some("cart=2"));
    }

    #[test]
    fn the_plugin_can_set_read_and_clear() {
        let mut jar = CookieJar::new(true);
        jar.set("http://h/a/b", "x", "1", &CookieOptions::default())
            .unwrap();
        jar.set(
            "http://h/",
            "y",
            "2",
            &CookieOptions {
                path: Some("/".into()),
                ..Default::default()
            },
        )
        .unwrap();
        // Default path: the URL's directory.
        assert_eq!(jar.cookies_for("http://h/a/c").unwrap().len(), 2);
        assert_eq!(
            jar.cookies_for("http://h/").unwrap(),
            vec![("y".into(), "2".into())]
        );
        jar.remove("http://h/a/c", Some("y")).unwrap();
        assert_eq!(
            jar.cookies_for("http://h/a/c").unwrap(),
            vec![("x".into(), "1".into())]
        );
        jar.remove("http://h/a/c", None).unwrap();
        assert!(jar.cookies_for("http://h/a/c").unwrap().is_empty());
        assert_eq!(
            jar.set("http://h/", "a b", "1", &Default::default())
                .unwrap_err()
                .to_string(),
            "invalid cookie name \"a b\": it must be non-empty, without spaces, `=`, `;` or \
             control characters"
        );
        assert_eq!(
            jar.set("http://h/", "a", "1;x", &Default::default())
                .unwrap_err()
                .to_string(),
            "invalid value for cookie a: \"1;x\" (`;` and control characters are not allowed)"
        );
        assert_eq!(
            jar.cookies_for("not a url").unwrap_err().to_string(),
            "invalid URL \"not a url\": relative URL without a base"
        );
        // A domain the URL is not in is refused.
        let other = CookieOptions {
            domain: Some("example.org".into()),
            ..Default::default()
        };
        let err = jar.set("http://h/", "z", "1", &other).unwrap_err();
        assert!(matches!(err, CookieError::Refused { .. }), "{err}");
        assert!(
            err.to_string()
                .starts_with("cannot set cookie z for http://h/: "),
            "{err}"
        );
    }
}
