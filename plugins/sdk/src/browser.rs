//! Pages of a real browser, driven by the host (the contract's `browser` interface,
//! 0.3.8; events, routes, handles, frame locators and emulation 0.3.10): the host runs Chromium, shared by the VUs, with a fresh context (cookies,
//! storage) for each one that asks, and holds the run's allowlist inside it: a page's
//! request to an origin the run does not allow fails before it leaves and is counted
//! in `http_reqs_denied`. The page's own requests and its web vitals are recorded as
//! k6's browser metrics (`browser_http_req_duration`, `browser_web_vital_lcp`, ...).
//!
//! A context still open when its iteration ends is closed by the host.
//!
//! ```no_run
//! use loadtest::browser::{Context, ContextOptions};
//! # fn f(base: &str) -> Result<(), String> {
//! let context = Context::open(&ContextOptions::default())?;
//! let page = context.new_page()?;
//! page.goto(&format!("{base}/survey/login"))?;
//! page.locator("input[name=user]").type_text("ann")?;
//! page.locator("input[name=password]").type_text("demo")?;
//! let mark = page.navigation_mark();
//! page.locator("button").click()?;
//! page.wait_for_navigation(mark)?;
//! let who = page.locator("#user").text_content()?;
//! context.close()?;
//! # Ok(()) }
//! ```

use crate::bindings::loadtest::scenario::browser as wit;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::cell::RefCell;
use std::fmt;
use std::time::Duration;

/// How long an action or a navigation waits by default: 30 s, as k6's.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a browser call failed. It converts into `String`, so `?` works in
/// [`Scenario`](crate::Scenario) functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrowserError {
    /// A target the run does not allow, or a `file:` URL.
    Denied(String),
    /// The wait ran out of time.
    Timeout(String),
    /// A navigation failed (a network error, a crashed page).
    Navigation(String),
    /// A script in the page threw, or a selector is not valid.
    Script(String),
    /// A bad argument.
    Invalid(String),
    /// The browser is missing, could not start, or went away.
    Browser(String),
}

impl From<wit::BrowserError> for BrowserError {
    fn from(e: wit::BrowserError) -> Self {
        match e {
            wit::BrowserError::Denied(m) => Self::Denied(m),
            wit::BrowserError::Timeout(m) => Self::Timeout(m),
            wit::BrowserError::Navigation(m) => Self::Navigation(m),
            wit::BrowserError::Script(m) => Self::Script(m),
            wit::BrowserError::Invalid(m) => Self::Invalid(m),
            wit::BrowserError::Browser(m) => Self::Browser(m),
        }
    }
}

impl fmt::Display for BrowserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, m) = match self {
            Self::Denied(m) => ("denied", m),
            Self::Timeout(m) => ("timeout", m),
            Self::Navigation(m) => ("navigation", m),
            Self::Script(m) => ("script", m),
            Self::Invalid(m) => ("invalid", m),
            Self::Browser(m) => ("browser", m),
        };
        write!(f, "browser {kind}: {m}")
    }
}

impl std::error::Error for BrowserError {}

impl From<BrowserError> for String {
    fn from(e: BrowserError) -> String {
        e.to_string()
    }
}

/// A context's options (k6's `newContext`); `None` keeps the browser's default.
#[derive(Debug, Clone, Default)]
pub struct ContextOptions {
    /// Viewport width and height in CSS pixels.
    pub viewport: Option<(u32, u32)>,
    /// Device pixels per CSS pixel.
    pub device_scale_factor: Option<f64>,
    /// Whether pages are shown as on a phone.
    pub is_mobile: Option<bool>,
    /// The `User-Agent`.
    pub user_agent: Option<String>,
    /// The locale (`de-DE`).
    pub locale: Option<String>,
    /// The time zone (`Europe/Berlin`).
    pub timezone_id: Option<String>,
    /// `light`, `dark` or `no-preference`.
    pub color_scheme: Option<String>,
    /// Headers sent with every request of the context's pages.
    pub extra_http_headers: Vec<(String, String)>,
}

