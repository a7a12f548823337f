//! What a VU knows about the URLs it requests: origin, pool key, path and `Host`
//! header, parsed once per distinct URL and checked once against the allowlist (which
//! does not change during a run). Parsing the URL twice and formatting the `Host`
//! header on every request was a visible share of the request path.
//!
//! Only allowed URLs are remembered, so a denied request is counted and warned about
//! each time as before. Bounded: past `MAX_ENTRIES` URLs the cache starts over.

use super::allowlist::Origin;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Distinct URLs remembered per VU before the cache starts over.
const MAX_ENTRIES: usize = 256;

/// The key of a VU's idle connections: scheme, host, port.
pub(crate) type PoolKey = Arc<(String, String, u16)>;

/// Why a URL cannot be requested; the plugin sees it as an `invalid` HTTP error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TargetError {
    /// The URL does not parse as a URI.
    #[error("invalid URL {url:?}: {reason}")]
    Url {
        /// The URL given.
        url: String,
        /// The URI parser's reason.
        reason: String,
    },
    /// The host cannot go in a `Host` header.
    #[error("invalid host in URL {0:?}")]
    Host(String),
}

impl From<TargetError> for super::types::HttpError {
    fn from(e: TargetError) -> Self {
        Self::invalid(e.to_string())
    }
}

/// A parsed, allowed URL.
pub(crate) struct Target {
    /// Scheme, host and port.
    pub origin: Origin,
    /// Where connections to this origin are pooled.
    pub pool_key: PoolKey,
    /// The request target (path and query) as a URI.
    pub path: http::Uri,
    /// The whole URL as a URI, for HTTP/2's `:scheme` and `:authority`.
    pub absolute: http::Uri,
    /// The `Host` header value (`host` or `host:port`).
    pub host_header: http::HeaderValue,
}

impl Target {
    /// Parses `url`.
    pub(crate) fn parse(url: &str, origin: Origin) -> Result<Target, TargetError> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| TargetError::Url {
                url: url.to_owned(),
                reason: e.to_string(),
            })?;
        let path = match uri.path_and_query() {
            Some(p) => http::Uri::from(p.clone()),
            None => http::Uri::from_static("/"),
        };
        let host = uri.host().unwrap_or_default();
        let host_header = match (origin.scheme.as_str(), origin.port) {
            ("http", 80) | ("https", 443) => host.to_string(),
            _ => format!("{host}:{}", origin.port),
        };
        let host_header = http::HeaderValue::from_str(&host_header)
            .map_err(|_| TargetError::Host(url.to_owned()))?;
        Ok(Target {
            pool_key: Arc::new((origin.scheme.clone(), origin.host.clone(), origin.port)),
            origin,
            path,
            host_header,
            absolute: uri,
        })
    }
}

/// One VU's parsed URLs.
#[derive(Default)]
pub(crate) struct Targets {
    known: FxHashMap<Box<str>, Arc<Target>>,
}

impl Targets {
    /// The remembered target of `url`.
    pub(crate) fn get(&self, url: &str) -> Option<Arc<Target>> {
        self.known.get(url).cloned()
    }

    /// Remembers an allowed target.
    pub(crate) fn insert(&mut self, url: &str, target: Arc<Target>) {
        if self.known.len() >= MAX_ENTRIES {
            self.known.clear();
        }
        self.known.insert(url.into(), target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Target {
        Target::parse(url, Origin::parse(url).unwrap()).unwrap()
    }

    #[test]
    fn path_and_host_header() {
        let t = target("http://127.0.0.1:8080/a/b?c=1");
        assert_eq!(t.path.to_string(), "/a/b?c=1");
        assert_eq!(t.host_header, "127.0.0.1:8080");
        assert_eq!(*t.pool_key, ("http".into(), "127.0.0.1".into(), 8080));
        let t = target("http://localhost");
        assert_eq!(t.path.to_string(), "/");
        assert_eq!(t.host_header, "localhost");
    }

    #[test]
    fn bounded() {
        let mut targets = Targets::default();
        for i in 0..(MAX_ENTRIES * 2) {
            let url = format!("http://localhost/{i}");
            targets.insert(&url, Arc::new(target(&url)));
        }
        assert!(targets.known.len() <= MAX_ENTRIES);
        assert!(targets.get("http://localhost/511").is_some());
    }
}
