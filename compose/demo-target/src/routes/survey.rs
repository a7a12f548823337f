//! A small survey behind a form sign-in, as browsers use sites: the session is a
//! cookie, the page carries a CSRF token in a hidden field and a single-use answer
//! token in a JSON `<script>`, and an answer spends its token (a replay is refused).
//!
//! - `GET /survey/login`: the sign-in form.
//! - `POST /survey/login` (form `user`, `password`; the password is `demo`): 302 to
//!   `/survey` with `Set-Cookie: survey_session=…; Path=/survey; HttpOnly`; 401 with
//!   the form again otherwise.
//! - `GET /survey`: the question page, or 302 to the sign-in without a session.
//! - `POST /survey/answer` (form `csrf`, `token`, `answer` 1-5): 200 when accepted,
//!   403 for a wrong CSRF token, 409 for a spent or unknown answer token, 401 without
//!   a session, 400 for a bad answer.
//! - `GET /cookies/set?NAME=VALUE…`: sets each cookie (`Path=/`) and redirects to
//!   `/cookies`, which answers the cookies it received as JSON (as httpbin does).

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use hyper::{HeaderMap, Method, Request, Response, StatusCode};

use super::{json, method_not_allowed, Resp};
use crate::state::AppState;
use crate::survey::Verdict;

/// The session cookie's name.
const SESSION: &str = "survey_session";
/// The one password of the demo.
const PASSWORD: &str = "demo";
/// Longest user name accepted.
const MAX_USER_LEN: usize = 64;

/// Routes `/survey/...` and `/cookies...`.
pub async fn dispatch(state: &AppState, req: Request<Incoming>, segments: &[&str]) -> Resp {
    match (segments, req.method().clone()) {
        (["survey", "login"], Method::GET) => html(StatusCode::OK, &login_form("")),
        (["survey", "login"], Method::POST) => login(state, req).await,
        (["survey", "login"], _) => method_not_allowed("GET, POST"),
        (["survey"], Method::GET) => page(state, req.headers()),
        (["survey"], _) => method_not_allowed("GET"),
        (["survey", "answer"], Method::POST) => answer(state, req).await,
        (["survey", "answer"], _) => method_not_allowed("POST"),
        (["cookies"], Method::GET) => echo_cookies(req.headers()),
        (["cookies", "set"], Method::GET) => set_cookies(&req),
        (["cookies", ..], _) => method_not_allowed("GET"),
        _ => super::not_found(),
    }
}

/// An HTML response.
fn html(status: StatusCode, body: &str) -> Resp {
    let mut resp = Response::new(Full::new(Bytes::from(body.to_owned())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    resp
}

fn redirect(to: &'static str) -> Resp {
    let mut resp = html(StatusCode::FOUND, "");
    resp.headers_mut()
        .insert(LOCATION, HeaderValue::from_static(to));
    resp
}

/// Escapes text for HTML content and attribute values.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn login_form(message: &str) -> String {
    format!(
        "<!doctype html><html><head><title>Sign in</title></head><body>\
         <p class=\"message\">{}</p>\
         <form method=\"post\" action=\"/survey/login\">\
         <input name=\"user\"><input name=\"password\" type=\"password\">\
         <button>Sign in</button></form></body></html>",
        escape(message)
    )
}

/// Reads a form-encoded body (up to the body limit) into pairs.
async fn read_form(state: &AppState, req: Request<Incoming>) -> Option<Vec<(String, String)>> {
    let body = Limited::new(req.into_body(), state.max_body_bytes)
        .collect()
        .await
        .ok()?
        .to_bytes();
    Some(form_urlencoded::parse(&body).into_owned().collect())
}

fn field<'a>(form: &'a [(String, String)], name: &str) -> &'a str {
    form.iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

/// The cookies of a request, in order.
fn cookies(headers: &HeaderMap) -> impl Iterator<Item = (&str, &str)> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
}

fn session(headers: &HeaderMap) -> Option<&str> {
    cookies(headers)
        .find(|(k, _)| *k == SESSION)
        .map(|(_, v)| v)
}

