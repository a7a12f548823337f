//! Remote modules (`import { x } from 'https://jslib.k6.io/...'`), fetched when a
//! script is built, never at run time: over TLS (rustls, the system's roots, which
//! `SSL_CERT_FILE` replaces as curl and Go read it), `https://` only, at most
//! [`MAX_BYTES`] each, redirects to `https://` followed five times. Each module is kept
//! in the cache under its URL's host and path (`<cache>/js/remote/HOST/PATH`), so that
//! its relative imports resolve to files beside it, and pinned in a lock file beside
//! the script (`SCRIPT.lock`: URL → sha256 of its text). A later build takes the cached
//! text if it has the pinned hash, else fetches it again and refuses a text that
//! differs from the pin (the module changed on the server) until `host build --update`
//! pins the new one. A fetched module is untrusted like a local one: the bundler checks
//! it alike, and it may not open files.

use anyhow::{anyhow, bail, Context, Result};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Most bytes of one remote module.
pub(crate) const MAX_BYTES: usize = 8 << 20;

/// Time for one fetch (connect, handshake, request, response).
const TIMEOUT: Duration = Duration::from_secs(30);

/// `host build --update`: fetch every remote module again and pin what the server has.
static UPDATE: AtomicBool = AtomicBool::new(false);

/// Sets `--update` for the builds of this process.
pub(crate) fn set_update(on: bool) {
    UPDATE.store(on, Ordering::Relaxed);
}

/// Where fetched modules are kept: HOST/PATH below it.
pub(crate) fn root() -> PathBuf {
    crate::plugin::cache::cache_dir().join("js").join("remote")
}

/// The lock of one build: the script's pins, and whether they changed.
pub(crate) struct Lock {
    path: PathBuf,
    pins: BTreeMap<String, String>,
    changed: bool,
}

impl Lock {
    /// The lock beside `script` (`script.js.lock`), empty when there is none.
    pub(crate) fn beside(script: &Path) -> Result<Self> {
        let mut name = script.file_name().unwrap_or_default().to_os_string();
        name.push(".lock");
        let path = script.with_file_name(name);
        let pins = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str::<BTreeMap<String, String>>(&text).with_context(|| {
                format!(
                    "{} is not a lock file of remote modules (a JSON object of URL → sha256); remove it and build again",
                    path.display()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(anyhow!("cannot read {}: {e}", path.display())),
        };
        Ok(Self {
            path,
            pins,
            changed: false,
        })
    }

    /// Writes the lock when a pin was added or changed.
    pub(crate) fn save(&self) -> Result<()> {
        if !self.changed {
            return Ok(());
        }
        let text = serde_json::to_string_pretty(&self.pins).expect("pins serialise") + "\n";
        std::fs::write(&self.path, text)
            .with_context(|| format!("cannot write the lock file {}", self.path.display()))
    }

    /// The cached file of `url`, fetched (and pinned) if needed; `at` names the import
    /// in errors.
    pub(crate) fn module(&mut self, url: &str, at: &str) -> Result<PathBuf> {
        let parsed = check_url(url, at)?;
        let file = cache_path(&parsed);
        let pin = self.pins.get(url).cloned();
        let update = UPDATE.load(Ordering::Relaxed);
        if let (Some(pin), false) = (&pin, update) {
            if std::fs::read(&file).is_ok_and(|b| sha256(&b) == *pin) {
                return Ok(file);
            }
        }
        if !update {
            if let Some(file) = self.vendored(url, &parsed, &file, pin.as_deref(), at)? {
                return Ok(file);
            }
        }
        let text = fetch(&parsed).with_context(|| {
            format!(
                "{at}: cannot fetch {url} (no cached copy with its pin, none vendored in {}; \
                 without the network, vendor the modules where it is reachable with \
                 `host vendor SCRIPT` and bring the vendor/ folder and the lock beside the script)",
                self.vendor_dir().display()
            )
        })?;
        let hash = sha256(text.as_bytes());
        match pin {
            Some(pin) if pin != hash && !update => bail!(
                "{at}: {url} changed on the server since it was pinned in {} (sha256 {pin}, now {hash}); check the change, then run `host build --update` to pin the new text",
                self.path.display()
            ),
            Some(pin) if pin == hash => {}
            _ => {
                self.pins.insert(url.to_string(), hash);
                self.changed = true;
            }
        }
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let tmp = file.with_extension("fetching");
        std::fs::write(&tmp, &text).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &file).with_context(|| format!("cannot write {}", file.display()))?;
        Ok(file)
    }
}

impl Lock {
    /// The vendor folder beside the script (`vendor/`, written by `host vendor`).
    pub(crate) fn vendor_dir(&self) -> PathBuf {
        self.path.with_file_name(VENDOR_DIR)
    }