/// When a navigation counts as done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WaitUntil {
    /// The `load` event.
    #[default]
    Load,
    /// `DOMContentLoaded`.
    DomContentLoaded,
    /// No request for 500 ms.
    NetworkIdle,
    /// The first response.
    Commit,
}

impl WaitUntil {
    fn name(self) -> &'static str {
        match self {
            Self::Load => "load",
            Self::DomContentLoaded => "domcontentloaded",
            Self::NetworkIdle => "networkidle",
            Self::Commit => "commit",
        }
    }
}

fn ms(d: Duration) -> u32 {
    d.as_millis().clamp(1, u128::from(u32::MAX)) as u32
}

/// A browser context: a fresh profile of its own (cookies, storage, cache).
#[derive(Debug)]
pub struct Context {
    inner: wit::Context,
}

impl Context {
    /// A new context for this VU.
    pub fn open(options: &ContextOptions) -> Result<Context, BrowserError> {
        let o = wit::ContextOptions {
            viewport_width: options.viewport.map(|v| v.0),
            viewport_height: options.viewport.map(|v| v.1),
            device_scale_factor: options.device_scale_factor,
            is_mobile: options.is_mobile,
            user_agent: options.user_agent.clone(),
            locale: options.locale.clone(),
            timezone_id: options.timezone_id.clone(),
            color_scheme: options.color_scheme.clone(),
            extra_http_headers: options.extra_http_headers.clone(),
        };
        Ok(Context {
            inner: wit::Context::open(&o)?,
        })
    }

    /// A new page (tab) in this context.
    pub fn new_page(&self) -> Result<Page, BrowserError> {
        Ok(Page {
            inner: self.inner.new_page()?,
            timeout: DEFAULT_TIMEOUT,
            router: RefCell::new(None),
        })
    }

    /// Adds cookies (k6's cookie objects: `{ name, value, url }` or `{ name, value,
    /// domain, path }`).
    pub fn add_cookies(&self, cookies: &serde_json::Value) -> Result<(), BrowserError> {
        Ok(self.inner.add_cookies(&cookies.to_string())?)
    }

    /// The context's cookies (those sent to one of `urls`, or all when empty).
    pub fn cookies(&self, urls: &[&str]) -> Result<serde_json::Value, BrowserError> {
        let urls: Vec<String> = urls.iter().map(|u| (*u).to_owned()).collect();
        let text = self.inner.cookies(&urls)?;
        serde_json::from_str(&text).map_err(|e| BrowserError::Script(e.to_string()))
    }

    /// Removes every cookie of the context.
    pub fn clear_cookies(&self) -> Result<(), BrowserError> {
        Ok(self.inner.clear_cookies()?)
    }

    /// Grants permissions (`geolocation`, `notifications`, ...) to `origin`, or to all.
    pub fn grant_permissions(
        &self,
        permissions: &[&str],
        origin: Option<&str>,
    ) -> Result<(), BrowserError> {
        let p: Vec<String> = permissions.iter().map(|s| (*s).to_owned()).collect();
        Ok(self.inner.grant_permissions(&p, origin)?)
    }

    /// The position the context's pages report.
    pub fn set_geolocation(
        &self,
        latitude: f64,
        longitude: f64,
        accuracy: f64,
    ) -> Result<(), BrowserError> {
        Ok(self.inner.set_geolocation(latitude, longitude, accuracy)?)
    }

    /// Closes the context and its pages.
    pub fn close(&self) -> Result<(), BrowserError> {
        Ok(self.inner.close()?)
    }
}

/// A page of a [`Context`].
pub struct Page {
    inner: wit::Page,
    timeout: Duration,
    router: RefCell<Option<Box<RouteHandler>>>,
}

impl fmt::Debug for Page {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Page")
            .field("inner", &self.inner)
            .field("timeout", &self.timeout)
            .field("routes", &self.router.borrow().is_some())
            .finish()
    }
}

