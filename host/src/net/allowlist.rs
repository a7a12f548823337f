//! Which targets a run may reach. Without `[targets] allow`, loopback only; with it,
//! exactly the listed origins (scheme, host, port). Checked before any packet is sent.
//! Raw sockets are origins too: `tcp://host:port` (plain or TLS) and `udp://host:port`,
//! each allowing only its own transport (an `http://` entry opens no raw socket).

use std::net::IpAddr;

/// Why a URL gives no origin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    /// The text is not a URL.
    #[error("invalid URL {url:?}: {reason}")]
    Url {
        /// The text given.
        url: String,
        /// The URI parser's reason.
        reason: String,
    },
    /// No `scheme://`.
    #[error("URL {0:?} has no scheme; write http://{0}")]
    NoScheme(String),
    /// A scheme other than http, https, ws, wss, tcp and udp.
    #[error("URL {url:?}: unsupported scheme {scheme:?}")]
    Scheme {
        /// The URL given.
        url: String,
        /// Its scheme, lower case.
        scheme: String,
    },
    /// No host after the scheme.
    #[error("URL {0:?} has no host")]
    NoHost(String),
    /// A `tcp://` or `udp://` origin without a port (they have no default).
    #[error("{0:?} has no port; write {0}:PORT")]
    NoPort(String),
}

/// An entry of `[targets] allow` that is not an origin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[targets] allow: {0}")]
pub struct BadAllowEntry(pub OriginError);

/// A target outside the allowlist; the message says how to allow it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{origin} is not an allowed target; add it to [targets] allow in the run config or pass --allow {origin}"
)]
pub struct NotAllowed {
    /// The origin refused.
    pub origin: Origin,
}

/// A scheme, host and port that may be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `http`, `https`, `ws`, `wss`, or `tcp` and `udp` for raw sockets (`sockets`).
    pub scheme: String,
    /// Host name or address, lower case, IPv6 without brackets.
    pub host: String,
    /// Port (the scheme's default when not written).
    pub port: u16,
}

impl Origin {
    /// Parses `http://host:port` (a path is ignored).
    pub fn parse(url: &str) -> Result<Origin, OriginError> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| OriginError::Url {
                url: url.to_owned(),
                reason: e.to_string(),
            })?;
        let scheme = uri
            .scheme_str()
            .ok_or_else(|| OriginError::NoScheme(url.to_owned()))?
            .to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" | "ws" => 80,
            "https" | "wss" => 443,
            // Raw sockets: no protocol, so no default port.
            "tcp" | "udp" if uri.port_u16().is_none() => {
                return Err(OriginError::NoPort(url.to_owned()))
            }
            "tcp" | "udp" => 0,
            _ => {
                return Err(OriginError::Scheme {
                    url: url.to_owned(),
                    scheme,
                })
            }
        };
        let host = uri
            .host()
            .ok_or_else(|| OriginError::NoHost(url.to_owned()))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        Ok(Origin {
            scheme,
            host,
            port: uri.port_u16().unwrap_or(default_port),
        })
    }

    /// Whether the host is a loopback address or `localhost`.
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<IpAddr>()
                .map(|ip| ip.is_loopback())
                .unwrap_or(false)
    }

    fn same_transport(&self, other: &Origin) -> bool {
        // A ws:// socket is an upgraded http:// connection to the same origin.
        let plain = |s: &str| {
            match s {
                "ws" => "http",
                "wss" => "https",
                other => other,
            }
            .to_string()
        };
        plain(&self.scheme) == plain(&other.scheme)
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.scheme, self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
        }
    }
}

/// The run's allowlist.
#[derive(Debug, Clone)]
pub struct Allowlist {
    explicit: Option<Vec<Origin>>,
}