    /// The vendored copy of `url`, checked against its pin and put in the cache (where
    /// its relative imports resolve); `None` when it is not vendored.
    fn vendored(
        &self,
        url: &str,
        parsed: &url::Url,
        cached: &Path,
        pin: Option<&str>,
        at: &str,
    ) -> Result<Option<PathBuf>> {
        let file = vendored_path(&self.vendor_dir(), parsed);
        let Ok(bytes) = std::fs::read(&file) else {
            return Ok(None);
        };
        let hash = sha256(&bytes);
        match pin {
            None => bail!(
                "{at}: {url} is vendored in {} but not pinned in {}; vendor it again with `host vendor SCRIPT`",
                file.display(),
                self.path.display()
            ),
            Some(pin) if pin != hash => bail!(
                "{at}: the vendored copy of {url} ({}) is not the text pinned in {} (sha256 {pin}, the copy {hash}); vendor it again with `host vendor SCRIPT`",
                file.display(),
                self.path.display()
            ),
            Some(_) => {}
        }
        if let Some(dir) = cached.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let tmp = cached.with_extension("vendoring");
        std::fs::write(&tmp, &bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, cached)
            .with_context(|| format!("cannot write {}", cached.display()))?;
        Ok(Some(cached.to_path_buf()))
    }

    /// Copies every pinned module from the cache into `dir` (`HOST[_PORT]/PATH`, as
    /// the cache keeps them); the number written. A cached text that is not its pin is
    /// refused.
    pub(crate) fn vendor_into(&self, dir: &Path) -> Result<usize> {
        let mut n = 0;
        for (url, pin) in &self.pins {
            let parsed = check_url(url, &self.path.display().to_string())?;
            let cached = cache_path(&parsed);
            let bytes = std::fs::read(&cached).with_context(|| {
                format!(
                    "{url} is pinned but not in the cache ({})",
                    cached.display()
                )
            })?;
            if sha256(&bytes) != *pin {
                bail!(
                    "the cached copy of {url} ({}) is not its pin in {}; build again",
                    cached.display(),
                    self.path.display()
                );
            }
            let file = vendored_path(dir, &parsed);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            std::fs::write(&file, &bytes)
                .with_context(|| format!("cannot write {}", file.display()))?;
            n += 1;
        }
        Ok(n)
    }
}

/// The name of the vendor folder beside a script.
pub(crate) const VENDOR_DIR: &str = "vendor";

/// `<dir>/HOST[_PORT]/PATH`.
fn vendored_path(dir: &Path, url: &url::Url) -> PathBuf {
    let cached = cache_path(url);
    let rest = cached.strip_prefix(root()).unwrap_or(&cached);
    dir.join(rest)
}

thread_local! {
    /// The lock of the build under way on this thread (one script at a time).
    static LOCK: std::cell::RefCell<Option<Lock>> = const { std::cell::RefCell::new(None) };
}

/// The lock of one build, held while it bundles; dropped (unsaved) on an error.
pub(crate) struct LockGuard(());

impl LockGuard {
    /// Reads the lock beside `entry` for the build about to bundle it.
    pub(crate) fn begin(entry: &Path) -> Result<Self> {
        let lock = Lock::beside(entry)?;
        LOCK.with(|l| *l.borrow_mut() = Some(lock));
        Ok(Self(()))
    }

