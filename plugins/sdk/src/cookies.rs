//! The VU's cookie jar, held by the host.
//!
//! Cookies that responses set are stored and sent on later requests whose URL matches
//! (domain, path, `Secure`, expiry), as a browser does; nothing needs to be written by
//! hand. The jar is reset at the start of every iteration to what it held when `init`
//! returned, so a VU that signs in from `init` stays signed in and each iteration
//! starts as the same returning user (k6's behaviour; `[http] no_cookies_reset = true`
//! keeps cookies across iterations instead). A request can leave the jar out with
//! [`RequestBuilder::no_cookie_jar`](crate::http::RequestBuilder::no_cookie_jar).
//!
//! ```no_run
//! use loadtest::cookies;
//! # fn f(base: &str) -> Result<(), String> {
//! let jar = cookies::jar();
//! let session = jar.get(base, "session")?;
//! jar.set(base, "theme", "dark")?;
//! jar.clear(base)?;                      // signed out
//! # Ok(()) }
//! ```

use crate::bindings::loadtest::scenario::cookies as wit;

/// Attributes of a cookie set with [`Jar::set_with`]; the defaults are those of a
/// `Set-Cookie` with no attributes (host-only, the URL's directory, for the session).
pub type CookieOptions = wit::CookieOptions;

impl Default for CookieOptions {
    fn default() -> Self {
        CookieOptions {
            domain: None,
            path: None,
            max_age_s: None,
            secure: false,
            http_only: false,
        }
    }
}

/// The VU's cookie jar (a handle: every `Jar` is the same jar).
#[derive(Debug, Clone, Copy, Default)]
pub struct Jar;

/// The VU's cookie jar.
pub fn jar() -> Jar {
    Jar
}

impl Jar {
    /// The cookies the jar would send with a request to `url`, as name/value pairs
    /// (k6's `jar.cookiesForURL`).
    pub fn cookies_for(&self, url: impl AsRef<str>) -> Result<Vec<(String, String)>, String> {
        wit::cookies_for(url.as_ref())
    }

    /// The value of the cookie `name` that would be sent to `url`, if any.
    pub fn get(&self, url: impl AsRef<str>, name: &str) -> Result<Option<String>, String> {
        Ok(self
            .cookies_for(url)?
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v))
    }

    /// Stores `name=value` as if `url` had answered with `Set-Cookie: name=value`.
    pub fn set(&self, url: impl AsRef<str>, name: &str, value: &str) -> Result<(), String> {
        self.set_with(url, name, value, CookieOptions::default())
    }

    /// Stores a cookie with attributes (domain, path, max age, secure, http-only).
    pub fn set_with(
        &self,
        url: impl AsRef<str>,
        name: &str,
        value: &str,
        options: CookieOptions,
    ) -> Result<(), String> {
        wit::set(url.as_ref(), name, value, &options)
    }

    /// Removes every cookie the jar would send to `url`.
    pub fn clear(&self, url: impl AsRef<str>) -> Result<(), String> {
        wit::clear(url.as_ref())
    }

    /// Removes the cookie `name` that the jar would send to `url`.
    pub fn delete(&self, url: impl AsRef<str>, name: &str) -> Result<(), String> {
        wit::delete(url.as_ref(), name)
    }
}
