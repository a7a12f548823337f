//! The host's browsers: a bounded number of Chromium processes shared by all VUs,
//! started when first needed and replaced when one dies (its iterations fail with the
//! reason; the next one gets a new browser). A VU iteration gets its own browser
//! context (`Target.createBrowserContext`: cookies, storage and cache of its own, as
//! k6 isolates them), disposed when the iteration ends.

use super::allow::{bypass_list, proxy_switches, DeadEnd, Gate};
use super::cdp::{CdpError, Connection, Sink};
use super::launch::{LaunchError, LaunchOptions, Launcher, Process};
use super::page::Page;
use super::BrowserError;
use crate::metrics::TagSet;
use crate::net::NetShared;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a new browser may take to answer its first command.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// One running browser.
pub(crate) struct Browser {
    conn: Connection,
    gate: Arc<Gate>,
    contexts: AtomicUsize,
    // Last: the connection's tasks end when the process's pipes close. Held for its
    // Drop, which kills the browser's process group; none for a remote browser.
    _process: Option<Process>,
}

impl Browser {
    async fn start(
        launcher: &Launcher,
        options: &LaunchOptions,
        gate: Arc<Gate>,
    ) -> Result<Browser, BrowserError> {
        let (process, pipes) = launcher.launch(options).await?;
        let conn = Connection::start(pipes.commands, pipes.replies).map_err(|e| {
            BrowserError::Launch(LaunchError::Spawn {
                executable: options.executable.clone(),
                why: e,
            })
        })?;
        let name = options.executable.display().to_string();
        Browser::ready(conn, gate, Some(process), &name, root_hint(options)).await
    }

    /// The browser at `url` (`K6_BROWSER_WS_URL`).
    async fn connect(url: &str, gate: Arc<Gate>) -> Result<Browser, BrowserError> {
        let conn = super::remote::connect(url, START_TIMEOUT).await?;
        Browser::ready(conn, gate, None, &format!("K6_BROWSER_WS_URL={url}"), "").await
    }

    /// Waits for the browser's first answer and holds its requests at the gate.
    async fn ready(
        conn: Connection,
        gate: Arc<Gate>,
        process: Option<Process>,
        name: &str,
        hint: &str,
    ) -> Result<Browser, BrowserError> {
        let sink_gate = gate.clone();
        let sink: Sink = Arc::new(move |conn, event| sink_gate.on_event(conn, event));
        conn.on_browser_events(sink);
        let started = async {
            conn.call(None, "Browser.getVersion", json!({})).await?;
            // On the browser itself: every target's requests, from their first.
            conn.call(
                None,
                "Fetch.enable",
                json!({ "patterns": [{ "urlPattern": "*" }] }),
            )
            .await
        };
        match tokio::time::timeout(START_TIMEOUT, started).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                return Err(BrowserError::Start(format!(
                    "{name} did not start: {e}{hint}"
                )))
            }
            Err(_) => {
                return Err(BrowserError::Start(format!(
                    "{name} did not answer within {}s",
                    START_TIMEOUT.as_secs()
                )))
            }
        }
        Ok(Browser {
            conn,
            gate,
            contexts: AtomicUsize::new(0),
            _process: process,
        })
    }

    /// The browser's process id (none for a remote browser).
    #[cfg(test)]
    pub(crate) fn pid(&self) -> Option<u32> {
        self._process.as_ref().map(Process::id)
    }
}

fn root_hint(options: &LaunchOptions) -> &'static str {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 && !options.no_sandbox {
        " (as root Chromium needs --no-sandbox: K6_BROWSER_ARGS=no-sandbox)"
    } else {
        ""
    }
}

/// `Target.createBrowserContext`'s reply.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContextCreated {
    browser_context_id: String,
}

/// Where a pool's browsers come from.
enum Source {
    /// Browsers the host starts. The dead end outlives its users, and the launcher
    /// thread joins once no browser needs its death signal (the source drops after the
    /// pool's browsers).
    Local {
        options: LaunchOptions,
        _dead_end: DeadEnd,
        launcher: Launcher,
    },
    /// A running browser reached over its DevTools WebSocket (`K6_BROWSER_WS_URL`); its
    /// contexts get the dead-end proxy (`bypass`: the allowed origins), as the host
    /// cannot give it switches.
    Remote { url: String, bypass: Option<String> },
}

/// The shared browsers of a run.
pub(crate) struct Pool {
    gate: Arc<Gate>,
    slots: Vec<tokio::sync::Mutex<Option<Arc<Browser>>>>,
    next: AtomicUsize,
    // Last: dropped after the browsers (fields drop in order).
    source: Source,
}