/// What [`Page::route`]'s handler decides for one request (contract 0.3.10).
#[derive(Debug, Clone, PartialEq)]
pub enum RouteAnswer {
    /// Sent as it was.
    Continue,
    /// Sent changed: another URL (checked against the run's allowlist: a denied one
    /// fails and is counted in `http_reqs_denied`, never sent), headers replaced.
    ContinueWith {
        /// The new URL, if any.
        url: Option<String>,
        /// The headers sent instead, if any.
        headers: Option<Vec<(String, String)>>,
    },
    /// Failed with one of k6's error codes (`failed`, `aborted`, `blockedbyclient`, ...).
    Abort(String),
    /// Answered by the plugin; nothing is sent.
    Fulfill {
        /// The status.
        status: u16,
        /// The `Content-Type`.
        content_type: String,
        /// The body.
        body: String,
    },
}

/// A request of the page waiting for [`Page::route`]'s handler.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutedRequest {
    id: String,
    /// Its URL.
    pub url: String,
    /// Its method.
    pub method: String,
    /// Its headers.
    pub headers: std::collections::BTreeMap<String, String>,
    /// Its body, if any.
    pub post_data: Option<String>,
    /// `Document`, `Script`, `Fetch`, `Image`, ... (the protocol's names, as k6's).
    pub resource_type: String,
}

/// A route handler.
type RouteHandler = dyn FnMut(&RoutedRequest) -> RouteAnswer;

/// The error of a call that returned because routed requests wait.
const ROUTED: &str = "routed-requests-wait";

fn is_routed(e: &wit::BrowserError) -> bool {
    matches!(e, wit::BrowserError::Script(m) if m == ROUTED)
}

/// An event of the page (`Page::listen`, `Page::take_events`): `console` (`type`,
/// `text`, `args`), `request` (`url`, `method`, `headers`, `resourceType`, ...) or
/// `response` (`url`, `status`, `headers`, `request`), as JSON.
pub type PageEvent = serde_json::Value;

impl Page {
    /// Sets how long actions, waits and navigations wait from now on.
    pub fn set_default_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Navigates to `url` and waits for its `load` event; the document's status.
    pub fn goto(&self, url: &str) -> Result<u16, BrowserError> {
        self.goto_until(url, WaitUntil::Load)
    }

    /// Navigates to `url` and waits until `until`; the document's status.
    pub fn goto_until(&self, url: &str, until: WaitUntil) -> Result<u16, BrowserError> {
        self.resumed(self.inner.goto(url, until.name(), ms(self.timeout)))
    }

    /// A call's result, through the route handler while routed requests wait: the
    /// call is resumed (its result as JSON) until it ends.
    fn resumed<T: DeserializeOwned>(
        &self,
        first: Result<T, wit::BrowserError>,
    ) -> Result<T, BrowserError> {
        match first {
            Err(e) if is_routed(&e) => {
                let text = self.route_loop()?;
                serde_json::from_str(&text).map_err(|e| BrowserError::Script(e.to_string()))
            }
            other => Ok(other?),
        }
    }

    /// The same for a call whose result is JSON text already.
    fn resumed_text(
        &self,
        first: Result<String, wit::BrowserError>,
    ) -> Result<String, BrowserError> {
        match first {
            Err(e) if is_routed(&e) => self.route_loop(),
            other => Ok(other?),
        }
    }

    fn route_loop(&self) -> Result<String, BrowserError> {
        loop {
            let waiting: Vec<RoutedRequest> = serde_json::from_str(&self.inner.routed())
                .map_err(|e| BrowserError::Script(e.to_string()))?;
            for r in &waiting {
                let answer = match self.router.borrow_mut().as_mut() {
                    Some(handler) => handler(r),
                    None => RouteAnswer::Continue,
                };
                let (how, options) = match answer {
                    RouteAnswer::Continue => ("continue", serde_json::json!({})),
                    RouteAnswer::ContinueWith { url, headers } => (
                        "continue",
                        serde_json::json!({ "url": url,
                            "headers": headers.map(|h| h.into_iter().collect::<std::collections::BTreeMap<_, _>>()) }),
                    ),
                    RouteAnswer::Abort(code) => ("abort", serde_json::json!({ "errorCode": code })),
                    RouteAnswer::Fulfill {
                        status,
                        content_type,
                        body,
                    } => (
                        "fulfill",
                        serde_json::json!({ "status": status, "contentType": content_type, "body": body }),
                    ),
                };
                self.inner.route_answer(&r.id, how, &options.to_string())?;
            }
            match self.inner.resume() {
                Err(e) if is_routed(&e) => continue,
                other => return Ok(other?),
            }
        }
    }

