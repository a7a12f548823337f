//! `cookies`: the plugin's view of its VU's cookie jar (held by the HTTP client), and
//! nothing else of the store ([`CookiesView`]).

use crate::net::cookies::CookieOptions;
use crate::net::HttpClient;
use crate::plugin::bindings::loadtest::scenario::cookies as wit;
use crate::plugin::state::VuState;
use wasmtime::component::HasData;

/// What `cookies` reaches of a VU's store: the HTTP client that holds the jar.
pub(crate) struct CookiesView<'a> {
    /// The VU's client; its jar is read and written.
    pub(crate) client: &'a mut HttpClient,
}

/// The `HasData` of `cookies`: its imports see a [`CookiesView`].
pub(crate) struct HasCookies;

impl HasData for HasCookies {
    type Data<'a> = CookiesView<'a>;
}

impl VuState {
    /// What `cookies` sees of the store.
    pub(crate) fn cookies_view(&mut self) -> CookiesView<'_> {
        CookiesView {
            client: &mut self.http.client,
        }
    }
}

impl wit::Host for CookiesView<'_> {
    fn cookies_for(
        &mut self,
        url: String,
    ) -> wasmtime::Result<Result<Vec<(String, String)>, String>> {
        Ok(self.client.jar().cookies_for(&url).map_err(String::from))
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
            .client
            .jar_mut()
            .set(&url, &name, &value, &options)
            .map_err(String::from))
    }

    fn clear(&mut self, url: String) -> wasmtime::Result<Result<(), String>> {
        Ok(self
            .client
            .jar_mut()
            .remove(&url, None)
            .map_err(String::from))
    }

    fn delete(&mut self, url: String, name: String) -> wasmtime::Result<Result<(), String>> {
        Ok(self
            .client
            .jar_mut()
            .remove(&url, Some(&name))
            .map_err(String::from))
    }
}
