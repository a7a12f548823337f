//! Read-only data sets shared by all VUs (`[data]` in the run config), loaded once by
//! the host from CSV or JSON. Records are handed over as JSON text.
//!
//! ```no_run
//! # #[derive(serde::Deserialize)]
//! # struct User { name: String }
//! # fn f() -> Result<(), String> {
//! let n = loadtest::data::len("users").ok_or("no data set `users`")?;
//! let user: User = loadtest::data::get_as("users", loadtest::vu::id() % n)?
//!     .ok_or("record out of range")?;
//! # Ok(()) }
//! ```

use serde::de::DeserializeOwned;

use crate::bindings::loadtest::scenario::vu as wit;

/// Number of records in the data set `name`, or `None` if there is no such set.
pub fn len(name: &str) -> Option<u64> {
    wit::data_len(name)
}

/// Record `index` of the data set `name` as JSON text, or `None` if the set or the
/// record does not exist.
pub fn get(name: &str, index: u64) -> Option<String> {
    wit::data_get(name, index)
}

/// Record `index` of the data set `name`, deserialized; `Ok(None)` if the set or the
/// record does not exist, `Err` if the record does not match `T`.
pub fn get_as<T: DeserializeOwned>(name: &str, index: u64) -> Result<Option<T>, String> {
    match wit::data_get(name, index) {
        None => Ok(None),
        Some(text) => crate::json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("data set `{name}` record {index}: {e}")),
    }
}
