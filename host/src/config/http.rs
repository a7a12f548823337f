//! The `[http]` section: how the VUs' HTTP clients behave as browsers and k6 do.
//!
//! ```toml
//! [http]
//! max_redirects = 10                      # redirects followed per request (0 = none)
//! no_cookies_reset = false                # keep each VU's cookies across iterations
//! local_ips = ["127.0.0.10-127.0.0.200"]  # source addresses, one per VU, round-robin
//! count_setup = false                     # count setup()/teardown() requests in the totals
//! max_headers = 100                       # header fields a response may carry (HTTP/1.1)
//! versions = ["h2", "http/1.1"]           # offered to https servers by ALPN, preferred first;
//!                                         # "h3" first: HTTP/3 over QUIC for https://,
//!                                         # "h3" later: upgrade on the server's Alt-Svc
//! h2c = false                             # plain http:// as HTTP/2 with prior knowledge
//! batch = 20                              # requests of one send-batch in flight at once
//! batch_per_host = 6                      # ... and to one host (0 = no limit), as browsers
//! user_agent = "my-test/1.0"              # User-Agent of requests without one ("" = none)
//! client = "hyper"                        # HTTP/1.1 client: "hyper", or "lean" (httparse)
//! ```

use crate::table::{ConfigError, TableReader};
use std::net::IpAddr;

/// Most source addresses `local_ips` may list (a VU takes one each).
const MAX_LOCAL_IPS: u128 = 65_536;
/// Redirects followed per request by default, as browsers and k6 do.
pub(crate) const DEFAULT_MAX_REDIRECTS: u32 = 10;
/// Most redirects a request may follow.
const MAX_REDIRECTS: u64 = 100;
/// Header fields a response may carry by default: hyper's own default, the one it
/// parses on the stack. Any other value makes hyper allocate the parse buffer on the
/// heap for every response (about 5 % more CPU per request, per hyper's docs), so only
/// a run that needs more pays for it.
pub(crate) const DEFAULT_MAX_HEADERS: usize = 100;
/// Most header fields `max_headers` may allow (hyper reserves a slot for each).
const MAX_MAX_HEADERS: u64 = 10_000;
/// Requests of one batch in flight at once by default (k6's `batch`).
pub(crate) const DEFAULT_BATCH: usize = 20;
/// Requests of one batch in flight at once to one host by default: the six
/// connections per host a browser opens (k6's `batchPerHost`).
pub(crate) const DEFAULT_BATCH_PER_HOST: usize = 6;
/// Most requests of a batch `batch` may let run at once.
const MAX_BATCH: u64 = 10_000;
/// The `User-Agent` of requests that set none, as k6 sends `k6/VERSION (https://k6.io/)`:
/// a server's logs then say which tool the load came from.
pub(crate) const DEFAULT_USER_AGENT: &str = concat!(
    "host/",
    env!("CARGO_PKG_VERSION"),
    " (WebAssembly load tester)"
);

/// HTTP settings of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// Redirects followed per request unless the request says otherwise.
    pub max_redirects: u32,
    /// Keep cookies across iterations instead of starting each from the jar as
    /// `init` left it.
    pub no_cookies_reset: bool,
    /// Source addresses VUs bind their connections (HTTP and WebSocket) to: VU `n` takes entry
    /// `(n - 1) % len` (k6's `--local-ips`). Empty: the system picks.
    pub local_ips: Vec<IpAddr>,
    /// Count `setup()` and `teardown()` requests in the run's totals and thresholds.
    pub count_setup: bool,
    /// Header fields an HTTP/1.1 response may carry before it fails as too large.
    pub max_headers: usize,
    /// Whether HTTP/2 may be used (`versions` names `h2`).
    pub h2: bool,
    /// Whether HTTP/1.1 may be used (`versions` names `http/1.1`).
    pub http1: bool,
    /// Plain `http://` speaks HTTP/2 with prior knowledge (h2c), without an upgrade.
    pub h2c: bool,
    /// Whether and how `https://` speaks HTTP/3 (`versions` names `h3`).
    pub h3: H3Mode,
    /// Requests of one `send-batch` in flight at once; the rest wait their turn.
    pub batch: usize,
    /// Requests of one `send-batch` in flight at once to one origin (0: no limit
    /// but `batch`), so a page's 40 assets go over 6 connections as in a browser.
    pub batch_per_host: usize,
    /// The `User-Agent` sent with requests whose own header fields have none;
    /// `None` (`user_agent = ""`) sends none.
    pub user_agent: Option<http::HeaderValue>,
    /// Which client speaks HTTP/1.1 (plain and TLS); HTTP/2 and HTTP/3 are not
    /// affected.
    pub client: Http1Client,
}