    /// Writes the lock when the build pinned something new.
    pub(crate) fn save(&self) -> Result<()> {
        LOCK.with(|l| l.borrow().as_ref().map_or(Ok(()), Lock::save))
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        LOCK.with(|l| *l.borrow_mut() = None);
    }
}

/// The cached file of `url` through the build's lock (see [`Lock::module`]).
pub(crate) fn module(url: &str, at: &str) -> Result<PathBuf> {
    LOCK.with(|l| match l.borrow_mut().as_mut() {
        Some(lock) => lock.module(url, at),
        None => bail!("{at}: {url}: no build is under way"),
    })
}

/// The URL of `spec` imported by a remote module kept in `dir` (`./x.js`, `../x.js`,
/// `/x.js` resolved against the importer's URL); `None` when `dir` is no remote
/// module's folder.
pub(crate) fn relative_url(dir: &Path, spec: &str) -> Option<String> {
    if !(spec.starts_with("./") || spec.starts_with("../") || spec.starts_with('/')) {
        return None;
    }
    let base = url_of(&dir.join("_"))?;
    let base = url::Url::parse(&base).ok()?;
    base.join(spec).ok().map(String::from)
}

/// The URL a cached file stands for, if `path` is one (`None` for a local file).
pub(crate) fn url_of(path: &Path) -> Option<String> {
    let rest = path.strip_prefix(root()).ok()?;
    let mut parts = rest.iter().map(|p| p.to_string_lossy().into_owned());
    let host = parts.next()?.replacen('_', ":", 1);
    let path: Vec<String> = parts.collect();
    Some(format!("https://{host}/{}", path.join("/")))
}

/// `https://` only, with a host and a file path; no credentials, query or fragment
/// (the cache keeps a module by host and path alone).
fn check_url(url: &str, at: &str) -> Result<url::Url> {
    let parsed = url::Url::parse(url).map_err(|e| anyhow!("{at}: `{url}` is not a URL: {e}"))?;
    if parsed.scheme() != "https" {
        bail!("{at}: `{url}`: remote modules are fetched over https only");
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        bail!("{at}: `{url}` names no host");
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        bail!("{at}: `{url}` carries credentials; a remote module's URL may not");
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        bail!("{at}: `{url}` has a query or fragment, which this host does not fetch");
    }
    let path = parsed.path();
    if path.ends_with('/') || path.split('/').any(|s| s == "..") {
        bail!("{at}: `{url}` names no file");
    }
    Ok(parsed)
}

/// `<root>/HOST[_PORT]/PATH`.
fn cache_path(url: &url::Url) -> PathBuf {
    let host = url.host_str().unwrap_or("_");
    let mut dir = root().join(match url.port() {
        Some(p) => format!("{host}_{p}"),
        None => host.to_string(),
    });
    for seg in url.path().split('/').filter(|s| !s.is_empty()) {
        dir.push(seg);
    }
    dir
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The TLS client: the system's roots (with `SSL_CERT_FILE`, that file's).
fn tls() -> Result<Arc<rustls::ClientConfig>> {
    static CONFIG: Mutex<Option<Arc<rustls::ClientConfig>>> = Mutex::new(None);
    let mut held = CONFIG.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(c) = held.as_ref() {
        return Ok(c.clone());
    }
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if roots.is_empty() {
        bail!("no trusted root certificates on this machine: install ca-certificates (or set SSL_CERT_FILE to a CA bundle)");
    }
    let config = Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth(),
    );
    *held = Some(config.clone());
    Ok(config)
}

/// GETs `url` (following up to five redirects to `https://`); its body as text.
fn fetch(url: &url::Url) -> Result<String> {
    let mut url = url.clone();
    for _ in 0..=5 {
        let (status, location, body) = get_once(&url)?;
        match status {
            200 => {
                return String::from_utf8(body)
                    .map_err(|_| anyhow!("the module is not UTF-8 text"));
            }
            301 | 302 | 303 | 307 | 308 => {
                let to =
                    location.ok_or_else(|| anyhow!("a redirect ({status}) without Location"))?;
                let next = url
                    .join(&to)
                    .map_err(|e| anyhow!("redirect to `{to}`: {e}"))?;
                if next.scheme() != "https" {
                    bail!("redirected to `{next}`: remote modules are fetched over https only");
                }
                url = next;
            }
            other => bail!("the server answered {other}"),
        }
    }
    bail!("more than five redirects")
}

