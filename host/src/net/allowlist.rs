//! Which targets a run may reach. Without `[targets] allow`, loopback only; with it,
//! exactly the listed origins (scheme, host, port). Checked before any packet is sent.

use std::net::IpAddr;

/// A scheme, host and port that may be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `http`, `https`, `ws` or `wss`.
    pub scheme: String,
    /// Host name or address, lower case, IPv6 without brackets.
    pub host: String,
    /// Port (the scheme's default when not written).
    pub port: u16,
}

impl Origin {
    /// Parses `http://host:port` (a path is ignored).
    pub fn parse(url: &str) -> Result<Origin, String> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("invalid URL {url:?}: {e}"))?;
        let scheme = uri
            .scheme_str()
            .ok_or_else(|| format!("URL {url:?} has no scheme; write http://{url}"))?
            .to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" | "ws" => 80,
            "https" | "wss" => 443,
            other => return Err(format!("URL {url:?}: unsupported scheme {other:?}")),
        };
        let host = uri
            .host()
            .ok_or_else(|| format!("URL {url:?} has no host"))?
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
    pub fn new(allow: &[String]) -> Result<Self, String> {
        if allow.is_empty() {
            return Ok(Self { explicit: None });
        }
        let origins = allow
            .iter()
            .map(|u| Origin::parse(u).map_err(|e| format!("[targets] allow: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            explicit: Some(origins),
        })
    }

    /// Whether `origin` may be reached; the error says why not and how to allow it.
    pub fn check(&self, origin: &Origin) -> Result<(), String> {
        let allowed = match &self.explicit {
            None => origin.is_loopback(),
            Some(list) => list.iter().any(|o| {
                o.host == origin.host && o.port == origin.port && o.same_transport(origin)
            }),
        };
        if allowed {
            Ok(())
        } else {
            Err(format!(
                "{origin} is not an allowed target; add it to [targets] allow in the run config or pass --allow {origin}"
            ))
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
        assert!(err.contains("--allow http://example.com:80"), "{err}");
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
    fn bad_urls_are_explained() {
        assert!(Origin::parse("127.0.0.1:80")
            .unwrap_err()
            .contains("scheme"));
        assert!(Origin::parse("ftp://x/")
            .unwrap_err()
            .contains("unsupported scheme"));
        assert!(Allowlist::new(&["nope nope".into()]).is_err());
    }
}
