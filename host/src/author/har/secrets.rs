//! What a recording carries that the generated code replays but should not without a
//! word (issue 49): credentials (a bearer token, a password, an API key in the query)
//! written into the source as recorded, and the headers of a followed redirect's target
//! that the replay does not send. Each is named, never its value.

use super::plan::{Call, Item, Plan};

/// A header whose value is a credential.
fn secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["authorization", "proxy-authorization"].contains(&n.as_str())
        || ["token", "api-key", "apikey", "secret", "password", "auth"]
            .iter()
            .any(|w| n.contains(w))
}

/// A field or parameter name whose value is a credential (`password`, `api_key`, ...).
fn secret_field(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    let n: String = last
        .to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    n == "key"
        || n == "pwd"
        || n == "pin"
        || [
            "password",
            "passwd",
            "passphrase",
            "secret",
            "token",
            "apikey",
            "accesskey",
            "auth",
            "credential",
        ]
        .iter()
        .any(|w| n.contains(w))
}

/// Whether a place (`GET /x header Authorization`, `POST /y JSON field password`) holds
/// a credential.
pub(crate) fn names_a_secret(place: &str) -> bool {
    for (marker, header) in [
        (" header ", true),
        (" query parameter ", false),
        (" form field ", false),
        (" JSON field ", false),
    ] {
        if let Some((_, name)) = place.rsplit_once(marker) {
            return if header {
                secret_header(name)
            } else {
                secret_field(name)
            };
        }
    }
    false
}

/// Where a call sends a credential as recorded: (where, value).
fn credentials(call: &Call) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, v) in &call.headers {
        if secret_header(k) {
            out.push((format!("header {k}"), v.clone()));
        }
    }
    if let Some((_, q)) = call.path.split_once('?') {
        for (k, v) in url::form_urlencoded::parse(q.as_bytes()) {
            if secret_field(&k) {
                out.push((format!("query parameter {k}"), v.into_owned()));
            }
        }
    }
    if let Some((b, mime)) = &call.body {
        if mime.contains("x-www-form-urlencoded") {
            for (k, v) in url::form_urlencoded::parse(b.as_bytes()) {
                if secret_field(&k) {
                    out.push((format!("form field {k}"), v.into_owned()));
                }
            }
        } else if let Ok(json) = serde_json::from_str::<serde_json::Value>(b) {
            if let Some(m) = json.as_object() {
                for (k, v) in m {
                    if let (true, Some(v)) = (secret_field(k), v.as_str()) {
                        out.push((format!("JSON field {k}"), v.to_string()));
                    }
                }
            }
        }
    }
    // A value extracted at run time or made per VU is not replayed.
    out.retain(|(_, v)| {
        !v.is_empty()
            && !call
                .subs
                .iter()
                .any(|(sub, _)| v == sub || v.ends_with(sub.as_str()))
    });
    out
}

/// The warning lines (for the command's output and the code's header comment).
pub(crate) fn warnings(plan: &Plan) -> Vec<String> {
    let calls = plan
        .steps
        .iter()
        .flat_map(|s| &s.items)
        .flat_map(|i| match i {
            Item::Call(c) => vec![c],
            Item::Batch(b) => b.iter().collect(),
        });
    let mut found = Vec::new();
    let mut redirects = Vec::new();
    for c in calls {
        for (place, _) in credentials(c) {
            found.push(format!("{place} of {}", c.label()));
        }
        if !c.redirect_headers.is_empty() {
            redirects.push(format!(
                "{} (after its redirect): {}",
                c.label(),
                c.redirect_headers.join(", ")
            ));
        }
    }
    let mut out = Vec::new();
    if !found.is_empty() {
        out.push(
            "Warning: recorded credentials are written into the code as recorded (read them \
             from __ENV or a sign-in instead, and do not share the code as is):"
                .into(),
        );
        out.extend(found.into_iter().map(|f| format!("  {f}")));
    }
    if !redirects.is_empty() {
        out.push(
            "Not sent: headers the browser sent to a redirect's target only (the replay sends \
             the first request's headers):"
                .into(),
        );
        out.extend(redirects.into_iter().map(|r| format!("  {r}")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{model, plan, plan_all};
    use super::warnings;

    #[test]
    fn credentials_and_redirect_headers_are_named_without_their_values() {
        let rec = model::parse(
            r#"{"log":{"entries":[
              {"startedDateTime":"2024-05-01T10:00:00Z","_resourceType":"document","request":{"method":"GET","url":"http://a.test/app?api_key=QK-secret-value-1"},"response":{"status":200}},
              {"startedDateTime":"2024-05-01T10:00:01Z","request":{"method":"POST","url":"http://a.test/login","headers":[{"name":"Authorization","value":"Bearer BT-secret-value-2"}],"postData":{"mimeType":"application/json","text":"{\"user\":\"ann\",\"password\":\"PW-secret-value-3\"}"}},"response":{"status":302,"headers":[{"name":"Location","value":"/home"}]}},
              {"startedDateTime":"2024-05-01T10:00:02Z","request":{"method":"GET","url":"http://a.test/home","headers":[{"name":"X-Trace","value":"t-1"},{"name":"Authorization","value":"Bearer BT-secret-value-2"}]},"response":{"status":200}},
              {"startedDateTime":"2024-05-01T10:00:03Z","request":{"method":"GET","url":"data:text/plain,hello"},"response":{"status":200}},
              {"startedDateTime":"2024-05-01T10:00:04Z","request":{"method":"GET","url":"file:///etc/passwd"},"response":{"status":200}}
            ]}}"#,
        )
        .unwrap();
        let plan = plan_all(&rec, &plan::Options::default());
        let lines = super::super::js::summary_lines(&plan).join("\n");
        for named in [
            "query parameter api_key of GET /app",
            "header Authorization of POST /login",
            "JSON field password of POST /login",
            "POST /login (after its redirect): X-Trace",
            "Skipped (not http or https, nothing to send): data: 1, file: 1.",
        ] {
            assert!(lines.contains(named), "{named} in\n{lines}");
        }
        assert!(!lines.contains("secret-value"), "{lines}");
        assert_eq!(plan.origin, "http://a.test");
        assert!(warnings(&plan).len() >= 4);
    }

    #[test]
    fn a_recording_of_no_http_request_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let har = tmp.path().join("x.har");
        std::fs::write(
            &har,
            r#"{"log":{"entries":[{"startedDateTime":"2024-05-01T10:00:00Z","request":{"method":"GET","url":"javascript:alert(1)"},"response":{"status":200}}]}}"#,
        )
        .unwrap();
        let e = super::super::write(
            &tmp.path().join("p"),
            "p",
            &har,
            crate::author::Lang::Js,
            &plan::Options::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("no http or https request (only 1 javascript:)"),
            "{e}"
        );
        assert!(!tmp.path().join("p").exists());
    }
}
