//! Correlation: a value a response carried (a hidden input, a JSON field, a script's
//! JSON, a header such as `Location`, or plain text of the body) that a later request
//! sent back is extracted from that response at run time, not replayed — replaying a
//! CSRF field, a single-use token or a fresh id makes the server refuse, or worse,
//! measures a path real users never take. Cookies are not looked at: the client's jar
//! carries them. Values that look generated but that no earlier response carried are
//! listed as unresolved (they are replayed as recorded).

#[cfg(test)]
use super::html;
use super::model::is_static;
use super::model::Recording;
use super::plan::{Item, Plan};
use super::rules::{Rule, Source, Unique, Unresolved};
use serde_json::Value;
use std::collections::BTreeMap;

impl Unique {
    /// How it is made, for comments and the command's output.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{}-<VU>-<iteration>-<random>{} (recorded {:?})",
            self.prefix, self.suffix, self.value
        )
    }
}

/// A field name that names a user or account (`user`, `username`, `email`, `login`).
fn names_someone(field: &str) -> bool {
    let f: String = field
        .to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    [
        "user",
        "username",
        "login",
        "email",
        "emailaddress",
        "mail",
        "name",
        "handle",
        "nick",
        "nickname",
        "screenname",
        "displayname",
        "account",
        "accountname",
    ]
    .contains(&f.as_str())
        || f.ends_with("username")
        || f.ends_with("email")
}

/// A path that creates an account (`/signup`, `/register`, `/accounts`, `/users`) and is
/// not a sign-in.
fn signs_up(path: &str) -> bool {
    let p = path.split('?').next().unwrap_or("").to_ascii_lowercase();
    let signs_in = ["login", "signin", "sign-in", "sign_in", "session", "auth"]
        .iter()
        .any(|w| p.contains(w));
    let creates = [
        "signup",
        "sign-up",
        "sign_up",
        "register",
        "registration",
        "join",
        "accounts",
        "users",
    ]
    .iter()
    .any(|w| p.split('/').any(|seg| seg == *w) || p.contains(&format!("/{w}")));
    creates && !signs_in
}

/// The values of `plan` the server must see unique: the user-naming fields of a POST
/// that created something (201) or went to a sign-up path.
fn find_uniques(rec: &Recording, plan: &Plan, names: &mut BTreeMap<String, usize>) -> Vec<Unique> {
    let mut out: Vec<Unique> = Vec::new();
    for step in &plan.steps {
        for item in &step.items {
            let Item::Call(call) = item else { continue };
            if !matches!(call.method.as_str(), "POST" | "PUT") {
                continue;
            }
            let e = &rec.entries[call.entry];
            let created = e.response.status == 201 || signs_up(&call.path);
            let answered = rec.entries[call.answered_by].response.status;
            if !created || !(200..400).contains(&answered) {
                continue;
            }
            for (place, value) in candidates(call) {
                let field = place
                    .strip_prefix("form field ")
                    .or_else(|| place.strip_prefix("JSON field "))
                    .map(|p| p.rsplit('.').next().unwrap_or(p));
                let Some(field) = field else { continue };
                let plausible = !value.trim().is_empty()
                    && value.len() <= 64
                    && !looks_generated(&value)
                    && !value.chars().all(|c| c.is_ascii_digit());
                if !names_someone(field) || !plausible || out.iter().any(|u| u.value == value) {
                    continue;
                }
                let (prefix, suffix) = match value.split_once('@') {
                    Some((local, domain)) if domain.contains('.') && !local.is_empty() => {
                        (local.to_string(), format!("@{domain}"))
                    }
                    _ => (value.clone(), String::new()),
                };
                // The made value stays near the recorded length (servers cap names).
                let prefix: String = prefix.chars().take(32).collect();
                let base = ident(field);
                let n = names.entry(base.clone()).or_default();
                *n += 1;
                let var = if *n == 1 && !TAKEN.contains(&base.as_str()) {
                    base
                } else {
                    format!("{base}{n}")
                };
                out.push(Unique {
                    var,
                    value,
                    prefix,
                    suffix,
                    created_by: format!("{} {place}", call.label()),
                    used_by: Vec::new(),
                });
            }
        }
    }
    out
}

/// Values shorter than this are not correlated (unless an id in a path): short values
/// (`1`, `yes`, a user name) match by chance.
const MIN_LEN: usize = 8;

