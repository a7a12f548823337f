//! Who may use the dashboard. On loopback (the default) a request must name the
//! dashboard by a loopback `Host` (a page elsewhere whose name was rebound to 127.0.0.1
//! gets 403: DNS rebinding). Off loopback anyone on the network could watch the run,
//! so the host warns and every request needs the run's token: the URL printed at the
//! start carries it (`?token=`, kept in a cookie by the page), and a scraper sends it as
//! `Authorization: Bearer`. The server also bounds what a client can hold: request
//! heads must arrive within a few seconds and at most [`MAX_CONNECTIONS`] are served.

use std::net::SocketAddr;
use std::time::Duration;

/// Most connections served at once; later ones are closed at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;

/// How long a request head may take to arrive.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// The environment variable that sets the token (else one is made at random).
pub(crate) const TOKEN_ENV: &str = "HOST_DASHBOARD_TOKEN";

/// The cookie the page keeps the token in.
const COOKIE: &str = "host_dashboard_token";

/// The dashboard's rules.
#[derive(Debug, Clone)]
pub(crate) struct Access {
    /// Required off loopback.
    pub token: Option<String>,
    /// The bound address.
    pub bound: SocketAddr,
    /// [`HEAD_TIMEOUT`], shorter in tests.
    pub head_timeout: Duration,
}

/// What to do with a request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Serve it.
    Serve,
    /// Serve it and keep the token in a cookie (it came in the query).
    ServeAndRemember(String),
    /// Refuse with 403 (Host) or 401 (token), saying why.
    Refuse(u16, String),
}

impl Access {
    /// The rules for `bound`: a token off loopback (from [`TOKEN_ENV`] or random).
    pub(crate) fn for_address(bound: SocketAddr) -> Access {
        let token = (!bound.ip().is_loopback()).then(|| {
            std::env::var(TOKEN_ENV)
                .ok()
                .filter(|t| !t.is_empty())
                .unwrap_or_else(random_token)
        });
        Access {
            token,
            bound,
            head_timeout: HEAD_TIMEOUT,
        }
    }

    /// The URL to print (with the token when one is needed).
    pub(crate) fn url(&self) -> String {
        match &self.token {
            Some(token) => format!("http://{}/?token={token}", self.bound),
            None => format!("http://{}/", self.bound),
        }
    }

    /// Judges a request by its `Host`, `Authorization` and `Cookie` headers and query.
    pub(crate) fn judge(&self, headers: &hyper::HeaderMap, query: Option<&str>) -> Verdict {
        let Some(token) = &self.token else {
            let host = headers
                .get(hyper::header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("");
            return if is_loopback_host(host, self.bound.port()) {
                Verdict::Serve
            } else {
                Verdict::Refuse(
                    403,
                    format!(
                        "Host {host:?} is not this dashboard's address: open http://{}/ \
                         (a page on another name is refused, against DNS rebinding)",
                        self.bound
                    ),
                )
            };
        };
        let header = |name: hyper::header::HeaderName| {
            headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let bearer = header(hyper::header::AUTHORIZATION).iter().any(|v| {
            v.strip_prefix("Bearer ")
                .is_some_and(|t| same(t.trim(), token))
        });
        let cookie = header(hyper::header::COOKIE).iter().any(|v| {
            v.split(';')
                .filter_map(|c| c.trim().split_once('='))
                .any(|(k, t)| k == COOKIE && same(t, token))
        });
        if bearer || cookie {
            return Verdict::Serve;
        }
        let in_query = query.is_some_and(|q| {
            q.split('&')
                .filter_map(|p| p.split_once('='))
                .any(|(k, t)| k == "token" && same(t, token))
        });
        if in_query {
            return Verdict::ServeAndRemember(format!(
                "{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
            ));
        }
        Verdict::Refuse(
            401,
            "this dashboard listens off loopback and needs the run's token: open the URL \
             the run printed (…/?token=…), or send Authorization: Bearer TOKEN"
                .into(),
        )
    }
}

/// Whether `host` (a `Host` header) names this machine's loopback on `port`.
fn is_loopback_host(host: &str, port: u16) -> bool {
    let (name, given_port) = match host.rsplit_once(':') {
        // `[::1]:5665`, `127.0.0.1:5665`, `localhost:5665`; `[::1]` alone has no port.
        Some((name, p)) if !p.contains(']') => (name, p.parse::<u16>().ok()),
        _ => (host, Some(80)),
    };
    if given_port != Some(port) {
        return false;
    }
    let name = name.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Compares in time that does not depend on where the texts differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// 128 bits from the kernel's random source, as hex.
fn random_token() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("/dev/urandom is readable");
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::{HeaderValue, AUTHORIZATION, COOKIE as COOKIE_HEADER, HOST};

    fn headers(pairs: &[(hyper::header::HeaderName, &str)]) -> hyper::HeaderMap {
        let mut h = hyper::HeaderMap::new();
        for (k, v) in pairs {
            h.append(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn on_loopback_only_a_loopback_host_is_served() {
        let access = Access::for_address("127.0.0.1:5665".parse().unwrap());
        assert_eq!(access.token, None);
        for ok in [
            "127.0.0.1:5665",
            "localhost:5665",
            "LOCALHOST:5665",
            "[::1]:5665",
        ] {
            assert_eq!(
                access.judge(&headers(&[(HOST, ok)]), None),
                Verdict::Serve,
                "{ok}"
            );
        }
        for bad in [
            "evil.example:5665",
            "127.0.0.1:80",
            "evil.example",
            "",
            "10.0.0.1:5665",
        ] {
            assert!(
                matches!(
                    access.judge(&headers(&[(HOST, bad)]), None),
                    Verdict::Refuse(403, _)
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn off_loopback_the_token_is_needed() {
        let access = Access::for_address("0.0.0.0:5665".parse().unwrap());
        let token = access.token.clone().expect("a token off loopback");
        assert_eq!(token.len(), 32);
        assert!(access.url().ends_with(&format!("/?token={token}")));
        let host = (HOST, "203.0.113.9:5665");
        assert!(matches!(
            access.judge(&headers(std::slice::from_ref(&host)), None),
            Verdict::Refuse(401, _)
        ));
        assert!(matches!(
            access.judge(&headers(std::slice::from_ref(&host)), Some("token=wrong")),
            Verdict::Refuse(401, _)
        ));
        let Verdict::ServeAndRemember(cookie) = access.judge(
            &headers(std::slice::from_ref(&host)),
            Some(&format!("token={token}")),
        ) else {
            panic!()
        };
        assert!(cookie.contains("HttpOnly") && cookie.contains(&token));
        let cookie = format!("a=b; {COOKIE}={token}");
        assert_eq!(
            access.judge(&headers(&[host.clone(), (COOKIE_HEADER, &cookie)]), None),
            Verdict::Serve
        );
        let bearer = format!("Bearer {token}");
        assert_eq!(
            access.judge(&headers(&[host, (AUTHORIZATION, &bearer)]), None),
            Verdict::Serve
        );
    }
}
