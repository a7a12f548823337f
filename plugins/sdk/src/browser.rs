//! Pages of a real browser, driven by the host (the contract's `browser` interface,
//! 0.3.8): the host runs Chromium, shared by the VUs, with a fresh context (cookies,
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
#[derive(Debug)]
pub struct Page {
    inner: wit::Page,
    timeout: Duration,
}

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
        Ok(self.inner.goto(url, until.name(), ms(self.timeout))?)
    }

    /// Main-frame navigations so far: take it before the action that navigates, and
    /// hand it to [`Page::wait_for_navigation`].
    pub fn navigation_mark(&self) -> u64 {
        self.inner.navigation_mark()
    }

    /// Waits for a navigation after `mark` to reach its `load` event.
    pub fn wait_for_navigation(&self, mark: u64) -> Result<(), BrowserError> {
        Ok(self
            .inner
            .wait_for_navigation(mark, WaitUntil::Load.name(), ms(self.timeout))?)
    }

    /// Waits until the element `selector` finds is `state` (`attached`, `detached`,
    /// `visible`, `hidden`).
    pub fn wait_for_selector(&self, selector: &str, state: &str) -> Result<(), BrowserError> {
        Ok(self
            .inner
            .wait_for_selector(selector, state, ms(self.timeout))?)
    }

    /// Evaluates `function` (a JavaScript function's source, or an expression) with
    /// `arg`; its result (promises awaited), read as `T`.
    pub fn evaluate<T: DeserializeOwned>(
        &self,
        function: &str,
        arg: &impl Serialize,
    ) -> Result<T, BrowserError> {
        let arg = serde_json::to_string(arg).map_err(|e| BrowserError::Invalid(e.to_string()))?;
        let text = self.inner.evaluate(function, &arg)?;
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
        let chain = match self.nth {
            Some(n) => format!("{} >> nth={n} >> {selector}", self.selector),
            None => format!("{} >> {selector}", self.selector),
        };
        Locator {
            page: self.page,
            selector: chain,
            nth: None,
        }
    }

    fn act(&self, action: wit::Action) -> Result<String, BrowserError> {
        Ok(self
            .page
            .inner
            .act(&self.selector, self.nth, &action, ms(self.page.timeout))?)
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