/// The client that speaks HTTP/1.1 (`[http] client`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Http1Client {
    /// hyper's client connection, driven by a task of its own.
    #[default]
    Hyper,
    /// The host's own on httparse (`net::lean`), driven by the request itself: the
    /// same requests, responses and errors, with less CPU per request.
    Lean,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            max_redirects: DEFAULT_MAX_REDIRECTS,
            no_cookies_reset: false,
            local_ips: Vec::new(),
            count_setup: false,
            max_headers: DEFAULT_MAX_HEADERS,
            h2: true,
            http1: true,
            h2c: false,
            h3: H3Mode::Off,
            batch: DEFAULT_BATCH,
            batch_per_host: DEFAULT_BATCH_PER_HOST,
            user_agent: Some(http::HeaderValue::from_static(DEFAULT_USER_AGENT)),
            client: Http1Client::default(),
        }
    }
}

/// How `https://` origins use HTTP/3, from where `versions` puts `"h3"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum H3Mode {
    /// `versions` leaves `h3` out: TCP only.
    #[default]
    Off,
    /// `h3` first: every `https://` request goes over QUIC to the URL's port, with no
    /// TCP attempt (a QUIC failure is the request's, so a test sees it).
    Direct,
    /// `h3` after another version: TCP first, then HTTP/3 once the origin answers
    /// `Alt-Svc: h3=...`, as browsers upgrade.
    AltSvc,
}

impl HttpOptions {
    /// The source address of VU `vu_id` (from 1), if `local_ips` is set.
    pub fn local_ip(&self, vu_id: u64) -> Option<IpAddr> {
        if self.local_ips.is_empty() {
            return None;
        }
        let i = (vu_id.saturating_sub(1) % self.local_ips.len() as u64) as usize;
        Some(self.local_ips[i])
    }
}

/// Reads `[http]` from the run config, or the defaults when it is absent.
pub(crate) fn parse(source: &toml::Table) -> Result<HttpOptions, ConfigError> {
    let mut options = HttpOptions::default();
    let Some(value) = source.get("http") else {
        return Ok(options);
    };
    let table = value.as_table().ok_or_else(|| ConfigError {
        path: "http".into(),
        message: "must be a table: write it as [http]".into(),
    })?;
    let mut r = TableReader::new("http", table);
    if let Some(n) = r.uint_in("max_redirects", 0..=MAX_REDIRECTS)? {
        options.max_redirects = n as u32;
    }
    if let Some(b) = r.boolean("no_cookies_reset")? {
        options.no_cookies_reset = b;
    }
    if let Some(b) = r.boolean("count_setup")? {
        options.count_setup = b;
    }
    if let Some(n) = r.uint_in("max_headers", 1..=MAX_MAX_HEADERS)? {
        options.max_headers = n as usize;
    }
    if let Some(n) = r.uint_in("batch", 1..=MAX_BATCH)? {
        options.batch = n as usize;
    }
    if let Some(n) = r.uint("batch_per_host")? {
        if n > MAX_BATCH {
            return Err(r.error(
                "batch_per_host",
                format!("must be at most {MAX_BATCH} (0 = no limit per host), got {n}"),
            ));
        }
        options.batch_per_host = n as usize;
    }
    if let Some(list) = table.get("local_ips") {
        r.string("local_ips").ok();
        let items = list.as_array().ok_or_else(|| {
            r.error(
                "local_ips",
                "must be an array of addresses or ranges, such as [\"127.0.0.10-127.0.0.200\"]",
            )
        })?;
        for item in items {
            let text = item
                .as_str()
                .ok_or_else(|| r.error("local_ips", format!("expected a string, got `{item}`")))?;
            let range = parse_range(text).map_err(|e| r.error("local_ips", e.to_string()))?;
            if options.local_ips.len() as u128 + range.len() > MAX_LOCAL_IPS {
                return Err(r.error(
                    "local_ips",
                    format!("lists more than {MAX_LOCAL_IPS} addresses; a VU uses one"),
                ));
            }
            options.local_ips.extend(range.iter());
        }
    }
    if let Some(list) = table.get("versions") {
        r.string("versions").ok();
        let items = list
            .as_array()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| r.error("versions", VERSIONS_HINT))?;
        (options.h2, options.http1) = (false, false);
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some("h2") => options.h2 = true,
                Some("http/1.1") => options.http1 = true,
                Some("h3") if i == 0 => options.h3 = H3Mode::Direct,
                Some("h3") => options.h3 = H3Mode::AltSvc,
                _ => {
                    return Err(r.error(
                        "versions",
                        format!("`{item}` is not a version; {VERSIONS_HINT}"),
                    ))
                }
            }
        }
    }
    if let Some(b) = r.boolean("h2c")? {
        if b && !options.h2 {
            return Err(r.error(
                "h2c",
                "is HTTP/2, which versions leaves out; add \"h2\" to versions",
            ));
        }
        options.h2c = b;
    }
    if let Some(text) = r.string("user_agent")? {
        options.user_agent = if text.is_empty() {
            None
        } else {
            Some(http::HeaderValue::from_str(&text).map_err(|_| {
                r.error(
                    "user_agent",
                    format!(
                        "{text:?} cannot be a header value (CR, LF and other control \
                         characters are not allowed)"
                    ),
                )
            })?)
        };
    }
    if let Some(text) = r.string("client")? {
        options.client = match text.as_str() {
            "hyper" => Http1Client::Hyper,
            "lean" => Http1Client::Lean,
            _ => {
                return Err(r.error(
                    "client",
                    format!("must be \"hyper\" or \"lean\" (the HTTP/1.1 client), got {text:?}"),
                ))
            }
        };
    }
    r.finish()?;
    Ok(options)
}

