//! k6's URL secret source (k6 1.5+, `--secret-source url=urlTemplate=...`): a secret
//! fetched over HTTP the first time a script asks for it, from the one server the
//! operator named. Options as k6 documents them: `urlTemplate` (with `{key}`),
//! `method`, `headers.NAME`, `responsePath` (a dotted path into a JSON answer),
//! `timeout`, `requestsPerMinuteLimit`, `requestsBurst`, `maxRetries`, `retryBackoff`,
//! inline or from `config=FILE.json`; `name=` and `default` as for the other sources.
//!
//! Governed so that it reaches only what the operator named: the key is
//! percent-encoded into the template (a script's key cannot change the host, port or
//! path segments around it), `{key}` may not stand in the authority, the answer's
//! redirects are not followed, an answer is at most [`MAX_BODY`] bytes, the requests
//! are rate-limited as k6 limits them, and each key is fetched once per run (its value,
//! or its absence, kept). A value handed out is redacted like any secret.
//!
//! The VU that asks first waits for the fetch (the `vu.env` import is synchronous):
//! once per key per run, within `timeout` × (1 + `maxRetries`) and the backoffs.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Most bytes of one answer.
pub(crate) const MAX_BODY: usize = 1 << 20;

/// Most bytes of a key.
const MAX_KEY: usize = 256;

/// One URL source's options.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UrlSource {
    /// The template, with `{key}`.
    pub(crate) template: String,
    /// The HTTP method (k6: GET).
    pub(crate) method: String,
    /// Headers sent with each request.
    pub(crate) headers: Vec<(String, String)>,
    /// A dotted path into the JSON answer; empty: the whole body.
    pub(crate) response_path: String,
    /// Time for one request.
    pub(crate) timeout: Duration,
    /// Requests per minute, and the burst above it.
    pub(crate) per_minute: u32,
    /// The burst above the rate.
    pub(crate) burst: u32,
    /// Tries after the first, on a connection error, 429 or 5xx.
    pub(crate) max_retries: u32,
    /// The first wait before a retry (doubled each time).
    pub(crate) backoff: Duration,
}

/// The keys of the inline options and of a config file.
pub(crate) const OPTIONS: &[&str] = &[
    "urlTemplate",
    "method",
    "responsePath",
    "timeout",
    "requestsPerMinuteLimit",
    "requestsBurst",
    "maxRetries",
    "retryBackoff",
];

impl UrlSource {
    /// From the options given (`headers.NAME` keys included); `text` names the flag.
    pub(crate) fn from_options(
        text: &str,
        options: &BTreeMap<String, String>,
    ) -> Result<UrlSource, String> {
        let get = |k: &str| options.get(k).map(String::as_str);
        let template = get("urlTemplate")
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                format!("`{text}`: no urlTemplate=URL (with {{key}} where the secret's name goes)")
            })?
            .to_string();
        check_template(text, &template)?;
        let method = get("method").unwrap_or("GET").to_ascii_uppercase();
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(format!("`{text}`: method `{method}` is no HTTP method"));
        }
        let number = |k: &str, default: u32| -> Result<u32, String> {
            match get(k) {
                None => Ok(default),
                Some(v) => v
                    .parse::<u32>()
                    .map_err(|_| format!("`{text}`: {k}={v} is not a whole number")),
            }
        };
        let duration = |k: &str, default: Duration| -> Result<Duration, String> {
            match get(k) {
                None => Ok(default),
                Some(v) => crate::duration::parse_duration(v)
                    .map_err(|e| format!("`{text}`: {k}={v} is not a duration (30s, 500ms): {e}")),
            }
        };
        let mut headers = Vec::new();
        for (k, v) in options {
            if let Some(name) = k.strip_prefix("headers.") {
                if name.is_empty()
                    || !name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                    || v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0)
                {
                    return Err(format!(
                        "`{text}`: header `{name}` or its value is not valid"
                    ));
                }
                headers.push((name.to_string(), v.clone()));
            }
        }
        let per_minute = number("requestsPerMinuteLimit", 300)?;
        if per_minute == 0 {
            return Err(format!(
                "`{text}`: requestsPerMinuteLimit must be at least 1"
            ));
        }
        Ok(UrlSource {
            template,
            method,
            headers,
            response_path: get("responsePath").unwrap_or("").to_string(),
            timeout: duration("timeout", Duration::from_secs(30))?,
            per_minute,
            burst: number("requestsBurst", 10)?.max(1),
            max_retries: number("maxRetries", 3)?.min(10),
            backoff: duration("retryBackoff", Duration::from_secs(1))?,
        })
    }

    /// The URL for `key` (percent-encoded into the template).
    fn url_for(&self, key: &str) -> Result<url::Url, String> {
        if key.is_empty() || key.len() > MAX_KEY {
            return Err(format!("a secret's name has 1 to {MAX_KEY} bytes"));
        }
        // `.` and `..` would be read as path steps, even encoded (WHATWG URLs).
        if key.bytes().all(|b| b == b'.') {
            return Err("a secret's name may not be only dots".into());
        }
        let encoded: String = url::form_urlencoded::byte_serialize(key.as_bytes())
            .collect::<String>()
            .replace('+', "%20");
        let text = self.template.replace("{key}", &encoded);
        let url = url::Url::parse(&text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
        let base = url::Url::parse(&self.template.replace("{key}", "k"))
            .map_err(|e| format!("the template is not a URL: {e}"))?;
        if url.origin() != base.origin() {
            return Err("the secret's name would change the server asked".into());
        }
        Ok(url)
    }
}