impl Allowlist {
    /// From `[targets] allow`; an empty list means loopback only.
    pub fn new(allow: &[String]) -> Result<Self, BadAllowEntry> {
        if allow.is_empty() {
            return Ok(Self { explicit: None });
        }
        let origins = allow
            .iter()
            .map(|u| Origin::parse(u).map_err(BadAllowEntry))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            explicit: Some(origins),
        })
    }

    /// The origins of `[targets] allow`, or none when only loopback is allowed.
    pub(crate) fn explicit(&self) -> Option<&[Origin]> {
        self.explicit.as_deref()
    }

    /// Whether `origin` may be reached; the error says why not and how to allow it.
    pub fn check(&self, origin: &Origin) -> Result<(), NotAllowed> {
        let allowed = match &self.explicit {
            None => origin.is_loopback(),
            Some(list) => list.iter().any(|o| {
                o.host == origin.host && o.port == origin.port && o.same_transport(origin)
            }),
        };
        if allowed {
            Ok(())
        } else {
            Err(NotAllowed {
                origin: origin.clone(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_loopback_only() {
        let list = Allowlist::new(&[]).unwrap();
        assert!(list
            .check(&Origin::parse("http://127.0.0.1:8080/x").unwrap())
            .is_ok());
        assert!(list
            .check(&Origin::parse("http://localhost/").unwrap())
            .is_ok());
        assert!(list
            .check(&Origin::parse("http://[::1]:80/").unwrap())
            .is_ok());
        let err = list
            .check(&Origin::parse("http://example.com/").unwrap())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "http://example.com:80 is not an allowed target; add it to [targets] allow in the \
             run config or pass --allow http://example.com:80"
        );
    }

    #[test]
    fn explicit_list_is_exact() {
        let list = Allowlist::new(&["http://127.0.0.1:8080".into()]).unwrap();
        assert!(list
            .check(&Origin::parse("http://127.0.0.1:8080/a").unwrap())
            .is_ok());
        assert!(list
            .check(&Origin::parse("ws://127.0.0.1:8080/ws").unwrap())
            .is_ok());
        assert!(list
            .check(&Origin::parse("http://127.0.0.1:8081/").unwrap())
            .is_err());
        assert!(list
            .check(&Origin::parse("https://127.0.0.1:8080/").unwrap())
            .is_err());
    }

    #[test]
    fn raw_socket_origins_allow_only_their_transport() {
        let list =
            Allowlist::new(&["tcp://127.0.0.1:6379".into(), "udp://10.0.0.1:53".into()]).unwrap();
        let tcp = Origin::parse("tcp://127.0.0.1:6379").unwrap();
        assert!(list.check(&tcp).is_ok());
        assert!(list
            .check(&Origin::parse("http://127.0.0.1:6379").unwrap())
            .is_err());
        assert!(list
            .check(&Origin::parse("udp://127.0.0.1:6379").unwrap())
            .is_err());
        assert!(list
            .check(&Origin::parse("udp://10.0.0.1:53").unwrap())
            .is_ok());
        assert_eq!(
            Origin::parse("tcp://db").unwrap_err().to_string(),
            "\"tcp://db\" has no port; write tcp://db:PORT"
        );
    }

    #[test]
    fn bad_urls_are_explained() {
        assert_eq!(
            Origin::parse("127.0.0.1:80").unwrap_err().to_string(),
            "URL \"127.0.0.1:80\" has no scheme; write http://127.0.0.1:80"
        );
        assert_eq!(
            Origin::parse("ftp://x/").unwrap_err().to_string(),
            "URL \"ftp://x/\": unsupported scheme \"ftp\""
        );
        assert_eq!(
            Origin::parse("http:///x").unwrap_err().to_string(),
            "invalid URL \"http:///x\": invalid format"
        );
        let err = Allowlist::new(&["nope nope".into()]).unwrap_err();
        assert!(matches!(err.0, OriginError::Url { .. }));
        assert!(
            err.to_string()
                .starts_with("[targets] allow: invalid URL \"nope nope\": "),
            "{err}"
        );
    }
}
