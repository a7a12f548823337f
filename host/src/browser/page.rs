//! One page (tab) of a context: its protocol session, what it has loaded so far
//! (navigations and their lifecycle events, the document's status), navigation and
//! waiting, evaluation. Element actions are in [`super::actions`].

use super::allow::{check, Gate, Verdict};
use super::cdp::{CdpError, Connection, Event, Sink};
use super::events::Events;
use super::handles::Handles;
use super::routes::Router;
use super::tagging::MetricNames;
use super::traffic::Traffic;
use super::vitals::Vitals;
use super::BrowserError;
use crate::metrics::TagSet;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// When a navigation counts as done (k6's and Playwright's `waitUntil`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitUntil {
    /// The `load` event.
    Load,
    /// `DOMContentLoaded`.
    DomContentLoaded,
    /// No network request for 500 ms.
    NetworkIdle,
    /// The first response (commit).
    Commit,
}

impl WaitUntil {
    /// k6's names: `load`, `domcontentloaded`, `networkidle`, `commit`.
    pub(crate) fn parse(name: &str) -> Result<WaitUntil, BrowserError> {
        Ok(match name {
            "" | "load" => WaitUntil::Load,
            "domcontentloaded" => WaitUntil::DomContentLoaded,
            "networkidle" => WaitUntil::NetworkIdle,
            "commit" => WaitUntil::Commit,
            other => {
                return Err(BrowserError::Invalid(format!(
                    "waitUntil {other:?}: write load, domcontentloaded, networkidle or commit"
                )))
            }
        })
    }

    fn lifecycle_name(self) -> &'static str {
        match self {
            WaitUntil::Load => "load",
            WaitUntil::DomContentLoaded => "DOMContentLoaded",
            WaitUntil::NetworkIdle => "networkIdle",
            WaitUntil::Commit => "commit",
        }
    }
}

/// What the page has loaded: navigations of its main frame counted, the current
/// document's lifecycle events and status.
#[derive(Default)]
struct Loaded {
    /// Main-frame navigations started (each a new document).
    navigations: u64,
    /// The current document's loader id.
    loader: String,
    /// Its lifecycle events so far (`commit` once it has a response).
    events: HashSet<String>,
    /// The status of each document's response, by loader id (the last few).
    status: Vec<(String, u16)>,
    /// Whether the target crashed or was closed.
    gone: Option<String>,
}

/// What a page's events update: its loads, its vitals and its requests' metrics.
pub(crate) struct PageState {
    frame: String,
    /// The page's protocol session (the context sets its geolocation on it).
    pub(crate) session: String,
    loaded: Mutex<Loaded>,
    changed: Notify,
    recorder: Arc<crate::metrics::Recorder>,
    vitals: Vitals,
    traffic: Traffic,
    /// The allowlist's gate, for the page's WebSockets, and the page's tags.
    gate: Arc<Gate>,
    tags: TagSet,
    /// The events kept for the script (`page.on`).
    pub(crate) events: Events,
    /// The rules that group the page's metrics by URL (`metric.tag`).
    pub(crate) names: Arc<MetricNames>,
    /// The requests routed to the script (`page.route`).
    pub(crate) router: Arc<Router>,
}