    /// Hands every request the page is allowed to make to `handler` from now on
    /// (k6's `page.route`, one handler for all URLs: match `request.url` in it). A
    /// request to an origin the run does not allow never reaches it.
    pub fn route(&self, handler: impl FnMut(&RoutedRequest) -> RouteAnswer + 'static) {
        *self.router.borrow_mut() = Some(Box::new(handler));
        self.inner.set_routing(true);
    }

    /// Stops routing (k6's `unrouteAll`).
    pub fn unroute_all(&self) {
        *self.router.borrow_mut() = None;
        self.inner.set_routing(false);
    }

    /// Keeps the page's events of `kinds` (`console`, `request`, `response`) for
    /// [`Page::take_events`] (k6's `page.on`).
    pub fn listen(&self, kinds: &[&str]) -> Result<(), BrowserError> {
        let k: Vec<String> = kinds.iter().map(|s| (*s).to_owned()).collect();
        Ok(self.inner.listen(&k)?)
    }

    /// The events kept since the last take (at most 1,024; older ones are dropped).
    pub fn take_events(&self) -> Vec<PageEvent> {
        let v: serde_json::Value =
            serde_json::from_str(&self.inner.take_events()).unwrap_or_default();
        v["events"].as_array().cloned().unwrap_or_default()
    }

    /// Groups the page's metrics by URL (k6's `metric.tag`): a sample whose `url`
    /// matches `url_regex` (and `method`, when given) is tagged `url` and `name` =
    /// `name`. Replaces the rules given before.
    pub fn tag_metrics(&self, rules: &[(&str, &str, Option<&str>)]) -> Result<(), BrowserError> {
        let json: Vec<serde_json::Value> = rules
            .iter()
            .map(|(name, url, method)| {
                serde_json::json!({ "name": name,
                    "matches": [{ "url": { "source": url, "flags": "" }, "method": method }] })
            })
            .collect();
        Ok(self
            .inner
            .tag_metrics(&serde_json::Value::from(json).to_string())?)
    }