impl Pool {
    /// A pool of at most `size` browsers started with `options`, whose pages reach only
    /// what `net`'s allowlist allows. Nothing starts until the first context.
    pub(crate) async fn new(
        mut options: LaunchOptions,
        size: usize,
        net: Arc<NetShared>,
    ) -> Result<Pool, BrowserError> {
        let dead_end = DeadEnd::start().await.map_err(|e| {
            BrowserError::Start(format!("could not bind the browsers' dead-end proxy: {e}"))
        })?;
        options
            .args
            .extend(proxy_switches(&net.allowlist, dead_end.port()));
        let launcher = Launcher::start()
            .map_err(|e| BrowserError::Start(format!("could not start a thread: {e}")))?;
        Ok(Pool {
            gate: Gate::new(net),
            slots: (0..size.max(1))
                .map(|_| tokio::sync::Mutex::new(None))
                .collect(),
            next: AtomicUsize::new(0),
            source: Source::Local {
                options,
                _dead_end: dead_end,
                launcher,
            },
        })
    }

    /// A pool over the running browser at `url` (`K6_BROWSER_WS_URL`), one connection.
    pub(crate) fn remote(url: String, net: Arc<NetShared>) -> Pool {
        let bypass = bypass_list(&net.allowlist);
        Pool {
            gate: Gate::new(net),
            slots: vec![tokio::sync::Mutex::new(None)],
            next: AtomicUsize::new(0),
            source: Source::Remote { url, bypass },
        }
    }

    /// Starts a browser now (before the run), so a browser that cannot start is an
    /// error before the first iteration.
    pub(crate) async fn warm_up(&self) -> Result<(), BrowserError> {
        self.browser(0).await.map(|_| ())
    }

    async fn browser(&self, slot: usize) -> Result<Arc<Browser>, BrowserError> {
        let mut held = self.slots[slot].lock().await;
        if let Some(b) = held.as_ref().filter(|b| !b.conn.is_closed()) {
            return Ok(b.clone());
        }
        // Gone (crashed, killed): the next iteration gets a new one.
        held.take();
        let b = Arc::new(match &self.source {
            Source::Local {
                options, launcher, ..
            } => Browser::start(launcher, options, self.gate.clone()).await?,
            Source::Remote { url, .. } => Browser::connect(url, self.gate.clone()).await?,
        });
        *held = Some(b.clone());
        Ok(b)
    }

    /// A fresh browser context on the next browser (round robin), for one iteration.
    #[cfg(test)]
    pub(crate) async fn context(&self) -> Result<Context, BrowserError> {
        self.context_with(ContextOptions::default()).await
    }

    /// The same, its pages made with `options`.
    pub(crate) async fn context_with(
        &self,
        options: ContextOptions,
    ) -> Result<Context, BrowserError> {
        let slot = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        let browser = self.browser(slot).await?;
        match self.open_context(browser, options.clone()).await {
            // The browser died before its connection saw the end (a crash just before
            // the iteration): the slot now holds a closed connection, so one retry
            // starts a new browser instead of failing the iteration on a stale one.
            Err(BrowserError::Cdp(CdpError::Closed(_))) => {
                let browser = self.browser(slot).await?;
                self.open_context(browser, options).await
            }
            opened => opened,
        }
    }

    /// A new browser context on `browser`, downloads denied.
    async fn open_context(
        &self,
        browser: Arc<Browser>,
        options: ContextOptions,
    ) -> Result<Context, BrowserError> {
        let mut params = json!({ "disposeOnDetach": false });
        if let Source::Remote { bypass, .. } = &self.source {
            params["proxyServer"] = json!(super::remote::DEAD_END_PROXY);
            if let Some(bypass) = bypass {
                params["proxyBypassList"] = json!(bypass);
            }
        }
        let created: ContextCreated = browser
            .conn
            .call_as(None, "Target.createBrowserContext", params)
            .await?;
        let id = created.browser_context_id;
        browser.contexts.fetch_add(1, Ordering::Relaxed);
        let context = Context {
            browser,
            id,
            options,
            pages: Default::default(),
            geolocation: Default::default(),
            closed: Default::default(),
        };
        context
            .browser
            .conn
            .call(
                None,
                "Browser.setDownloadBehavior",
                json!({ "behavior": "deny", "browserContextId": context.id }),
            )
            .await?;
        Ok(context)
    }

    /// The process ids of the running browsers.
    #[cfg(test)]
    pub(crate) async fn pids(&self) -> Vec<u32> {
        let mut pids = Vec::new();
        for slot in &self.slots {
            if let Some(pid) = slot.lock().await.as_ref().and_then(|b| b.pid()) {
                pids.push(pid);
            }
        }
        pids
    }
}

