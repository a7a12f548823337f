//! JSON helpers with `String` errors, to fit the `Result<_, String>` of
//! [`Scenario`](crate::Scenario) functions.
//!
//! For anything more, use the re-exported [`crate::serde_json`].

use serde::de::DeserializeOwned;
use serde::Serialize;

pub use serde_json::{json, Value};

/// Parses JSON text.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))
}

/// Parses JSON bytes (a response body, say).
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("invalid JSON: {e}"))
}

/// Serializes a value to JSON text.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| format!("cannot serialize to JSON: {e}"))
}

/// Serializes a value to JSON bytes.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, String> {
    serde_json::to_vec(value).map_err(|e| format!("cannot serialize to JSON: {e}"))
}