async fn login(state: &AppState, req: Request<Incoming>) -> Resp {
    let Some(form) = read_form(state, req).await else {
        return html(
            StatusCode::BAD_REQUEST,
            &login_form("could not read the form"),
        );
    };
    let user = field(&form, "user").trim();
    if user.is_empty() || user.len() > MAX_USER_LEN || field(&form, "password") != PASSWORD {
        return html(
            StatusCode::UNAUTHORIZED,
            &login_form("unknown user or wrong password"),
        );
    }
    let id = state.survey.login(user);
    let mut resp = redirect("/survey");
    if let Ok(cookie) = HeaderValue::from_str(&format!(
        "{SESSION}={id}; Path=/survey; HttpOnly; SameSite=Lax"
    )) {
        resp.headers_mut().insert(SET_COOKIE, cookie);
    }
    resp
}

fn page(state: &AppState, headers: &HeaderMap) -> Resp {
    let Some((user, csrf, token)) = session(headers).and_then(|s| state.survey.page(s)) else {
        return redirect("/survey/login");
    };
    let data =
        serde_json::json!({ "token": token, "question": "How likely are you to recommend us?" });
    html(
        StatusCode::OK,
        &format!(
            "<!doctype html><html><head><title>Survey</title></head><body>\
             <h1>Hello, <span id=\"user\">{}</span></h1>\
             <form method=\"post\" action=\"/survey/answer\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <label>1 to 5 <input name=\"answer\"></label><button>Send</button></form>\
             <script type=\"application/json\" id=\"survey-data\">{}</script>\
             <p><a id=\"signin\" href=\"/survey/login\">Sign in as someone else</a></p>\
             </body></html>",
            escape(&user),
            escape(&csrf),
            // JSON in a script element: `</` must not end the element early.
            data.to_string().replace("</", "<\\/")
        ),
    )
}

async fn answer(state: &AppState, req: Request<Incoming>) -> Resp {
    let session = session(req.headers()).map(str::to_owned);
    let Some(form) = read_form(state, req).await else {
        return json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({ "error": "could not read the form" }),
        );
    };
    let Some(session) = session else {
        return json(
            StatusCode::UNAUTHORIZED,
            &serde_json::json!({ "error": "sign in first" }),
        );
    };
    if !matches!(field(&form, "answer"), "1" | "2" | "3" | "4" | "5") {
        return json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({ "error": "answer must be 1 to 5" }),
        );
    }
    let (status, message) =
        match state
            .survey
            .answer(&session, field(&form, "csrf"), field(&form, "token"))
        {
            Verdict::Accepted => (StatusCode::OK, "thank you"),
            Verdict::NoSession => (StatusCode::UNAUTHORIZED, "sign in first"),
            Verdict::BadCsrf => (StatusCode::FORBIDDEN, "wrong CSRF token"),
            Verdict::TokenRefused => (StatusCode::CONFLICT, "answer token already used or unknown"),
        };
    json(status, &serde_json::json!({ "result": message }))
}

fn echo_cookies(headers: &HeaderMap) -> Resp {
    let map: serde_json::Map<String, serde_json::Value> = cookies(headers)
        .map(|(k, v)| (k.to_owned(), v.into()))
        .collect();
    json(StatusCode::OK, &serde_json::json!({ "cookies": map }))
}

fn set_cookies(req: &Request<Incoming>) -> Resp {
    let mut resp = redirect("/cookies");
    let query = req.uri().query().unwrap_or("");
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if let Ok(v) = HeaderValue::from_str(&format!("{name}={value}; Path=/")) {
            resp.headers_mut().append(SET_COOKIE, v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_split_and_escaping_is_safe() {
        let mut h = HeaderMap::new();
        h.append(COOKIE, "a=1; survey_session=s9".parse().unwrap());
        h.append(COOKIE, "b=2".parse().unwrap());
        assert_eq!(session(&h), Some("s9"));
        assert_eq!(cookies(&h).count(), 3);
        assert_eq!(
            escape("<a href=\"x\">&"),
            "&lt;a href=&quot;x&quot;&gt;&amp;"
        );
    }
}
