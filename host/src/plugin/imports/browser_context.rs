//! `browser`'s contexts (contract 0.3.8): made, given options, cookies and permissions,
//! their pages, and closed; on the capability's view ([`BrowserView`]). The helpers
//! shared with the pages' imports are in browser_view.rs.

use super::browser_view::{json_text, to_wit};
use crate::browser::pool::ContextOptions;
use crate::plugin::bindings::loadtest::scenario::browser as wit;
use crate::plugin::browser::{BrowserContext, BrowserPage, BrowserView, MAX_CONTEXTS};
use serde_json::Value;
use std::sync::Arc;
use wasmtime::component::Resource;

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
        self.budgeted(context.add_cookies(cookies)).await
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
        self.budgeted(context.clear_cookies()).await
    }

    async fn close(&mut self, c: Resource<BrowserContext>) -> Result<(), wit::BrowserError> {
        let context = self.context(&c)?;
        self.ctx.open.retain(|o| !Arc::ptr_eq(o, &context));
        self.budgeted(context.close()).await
    }

    async fn grant_permissions(
        &mut self,
        c: Resource<BrowserContext>,
        permissions: Vec<String>,
        origin: Option<String>,
    ) -> Result<(), wit::BrowserError> {
        let context = self.context(&c)?;
        self.budgeted(context.grant_permissions(&permissions, origin.as_deref()))
            .await
    }

    async fn clear_permissions(
        &mut self,
        c: Resource<BrowserContext>,
    ) -> Result<(), wit::BrowserError> {
        let context = self.context(&c)?;
        self.budgeted(context.clear_permissions()).await
    }

    async fn set_geolocation(
        &mut self,
        c: Resource<BrowserContext>,
        latitude: f64,
        longitude: f64,
        accuracy: f64,
    ) -> Result<(), wit::BrowserError> {
        let context = self.context(&c)?;
        self.budgeted(context.set_geolocation(latitude, longitude, accuracy))
            .await
    }

    fn drop(&mut self, c: Resource<BrowserContext>) -> wasmtime::Result<()> {
        // The iteration's end closes it if the plugin did not.
        let _ = self.table.delete(c);
        Ok(())
    }
}
