//! `browser` (contract 0.3.8; events, routes, handles and emulation 0.3.10): converts
//! between the WIT resources and the host's browser ([`crate::browser`]), on the
//! capability's own view of the store ([`BrowserView`]). Contexts and pages live in
//! the VU's resource table; a context still open when its iteration ends is closed by
//! the host. Calls that wait on the page go through the page's router
//! ([`crate::browser::routes`]): while the page routes its requests to the plugin,
//! such a call returns early when one waits for the plugin, and `resume` goes on.

use crate::browser::actions::{self, Action, Target};
use crate::browser::input::{self, MouseKind};
use crate::browser::page::{Page, WaitUntil};
use crate::browser::pool::ContextOptions;
use crate::browser::BrowserError;
use crate::browser::{emulation, jshandle as handles};
use crate::plugin::bindings::loadtest::scenario::browser as wit;
use crate::plugin::browser::{BrowserContext, BrowserPage, BrowserView, MAX_CONTEXTS};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::Resource;

fn to_wit(e: BrowserError) -> wit::BrowserError {
    let m = e.to_string();
    match e {
        BrowserError::Denied(_) => wit::BrowserError::Denied(m),
        BrowserError::Timeout(_) => wit::BrowserError::Timeout(m),
        BrowserError::Navigation(_) => wit::BrowserError::Navigation(m),
        BrowserError::Script(_) => wit::BrowserError::Script(m),
        BrowserError::Invalid(_) => wit::BrowserError::Invalid(m),
        BrowserError::Launch(_) | BrowserError::Start(_) | BrowserError::Cdp(_) => {
            wit::BrowserError::Browser(m)
        }
    }
}

fn ms(timeout_ms: u32) -> Duration {
    Duration::from_millis(u64::from(timeout_ms.max(1)))
}

fn json_text(v: Value) -> String {
    v.to_string()
}

fn stale(what: &str) -> wit::BrowserError {
    wit::BrowserError::Invalid(format!("not a {what} of this VU (closed, or from another)"))
}

impl BrowserView<'_> {
    /// Runs `op` on `page`; through its router while it routes (see the module).
    async fn run_routed<T, F>(&mut self, page: &Arc<Page>, op: F) -> Result<T, wit::BrowserError>
    where
        T: Serialize + DeserializeOwned,
        F: Future<Output = Result<T, BrowserError>> + Send + 'static,
    {
        if !page.state.router.is_on() {
            let work = std::pin::pin!(op);
            return self.budget.wait(work).await.map_err(to_wit);
        }
        let op: crate::browser::routes::Op = Box::pin(async move {
            let v = op.await?;
            serde_json::to_value(v).map_err(|e| BrowserError::Script(e.to_string()))
        });
        let router = page.state.router.clone();
        let work = std::pin::pin!(router.run(op));
        let v = self.budget.wait(work).await.map_err(to_wit)?;
        serde_json::from_value(v).map_err(|e| wit::BrowserError::Script(e.to_string()))
    }

    fn page(
        &self,
        p: &Resource<BrowserPage>,
    ) -> Result<Arc<crate::browser::page::Page>, wit::BrowserError> {
        self.table
            .get(p)
            .map(|p| p.0.clone())
            .map_err(|_| stale("page"))
    }

    fn context(
        &self,
        c: &Resource<BrowserContext>,
    ) -> Result<Arc<crate::browser::pool::Context>, wit::BrowserError> {
        self.table
            .get(c)
            .map(|c| c.0.clone())
            .map_err(|_| stale("browser context"))
    }
}

fn action(a: wit::Action) -> Action {
    use wit::Action as A;
    match a {
        A::Click => Action::Click,
        A::Dblclick => Action::Dblclick,
        A::Hover => Action::Hover,
        A::Focus => Action::Focus,
        A::Check => Action::Check,
        A::Uncheck => Action::Uncheck,
        A::Fill(s) => Action::Fill(s),
        A::Type(s) => Action::Type(s),
        A::Press(s) => Action::Press(s),
        A::SelectOption(v) => Action::SelectOption(v),
        A::TextContent => Action::TextContent,
        A::InnerText => Action::InnerText,
        A::InnerHtml => Action::InnerHtml,
        A::InputValue => Action::InputValue,
        A::GetAttribute(s) => Action::GetAttribute(s),
        A::IsVisible => Action::IsVisible,
        A::IsHidden => Action::IsHidden,
        A::IsEnabled => Action::IsEnabled,
        A::IsChecked => Action::IsChecked,
        A::Count => Action::Count,
    }
}

