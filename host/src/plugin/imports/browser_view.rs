//! What the `browser` imports share (browser.rs for pages, browser_context.rs for
//! contexts): the host's errors as the contract's, the page or context behind a handle
//! of the VU's table, a call that waits on a page run through the page's router
//! ([`crate::browser::routes`]), and the conversions of actions and screenshot paths.

use crate::browser::actions::Action;
use crate::browser::page::Page;
use crate::browser::BrowserError;
use crate::plugin::bindings::loadtest::scenario::browser as wit;
use crate::plugin::browser::{BrowserContext, BrowserPage, BrowserView};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::Resource;

/// The host's browser error as the contract's case, with its message.
pub(super) fn to_wit(e: BrowserError) -> wit::BrowserError {
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

/// A timeout in milliseconds as a duration (at least 1 ms: 0 would expire at once).
pub(super) fn ms(timeout_ms: u32) -> Duration {
    Duration::from_millis(u64::from(timeout_ms.max(1)))
}

/// A JSON value as the text the contract carries.
pub(super) fn json_text(v: Value) -> String {
    v.to_string()
}

/// The error of a handle that is not (or no longer) one of this VU's.
fn stale(what: &str) -> wit::BrowserError {
    wit::BrowserError::Invalid(format!("not a {what} of this VU (closed, or from another)"))
}

impl BrowserView<'_> {
    /// Runs `work` within the iteration's browser budget, its error as the contract's.
    pub(super) async fn budgeted<T>(
        &mut self,
        work: impl Future<Output = Result<T, BrowserError>>,
    ) -> Result<T, wit::BrowserError> {
        let work = std::pin::pin!(work);
        self.budget.wait(work).await.map_err(to_wit)
    }

    /// Runs `op` on `page`; through its router while it routes (see the module).
    pub(super) async fn run_routed<T, F>(
        &mut self,
        page: &Arc<Page>,
        op: F,
    ) -> Result<T, wit::BrowserError>
    where
        T: Serialize + DeserializeOwned,
        F: Future<Output = Result<T, BrowserError>> + Send + 'static,
    {
        if !page.state.router.is_on() {
            return self.budgeted(op).await;
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

    /// The page behind `p`, or the error of a stale handle.
    pub(super) fn page(
        &self,
        p: &Resource<BrowserPage>,
    ) -> Result<Arc<crate::browser::page::Page>, wit::BrowserError> {
        self.table
            .get(p)
            .map(|p| p.0.clone())
            .map_err(|_| stale("page"))
    }

    /// The browser context behind `c`, or the error of a stale handle.
    pub(super) fn context(
        &self,
        c: &Resource<BrowserContext>,
    ) -> Result<Arc<crate::browser::pool::Context>, wit::BrowserError> {
        self.table
            .get(c)
            .map(|c| c.0.clone())
            .map_err(|_| stale("browser context"))
    }
}

/// The contract's locator action as the host's.
pub(super) fn action(a: wit::Action) -> Action {
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
pub(super) fn screenshot_path(name: &str) -> Result<std::path::PathBuf, wit::BrowserError> {
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