/// `{key}` in the path or query of an http(s) URL, not in its authority.
fn check_template(text: &str, template: &str) -> Result<(), String> {
    let probe = template.replace("{key}", "k");
    let url = url::Url::parse(&probe)
        .map_err(|e| format!("`{text}`: urlTemplate `{template}` is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("`{text}`: urlTemplate must be http:// or https://"));
    }
    if !template.contains("{key}") {
        return Err(format!(
            "`{text}`: urlTemplate has no {{key}} for the secret's name"
        ));
    }
    let authority_end = template
        .find("://")
        .map(|i| i + 3)
        .and_then(|s| template[s..].find(['/', '?']).map(|e| s + e))
        .unwrap_or(template.len());
    if template[..authority_end].contains("{key}") {
        return Err(format!(
            "`{text}`: {{key}} may stand in the path or query only, not in the host (the secret's name may not choose the server)"
        ));
    }
    Ok(())
}

/// A source's fetched keys, and its rate limit.
struct State {
    values: BTreeMap<String, Option<String>>,
    tokens: f64,
    last: Instant,
}

fn states() -> &'static Mutex<BTreeMap<String, Arc<Mutex<State>>>> {
    static STATES: std::sync::OnceLock<Mutex<BTreeMap<String, Arc<Mutex<State>>>>> =
        std::sync::OnceLock::new();
    STATES.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// The value of `key` from source `name` (fetched once per run); `None` when the
/// server has none (404) or cannot be asked (warned once, naming the URL).
pub(crate) fn get(name: &str, source: &UrlSource, key: &str) -> Option<String> {
    let state = {
        let mut all = states().lock().unwrap_or_else(|p| p.into_inner());
        all.entry(name.to_string())
            .or_insert_with(|| {
                Arc::new(Mutex::new(State {
                    values: BTreeMap::new(),
                    tokens: source.burst as f64,
                    last: Instant::now(),
                }))
            })
            .clone()
    };
    // One fetch at a time per source: VUs asking for one key wait for its answer.
    let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = state.values.get(key) {
        return known.clone();
    }
    let value = match fetch(source, key, &mut state) {
        Ok(v) => v,
        Err(e) => {
            let shown = crate::stderr::redact::redact(&e).into_owned();
            eprintln!("warning: --secret-source url ({name}): secret `{key}`: {shown}");
            None
        }
    };
    if state.values.len() < crate::stderr::redact::MAX_SECRETS {
        state.values.insert(key.to_string(), value.clone());
    }
    value
}

/// Waits for the rate limit's next token (k6's requestsPerMinuteLimit and burst).
fn take_token(source: &UrlSource, state: &mut State) {
    let rate = source.per_minute as f64 / 60.0;
    loop {
        let now = Instant::now();
        let gained = now.duration_since(state.last).as_secs_f64() * rate;
        state.tokens = (state.tokens + gained).min(source.burst as f64);
        state.last = now;
        if state.tokens >= 1.0 {
            state.tokens -= 1.0;
            return;
        }
        std::thread::sleep(Duration::from_secs_f64((1.0 - state.tokens) / rate));
    }
}

fn fetch(source: &UrlSource, key: &str, state: &mut State) -> Result<Option<String>, String> {
    let url = source.url_for(key)?;
    let mut wait = source.backoff;
    let mut tries = 0;
    loop {
        take_token(source, state);
        let answer = request(source, &url);
        let retry = match &answer {
            Ok((status, _)) => *status == 429 || *status >= 500,
            Err(_) => true,
        };
        if !retry || tries >= source.max_retries {
            let (status, body) = answer.map_err(|e| format!("{url}: {e}"))?;
            return match status {
                200..=299 => extract(&body, &source.response_path).map(Some),
                404 => Ok(None),
                other => Err(format!("{url} answered {other}")),
            };
        }
        tries += 1;
        std::thread::sleep(wait);
        wait = (wait * 2).min(Duration::from_secs(30));
    }
}

/// The secret in an answer: the body, or the string (or number) at `path` in its JSON.
fn extract(body: &[u8], path: &str) -> Result<String, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the answer is not UTF-8 text".to_string())?;
    if path.is_empty() {
        return Ok(text.to_string());
    }
    let json: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("the answer is not JSON, which responsePath needs: {e}"))?;
    let mut at = &json;
    for part in path.split('.') {
        at = match at {
            serde_json::Value::Object(o) => o.get(part),
            serde_json::Value::Array(a) => part.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        }
        .ok_or_else(|| format!("the answer has nothing at responsePath `{path}`"))?;
    }
    match at {
        serde_json::Value::String(s) => Ok(s.clone()),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        serde_json::Value::Bool(b) => Ok(b.to_string()),
        _ => Err(format!(
            "responsePath `{path}` is not a string in the answer"
        )),
    }
}

