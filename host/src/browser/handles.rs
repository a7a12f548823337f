//! The table of a page's handles: k6's `JSHandle` (`evaluateHandle`) and
//! `ElementHandle` (`page.$`, `page.$$`) by number. The page holds the value (the
//! protocol's remote object); the script holds a number of this page. At most
//! [`MAX_HANDLES`] live per page, so a script that never disposes cannot grow the page
//! or the host without bound; a handle outlives no navigation (its object goes with
//! its document). What the script does with them is in [`super::jshandle`].

use super::BrowserError;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;

/// Handles one page keeps at once.
pub(crate) const MAX_HANDLES: usize = 4096;

/// What a handle holds: an object of the page, or a plain value (a primitive has no
/// object).
#[derive(Clone)]
pub(crate) enum Held {
    /// A remote object's id.
    Object(String),
    /// A primitive's value.
    Value(Value),
}

#[derive(Default)]
struct Table {
    next: u32,
    held: HashMap<u32, Held>,
}

/// One page's handles.
#[derive(Default)]
pub(crate) struct Handles {
    table: Mutex<Table>,
}

impl Handles {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps a remote object (`Runtime.RemoteObject`); its number.
    pub(crate) fn keep(&self, remote: &Value) -> Result<u32, BrowserError> {
        let held = match remote.get("objectId").and_then(Value::as_str) {
            Some(id) => Held::Object(id.to_owned()),
            None => Held::Value(remote.get("value").cloned().unwrap_or(Value::Null)),
        };
        let mut t = self.lock();
        if t.held.len() >= MAX_HANDLES {
            return Err(BrowserError::Invalid(format!(
                "this page holds {MAX_HANDLES} handles, the most it may: dispose() those no \
                 longer needed"
            )));
        }
        t.next = t.next.wrapping_add(1);
        let id = t.next;
        t.held.insert(id, held);
        Ok(id)
    }

    /// What handle `id` holds.
    pub(crate) fn get(&self, id: u32) -> Result<Held, BrowserError> {
        self.lock().held.get(&id).cloned().ok_or_else(|| {
            BrowserError::Invalid(format!(
                "handle {id} is not this page's (disposed, or from another page)"
            ))
        })
    }

    /// Forgets handle `id`; what it held.
    pub(crate) fn remove(&self, id: u32) -> Option<Held> {
        self.lock().held.remove(&id)
    }
}
