//! Sign-in for a bearer token, kept for the VU.
//!
//! Many APIs hand out a token for a user name and want it on every later request. The
//! demo application's shape (`POST {base}/auth/token` with `{"user": NAME}`, answered
//! `200` with `{"token": TOKEN}`) is the one written here; the request is named
//! `/auth/token` in the metrics and its answer is the check `sign-in status is 200`.
//!
//! A VU usually signs in once, in [`Scenario::init`](crate::Scenario::init), and sends
//! the token with every iteration's requests:
//!
//! ```no_run
//! use loadtest::{auth, http, vu, PluginInfo, Scenario};
//!
//! struct Notes;
//!
//! impl Scenario for Notes {
//!     fn describe() -> PluginInfo {
//!         PluginInfo::new("notes")
//!     }
//!
//!     fn init(_data: String) -> Result<(), String> {
//!         let base = vu::base_url("http://127.0.0.1:8080");
//!         auth::sign_in_once(&base, &format!("vu-{}", vu::id()))
//!     }
//!
//!     fn iteration(_scenario: String) -> Result<(), String> {
//!         let base = vu::base_url("http://127.0.0.1:8080");
//!         http::get(format!("{base}/groups/1/notes"))
//!             .bearer(auth::token()?)
//!             .name("/groups/{g}/notes")
//!             .send()?;
//!         Ok(())
//!     }
//! }
//! ```

use std::sync::OnceLock;

use crate::http::{self, RequestBuilder, Response};

/// The name of the sign-in request in the metrics (its `name` tag).
pub const NAME: &str = "/auth/token";

/// The check recorded for every sign-in answer: passed when it is a `200`.
pub const CHECK: &str = "sign-in status is 200";

/// The VU's token, kept by [`keep`] (statics are per VU: each VU has its instance).
static TOKEN: OnceLock<String> = OnceLock::new();

/// The answer of a sign-in.
#[derive(serde::Deserialize)]
struct TokenResponse {
    token: String,
}

/// The sign-in request for `user` at `base`, not yet sent: add headers or expected
/// statuses to it, send it, and read the answer with [`token_from`].
pub fn request(base: &str, user: &str) -> RequestBuilder {
    http::post(format!("{base}/auth/token"))
        .json(&serde_json::json!({ "user": user }))
        .name(NAME)
}

/// The token in a sign-in answer for `user`; records the check [`CHECK`]. Any status
/// but `200` is an error that names the user, the status and the body.
pub fn token_from(res: &Response, user: &str) -> Result<String, String> {
    let ok = crate::check(CHECK, res.status() == 200);
    token_in(ok, res.status(), res.body(), user)
}

/// Signs `user` in at `base` ([`request`] sent, then [`token_from`]): the token.
pub fn sign_in(base: &str, user: &str) -> Result<String, String> {
    let res = request(base, user).send()?;
    token_from(&res, user)
}

/// Signs `user` in at `base` and keeps the token for this VU's [`token`]; call it
/// once, from [`Scenario::init`](crate::Scenario::init).
pub fn sign_in_once(base: &str, user: &str) -> Result<(), String> {
    keep(sign_in(base, user)?)
}

/// Keeps `token` as this VU's token; an error if the VU already has one.
pub fn keep(token: String) -> Result<(), String> {
    TOKEN
        .set(token)
        .map_err(|_| "init ran twice in one VU".to_owned())
}

/// This VU's token, kept by [`sign_in_once`] or [`keep`]; an error until then.
pub fn token() -> Result<&'static str, String> {
    TOKEN
        .get()
        .map(String::as_str)
        .ok_or_else(|| "no token: init did not run".to_owned())
}

/// The token of a sign-in answer whose status check passed (`ok`), or the error.
fn token_in(ok: bool, status: u16, body: &[u8], user: &str) -> Result<String, String> {
    if !ok {
        let body = String::from_utf8_lossy(body);
        let body = body.trim();
        return Err(if body.is_empty() {
            format!("sign-in as {user} answered {status}")
        } else {
            format!("sign-in as {user} answered {status}: {body}")
        });
    }
    serde_json::from_slice::<TokenResponse>(body)
        .map(|t| t.token)
        .map_err(|e| format!("sign-in as {user}: the answer is not {{\"token\": ...}}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_posts_the_user_as_json_under_its_name() {
        let req = request("http://127.0.0.1:8080", "vu-3").into_wit().unwrap();
        assert_eq!(req.method, "POST");
        assert_eq!(req.url, "http://127.0.0.1:8080/auth/token");
        assert_eq!(req.body.as_deref(), Some(&br#"{"user":"vu-3"}"#[..]));
        assert_eq!(
            req.options.tags,
            vec![("name".to_owned(), "/auth/token".to_owned())]
        );
        // Expected statuses are the host's default unless the caller sets them.
        assert!(req.options.expected_statuses.is_none());
    }

    #[test]
    fn a_200_answer_gives_its_token() {
        let token = token_in(true, 200, br#"{"token":"t0k","expires_in":60}"#, "vu-1");
        assert_eq!(token, Ok("t0k".to_owned()));
    }

    #[test]
    fn a_refusal_names_the_user_the_status_and_the_body() {
        let err = token_in(false, 503, b"busy\n", "vu-1").unwrap_err();
        assert_eq!(err, "sign-in as vu-1 answered 503: busy");
        let err = token_in(false, 429, b"", "vu-2").unwrap_err();
        assert_eq!(err, "sign-in as vu-2 answered 429");
        let err = token_in(true, 200, b"<html>", "vu-3").unwrap_err();
        assert!(
            err.starts_with("sign-in as vu-3: the answer is not"),
            "{err}"
        );
    }

    #[test]
    fn a_vu_keeps_one_token() {
        // The statics of a native test binary are shared by its tests: only this test
        // touches TOKEN.
        assert_eq!(token(), Err("no token: init did not run".to_owned()));
        keep("a".to_owned()).unwrap();
        assert_eq!(token(), Ok("a"));
        assert_eq!(
            keep("b".to_owned()),
            Err("init ran twice in one VU".to_owned())
        );
        assert_eq!(token(), Ok("a"));
    }
}