/// One request (HTTP/1.1, `Connection: close`): its status and body. Redirects are
/// answers like any other (not followed).
fn request(source: &UrlSource, url: &url::Url) -> Result<(u16, Vec<u8>), String> {
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} has no address"))?;
    let deadline = Instant::now() + source.timeout;
    let tcp = std::net::TcpStream::connect_timeout(&addr, source.timeout)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    tcp.set_read_timeout(Some(source.timeout)).ok();
    tcp.set_write_timeout(Some(source.timeout)).ok();
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    let authority = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    };
    let mut head = format!(
        "{} {target} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: loadtest-host/{}\r\nConnection: close\r\nContent-Length: 0\r\n",
        source.method,
        env!("CARGO_PKG_VERSION")
    );
    for (k, v) in &source.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let raw = if url.scheme() == "https" {
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|e| format!("`{host}` is no server name: {e}"))?;
        let tls = tls()?;
        let conn = rustls::ClientConnection::new(tls, name).map_err(|e| e.to_string())?;
        let mut stream = rustls::StreamOwned::new(conn, tcp);
        exchange(&mut stream, head.as_bytes(), deadline)?
    } else {
        let mut tcp = tcp;
        exchange(&mut tcp, head.as_bytes(), deadline)?
    };
    parse(&raw)
}

/// The TLS client: the system's roots (with `SSL_CERT_FILE`, that file's), as the
/// build's fetch of remote modules trusts them; made once.
fn tls() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: std::sync::OnceLock<Arc<rustls::ClientConfig>> = std::sync::OnceLock::new();
    if let Some(c) = CONFIG.get() {
        return Ok(c.clone());
    }
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if roots.is_empty() {
        return Err("no trusted root certificates on this machine: install ca-certificates (or set SSL_CERT_FILE to a CA bundle)".into());
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(CONFIG.get_or_init(|| Arc::new(config)).clone())
}

