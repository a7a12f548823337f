//! The `browser` capability's state: one struct for the capability ([`BrowserCtx`], one
//! field of the VU's store) and the view its imports are implemented on
//! ([`BrowserView`]), as `sockets` has. The contexts a VU opens in an iteration are
//! closed when the iteration ends (k6 closes a VU's browser context at the end of
//! each iteration); the imports themselves are in `imports/browser.rs`.

use super::budget::CallBudget;
use crate::browser::page::Page;
use crate::browser::pool::Context;
use crate::browser::service::Browsers;
use crate::metrics::TagSet;
use std::sync::Arc;
use wasmtime::component::{HasData, ResourceTable};

/// A browser context as the plugin holds it (public: the contract's `context`
/// resource is this type).
pub struct BrowserContext(pub(crate) Arc<Context>);

/// A page as the plugin holds it (public: the contract's `page` resource is this type).
pub struct BrowserPage(pub(crate) Arc<Page>);

/// Most contexts one VU may have open at once (k6 allows one).
pub(crate) const MAX_CONTEXTS: usize = 4;

/// What one VU's browser use holds: the run's browsers, the VU's tags, and the
/// contexts it opened in this iteration.
pub(crate) struct BrowserCtx {
    /// The run's browsers.
    pub(crate) browsers: Arc<Browsers>,
    /// The VU's tags, under which its pages' metrics go.
    pub(crate) tags: TagSet,
    /// Contexts open in this iteration, closed when it ends.
    pub(crate) open: Vec<Arc<Context>>,
}

impl BrowserCtx {
    /// The state of a VU with `tags`.
    pub(crate) fn new(browsers: Arc<Browsers>, tags: TagSet) -> Self {
        Self {
            browsers,
            tags,
            open: Vec::new(),
        }
    }

    /// Closes what the iteration left open (without waiting: the browser disposes
    /// the contexts while the next iteration starts).
    pub(crate) fn end_iteration(&mut self) {
        // Dropping the last handle of a context disposes it; the plugin's own
        // handles (resources) are now stale and its calls on them fail.
        for context in self.open.drain(..) {
            context.dispose_now();
        }
    }
}

/// What the `browser` imports reach of a VU's store.
pub(crate) struct BrowserView<'a> {
    /// The capability's state.
    pub(crate) ctx: &'a mut BrowserCtx,
    /// The VU's resource table (shared with WASI and the other imports).
    pub(crate) table: &'a mut ResourceTable,
    /// The call's budget: a wait gives the thread back, and is noted.
    pub(crate) budget: &'a mut CallBudget,
}

/// The `HasData` of the `browser` interface: its imports see a [`BrowserView`].
pub(crate) struct HasBrowser;

impl HasData for HasBrowser {
    type Data<'a> = BrowserView<'a>;
}