/// A value that looks made by a server: long, with letters and digits mixed.
fn looks_generated(v: &str) -> bool {
    v.len() >= 16
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.~+/=".contains(c))
        && v.chars().any(|c| c.is_ascii_digit())
        && v.chars().any(|c| c.is_ascii_alphabetic())
}

/// What a call sends: (where, value).
fn candidates(call: &super::plan::Call) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (path, query) = call.path.split_once('?').unwrap_or((&call.path, ""));
    if call.name.is_some() {
        for seg in path.split('/') {
            if super::plan::templated(&format!("/{seg}")).is_some() {
                out.push(("path".to_string(), seg.to_string()));
            }
        }
    }
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        out.push((format!("query parameter {k}"), v.into_owned()));
    }
    if let Some((body, mime)) = &call.body {
        if mime.contains("x-www-form-urlencoded") {
            for (k, v) in url::form_urlencoded::parse(body.as_bytes()) {
                out.push((format!("form field {k}"), v.into_owned()));
            }
        } else if let Ok(json) = serde_json::from_str::<Value>(body) {
            super::index::for_each_leaf(&json, "", &mut |p, leaf| {
                if let Value::String(v) = leaf {
                    out.push((format!("JSON field {p}"), v.clone()));
                }
            });
        }
    }
    for (name, value) in &call.headers {
        out.push((format!("header {name}"), value.clone()));
        if let Some((_, last)) = value.rsplit_once(' ') {
            out.push((format!("header {name}"), last.to_string()));
        }
    }
    out
}

/// The path of a leaf equal to `want` (a numeric id only under an id-like key): the
/// search [`super::index`] replaces, kept to test that it gives the same answers.
#[cfg(test)]
fn find_json(v: &Value, want: &str, path: &str) -> Option<String> {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    let numeric = want.chars().all(|c| c.is_ascii_digit());
    match v {
        Value::String(s) if !numeric && s == want => Some(path.to_string()),
        Value::Number(n) if numeric && n.to_string() == want => {
            let key = path.rsplit('.').next().unwrap_or("");
            (key == "id" || key.ends_with("_id") || key.ends_with("Id")).then(|| path.to_string())
        }
        Value::String(s) if numeric && s == want => {
            let key = path.rsplit('.').next().unwrap_or("");
            (key == "id" || key.ends_with("_id") || key.ends_with("Id")).then(|| path.to_string())
        }
        Value::Object(m) => m.iter().find_map(|(k, v)| find_json(v, want, &join(k))),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_json(v, want, &join(&i.to_string()))),
        _ => None,
    }
}

/// Where in the response of entry `i` the value `want` is, if anywhere (the reference
/// [`super::index::Responses::find`] is tested against).
#[cfg(test)]
fn find_source(rec: &Recording, i: usize, want: &str) -> Option<Source> {
    let e = &rec.entries[i];
    let numeric = want.chars().all(|c| c.is_ascii_digit());
    if !numeric {
        for h in &e.response.headers {
            let name = h.name.to_ascii_lowercase();
            if name == "set-cookie" || name.starts_with(':') {
                continue;
            }
            if h.value == want {
                return Some(Source::Header(h.name.clone()));
            }
            if let Some((_, q)) = h.value.split_once('?') {
                for (k, v) in url::form_urlencoded::parse(q.as_bytes()) {
                    if v == want {
                        return Some(Source::HeaderParam(h.name.clone(), k.into_owned()));
                    }
                }
            }
        }
    }
    let body = e.response_text()?;
    if let Ok(json) = serde_json::from_str::<Value>(body) {
        return find_json(&json, want, "").map(Source::Json);
    }
    if numeric {
        return None;
    }
    if !body.contains(want) {
        return None;
    }
    for (attrs, _) in html::tags(body, "input", false) {
        if attrs.get("value").map(String::as_str) == Some(want) {
            if let Some(name) = attrs.get("name").filter(|n| !n.is_empty()) {
                return Some(Source::Input(name.clone()));
            }
        }
    }
    for (attrs, content) in html::tags(body, "script", true) {
        let (Some(id), true) = (
            attrs.get("id"),
            attrs.get("type").is_some_and(|t| t.contains("json")),
        ) else {
            continue;
        };
        if let Ok(json) = serde_json::from_str::<Value>(&content) {
            if let Some(p) = find_json(&json, want, "") {
                return Some(Source::ScriptJson(id.clone(), p));
            }
        }
    }
    super::index::between(body, want)
}