/// Writes `head`, reads the answer to its end (at most [`MAX_BODY`] and a head).
fn exchange<S: Read + Write>(s: &mut S, head: &[u8], deadline: Instant) -> Result<Vec<u8>, String> {
    s.write_all(head).map_err(|e| e.to_string())?;
    s.flush().map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if Instant::now() > deadline {
            return Err("timed out".into());
        }
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&chunk[..n]);
                if raw.len() > MAX_BODY + 64 * 1024 {
                    return Err(format!("the answer is larger than {} KiB", MAX_BODY >> 10));
                }
                if complete(&raw) {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(raw)
}

/// Whether `raw` holds a whole answer by its Content-Length.
fn complete(raw: &[u8]) -> bool {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut res = httparse::Response::new(&mut headers);
    let Ok(httparse::Status::Complete(n)) = res.parse(raw) else {
        return false;
    };
    res.headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| {
            std::str::from_utf8(h.value)
                .ok()?
                .trim()
                .parse::<usize>()
                .ok()
        })
        .is_some_and(|len| raw.len() >= n + len)
}

fn parse(raw: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut res = httparse::Response::new(&mut headers);
    let n = match res
        .parse(raw)
        .map_err(|e| format!("not an HTTP answer: {e}"))?
    {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => return Err("the answer ended inside its head".into()),
    };
    if res
        .headers
        .iter()
        .any(|h| h.name.eq_ignore_ascii_case("transfer-encoding"))
    {
        return Err("a chunked answer is not read; answer with a Content-Length".into());
    }
    let len = res
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| {
            std::str::from_utf8(h.value)
                .ok()?
                .trim()
                .parse::<usize>()
                .ok()
        });
    let body = &raw[n..];
    let body = match len {
        Some(len) if body.len() >= len => &body[..len],
        Some(len) => {
            return Err(format!(
                "the answer was cut short ({} of {len} bytes)",
                body.len()
            ))
        }
        None => body,
    };
    if body.len() > MAX_BODY {
        return Err(format!("the answer is larger than {} KiB", MAX_BODY >> 10));
    }
    Ok((res.code.unwrap_or(0), body.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(template: &str) -> Result<UrlSource, String> {
        let options = BTreeMap::from([("urlTemplate".to_string(), template.to_string())]);
        UrlSource::from_options("url=...", &options)
    }

    #[test]
    fn the_key_cannot_choose_the_server() {
        for (bad, why) in [
            ("http://{key}.example/x", "path or query only"),
            ("http://127.0.0.1:{key}/x", "not a URL"),
            ("ftp://127.0.0.1/{key}", "http:// or https://"),
            ("http://127.0.0.1/secrets", "no {key}"),
        ] {
            let e = source(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let s = source("http://127.0.0.1:9/v1/{key}?v=1").unwrap();
        for key in ["a/../../admin", "x@evil.test:80", "a?b#c", "../../"] {
            let url = s.url_for(key).unwrap();
            assert_eq!(url.host_str(), Some("127.0.0.1"), "{key}");
            assert_eq!(url.port(), Some(9));
            assert!(
                url.path().starts_with("/v1/") && !url.path()[4..].contains('/'),
                "{url}"
            );
        }
        assert!(s.url_for("").is_err() && s.url_for(&"k".repeat(300)).is_err());
        assert!(s.url_for("..").is_err());
    }

    #[test]
    fn the_response_path_reads_json() {
        let body = br#"{"data":{"value":"s3cr3t","n":[7]}}"#;
        assert_eq!(extract(body, "data.value").unwrap(), "s3cr3t");
        assert_eq!(extract(body, "data.n.0").unwrap(), "7");
        assert_eq!(extract(b"plain", "").unwrap(), "plain");
        assert!(extract(body, "data.nope")
            .unwrap_err()
            .contains("nothing at"));
        assert!(extract(b"plain", "a").unwrap_err().contains("not JSON"));
    }
}