const VERSIONS_HINT: &str = "must list \"h2\", \"http/1.1\", \"h3\" or several, such as \
     [\"h2\", \"http/1.1\"] (with \"h3\" first, https:// speaks HTTP/3 directly; after \
     another, it upgrades on the server's Alt-Svc)";

/// A range of addresses, as `first..=last`.
struct Range(u128, u128, bool);

impl Range {
    fn len(&self) -> u128 {
        self.1 - self.0 + 1
    }

    fn iter(&self) -> impl Iterator<Item = IpAddr> + '_ {
        (self.0..=self.1).map(|n| {
            if self.2 {
                IpAddr::from(std::net::Ipv4Addr::from(n as u32))
            } else {
                IpAddr::from(std::net::Ipv6Addr::from(n))
            }
        })
    }
}

/// A `local_ips` entry that is not an address, a range or a block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{text:?} is not an address, a range or a block ({why}); write \"127.0.0.10\", \
     \"127.0.0.10-127.0.0.200\" or \"127.0.0.0/24\""
)]
struct RangeError {
    /// The entry.
    text: String,
    /// What is wrong with it.
    why: &'static str,
}

/// `A`, `A-B` (inclusive) or `A/PREFIX` (every address of the block).
fn parse_range(text: &str) -> Result<Range, RangeError> {
    let bad = |why: &'static str| RangeError {
        text: text.to_owned(),
        why,
    };
    let addr = |s: &str| s.trim().parse::<IpAddr>().map_err(|_| bad("bad address"));
    let num = |ip: IpAddr| match ip {
        IpAddr::V4(a) => (u32::from(a) as u128, true),
        IpAddr::V6(a) => (u128::from(a), false),
    };
    if let Some((a, b)) = text.split_once('-') {
        let ((a, v4), (b, w4)) = (num(addr(a)?), num(addr(b)?));
        if v4 != w4 {
            return Err(bad("both ends must be IPv4 or both IPv6"));
        }
        if b < a {
            return Err(bad("the range ends before it starts"));
        }
        return Ok(Range(a, b, v4));
    }
    if let Some((a, prefix)) = text.split_once('/') {
        let (a, v4) = num(addr(a)?);
        let bits = if v4 { 32 } else { 128 };
        let prefix: u32 = prefix
            .trim()
            .parse()
            .ok()
            .filter(|p| *p <= bits)
            .ok_or_else(|| bad("bad prefix"))?;
        let host_bits = bits - prefix;
        if host_bits > 20 {
            return Err(bad("a block that large is not a list of source addresses"));
        }
        let size = 1u128 << host_bits;
        let first = a & !(size - 1);
        return Ok(Range(first, first + size - 1, v4));
    }
    let (a, v4) = num(addr(text)?);
    Ok(Range(a, a, v4))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<HttpOptions, ConfigError> {
        parse(&toml::from_str(text).unwrap())
    }

    #[test]
    fn defaults_follow_ten_redirects_and_reset_cookies() {
        let o = parse_text("").unwrap();
        assert_eq!(o, HttpOptions::default());
        assert_eq!(o.max_redirects, 10);
        assert!(!o.no_cookies_reset && !o.count_setup);
        assert_eq!(o.local_ip(1), None);
    }

    #[test]
    fn local_ips_take_ranges_blocks_and_addresses_round_robin() {
        let o = parse_text(
            "[http]\nlocal_ips = [\"127.0.0.10-127.0.0.12\", \"127.0.1.0/31\", \"::1\"]\nmax_redirects = 0\ncount_setup = true",
        )
        .unwrap();
        let shown: Vec<String> = o.local_ips.iter().map(|a| a.to_string()).collect();
        assert_eq!(
            shown,
            [
                "127.0.0.10",
                "127.0.0.11",
                "127.0.0.12",
                "127.0.1.0",
                "127.0.1.1",
                "::1"
            ]
        );
        assert_eq!(o.local_ip(1).unwrap().to_string(), "127.0.0.10");
        assert_eq!(o.local_ip(7).unwrap().to_string(), "127.0.0.10");
        assert_eq!(o.local_ip(8).unwrap().to_string(), "127.0.0.11");
        assert_eq!(o.max_redirects, 0);
        assert!(o.count_setup);
    }

    #[test]
    fn mistakes_are_explained() {
        for bad in [
            "local_ips = [\"127.0.0.200-127.0.0.10\"]",
            "local_ips = [\"127.0.0.1-::1\"]",
            "local_ips = [\"localhost\"]",
            "local_ips = [\"10.0.0.0/8\"]",
        ] {
            let err = parse_text(&format!("[http]\n{bad}")).unwrap_err();
            assert_eq!(err.path, "http.local_ips", "{bad}");
            assert!(err.message.contains("127.0.0.10-127.0.0.200"), "{err}");
        }
        let err = parse_text("[http]\nlocal_ips = \"127.0.0.1\"").unwrap_err();
        assert!(err.message.contains("must be an array"), "{err}");
        let err = parse_text("[http]\nmax_redirect = 3").unwrap_err();
        assert!(
            err.message.contains("did you mean `max_redirects`"),
            "{err}"
        );
        let err = parse_text("[http]\nmax_redirects = 1000").unwrap_err();
        assert_eq!(err.path, "http.max_redirects");
        assert_eq!(err.message, "must be at most 100, got 1000");
        let err = parse_text("[http]\nbatch = 0").unwrap_err();
        assert_eq!(err.path, "http.batch");
        assert!(err.message.contains("between 1 and"), "{}", err.message);
        let limits = parse_text("[http]\nbatch = 50\nbatch_per_host = 0").unwrap();
        assert_eq!((limits.batch, limits.batch_per_host), (50, 0));
        let defaults = parse_text("[http]").unwrap();
        assert_eq!((defaults.batch, defaults.batch_per_host), (20, 6));
        let err = parse_text("[http]\nmax_headers = 0").unwrap_err();
        assert_eq!(err.path, "http.max_headers");
        assert!(err.message.contains("between 1 and 10000"), "{err}");
        assert_eq!(
            parse_text("[http]\nmax_headers = 500").unwrap().max_headers,
            500
        );
        for bad in [
            "versions = []",
            "versions = [\"http/2\"]",
            "versions = \"h2\"",
        ] {
            let err = parse_text(&format!("[http]\n{bad}")).unwrap_err();
            assert_eq!(err.path, "http.versions", "{bad}");
            assert!(err.message.contains("[\"h2\", \"http/1.1\"]"), "{err}");
        }
        let err = parse_text("[http]\nversions = [\"http/1.1\"]\nh2c = true").unwrap_err();
        assert!(err.message.contains("add \"h2\""), "{err}");
    }

    #[test]
    fn client_picks_the_http1_client() {
        assert_eq!(parse_text("").unwrap().client, Http1Client::Hyper);
        let o = parse_text("[http]\nclient = \"lean\"").unwrap();
        assert_eq!(o.client, Http1Client::Lean);
        let o = parse_text("[http]\nclient = \"hyper\"").unwrap();
        assert_eq!(o.client, Http1Client::Hyper);
        let err = parse_text("[http]\nclient = \"curl\"").unwrap_err();
        assert_eq!(err.path, "http.client");
        assert!(err.message.contains("\"hyper\" or \"lean\""), "{err}");
    }

    #[test]
    fn versions_restrict_and_h2c_opts_in() {
        let o = parse_text("").unwrap();
        assert!(o.h2 && o.http1 && !o.h2c);
        let o = parse_text("[http]\nversions = [\"h2\"]\nh2c = true").unwrap();
        assert!(o.h2 && !o.http1 && o.h2c);
        let o = parse_text("[http]\nversions = [\"http/1.1\"]").unwrap();
        assert!(!o.h2 && o.http1 && o.h3 == H3Mode::Off);
    }

    #[test]
    fn h3_first_is_direct_and_later_upgrades_on_alt_svc() {
        let o = parse_text("[http]\nversions = [\"h3\"]").unwrap();
        assert!(!o.h2 && !o.http1 && o.h3 == H3Mode::Direct);
        let o = parse_text("[http]\nversions = [\"h3\", \"h2\"]").unwrap();
        assert!(o.h2 && o.h3 == H3Mode::Direct);
        let o = parse_text("[http]\nversions = [\"http/1.1\", \"h3\"]").unwrap();
        assert!(o.http1 && !o.h2 && o.h3 == H3Mode::AltSvc);
        let err = parse_text("[http]\nversions = [\"h3-29\"]").unwrap_err();
        assert!(err.message.contains("\"h3\" first"), "{err}");
    }
}
