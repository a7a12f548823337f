//! `cookies`: the plugin's view of its VU's cookie jar (held by the HTTP client).

use crate::net::cookies::CookieOptions;
use crate::plugin::bindings::loadtest::scenario::cookies as wit;
use crate::plugin::state::VuState;

impl wit::Host for VuState {
    fn cookies_for(
        &mut self,
        url: String,
    ) -> wasmtime::Result<Result<Vec<(String, String)>, String>> {
        Ok(self
            .http
            .client
            .jar()
            .cookies_for(&url)
            .map_err(String::from))
    }

    fn set(
        &mut self,
        url: String,
        name: String,
        value: String,
        options: wit::CookieOptions,
    ) -> wasmtime::Result<Result<(), String>> {
        let options = CookieOptions {
            domain: options.domain,
            path: options.path,
            max_age_s: options.max_age_s,
            secure: options.secure,
            http_only: options.http_only,
        };
        Ok(self
            .http
            .client
            .jar_mut()
            .set(&url, &name, &value, &options)
            .map_err(String::from))
    }

    fn clear(&mut self, url: String) -> wasmtime::Result<Result<(), String>> {
        Ok(self
            .http
            .client
            .jar_mut()
            .remove(&url, None)
            .map_err(String::from))
    }

    fn delete(&mut self, url: String, name: String) -> wasmtime::Result<Result<(), String>> {
        Ok(self
            .http
            .client
            .jar_mut()
            .remove(&url, Some(&name))
            .map_err(String::from))
    }
}