/// A screenshot's name as a plain relative path inside the results folder.
fn screenshot_path(name: &str) -> Result<std::path::PathBuf, wit::BrowserError> {
    let path = std::path::Path::new(name);
    let plain = !name.is_empty()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !plain {
        return Err(wit::BrowserError::Invalid(format!(
            "screenshot path {:?}: write a relative path such as screenshots/home.png (it is \
             written inside the run's results folder)",
            crate::bounded::cut(name, crate::bounded::QUOTED_BYTES)
        )));
    }
    Ok(path.to_path_buf())
}

impl wit::HostContext for BrowserView<'_> {
    async fn open(
        &mut self,
        options: wit::ContextOptions,
    ) -> Result<Resource<BrowserContext>, wit::BrowserError> {
        self.ctx.open.retain(|c| !c.is_closed());
        if self.ctx.open.len() >= MAX_CONTEXTS {
            return Err(wit::BrowserError::Invalid(format!(
                "this VU has {MAX_CONTEXTS} browser contexts open, the most it may: close one \
                 first"
            )));
        }
        let viewport = match (options.viewport_width, options.viewport_height) {
            (Some(w), Some(h)) => Some((w, h)),
            (None, None) => None,
            _ => {
                return Err(wit::BrowserError::Invalid(
                    "viewport needs both width and height".into(),
                ))
            }
        };
        let options = ContextOptions {
            viewport,
            device_scale_factor: options.device_scale_factor,
            is_mobile: options.is_mobile,
            user_agent: options.user_agent,
            locale: options.locale,
            timezone_id: options.timezone_id,
            color_scheme: options.color_scheme,
            extra_http_headers: options.extra_http_headers,
        };
        let browsers = self.ctx.browsers.clone();
        let open = std::pin::pin!(async { browsers.pool().await?.context_with(options).await });
        let context = Arc::new(self.budget.wait(open).await.map_err(to_wit)?);
        self.ctx.open.push(context.clone());
        self.table
            .push(BrowserContext(context))
            .map_err(|e| wit::BrowserError::Invalid(format!("too many resources: {e}")))
    }

    async fn new_page(
        &mut self,
        c: Resource<BrowserContext>,
    ) -> Result<Resource<BrowserPage>, wit::BrowserError> {
        let context = self.context(&c)?;
        let tags = self.ctx.tags.clone();
        let open = std::pin::pin!(context.new_page(tags));
        let page = self.budget.wait(open).await.map_err(to_wit)?;
        self.table
            .push(BrowserPage(Arc::new(page)))
            .map_err(|e| wit::BrowserError::Invalid(format!("too many resources: {e}")))
    }

    async fn add_cookies(
        &mut self,
        c: Resource<BrowserContext>,
        cookies_json: String,
    ) -> Result<(), wit::BrowserError> {
        let context = self.context(&c)?;
        let cookies: Value = serde_json::from_str(&cookies_json)
            .map_err(|e| wit::BrowserError::Invalid(format!("cookies are not JSON: {e}")))?;
        let work = std::pin::pin!(context.add_cookies(cookies));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn cookies(
        &mut self,
        c: Resource<BrowserContext>,
        urls: Vec<String>,
    ) -> Result<String, wit::BrowserError> {
        let context = self.context(&c)?;
        let work = std::pin::pin!(context.cookies(&urls));
        self.budget.wait(work).await.map(json_text).map_err(to_wit)
    }

    async fn clear_cookies(
        &mut self,
        c: Resource<BrowserContext>,
    ) -> Result<(), wit::BrowserError> {
        let context = self.context(&c)?;
        let work = std::pin::pin!(context.clear_cookies());
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn close(&mut self, c: Resource<BrowserContext>) -> Result<(), wit::BrowserError> {
        let context = self.context(&c)?;
        self.ctx.open.retain(|o| !Arc::ptr_eq(o, &context));
        let work = std::pin::pin!(context.close());
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn grant_permissions(
        &mut self,
        c: Resource<BrowserContext>,
        permissions: Vec<String>,
        origin: Option<String>,
    ) -> Result<(), wit::BrowserError> {
        let context = self.context(&c)?;
        let work = std::pin::pin!(context.grant_permissions(&permissions, origin.as_deref()));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn clear_permissions(
        &mut self,
        c: Resource<BrowserContext>,
    ) -> Result<(), wit::BrowserError> {
        let context = self.context(&c)?;
        let work = std::pin::pin!(context.clear_permissions());
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn set_geolocation(
        &mut self,
        c: Resource<BrowserContext>,
        latitude: f64,
        longitude: f64,
        accuracy: f64,
    ) -> Result<(), wit::BrowserError> {
        let context = self.context(&c)?;
        let work = std::pin::pin!(context.set_geolocation(latitude, longitude, accuracy));
        self.budget.wait(work).await.map_err(to_wit)
    }

    fn drop(&mut self, c: Resource<BrowserContext>) -> wasmtime::Result<()> {
        // The iteration's end closes it if the plugin did not.
        let _ = self.table.delete(c);
        Ok(())
    }
}

impl wit::HostPage for BrowserView<'_> {
    async fn goto(
        &mut self,
        p: Resource<BrowserPage>,
        url: String,
        wait_until: String,
        timeout_ms: u32,
    ) -> Result<u16, wit::BrowserError> {
        let page = self.page(&p)?;
        let until = WaitUntil::parse(&wait_until).map_err(to_wit)?;
        let pg = page.clone();
        self.run_routed(
            &page,
            async move { pg.goto(&url, until, ms(timeout_ms)).await },
        )
        .await
    }

    async fn navigation_mark(&mut self, p: Resource<BrowserPage>) -> u64 {
        self.page(&p).map(|p| p.navigation_mark()).unwrap_or(0)
    }

    async fn wait_for_navigation(
        &mut self,
        p: Resource<BrowserPage>,
        mark: u64,
        wait_until: String,
        timeout_ms: u32,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let until = WaitUntil::parse(&wait_until).map_err(to_wit)?;
        let pg = page.clone();
        self.run_routed(&page, async move {
            pg.wait_for_navigation(mark, until, ms(timeout_ms)).await
        })
        .await
    }

    async fn wait_for_load_state(
        &mut self,
        p: Resource<BrowserPage>,
        state: String,
        timeout_ms: u32,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let until = WaitUntil::parse(&state).map_err(to_wit)?;
        let pg = page.clone();
        self.run_routed(&page, async move {
            pg.wait_for_load_state(until, ms(timeout_ms)).await
        })
        .await
    }

    async fn wait_for_selector(
        &mut self,
        p: Resource<BrowserPage>,
        selector: String,
        state: String,
        timeout_ms: u32,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let pg = page.clone();
        self.run_routed(&page, async move {
            actions::wait_for_selector(&pg, &selector, &state, ms(timeout_ms)).await
        })
        .await
    }

    async fn wait_for_function(
        &mut self,
        p: Resource<BrowserPage>,
        function: String,
        arg_json: String,
        polling_ms: u32,
        timeout_ms: u32,
    ) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let pg = page.clone();
        self.run_routed(&page, async move {
            actions::wait_for_function(&pg, &function, &arg_json, polling_ms, ms(timeout_ms)).await
        })
        .await
        .map(json_text)
    }

    async fn evaluate(
        &mut self,
        p: Resource<BrowserPage>,
        function: String,
        arg_json: String,
    ) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let pg = page.clone();
        self.run_routed(&page, async move {
            actions::evaluate(&pg, &function, &arg_json).await
        })
        .await
        .map(json_text)
    }

    async fn act(
        &mut self,
        p: Resource<BrowserPage>,
        selector: String,
        nth: Option<i32>,
        what: wit::Action,
        timeout_ms: u32,
    ) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let what = action(what);
        let pg = page.clone();
        self.run_routed(&page, async move {
            let target = Target::Selector(&selector, nth);
            actions::act(&pg, target, &what, ms(timeout_ms)).await
        })
        .await
        .map(json_text)
    }

    async fn title(&mut self, p: Resource<BrowserPage>) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(page.title());
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn url(&mut self, p: Resource<BrowserPage>) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(page.url());
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn content(&mut self, p: Resource<BrowserPage>) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(page.evaluate(
            "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '') + document.documentElement.outerHTML"
        ));
        let v = self.budget.wait(work).await.map_err(to_wit)?;
        Ok(v.as_str().unwrap_or("").to_owned())
    }

    async fn set_viewport_size(
        &mut self,
        p: Resource<BrowserPage>,
        width: u32,
        height: u32,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(page.call(
            "Emulation.setDeviceMetricsOverride",
            serde_json::json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        ));
        self.budget
            .wait(work)
            .await
            .map(|_| ())
            .map_err(|e| to_wit(e.into()))
    }

    async fn screenshot(
        &mut self,
        p: Resource<BrowserPage>,
        name: String,
        full_page: bool,
    ) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let relative = screenshot_path(&name)?;
        let Some(dir) = self.ctx.browsers.results().cloned() else {
            return Err(wit::BrowserError::Invalid(
                "screenshots are written into the run's results folder, which exists once \
                 the run starts (not in setup)"
                    .into(),
            ));
        };
        let work = std::pin::pin!(page.screenshot(full_page));
        let png = self.budget.wait(work).await.map_err(to_wit)?;
        let path = dir.join(&relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| wit::BrowserError::Invalid(format!("{}: {e}", parent.display())))?;
        }
        std::fs::write(&path, png)
            .map_err(|e| wit::BrowserError::Invalid(format!("{}: {e}", path.display())))?;
        Ok(path.display().to_string())
    }

    async fn keyboard_press(
        &mut self,
        p: Resource<BrowserPage>,
        key: String,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(actions::press(&page, &key));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn keyboard_type(
        &mut self,
        p: Resource<BrowserPage>,
        text: String,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(actions::type_text(&page, &text));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn mouse(
        &mut self,
        p: Resource<BrowserPage>,
        kind: String,
        x: f64,
        y: f64,
        button: String,
        click_count: u32,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let kind = MouseKind::parse(&kind).map_err(to_wit)?;
        let work = std::pin::pin!(input::mouse(&page, kind, (x, y), &button, click_count));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn tap(
        &mut self,
        p: Resource<BrowserPage>,
        x: f64,
        y: f64,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(input::tap(&page, (x, y)));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn close(&mut self, p: Resource<BrowserPage>) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(page.close());
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn listen(
        &mut self,
        p: Resource<BrowserPage>,
        kinds: Vec<String>,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        page.state
            .events
            .listen(&kinds)
            .map_err(wit::BrowserError::Invalid)
    }

    async fn take_events(&mut self, p: Resource<BrowserPage>) -> String {
        self.page(&p)
            .map(|page| page.state.events.take())
            .unwrap_or_else(|_| r#"{"events":[],"dropped":0}"#.into())
    }

    async fn tag_metrics(
        &mut self,
        p: Resource<BrowserPage>,
        rules_json: String,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let rules: Value = serde_json::from_str(&rules_json)
            .map_err(|e| wit::BrowserError::Invalid(format!("the rules are not JSON: {e}")))?;
        page.state
            .names
            .set(&rules)
            .map_err(wit::BrowserError::Invalid)
    }

    async fn set_routing(&mut self, p: Resource<BrowserPage>, on: bool) {
        if let Ok(page) = self.page(&p) {
            page.state.router.set_on(on);
            if !on {
                page.state.router.release(&page.conn);
            }
        }
    }

    async fn routed(&mut self, p: Resource<BrowserPage>) -> String {
        self.page(&p)
            .map(|page| page.state.router.take())
            .unwrap_or_else(|_| "[]".into())
    }

    async fn route_answer(
        &mut self,
        p: Resource<BrowserPage>,
        id: String,
        how: String,
        options_json: String,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let options: Value = if options_json.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&options_json).map_err(|e| {
                wit::BrowserError::Invalid(format!("the route's options are not JSON: {e}"))
            })?
        };
        let denied = |url: &str| page.gate.deny_counted(url, page.tags());
        page.state
            .router
            .answer(&page.conn, &denied, &id, &how, &options)
            .map_err(to_wit)
    }

    async fn resume(&mut self, p: Resource<BrowserPage>) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let router = page.state.router.clone();
        let work = std::pin::pin!(router.resume());
        self.budget.wait(work).await.map(json_text).map_err(to_wit)
    }

    async fn evaluate_handle(
        &mut self,
        p: Resource<BrowserPage>,
        function: String,
        arg_json: String,
    ) -> Result<u32, wit::BrowserError> {
        let page = self.page(&p)?;
        let pg = page.clone();
        self.run_routed(&page, async move {
            handles::evaluate_handle(&pg, &function, &arg_json).await
        })
        .await
    }

    async fn query(
        &mut self,
        p: Resource<BrowserPage>,
        selector: String,
        all: bool,
    ) -> Result<Vec<u32>, wit::BrowserError> {
        let page = self.page(&p)?;
        let pg = page.clone();
        self.run_routed(
            &page,
            async move { handles::query(&pg, &selector, all).await },
        )
        .await
    }

    async fn handle_json(
        &mut self,
        p: Resource<BrowserPage>,
        handle: u32,
    ) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let pg = page.clone();
        self.run_routed(&page, async move { handles::json_value(&pg, handle).await })
            .await
            .map(json_text)
    }

    async fn handle_evaluate(
        &mut self,
        p: Resource<BrowserPage>,
        handle: u32,
        function: String,
        arg_json: String,
    ) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let pg = page.clone();
        self.run_routed(&page, async move {
            handles::evaluate_on(&pg, handle, &function, &arg_json, true).await
        })
        .await
        .map(json_text)
    }

    async fn handle_evaluate_handle(
        &mut self,
        p: Resource<BrowserPage>,
        handle: u32,
        function: String,
        arg_json: String,
    ) -> Result<u32, wit::BrowserError> {
        let page = self.page(&p)?;
        let pg = page.clone();
        let v: Value = self
            .run_routed(&page, async move {
                handles::evaluate_on(&pg, handle, &function, &arg_json, false).await
            })
            .await?;
        v.as_u64()
            .map(|n| n as u32)
            .ok_or_else(|| wit::BrowserError::Script("no handle was kept".into()))
    }

    async fn handle_act(
        &mut self,
        p: Resource<BrowserPage>,
        handle: u32,
        what: wit::Action,
        timeout_ms: u32,
    ) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let what = action(what);
        let pg = page.clone();
        self.run_routed(&page, async move {
            handles::act_on(&pg, handle, &what, ms(timeout_ms)).await
        })
        .await
        .map(json_text)
    }

    async fn handle_dispose(&mut self, p: Resource<BrowserPage>, handle: u32) {
        if let Ok(page) = self.page(&p) {
            handles::dispose(&page, handle);
        }
    }

    async fn dispatch_event(
        &mut self,
        p: Resource<BrowserPage>,
        selector: String,
        nth: Option<i32>,
        kind: String,
        init_json: String,
        timeout_ms: u32,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let init: Value = if init_json.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&init_json).map_err(|e| {
                wit::BrowserError::Invalid(format!("the event's init is not JSON: {e}"))
            })?
        };
        let what = Action::Dispatch(kind, init);
        let pg = page.clone();
        let _: Value = self
            .run_routed(&page, async move {
                let target = Target::Selector(&selector, nth);
                actions::act(&pg, target, &what, ms(timeout_ms)).await
            })
            .await?;
        Ok(())
    }

    async fn wheel(
        &mut self,
        p: Resource<BrowserPage>,
        x: f64,
        y: f64,
        delta_x: f64,
        delta_y: f64,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(input::wheel(&page, (x, y), (delta_x, delta_y)));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn set_extra_http_headers(
        &mut self,
        p: Resource<BrowserPage>,
        headers: Vec<(String, String)>,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(emulation::set_extra_http_headers(&page, &headers));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn emulate_media(
        &mut self,
        p: Resource<BrowserPage>,
        media: Option<String>,
        color_scheme: Option<String>,
        reduced_motion: Option<String>,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(emulation::emulate_media(
            &page,
            media.as_deref(),
            color_scheme.as_deref(),
            reduced_motion.as_deref()
        ));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn add_init_script(
        &mut self,
        p: Resource<BrowserPage>,
        source: String,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(emulation::add_init_script(&page, &source));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn set_offline(
        &mut self,
        p: Resource<BrowserPage>,
        offline: bool,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(emulation::set_offline(&page, offline));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn keyboard_key(
        &mut self,
        p: Resource<BrowserPage>,
        key: String,
        down: bool,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(actions::key_half(&page, &key, 0, down));
        self.budget.wait(work).await.map_err(to_wit)
    }

    fn drop(&mut self, p: Resource<BrowserPage>) -> wasmtime::Result<()> {
        let _ = self.table.delete(p);
        Ok(())
    }
}

impl wit::Host for BrowserView<'_> {}
