//! Following redirects as browsers and k6 do: 301/302/303 turn a POST into a GET,
//! 307/308 keep the method and body, credentials are not carried to another origin.
//! Every hop is a request of its own, checked against the allowlist like the first.

use crate::net::types::{HttpError, HttpRequest, HttpResponse};

/// The request to send next if `response` redirects, or `None` if it does not.
pub(crate) fn next_hop(
    req: &HttpRequest,
    response: &HttpResponse,
) -> Option<Result<HttpRequest, HttpError>> {
    if !matches!(response.status, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let location = response
        .content
        .headers
        .get(http::header::LOCATION)
        .and_then(|v| v.to_str().ok())?;
    let base = match url::Url::parse(&req.url) {
        Ok(u) => u,
        Err(e) => {
            return Some(Err(HttpError::invalid(format!(
                "invalid URL {:?}: {e}",
                req.url
            ))))
        }
    };
    let target = match base.join(location) {
        Ok(u) => u,
        Err(e) => {
            return Some(Err(HttpError::invalid(format!(
                "{} redirected to an invalid location {location:?}: {e}",
                req.url
            ))))
        }
    };
    let mut next = req.clone();
    next.url = target.to_string();
    // Each hop is a request of its own: named by its own URL, as in k6, not counted
    // under the first request's `name`.
    next.tags.retain(|(k, _)| k != "name");
    let keeps_method =
        matches!(response.status, 307 | 308) || req.method == "GET" || req.method == "HEAD";
    if !keeps_method {
        next.method = "GET".into();
        next.body = Default::default();
        next.headers.retain(|(k, _)| {
            !k.eq_ignore_ascii_case("content-type") && !k.eq_ignore_ascii_case("content-length")
        });
    }
    if base.origin() != target.origin() {
        next.headers.retain(|(k, _)| {
            !k.eq_ignore_ascii_case("authorization")
                && !k.eq_ignore_ascii_case("cookie")
                && !k.eq_ignore_ascii_case("host")
        });
    }
    Some(Ok(next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::types::{Proto, ResponseContent, Timings};

    fn response(status: u16, location: &str) -> HttpResponse {
        HttpResponse {
            status,
            content: ResponseContent {
                headers: [(
                    http::header::LOCATION,
                    http::HeaderValue::from_str(location).unwrap(),
                )]
                .into_iter()
                .collect(),
                body: Vec::new(),
            },
            body_size: 0,
            timings: Timings::default(),
            proto: Proto::Http1,
            url: String::new(),
        }
    }

    fn post(url: &str) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            url: url.into(),
            headers: vec![
                ("authorization".into(), "Bearer t".into()),
                ("content-type".into(), "application/json".into()),
            ],
            body: bytes::Bytes::from_static(b"{}"),
            tags: vec![("name".into(), "/a".into()), ("group".into(), "1".into())],
            ..Default::default()
        }
    }

    #[test]
    fn see_other_turns_post_into_get_on_the_same_origin() {
        let next = next_hop(&post("http://127.0.0.1:1/a/b"), &response(303, "../c"))
            .unwrap()
            .unwrap();
        assert_eq!(next.url, "http://127.0.0.1:1/c");
        assert_eq!(next.method, "GET");
        assert!(next.body.is_empty());
        assert!(next.headers.iter().any(|(k, _)| k == "authorization"));
        // The hop is named by its own URL; the other tags stay.
        assert_eq!(next.tags, vec![("group".to_string(), "1".to_string())]);
    }

    #[test]
    fn temporary_redirect_keeps_method_and_drops_credentials_across_origins() {
        let next = next_hop(
            &post("http://127.0.0.1:1/a"),
            &response(307, "http://127.0.0.1:2/x"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(next.method, "POST");
        assert_eq!(&next.body[..], b"{}");
        assert!(!next.headers.iter().any(|(k, _)| k == "authorization"));
    }

    #[test]
    fn other_statuses_do_not_redirect() {
        assert!(next_hop(&post("http://127.0.0.1:1/"), &response(200, "/x")).is_none());
    }
}