impl PageState {
    /// Records the vitals kept for the document that is going.
    pub(crate) fn flush(&self) {
        self.vitals.flush(&self.recorder);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loaded> {
        self.loaded.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn on_event(&self, conn: &Connection, event: Event) {
        let p = &event.params;
        let frame = p.get("frameId").and_then(Value::as_str);
        let main = frame == Some(self.frame.as_str());
        let str_of = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        match event.method.as_str() {
            "Page.lifecycleEvent" if main => {
                let mut l = self.lock();
                let name = str_of("name");
                let loader = str_of("loaderId");
                if name == "init" {
                    // The previous document is gone: its last LCP, CLS and INP count.
                    self.vitals.flush(&self.recorder);
                    l.navigations += 1;
                    l.events.clear();
                    // Its response may have been reported first.
                    if l.status.iter().any(|(id, _)| *id == loader) {
                        l.events.insert("commit".into());
                    }
                    l.loader = loader;
                } else if loader == l.loader {
                    l.events.insert(name);
                }
                drop(l);
                self.changed.notify_waiters();
            }
            "Network.responseReceived" if str_of("type") == "Document" => {
                let loader = str_of("loaderId");
                let status = p
                    .pointer("/response/status")
                    .and_then(Value::as_u64)
                    .unwrap_or(0) as u16;
                let mut l = self.lock();
                if l.status.len() >= 8 {
                    l.status.remove(0);
                }
                l.status.push((loader.clone(), status));
                if loader == l.loader {
                    l.events.insert("commit".into());
                }
                drop(l);
                self.changed.notify_waiters();
            }
            "Page.navigatedWithinDocument" if main => {
                self.lock().navigations += 1;
                self.changed.notify_waiters();
            }
            // A frame's requests are its page's (tags, routes).
            "Page.frameAttached" => {
                self.gate
                    .frame_attached(&str_of("frameId"), &str_of("parentFrameId"));
            }
            "Page.frameDetached" => self.gate.frame_detached(&str_of("frameId"), &self.frame),
            "Inspector.targetCrashed" | "Inspector.detached" => self.flush(),
            _ => {}
        }
        match event.method.as_str() {
            "Inspector.targetCrashed" => {
                self.lock().gone = Some("the page crashed".into());
                self.changed.notify_waiters();
            }
            "Inspector.detached" => {
                self.lock().gone = Some(format!("the page was closed ({})", str_of("reason")));
                self.changed.notify_waiters();
            }
            "Runtime.bindingCalled" if str_of("name") == super::vitals::BINDING => {
                self.vitals.report(&self.recorder, &str_of("payload"));
            }
            // The handshake fails at the dead-end proxy; counted here, as a request the
            // gate refused is (the proxy cannot tell which page it serves).
            "Network.webSocketCreated" => {
                let url = str_of("url");
                if let Verdict::Deny(why) = check(self.gate.allowlist(), &url) {
                    self.gate.denied(&url, &why, &self.tags);
                }
            }
            _ => {}
        }
        if event.method.starts_with("Network.") || event.method == "Runtime.consoleAPICalled" {
            self.events.on_event(&event.method, p);
        }
        if event.method.starts_with("Network.") {
            self.traffic.on_event(&self.recorder, &event.method, p);
        }
        let _ = conn;
    }
}

/// The media a page emulates: type (`screen`, `print`), color scheme, reduced motion.
pub(crate) type Media = (Option<String>, Option<String>, Option<String>);

/// One page of a context.
pub(crate) struct Page {
    pub(crate) conn: Connection,
    pub(crate) session: String,
    pub(crate) target: String,
    pub(crate) state: Arc<PageState>,
    pub(crate) gate: Arc<Gate>,
    /// The script's handles of values in the page (`evaluateHandle`, `page.$`).
    pub(crate) handles: Handles,
    /// The media emulated so far: type, color scheme, reduced motion.
    media: Mutex<Media>,
    closed: std::sync::atomic::AtomicBool,
}

impl Page {
    /// Opens a blank page in context `context`, attached with its own session.
    pub(crate) async fn open(
        conn: &Connection,
        gate: &Arc<Gate>,
        context: &str,
        tags: TagSet,
    ) -> Result<Page, BrowserError> {
        let created: TargetCreated = conn
            .call_as(
                None,
                "Target.createTarget",
                json!({ "url": "about:blank", "browserContextId": context }),
            )
            .await?;
        let target = created.target_id;
        let router = Arc::new(Router::default());
        gate.page_opened(&target, tags.clone(), router.clone());
        let attached: Attached = conn
            .call_as(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target, "flatten": true }),
            )
            .await?;
        let session = attached.session_id;
        let names = Arc::new(MetricNames::default());
        let state = Arc::new(PageState {
            frame: target.clone(),
            session: session.clone(),
            loaded: Mutex::default(),
            changed: Notify::new(),
            recorder: gate.recorder().clone(),
            vitals: Vitals::new(tags.clone(), names.clone()),
            traffic: Traffic::new(tags.clone(), names.clone()),
            gate: gate.clone(),
            tags,
            events: Events::default(),
            names,
            router,
        });
        let sink_state = state.clone();
        let sink: Sink = Arc::new(move |conn, event| sink_state.on_event(conn, event));
        conn.on_session_events(&session, sink);
        let page = Page {
            conn: conn.clone(),
            session,
            target,
            state,
            gate: gate.clone(),
            handles: Handles::default(),
            media: Mutex::default(),
            closed: Default::default(),
        };
        for (method, params) in [
            ("Page.enable", json!({})),
            ("Page.setLifecycleEventsEnabled", json!({ "enabled": true })),
            ("Runtime.enable", json!({})),
            ("Network.enable", json!({})),
            (
                "Runtime.addBinding",
                json!({ "name": super::vitals::BINDING }),
            ),
            (
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": super::vitals::SCRIPT }),
            ),
        ] {
            page.call(method, params).await?;
        }
        Ok(page)
    }