/// One HTTP/1.0 GET (so the body ends with the connection, never chunked).
fn get_once(url: &url::Url) -> Result<(u16, Option<String>, Vec<u8>)> {
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_string();
    let port = url.port_or_known_default().unwrap_or(443);
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
        .with_context(|| format!("cannot resolve {host}"))?
        .next()
        .ok_or_else(|| anyhow!("{host} has no address"))?;
    let tcp = std::net::TcpStream::connect_timeout(&addr, TIMEOUT)
        .with_context(|| format!("cannot connect to {addr}"))?;
    tcp.set_read_timeout(Some(TIMEOUT))?;
    tcp.set_write_timeout(Some(TIMEOUT))?;
    let name = rustls::pki_types::ServerName::try_from(host.clone())
        .map_err(|e| anyhow!("`{host}` is no server name: {e}"))?;
    let conn = rustls::ClientConnection::new(tls()?, name)?;
    let mut stream = rustls::StreamOwned::new(conn, tcp);
    let path = url.path();
    let authority = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    };
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {authority}\r\nUser-Agent: loadtest-host/{}\r\nAccept: application/javascript, text/javascript, */*\r\n\r\n",
        env!("CARGO_PKG_VERSION")
    )?;
    stream.flush()?;
    let mut raw = Vec::new();
    let limit = MAX_BYTES + 64 * 1024;
    let mut chunk = [0u8; 16 * 1024];
    let mut closed_cleanly = true;
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&chunk[..n]);
                if raw.len() > limit {
                    bail!("the module is larger than {} MiB", MAX_BYTES >> 20);
                }
            }
            // A server that closes without close_notify: what came is kept only if its
            // Content-Length says it is whole (checked below).
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                closed_cleanly = false;
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut res = httparse::Response::new(&mut headers);
    let head = match res.parse(&raw)? {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => bail!("the response ended inside its head"),
    };
    let status = res.code.unwrap_or(0);
    let location = res
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("location"))
        .map(|h| String::from_utf8_lossy(h.value).into_owned());
    let declared = res
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .map(|h| String::from_utf8_lossy(h.value).trim().parse::<usize>());
    let body = raw[head..].to_vec();
    if body.len() > MAX_BYTES {
        bail!("the module is larger than {} MiB", MAX_BYTES >> 20);
    }
    whole(body.len(), declared, closed_cleanly)?;
    Ok((status, location, body))
}

/// Whether a body of `got` bytes is the whole answer: it has its `Content-Length`
/// (`declared`, if the server sent one), and without one the TLS session ended with
/// close_notify. A connection cut without it (a TCP reset or FIN from anyone on the
/// path) otherwise handed on a truncated module, which the lock file then pinned.
fn whole(
    got: usize,
    declared: Option<Result<usize, std::num::ParseIntError>>,
    closed_cleanly: bool,
) -> Result<()> {
    match declared {
        Some(Ok(n)) if n == got => Ok(()),
        Some(Ok(n)) => bail!("the module was cut short: {got} of the {n} bytes its Content-Length gives"),
        Some(Err(_)) => bail!("the answer's Content-Length is not a number"),
        None if closed_cleanly => Ok(()),
        None => bail!(
            "the connection ended without TLS close_notify and the answer has no Content-Length: the module may be cut short"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_cut_short_is_refused() {
        assert!(whole(10, Some(Ok(10)), false).is_ok());
        assert!(whole(10, None, true).is_ok());
        let short = whole(6, Some(Ok(10)), true).unwrap_err().to_string();
        assert!(short.contains("cut short: 6 of the 10 bytes"), "{short}");
        assert!(whole(10, Some("x".parse::<usize>()), true).is_err());
        let cut = whole(10, None, false).unwrap_err().to_string();
        assert!(cut.contains("close_notify"), "{cut}");
    }

    #[test]
    fn only_https_urls_of_a_file() {
        for (url, why) in [
            ("http://x.test/a.js", "https only"),
            ("https://u:p@x.test/a.js", "credentials"),
            ("https://x.test/a.js?v=1", "query"),
            ("https://x.test/dir/", "names no file"),
        ] {
            let e = check_url(url, "s.js:1").unwrap_err().to_string();
            assert!(e.contains(why), "{url}: {e}");
        }
        let u = check_url("https://jslib.k6.io:8443/k6-utils/1.4.0/index.js", "s.js:1").unwrap();
        let path = cache_path(&u);
        assert!(
            path.ends_with("jslib.k6.io_8443/k6-utils/1.4.0/index.js"),
            "{}",
            path.display()
        );
        assert_eq!(
            url_of(&path).as_deref(),
            Some("https://jslib.k6.io:8443/k6-utils/1.4.0/index.js")
        );
    }
}