    /// Evaluates `function` with `arg`, keeping its value in the page (k6's
    /// `evaluateHandle`).
    pub fn evaluate_handle(
        &self,
        function: &str,
        arg: &impl Serialize,
    ) -> Result<JsHandle<'_>, BrowserError> {
        let arg = serde_json::to_string(arg).map_err(|e| BrowserError::Invalid(e.to_string()))?;
        let id = self.resumed(self.inner.evaluate_handle(function, &arg))?;
        Ok(JsHandle { page: self, id })
    }

    /// The first element `selector` finds now (k6's `page.$`), never waiting.
    pub fn query(&self, selector: &str) -> Result<Option<JsHandle<'_>>, BrowserError> {
        let ids: Vec<u32> = self.resumed(self.inner.query(selector, false))?;
        Ok(ids.first().map(|&id| JsHandle { page: self, id }))
    }

    /// Every element `selector` finds now (k6's `page.$$`).
    pub fn query_all(&self, selector: &str) -> Result<Vec<JsHandle<'_>>, BrowserError> {
        let ids: Vec<u32> = self.resumed(self.inner.query(selector, true))?;
        Ok(ids
            .into_iter()
            .map(|id| JsHandle { page: self, id })
            .collect())
    }

    /// The elements inside the (same-origin) iframe `selector` finds (k6's
    /// `frameLocator`): `page.frame_locator("iframe").locator("#in")`.
    pub fn frame_locator(&self, selector: &str) -> FrameLocator<'_> {
        FrameLocator {
            page: self,
            selector: selector.to_owned(),
        }
    }

    /// The mouse wheel turned at a point of the viewport by `(dx, dy)` CSS pixels.
    pub fn mouse_wheel(&self, x: f64, y: f64, dx: f64, dy: f64) -> Result<(), BrowserError> {
        Ok(self.inner.wheel(x, y, dx, dy)?)
    }

    /// Headers sent with every later request of the page.
    pub fn set_extra_http_headers(&self, headers: &[(&str, &str)]) -> Result<(), BrowserError> {
        let h: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Ok(self.inner.set_extra_http_headers(&h)?)
    }

    /// The CSS media the page sees (`screen`/`print`, `light`/`dark`/`no-preference`,
    /// `reduce`/`no-preference`); `None` leaves one as it is.
    pub fn emulate_media(
        &self,
        media: Option<&str>,
        color_scheme: Option<&str>,
        reduced_motion: Option<&str>,
    ) -> Result<(), BrowserError> {
        Ok(self
            .inner
            .emulate_media(media, color_scheme, reduced_motion)?)
    }

    /// JavaScript run in every document the page loads from now on.
    pub fn add_init_script(&self, source: &str) -> Result<(), BrowserError> {
        Ok(self.inner.add_init_script(source)?)
    }

    /// Takes the page off the network, or puts it back.
    pub fn set_offline(&self, offline: bool) -> Result<(), BrowserError> {
        Ok(self.inner.set_offline(offline)?)
    }

    /// A key (`Shift`, `a`) going down and staying down (k6's `keyboard.down`).
    pub fn keyboard_down(&self, key: &str) -> Result<(), BrowserError> {
        Ok(self.inner.keyboard_key(key, true)?)
    }

    /// The key going up (k6's `keyboard.up`).
    pub fn keyboard_up(&self, key: &str) -> Result<(), BrowserError> {
        Ok(self.inner.keyboard_key(key, false)?)
    }

    /// Main-frame navigations so far: take it before the action that navigates, and
    /// hand it to [`Page::wait_for_navigation`].
    pub fn navigation_mark(&self) -> u64 {
        self.inner.navigation_mark()
    }

    /// Waits for a navigation after `mark` to reach its `load` event.
    pub fn wait_for_navigation(&self, mark: u64) -> Result<(), BrowserError> {
        self.resumed(
            self.inner
                .wait_for_navigation(mark, WaitUntil::Load.name(), ms(self.timeout)),
        )
    }

    /// Waits until the element `selector` finds is `state` (`attached`, `detached`,
    /// `visible`, `hidden`).
    pub fn wait_for_selector(&self, selector: &str, state: &str) -> Result<(), BrowserError> {
        self.resumed(
            self.inner
                .wait_for_selector(selector, state, ms(self.timeout)),
        )
    }

    /// Evaluates `function` (a JavaScript function's source, or an expression) with
    /// `arg`; its result (promises awaited), read as `T`.
    pub fn evaluate<T: DeserializeOwned>(
        &self,
        function: &str,
        arg: &impl Serialize,
    ) -> Result<T, BrowserError> {
        let arg = serde_json::to_string(arg).map_err(|e| BrowserError::Invalid(e.to_string()))?;
        let text = self.resumed_text(self.inner.evaluate(function, &arg))?;
        serde_json::from_str(&text).map_err(|e| BrowserError::Script(e.to_string()))
    }

    /// The elements `selector` finds (CSS, `xpath=`, `text=`); acts on the first.
    pub fn locator(&self, selector: &str) -> Locator<'_> {
        Locator {
            page: self,
            selector: selector.to_owned(),
            nth: None,
        }
    }

    /// The document's title.
    pub fn title(&self) -> Result<String, BrowserError> {
        Ok(self.inner.title()?)
    }

    /// The main frame's URL.
    pub fn url(&self) -> Result<String, BrowserError> {
        Ok(self.inner.url()?)
    }

    /// The document's HTML.
    pub fn content(&self) -> Result<String, BrowserError> {
        Ok(self.inner.content()?)
    }

    /// A PNG of the page written into the run's results folder under `name`; the path.
    pub fn screenshot(&self, name: &str, full_page: bool) -> Result<String, BrowserError> {
        Ok(self.inner.screenshot(name, full_page)?)
    }

    /// Presses a key (`Enter`, `Tab`, `a`, `Control+A`) in the focused element.
    pub fn keyboard_press(&self, key: &str) -> Result<(), BrowserError> {
        Ok(self.inner.keyboard_press(key)?)
    }

    /// A left click at a point of the viewport (CSS pixels).
    pub fn mouse_click(&self, x: f64, y: f64) -> Result<(), BrowserError> {
        Ok(self.inner.mouse("click", x, y, "left", 1)?)
    }

    /// A touch at a point of the viewport.
    pub fn tap(&self, x: f64, y: f64) -> Result<(), BrowserError> {
        Ok(self.inner.tap(x, y)?)
    }

    /// Closes the page.
    pub fn close(&self) -> Result<(), BrowserError> {
        Ok(self.inner.close()?)
    }
}