/// A context's options (k6's `newContext`); `None` keeps the browser's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ContextOptions {
    /// Viewport width and height in CSS pixels.
    pub(crate) viewport: Option<(u32, u32)>,
    /// Device pixels per CSS pixel.
    pub(crate) device_scale_factor: Option<f64>,
    /// Whether the page is shown as on a phone.
    pub(crate) is_mobile: Option<bool>,
    /// The `User-Agent`.
    pub(crate) user_agent: Option<String>,
    /// The locale (`de-DE`).
    pub(crate) locale: Option<String>,
    /// The time zone (`Europe/Berlin`).
    pub(crate) timezone_id: Option<String>,
    /// `light`, `dark` or `no-preference`.
    pub(crate) color_scheme: Option<String>,
    /// Headers sent with every request.
    pub(crate) extra_http_headers: Vec<(String, String)>,
}

/// `Emulation.setGeolocationOverride`'s parameters.
fn geo(latitude: f64, longitude: f64, accuracy: f64) -> Value {
    json!({ "latitude": latitude, "longitude": longitude, "accuracy": accuracy })
}

/// Whether cookie `c` (the protocol's) is sent to `url`: its domain and path match.
fn cookie_matches(c: &Value, url: &str) -> bool {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return false;
    };
    let host = uri.host().unwrap_or("").to_ascii_lowercase();
    let path = uri.path();
    let domain = c.get("domain").and_then(Value::as_str).unwrap_or("");
    let domain = domain.trim_start_matches('.').to_ascii_lowercase();
    let cpath = c.get("path").and_then(Value::as_str).unwrap_or("/");
    (host == domain || host.ends_with(&format!(".{domain}"))) && path.starts_with(cpath)
}

/// One iteration's browser context: its pages see nothing of another's.
pub(crate) struct Context {
    browser: Arc<Browser>,
    id: String,
    options: ContextOptions,
    /// Its pages' states, whose vitals are recorded when the context closes.
    pages: std::sync::Mutex<Vec<Arc<super::page::PageState>>>,
    /// The position set by `set_geolocation`, given to each new page.
    geolocation: std::sync::Mutex<Option<(f64, f64, f64)>>,
    closed: std::sync::atomic::AtomicBool,
}

