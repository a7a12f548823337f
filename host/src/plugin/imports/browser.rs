//! `browser` (contract 0.3.8): converts between the WIT resources and the host's
//! browser ([`crate::browser`]), on the capability's own view of the store
//! ([`BrowserView`]). Contexts and pages live in the VU's resource table; a context
//! still open when its iteration ends is closed by the host.

use crate::browser::actions::{self, Action};
use crate::browser::input::{self, MouseKind};
use crate::browser::page::WaitUntil;
use crate::browser::pool::ContextOptions;
use crate::browser::BrowserError;
use crate::plugin::bindings::loadtest::scenario::browser as wit;
use crate::plugin::browser::{BrowserContext, BrowserPage, BrowserView, MAX_CONTEXTS};
use serde_json::Value;
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
        let work = std::pin::pin!(page.goto(&url, until, ms(timeout_ms)));
        self.budget.wait(work).await.map_err(to_wit)
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
        let work = std::pin::pin!(page.wait_for_navigation(mark, until, ms(timeout_ms)));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn wait_for_load_state(
        &mut self,
        p: Resource<BrowserPage>,
        state: String,
        timeout_ms: u32,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let until = WaitUntil::parse(&state).map_err(to_wit)?;
        let work = std::pin::pin!(page.wait_for_load_state(until, ms(timeout_ms)));
        self.budget.wait(work).await.map_err(to_wit)
    }

    async fn wait_for_selector(
        &mut self,
        p: Resource<BrowserPage>,
        selector: String,
        state: String,
        timeout_ms: u32,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(actions::wait_for_selector(
            &page,
            &selector,
            &state,
            ms(timeout_ms)
        ));
        self.budget.wait(work).await.map_err(to_wit)
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
        let work = std::pin::pin!(actions::wait_for_function(
            &page,
            &function,
            &arg_json,
            polling_ms,
            ms(timeout_ms)
        ));
        self.budget.wait(work).await.map(json_text).map_err(to_wit)
    }

    async fn evaluate(
        &mut self,
        p: Resource<BrowserPage>,
        function: String,
        arg_json: String,
    ) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let work = std::pin::pin!(actions::evaluate(&page, &function, &arg_json));
        self.budget.wait(work).await.map(json_text).map_err(to_wit)
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
        let work = std::pin::pin!(actions::act(&page, &selector, nth, &what, ms(timeout_ms)));
        self.budget.wait(work).await.map(json_text).map_err(to_wit)
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

    fn drop(&mut self, p: Resource<BrowserPage>) -> wasmtime::Result<()> {
        let _ = self.table.delete(p);
        Ok(())
    }
}

impl wit::Host for BrowserView<'_> {}