/// Elements of a [`Page`] found by a selector, waited for when acted on.
#[derive(Debug, Clone)]
pub struct Locator<'a> {
    page: &'a Page,
    selector: String,
    nth: Option<i32>,
}

impl Locator<'_> {
    /// The `n`th element found (negative: from the end).
    pub fn nth(&self, n: i32) -> Self {
        Locator {
            nth: Some(n),
            ..self.clone()
        }
    }

    /// The elements `selector` finds inside this locator's.
    pub fn locator(&self, selector: &str) -> Self {
        Locator {
            page: self.page,
            selector: self.chain(selector),
            nth: None,
        }
    }

    /// `selector` searched inside this locator's element(s), its `nth` kept in the chain.
    fn chain(&self, selector: &str) -> String {
        match self.nth {
            Some(n) => format!("{} >> nth={n} >> {selector}", self.selector),
            None => format!("{} >> {selector}", self.selector),
        }
    }

    fn act(&self, action: wit::Action) -> Result<String, BrowserError> {
        self.page.resumed_text(self.page.inner.act(
            &self.selector,
            self.nth,
            &action,
            ms(self.page.timeout),
        ))
    }

    /// The elements inside the iframe(s) this locator finds.
    pub fn frame_locator(&self, selector: &str) -> FrameLocator<'_> {
        FrameLocator {
            page: self.page,
            selector: self.chain(selector),
        }
    }

    /// Dispatches DOM event `kind` with `init` (JSON: `{"detail": ...}`) on it.
    pub fn dispatch_event(&self, kind: &str, init: &serde_json::Value) -> Result<(), BrowserError> {
        let r = self.page.inner.dispatch_event(
            &self.selector,
            self.nth,
            kind,
            &init.to_string(),
            ms(self.page.timeout),
        );
        self.page.resumed(r)
    }

    fn read<T: DeserializeOwned>(&self, action: wit::Action) -> Result<T, BrowserError> {
        let text = self.act(action)?;
        serde_json::from_str(&text).map_err(|e| BrowserError::Script(e.to_string()))
    }

    /// Clicks it (a real mouse click at its centre).
    pub fn click(&self) -> Result<(), BrowserError> {
        self.act(wit::Action::Click).map(drop)
    }

    /// Sets its value (events `input` and `change`).
    pub fn fill(&self, value: &str) -> Result<(), BrowserError> {
        self.act(wit::Action::Fill(value.to_owned())).map(drop)
    }

    /// Types `text` into it key by key.
    pub fn type_text(&self, text: &str) -> Result<(), BrowserError> {
        self.act(wit::Action::Type(text.to_owned())).map(drop)
    }

    /// Presses one key on it.
    pub fn press(&self, key: &str) -> Result<(), BrowserError> {
        self.act(wit::Action::Press(key.to_owned())).map(drop)
    }

    /// Checks a checkbox or radio button.
    pub fn check(&self) -> Result<(), BrowserError> {
        self.act(wit::Action::Check).map(drop)
    }

    /// Its `textContent` (`None` for a node without one).
    pub fn text_content(&self) -> Result<Option<String>, BrowserError> {
        self.read(wit::Action::TextContent)
    }

    /// An attribute's value (`None` when absent).
    pub fn get_attribute(&self, name: &str) -> Result<Option<String>, BrowserError> {
        self.read(wit::Action::GetAttribute(name.to_owned()))
    }

    /// The value of an input, textarea or select.
    pub fn input_value(&self) -> Result<String, BrowserError> {
        self.read(wit::Action::InputValue)
    }

    /// Whether it is visible now (never waits).
    pub fn is_visible(&self) -> Result<bool, BrowserError> {
        self.read(wit::Action::IsVisible)
    }

    /// How many elements the selector finds now (never waits).
    pub fn count(&self) -> Result<u32, BrowserError> {
        self.read(wit::Action::Count)
    }
}