impl Context {
    /// A new page (tab) in this context; its denied requests are counted with `tags`.
    pub(crate) async fn new_page(&self, tags: TagSet) -> Result<Page, BrowserError> {
        if self.is_closed() {
            return Err(BrowserError::Invalid(
                "the browser context is closed".into(),
            ));
        }
        let page = Page::open(&self.browser.conn, &self.browser.gate, &self.id, tags).await?;
        {
            let mut pages = self.pages.lock().unwrap_or_else(|p| p.into_inner());
            pages.retain(|p| Arc::strong_count(p) > 1);
            pages.push(page.state.clone());
        }
        let o = &self.options;
        if o.viewport.is_some() || o.device_scale_factor.is_some() || o.is_mobile.is_some() {
            let (w, h) = o.viewport.unwrap_or((1280, 720));
            page.call(
                "Emulation.setDeviceMetricsOverride",
                json!({ "width": w, "height": h,
                        "deviceScaleFactor": o.device_scale_factor.unwrap_or(1.0),
                        "mobile": o.is_mobile.unwrap_or(false) }),
            )
            .await?;
        }
        if let Some(ua) = &o.user_agent {
            page.call("Emulation.setUserAgentOverride", json!({ "userAgent": ua }))
                .await?;
        }
        if let Some(locale) = &o.locale {
            page.call("Emulation.setLocaleOverride", json!({ "locale": locale }))
                .await?;
        }
        if let Some(tz) = &o.timezone_id {
            page.call("Emulation.setTimezoneOverride", json!({ "timezoneId": tz }))
                .await?;
        }
        if let Some(scheme) = &o.color_scheme {
            // Kept for emulateMedia, which sets every feature at once.
            page.media(None, Some(scheme), None);
            page.call(
                "Emulation.setEmulatedMedia",
                json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] }),
            )
            .await?;
        }
        let position = *self.geolocation.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((lat, lon, acc)) = position {
            page.call("Emulation.setGeolocationOverride", geo(lat, lon, acc))
                .await?;
        }
        if !o.extra_http_headers.is_empty() {
            let headers: serde_json::Map<String, Value> = o
                .extra_http_headers
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            page.call("Network.setExtraHTTPHeaders", json!({ "headers": headers }))
                .await?;
        }
        Ok(page)
    }

    /// Adds cookies (k6's cookie objects, which are the protocol's `CookieParam`).
    pub(crate) async fn add_cookies(&self, cookies: Value) -> Result<(), BrowserError> {
        if !cookies.is_array() {
            return Err(BrowserError::Invalid(
                "addCookies takes an array of cookies ({ name, value, url } or { name, value, \
                 domain, path })"
                    .into(),
            ));
        }
        self.browser
            .conn
            .call(
                None,
                "Storage.setCookies",
                json!({ "cookies": cookies, "browserContextId": self.id }),
            )
            .await?;
        Ok(())
    }

    /// The context's cookies, those sent to one of `urls` when any are given.
    pub(crate) async fn cookies(&self, urls: &[String]) -> Result<Value, BrowserError> {
        let got = self
            .browser
            .conn
            .call(
                None,
                "Storage.getCookies",
                json!({ "browserContextId": self.id }),
            )
            .await?;
        let all = got.get("cookies").cloned().unwrap_or(json!([]));
        let Value::Array(all) = all else {
            return Ok(json!([]));
        };
        let kept: Vec<Value> = all
            .into_iter()
            .filter(|c| urls.is_empty() || urls.iter().any(|u| cookie_matches(c, u)))
            .map(|mut c| {
                // k6's shape: the protocol's, less what k6 does not report.
                if let Value::Object(m) = &mut c {
                    for k in [
                        "size",
                        "session",
                        "priority",
                        "sameParty",
                        "sourceScheme",
                        "sourcePort",
                        "partitionKey",
                    ] {
                        m.remove(k);
                    }
                }
                c
            })
            .collect();
        Ok(Value::Array(kept))
    }

    /// Removes every cookie of the context.
    pub(crate) async fn clear_cookies(&self) -> Result<(), BrowserError> {
        self.browser
            .conn
            .call(
                None,
                "Storage.clearCookies",
                json!({ "browserContextId": self.id }),
            )
            .await?;
        Ok(())
    }

    /// Grants `permissions` (k6's names) to `origin`, or to every origin.
    pub(crate) async fn grant_permissions(
        &self,
        permissions: &[String],
        origin: Option<&str>,
    ) -> Result<(), BrowserError> {
        let names = super::permissions::protocol_names(permissions)?;
        let mut params = json!({ "permissions": names, "browserContextId": self.id });
        if let Some(origin) = origin {
            params["origin"] = json!(origin);
        }
        self.browser
            .conn
            .call(None, "Browser.grantPermissions", params)
            .await?;
        Ok(())
    }

    /// Takes back every permission granted to the context.
    pub(crate) async fn clear_permissions(&self) -> Result<(), BrowserError> {
        self.browser
            .conn
            .call(
                None,
                "Browser.resetPermissions",
                json!({ "browserContextId": self.id }),
            )
            .await?;
        Ok(())
    }

    /// The position every page of the context reports, from now on.
    pub(crate) async fn set_geolocation(
        &self,
        latitude: f64,
        longitude: f64,
        accuracy: f64,
    ) -> Result<(), BrowserError> {
        super::permissions::check_position(latitude, longitude, accuracy)?;
        *self.geolocation.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((latitude, longitude, accuracy));
        let sessions: Vec<String> = {
            let pages = self.pages.lock().unwrap_or_else(|p| p.into_inner());
            pages.iter().map(|p| p.session.clone()).collect()
        };
        for session in sessions {
            // A page closed meanwhile refuses: the others still get it.
            let _ = self
                .browser
                .conn
                .call(
                    Some(&session),
                    "Emulation.setGeolocationOverride",
                    geo(latitude, longitude, accuracy),
                )
                .await;
        }
        Ok(())
    }

    /// Closes the context and every page in it.
    pub(crate) async fn close(&self) -> Result<(), BrowserError> {
        if self.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.flush();
        self.browser.contexts.fetch_sub(1, Ordering::Relaxed);
        self.browser
            .conn
            .call(
                None,
                "Target.disposeBrowserContext",
                json!({ "browserContextId": self.id }),
            )
            .await?;
        Ok(())
    }
}

impl Context {
    fn flush(&self) {
        for page in self.pages.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            page.flush();
        }
    }

    /// Whether the context was closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Closes the context without waiting for the browser's answer.
    pub(crate) fn dispose_now(&self) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            self.flush();
            self.browser.contexts.fetch_sub(1, Ordering::Relaxed);
            self.browser.conn.send(
                None,
                "Target.disposeBrowserContext",
                json!({ "browserContextId": self.id }),
            );
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if !self.closed.load(Ordering::SeqCst) {
            // An iteration that failed or timed out: disposed without waiting.
            self.browser.contexts.fetch_sub(1, Ordering::Relaxed);
            self.browser.conn.send(
                None,
                "Target.disposeBrowserContext",
                json!({ "browserContextId": self.id }),
            );
        }
    }
}