/// `refresh_token` → `refreshToken`, a JavaScript and Python-safe name.
fn ident(raw: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() {
            if upper && !out.is_empty() {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(if out.is_empty() {
                    c.to_ascii_lowercase()
                } else {
                    c
                });
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, "value");
    }
    out
}

fn var_for(source: &Source) -> String {
    let last = |p: &str| {
        p.rsplit('.')
            .find(|s| !s.chars().all(|c| c.is_ascii_digit()))
            .unwrap_or("value")
            .to_string()
    };
    ident(&match source {
        Source::Header(h) => h.clone(),
        Source::HeaderParam(_, p) => p.clone(),
        Source::Json(p) | Source::ScriptJson(_, p) => last(p),
        Source::Input(n) => n.clone(),
        Source::Between(..) => "value".to_string(),
    })
}

/// Names the generated code uses itself.
const TAKEN: [&str; 16] = [
    "http", "check", "group", "sleep", "options", "BASE", "res", "statics", "value", "self",
    "type", "default", "function", "const", "let", "import",
];

/// Finds the rules and the unresolved values of `plan`, and marks each call's
/// substitutions.
pub(crate) fn correlate(rec: &Recording, plan: &mut Plan) {
    let mut rules: Vec<Rule> = Vec::new();
    let mut by_value: BTreeMap<String, usize> = BTreeMap::new();
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    // Responses seen so far: (var, label), and their values indexed.
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut responses = super::index::Responses::default();
    let mut unresolved = Vec::new();
    let mut uniques = find_uniques(rec, plan, &mut names);
    for step in &mut plan.steps {
        for item in &mut step.items {
            let Item::Call(call) = item else { continue };
            let label = call.label();
            for u in &mut uniques {
                // Sent whole as a field, or inside the URL (`/users/NAME`).
                let sent = candidates(call).iter().any(|(_, v)| *v == u.value)
                    || (u.value.len() >= 6 && call.path.contains(&u.value));
                if sent && !call.subs.iter().any(|(v, _)| *v == u.value) {
                    call.subs.push((u.value.clone(), u.var.clone()));
                    u.used_by.push(label.clone());
                }
            }
            for (place, value) in candidates(call) {
                if uniques.iter().any(|u| u.value == value) {
                    continue;
                }
                // A field the submitted form holds itself: taken from the live page.
                let by_form = place.strip_prefix("form field ").is_some_and(|f| {
                    call.form
                        .as_ref()
                        .is_some_and(|form| form.kept.iter().any(|k| k == f))
                });
                let numeric = value.chars().all(|c| c.is_ascii_digit()) && place == "path";
                if value.len() < MIN_LEN && !numeric {
                    continue;
                }
                let used = if by_form {
                    format!("{label} {place} (kept by the form)")
                } else {
                    format!("{label} {place}")
                };
                if let Some(&r) = by_value.get(&value) {
                    if !rules[r].used_by.contains(&used) {
                        rules[r].used_by.push(used);
                    }
                    rules[r].outside_forms |= !by_form;
                    if !call.subs.iter().any(|(v, _)| *v == value) {
                        call.subs.push((value, rules[r].var.clone()));
                    }
                    continue;
                }
                let found = responses
                    .find(&value)
                    .map(|(at, s)| (s, seen[at].0.clone(), seen[at].1.clone()));
                match found {
                    Some((source, from_var, from_label)) => {
                        let base = var_for(&source);
                        let n = names.entry(base.clone()).or_default();
                        *n += 1;
                        let var = if *n == 1 && !TAKEN.contains(&base.as_str()) {
                            base
                        } else {
                            format!("{base}{n}")
                        };
                        by_value.insert(value.clone(), rules.len());
                        call.subs.push((value, var.clone()));
                        rules.push(Rule {
                            var,
                            source,
                            from_var,
                            from_label,
                            used_by: vec![used],
                            outside_forms: !by_form,
                        });
                    }
                    None if looks_generated(&value)
                        && !unresolved.iter().any(|u: &Unresolved| u.value == value) =>
                    {
                        unresolved.push(Unresolved {
                            value,
                            used_by: used,
                        });
                    }
                    None => {}
                }
            }
            // Longest first, so that a value inside another is not cut out of it.
            call.subs.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
            if !is_static(&rec.entries[call.entry]) {
                seen.push((call.var.clone(), label));
                responses.add(&rec.entries[call.answered_by]);
            }
        }
    }
    plan.rules = rules;
    plan.unresolved = unresolved;
    plan.uniques = uniques;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index answers as the search newest-first over every earlier response did,
    /// for every value of a recording that mixes headers, JSON, pages and text.
    #[test]
    fn the_index_finds_what_the_search_found() {
        let rec = super::super::model::parse(
            r#"{"log":{"entries":[
              {"startedDateTime":"2024-05-01T10:00:00Z","request":{"method":"GET","url":"http://a.test/a"},"response":{"status":302,"headers":[{"name":"Location","value":"/b?code=loc-0123456789ab&n=42"},{"name":"X-Token","value":"hdr-tok-0123456789"},{"name":"Set-Cookie","value":"sid=cookie-0123456789"}]}},
              {"startedDateTime":"2024-05-01T10:00:01Z","request":{"method":"GET","url":"http://a.test/b"},"response":{"status":200,"content":{"mimeType":"application/json","text":"{\"user_id\": 4242, \"id\": \"77\", \"n\": 5, \"items\": [{\"id\": 1001, \"tok\": \"hdr-tok-0123456789\"}, {\"ref\": \"json-ref-abcdef0123\"}], \"dup\": \"json-ref-abcdef0123\"}"}}},
              {"startedDateTime":"2024-05-01T10:00:02Z","request":{"method":"GET","url":"http://a.test/c"},"response":{"status":200,"content":{"mimeType":"text/html","text":"<form><input type=hidden name=csrf value=\"csrf-0123456789abc\"><input name=\"\" value=\"noname-0123456789\"></form><script type=\"application/json\" id=\"boot\">{\"session\": {\"key\": \"boot-key-0123456789\", \"user_id\": 99}}</script><p>ref json-ref-abcdef0123; token: txt-0123456789abcdef.</p>"}}},
              {"startedDateTime":"2024-05-01T10:00:03Z","request":{"method":"GET","url":"http://a.test/d"},"response":{"status":200,"headers":[{"name":"X-Next","value":"csrf-0123456789abc"}],"content":{"mimeType":"text/plain","text":"plain hdr-tok-0123456789 end"}}}
            ]}}"#,
        )
        .unwrap();
        let wants = [
            "loc-0123456789ab",
            "42",
            "hdr-tok-0123456789",
            "cookie-0123456789",
            "4242",
            "77",
            "5",
            "1001",
            "json-ref-abcdef0123",
            "csrf-0123456789abc",
            "noname-0123456789",
            "boot-key-0123456789",
            "99",
            "txt-0123456789abcdef",
            "absent-0123456789",
        ];
        let mut responses = super::super::index::Responses::default();
        for n in 0..rec.entries.len() {
            responses.add(&rec.entries[n]);
            for want in wants {
                let searched = (0..=n)
                    .rev()
                    .find_map(|i| find_source(&rec, i, want).map(|s| (i, s)));
                assert_eq!(responses.find(want), searched, "{want} after {n}");
            }
        }
        assert_eq!(
            responses.find("csrf-0123456789abc"),
            Some((3, Source::Header("X-Next".into())))
        );
    }

    #[test]
    fn names_and_boundaries() {
        assert_eq!(ident("refresh_token"), "refreshToken");
        assert_eq!(ident("X-Csrf-Token"), "xCsrfToken");
        assert_eq!(ident("0"), "value0");
        assert_eq!(
            super::super::index::between("a=1&tok=abcdefgh12&z", "abcdefgh12"),
            Some(Source::Between("a=1&tok=".into(), "&".into()))
        );
        assert!(looks_generated("3f2b9c1e8d4a4e2b"));
        assert!(!looks_generated("demo-password"));
    }

    #[test]
    fn sign_ups_and_their_names_are_told_from_sign_ins() {
        for yes in ["/accounts", "/signup", "/api/users?x=1", "/register/step1"] {
            assert!(signs_up(yes), "{yes}");
        }
        for no in ["/survey/login", "/auth/refresh", "/users/sign_in", "/notes"] {
            assert!(!signs_up(no), "{no}");
        }
        for yes in [
            "user",
            "userName",
            "e-mail",
            "email",
            "login",
            "new_username",
        ] {
            assert!(names_someone(yes), "{yes}");
        }
        for no in ["password", "token", "answer", "title"] {
            assert!(!names_someone(no), "{no}");
        }
    }
}
