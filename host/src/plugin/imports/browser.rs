//! `browser` (contract 0.3.8; events, routes, handles and emulation 0.3.10): converts
//! between the WIT resources and the host's browser ([`crate::browser`]), on the
//! capability's own view of the store ([`BrowserView`]). Contexts and pages live in
//! the VU's resource table; a context still open when its iteration ends is closed by
//! the host. Calls that wait on the page go through the page's router
//! ([`crate::browser::routes`]): while the page routes its requests to the plugin,
//! such a call returns early when one waits for the plugin, and `resume` goes on.

use super::browser_view::{action, json_text, ms, screenshot_path, to_wit};
use crate::browser::actions::{self, Action, Target};
use crate::browser::input::{self, MouseKind};
use crate::browser::page::WaitUntil;
use crate::browser::{emulation, jshandle as handles};
use crate::plugin::bindings::loadtest::scenario::browser as wit;
use crate::plugin::browser::{BrowserPage, BrowserView};
use serde_json::Value;
use wasmtime::component::Resource;

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
        self.budgeted(page.title()).await
    }

    async fn url(&mut self, p: Resource<BrowserPage>) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        self.budgeted(page.url()).await
    }

    async fn content(&mut self, p: Resource<BrowserPage>) -> Result<String, wit::BrowserError> {
        let page = self.page(&p)?;
        let v = self
            .budgeted(page.evaluate(
                "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '') + document.documentElement.outerHTML"
            ))
            .await?;
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
        let png = self.budgeted(page.screenshot(full_page)).await?;
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
        self.budgeted(actions::press(&page, &key)).await
    }

    async fn keyboard_type(
        &mut self,
        p: Resource<BrowserPage>,
        text: String,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        self.budgeted(actions::type_text(&page, &text)).await
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
        self.budgeted(input::mouse(&page, kind, (x, y), &button, click_count))
            .await
    }

    async fn tap(
        &mut self,
        p: Resource<BrowserPage>,
        x: f64,
        y: f64,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        self.budgeted(input::tap(&page, (x, y))).await
    }

    async fn close(&mut self, p: Resource<BrowserPage>) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        self.budgeted(page.close()).await
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
        self.budgeted(router.resume()).await.map(json_text)
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
        self.budgeted(input::wheel(&page, (x, y), (delta_x, delta_y)))
            .await
    }

    async fn set_extra_http_headers(
        &mut self,
        p: Resource<BrowserPage>,
        headers: Vec<(String, String)>,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        self.budgeted(emulation::set_extra_http_headers(&page, &headers))
            .await
    }

    async fn emulate_media(
        &mut self,
        p: Resource<BrowserPage>,
        media: Option<String>,
        color_scheme: Option<String>,
        reduced_motion: Option<String>,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        self.budgeted(emulation::emulate_media(
            &page,
            media.as_deref(),
            color_scheme.as_deref(),
            reduced_motion.as_deref(),
        ))
        .await
    }

    async fn add_init_script(
        &mut self,
        p: Resource<BrowserPage>,
        source: String,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        self.budgeted(emulation::add_init_script(&page, &source))
            .await
    }

    async fn set_offline(
        &mut self,
        p: Resource<BrowserPage>,
        offline: bool,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        self.budgeted(emulation::set_offline(&page, offline)).await
    }

    async fn keyboard_key(
        &mut self,
        p: Resource<BrowserPage>,
        key: String,
        down: bool,
    ) -> Result<(), wit::BrowserError> {
        let page = self.page(&p)?;
        self.budgeted(actions::key_half(&page, &key, 0, down)).await
    }

    fn drop(&mut self, p: Resource<BrowserPage>) -> wasmtime::Result<()> {
        let _ = self.table.delete(p);
        Ok(())
    }
}

impl wit::Host for BrowserView<'_> {}