    /// A command on this page's session.
    pub(crate) async fn call(&self, method: &str, params: Value) -> Result<Value, CdpError> {
        self.conn.call(Some(&self.session), method, params).await
    }

    /// Merges `media`, `color_scheme` and `reduced_motion` (each `None` kept as it
    /// was) into what the page emulates; the whole of it now.
    pub(crate) fn media(
        &self,
        media: Option<&str>,
        color_scheme: Option<&str>,
        reduced_motion: Option<&str>,
    ) -> Media {
        let mut m = self.media.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = media {
            m.0 = Some(v.to_owned());
        }
        if let Some(v) = color_scheme {
            m.1 = Some(v.to_owned());
        }
        if let Some(v) = reduced_motion {
            m.2 = Some(v.to_owned());
        }
        m.clone()
    }

    /// Releases a remote object of the page, not waiting for the reply.
    pub(crate) fn send_release(&self, object: &str) {
        self.conn.send(
            Some(&self.session),
            "Runtime.releaseObject",
            json!({ "objectId": object }),
        );
    }

    /// Main-frame navigations so far: [`Page::wait_for_navigation`] waits for one past
    /// this mark, so a script can take the mark before the click that navigates.
    pub(crate) fn navigation_mark(&self) -> u64 {
        self.state.lock().navigations
    }

    /// Navigates to `url` and waits until `until`; the document's status (0 when the
    /// page has none, as `about:blank`). The URL is checked first: a denied target is
    /// an error here, as k6's `goto` fails.
    pub(crate) async fn goto(
        &self,
        url: &str,
        until: WaitUntil,
        timeout: Duration,
    ) -> Result<u16, BrowserError> {
        if let Verdict::Deny(why) = check(self.gate.allowlist(), url) {
            return Err(BrowserError::Denied(why));
        }
        let work = async {
            let nav = self.call("Page.navigate", json!({ "url": url })).await?;
            if let Some(err) = nav.get("errorText").and_then(Value::as_str) {
                if !err.is_empty() {
                    return Err(BrowserError::Navigation(format!("goto {url}: {err}")));
                }
            }
            let loader = nav.get("loaderId").and_then(Value::as_str).unwrap_or("");
            if loader.is_empty() {
                // A same-document navigation (a fragment): nothing to wait for.
                return Ok(0);
            }
            self.wait_until(|l| l.loader == loader && l.events.contains(until.lifecycle_name()))
                .await?;
            let l = self.state.lock();
            Ok(l.status
                .iter()
                .rev()
                .find(|(id, _)| id == loader)
                .map_or(0, |(_, s)| *s))
        };
        with_timeout(timeout, &format!("goto {url}"), work).await
    }

    /// Waits for a main-frame navigation past `mark` to reach `until`.
    pub(crate) async fn wait_for_navigation(
        &self,
        mark: u64,
        until: WaitUntil,
        timeout: Duration,
    ) -> Result<(), BrowserError> {
        let name = until.lifecycle_name();
        with_timeout(
            timeout,
            "waitForNavigation",
            self.wait_until(|l| l.navigations > mark && l.events.contains(name)),
        )
        .await
    }