/// The elements inside the iframe(s) a selector finds ([`Page::frame_locator`]).
#[derive(Debug, Clone)]
pub struct FrameLocator<'a> {
    page: &'a Page,
    selector: String,
}

impl<'a> FrameLocator<'a> {
    /// The elements `selector` finds inside the iframe.
    pub fn locator(&self, selector: &str) -> Locator<'a> {
        Locator {
            page: self.page,
            selector: format!(
                "{} >> internal:control=enter-frame >> {selector}",
                self.selector
            ),
            nth: None,
        }
    }
}

/// A value kept in the page ([`Page::evaluate_handle`], [`Page::query`]); an element's
/// handle acts as a locator of that element. Disposed when dropped.
#[derive(Debug)]
pub struct JsHandle<'a> {
    page: &'a Page,
    id: u32,
}

impl JsHandle<'_> {
    /// Its value, read as `T`.
    pub fn json_value<T: DeserializeOwned>(&self) -> Result<T, BrowserError> {
        let text = self
            .page
            .resumed_text(self.page.inner.handle_json(self.id))?;
        serde_json::from_str(&text).map_err(|e| BrowserError::Script(e.to_string()))
    }

    /// `function(value, arg)` on it in the page; its result read as `T`.
    pub fn evaluate<T: DeserializeOwned>(
        &self,
        function: &str,
        arg: &impl Serialize,
    ) -> Result<T, BrowserError> {
        let arg = serde_json::to_string(arg).map_err(|e| BrowserError::Invalid(e.to_string()))?;
        let text = self
            .page
            .resumed_text(self.page.inner.handle_evaluate(self.id, function, &arg))?;
        serde_json::from_str(&text).map_err(|e| BrowserError::Script(e.to_string()))
    }

    fn act(&self, action: wit::Action) -> Result<String, BrowserError> {
        self.page.resumed_text(
            self.page
                .inner
                .handle_act(self.id, &action, ms(self.page.timeout)),
        )
    }

    /// Clicks the element.
    pub fn click(&self) -> Result<(), BrowserError> {
        self.act(wit::Action::Click).map(drop)
    }

    /// Sets the element's value.
    pub fn fill(&self, value: &str) -> Result<(), BrowserError> {
        self.act(wit::Action::Fill(value.to_owned())).map(drop)
    }

    /// The element's `textContent`.
    pub fn text_content(&self) -> Result<Option<String>, BrowserError> {
        let text = self.act(wit::Action::TextContent)?;
        serde_json::from_str(&text).map_err(|e| BrowserError::Script(e.to_string()))
    }

    /// An attribute of the element (`None` when absent).
    pub fn get_attribute(&self, name: &str) -> Result<Option<String>, BrowserError> {
        let text = self.act(wit::Action::GetAttribute(name.to_owned()))?;
        serde_json::from_str(&text).map_err(|e| BrowserError::Script(e.to_string()))
    }
}

impl Drop for JsHandle<'_> {
    fn drop(&mut self) {
        self.page.inner.handle_dispose(self.id);
    }
}