    /// Waits until the current document reached `until`.
    pub(crate) async fn wait_for_load_state(
        &self,
        until: WaitUntil,
        timeout: Duration,
    ) -> Result<(), BrowserError> {
        let name = until.lifecycle_name();
        with_timeout(
            timeout,
            "waitForLoadState",
            self.wait_until(|l| l.navigations == 0 || l.events.contains(name)),
        )
        .await
    }

    async fn wait_until(&self, done: impl Fn(&Loaded) -> bool) -> Result<(), BrowserError> {
        loop {
            let notified = self.state.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let l = self.state.lock();
                if let Some(why) = &l.gone {
                    return Err(BrowserError::Navigation(why.clone()));
                }
                if done(&l) {
                    return Ok(());
                }
            }
            if self.conn.is_closed() {
                return Err(CdpError::Closed("the browser exited".into()).into());
            }
            notified.await;
        }
    }

    /// Evaluates `expression` in the page; its value as JSON (promises awaited).
    pub(crate) async fn evaluate(&self, expression: &str) -> Result<Value, BrowserError> {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({
                    "expression": expression,
                    "returnByValue": true,
                    "awaitPromise": true,
                    "userGesture": true,
                }),
            )
            .await?;
        value_of(r)
    }

    /// The document's title.
    pub(crate) async fn title(&self) -> Result<String, BrowserError> {
        Ok(self
            .evaluate("document.title")
            .await?
            .as_str()
            .unwrap_or("")
            .to_owned())
    }

    /// The main frame's URL.
    pub(crate) async fn url(&self) -> Result<String, BrowserError> {
        Ok(self
            .evaluate("location.href")
            .await?
            .as_str()
            .unwrap_or("")
            .to_owned())
    }

    /// A PNG of the viewport, or of the whole page.
    pub(crate) async fn screenshot(&self, full_page: bool) -> Result<Vec<u8>, BrowserError> {
        use base64::Engine;
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({ "format": "png", "captureBeyondViewport": full_page }),
            )
            .await?;
        let data = shot.get("data").and_then(Value::as_str).unwrap_or("");
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| BrowserError::Script(format!("the screenshot is not base64: {e}")))
    }

    /// Closes the page.
    pub(crate) async fn close(&self) -> Result<(), BrowserError> {
        if self.closed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        self.forget();
        self.conn
            .call(
                None,
                "Target.closeTarget",
                json!({ "targetId": self.target }),
            )
            .await?;
        Ok(())
    }

    /// The tags of the page's metrics.
    pub(crate) fn tags(&self) -> &TagSet {
        &self.state.tags
    }

    fn forget(&self) {
        self.state.router.set_on(false);
        self.state.router.release(&self.conn);
        self.state.vitals.flush(&self.state.recorder);
        self.conn.forget_session(&self.session);
        self.gate.page_closed(&self.target);
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        if !self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            self.forget();
            self.conn.send(
                None,
                "Target.closeTarget",
                json!({ "targetId": self.target }),
            );
        }
    }
}

/// A `Runtime.evaluate`/`callFunctionOn` result's value, or the page's exception.
pub(crate) fn value_of(mut r: Value) -> Result<Value, BrowserError> {
    if let Some(ex) = r.get("exceptionDetails") {
        let text = ex
            .pointer("/exception/description")
            .or_else(|| ex.get("text"))
            .and_then(Value::as_str)
            .unwrap_or("exception");
        return Err(BrowserError::Script(
            crate::bounded::cut(text, crate::bounded::MESSAGE_BYTES).into_owned(),
        ));
    }
    Ok(r.pointer_mut("/result/value")
        .map(Value::take)
        .unwrap_or(Value::Null))
}

/// `Target.createTarget`'s reply.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct TargetCreated {
    target_id: String,
}

/// `Target.attachToTarget`'s reply.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Attached {
    session_id: String,
}

/// Runs `work` for at most `timeout`; past it, a timeout error naming `what`.
pub(crate) async fn with_timeout<T>(
    timeout: Duration,
    what: &str,
    work: impl std::future::Future<Output = Result<T, BrowserError>>,
) -> Result<T, BrowserError> {
    match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(BrowserError::Timeout(format!(
            "{what}: timed out after {} ms",
            timeout.as_millis()
        ))),
    }
}
