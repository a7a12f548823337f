//! Writes a plan as a k6 script: one `group` per step named as the step, the
//! recorded think times as `sleep`, a page's static files as one `http.batch`, a
//! `check` of each recorded status, and each correlated value extracted right after
//! the response that carries it, as a k6 user writes it: `res.html().find(sel).val()`
//! for an input, the JSON of a `<script>` by `res.html().find(sel).text()`,
//! `res.json('path')` for a JSON field, `res.headers['Name']` for a header; a form of
//! an earlier page is submitted with `res.submitForm({ formSelector, fields })`. Only a
//! value cut out of plain text or out of a header's URL needs a helper of its own,
//! written into the script when used.

use super::plan::{Call, Item, Plan};
use super::rules::{Rule, Source};
use std::fmt::Write as _;

use super::escape::{js_comment as comment, js_lit as lit, js_template as tpl_text};

/// `s` with each substituted value replaced by its variable: a plain literal when none
/// occurs, a template literal otherwise.
fn text(s: &str, subs: &[(String, String)], prefix: Option<&str>) -> String {
    let pieces = super::pieces::pieces(s, subs);
    if prefix.is_none() && pieces.len() == 1 && pieces[0].0 {
        return pieces[0].1.clone();
    }
    if prefix.is_none() && pieces.iter().all(|(v, _)| !v) {
        return lit(s);
    }
    let mut out = String::from("`");
    if let Some(p) = prefix {
        out.push_str(p);
    }
    for (is_var, p) in pieces {
        if is_var {
            let _ = write!(out, "${{{p}}}");
        } else {
            out.push_str(&tpl_text(&p));
        }
    }
    out.push('`');
    out
}

fn key(k: &str) -> String {
    let ident = !k.is_empty()
        && !k.starts_with(|c: char| c.is_ascii_digit())
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        k.to_string()
    } else {
        lit(k)
    }
}

/// A JSON value as a JavaScript expression, substituted strings as variables.
fn json_expr(v: &serde_json::Value, subs: &[(String, String)]) -> String {
    use serde_json::Value;
    match v {
        Value::String(s) => text(s, subs, None),
        Value::Array(a) if !a.is_empty() => {
            let items: Vec<String> = a.iter().map(|x| json_expr(x, subs)).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(m) if !m.is_empty() => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, x)| format!("{}: {}", key(k), json_expr(x, subs)))
                .collect();
            format!("{{ {} }}", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// The URL expression of a call.
fn url(call: &Call, plan: &Plan) -> String {
    let prefix = if call.origin == plan.origin {
        "${BASE}".to_string()
    } else {
        tpl_text(&call.origin)
    };
    text(&call.path, &call.subs, Some(&prefix))
}

/// The body expression and whether it sets its own content type.
fn body(call: &Call) -> Option<(String, bool)> {
    let (b, mime) = call.body.as_ref()?;
    if mime.contains("x-www-form-urlencoded") {
        let pairs: Vec<(String, String)> = url::form_urlencoded::parse(b.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let unique = pairs
            .iter()
            .enumerate()
            .all(|(i, (k, _))| pairs[..i].iter().all(|(k2, _)| k2 != k));
        if unique && !pairs.is_empty() {
            // An object: k6 form-encodes it and sets the content type, as a form post.
            let fields: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}: {}", key(k), text(v, &call.subs, None)))
                .collect();
            return Some((format!("{{ {} }}", fields.join(", ")), true));
        }
    }
    if mime.contains("json") {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(b) {
            return Some((
                format!("JSON.stringify({})", json_expr(&v, &call.subs)),
                false,
            ));
        }
    }
    Some((text(b, &call.subs, None), false))
}

/// The params argument (headers, name tag), or `None`.
fn params(call: &Call, body_sets_type: bool) -> Option<String> {
    let mut headers: Vec<String> = call
        .headers
        .iter()
        .map(|(k, v)| format!("{}: {}", lit(k), text(v, &call.subs, None)))
        .collect();
    if let Some((_, mime)) = &call.body {
        if !body_sets_type && !mime.is_empty() {
            headers.push(format!("'Content-Type': {}", lit(mime)));
        }
    }
    let mut parts = Vec::new();
    if !headers.is_empty() {
        parts.push(format!("headers: {{ {} }}", headers.join(", ")));
    }
    if let Some(name) = &call.name {
        parts.push(format!("tags: {{ name: {} }}", lit(name)));
    }
    (!parts.is_empty()).then(|| format!("{{ {} }}", parts.join(", ")))
}

/// The `http.*` call expression.
fn request(call: &Call, plan: &Plan) -> String {
    let u = url(call, plan);
    let b = body(call);
    let p = params(call, b.as_ref().is_some_and(|(_, t)| *t));
    let b = b.map(|(e, _)| e);
    let tail = |args: Vec<String>| args.join(", ");
    match (call.method.as_str(), b, p) {
        ("GET", None, None) => format!("http.get({u})"),
        ("GET", None, Some(p)) => format!("http.get({u}, {p})"),
        (m @ ("POST" | "PUT" | "PATCH" | "DELETE"), b, p) => {
            let f = if m == "DELETE" {
                "del".to_string()
            } else {
                m.to_ascii_lowercase()
            };
            let mut args = vec![u, b.unwrap_or_else(|| "null".into())];
            args.extend(p);
            if args.len() == 2 && args[1] == "null" {
                args.pop();
            }
            format!("http.{f}({})", tail(args))
        }
        (m, b, p) => {
            let mut args = vec![lit(m), u, b.unwrap_or_else(|| "null".into())];
            args.extend(p);
            format!("http.request({})", tail(args))
        }
    }
}

/// `X-CSRF-token` → `X-Csrf-Token`: how k6 (Go's textproto) names response headers.
fn canonical(h: &str) -> String {
    let mut out = String::new();
    let mut up = true;
    for c in h.chars() {
        out.push(if up {
            c.to_ascii_uppercase()
        } else {
            c.to_ascii_lowercase()
        });
        up = c == '-';
    }
    out
}

/// A dotted path (`data.items.0.id`) as JavaScript property access (`.data.items[0].id`).
fn js_path(p: &str) -> String {
    let mut out = String::new();
    for part in p.split('.').filter(|s| !s.is_empty()) {
        if part.chars().all(|c| c.is_ascii_digit()) {
            let _ = write!(out, "[{part}]");
        } else if key(part) == part {
            let _ = write!(out, ".{part}");
        } else {
            let _ = write!(out, "[{}]", lit(part));
        }
    }
    out
}

/// A CSS attribute selector's quoted value.
fn css_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The extraction expression of a rule, in k6's own API.
fn extraction(rule: &Rule) -> String {
    let r = &rule.from_var;
    match &rule.source {
        Source::Header(h) => format!("{r}.headers[{}]", lit(&canonical(h))),
        Source::HeaderParam(h, p) => format!(
            "queryParam({r}.headers[{}], {})",
            lit(&canonical(h)),
            lit(p)
        ),
        Source::Json(p) => {
            // k6's selector (gjson) reads `a.b.0.c`; other keys are read from the object.
            let plain = p.split('.').all(|s| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            });
            if plain {
                format!("{r}.json({})", lit(p))
            } else {
                format!("{r}.json(){}", js_path(p))
            }
        }
        Source::Input(n) => format!(
            "{r}.html().find({}).val()",
            lit(&format!("input[name={}]", css_str(n)))
        ),
        Source::ScriptJson(id, p) => format!(
            "JSON.parse({r}.html().find({}).text()){}",
            lit(&format!("script[id={}]", css_str(id))),
            js_path(p)
        ),
        Source::Between(a, b) => format!("findBetween({r}.body, {}, {})", lit(a), lit(b)),
    }
}

/// The made value of a unique, as a template literal.
fn unique_expr(u: &super::rules::Unique) -> String {
    format!(
        "`{}-${{__VU}}-${{__ITER}}-${{Math.random().toString(36).slice(2, 8)}}{}`",
        tpl_text(&u.prefix),
        tpl_text(&u.suffix)
    )
}

/// The `res.submitForm(...)` expression of a call that submits a form.
fn submit_form(call: &Call, form: &super::plan::FormFill) -> String {
    let mut args = vec![format!("formSelector: {}", lit(&form.selector))];
    if !form.fields.is_empty() {
        let fields: Vec<String> = form
            .fields
            .iter()
            .map(|(k, v)| {
                let e = text(v, &call.subs, None);
                if key(k) == *k && e == *k {
                    k.clone()
                } else {
                    format!("{}: {e}", key(k))
                }
            })
            .collect();
        args.push(format!("fields: {{ {} }}", fields.join(", ")));
    }
    // The form sets its own content type.
    let headers: Vec<(String, String)> = call.headers.clone();
    let bare = Call {
        headers,
        body: None,
        ..call.clone()
    };
    if let Some(p) = params(&bare, true) {
        args.push(format!("params: {p}"));
    }
    format!(
        "{}.submitForm({{\n      {},\n    }})",
        form.page_var,
        args.join(",\n      ")
    )
}

/// Comment lines (`// ...`) listing the rules, the unresolved values and what was left
/// out, for code that submits forms (JavaScript, Python).
pub(crate) fn summary_lines(plan: &Plan) -> Vec<String> {
    summary_lines_for(plan, true)
}

/// The summary lines; `forms` says whether the code submits forms itself (else every
/// field is sent as recorded, extracted ones included).
pub(crate) fn summary_lines_for(plan: &Plan, forms: bool) -> Vec<String> {
    let mut out = Vec::new();
    if plan.rules.is_empty() {
        out.push("Correlation: no value of a response was sent back by a later request.".into());
    } else {
        out.push("Correlation: values a response carried and a later request sent back,".into());
        out.push("extracted at run time instead of replayed:".into());
        for r in &plan.rules {
            out.push(format!(
                "  {}: {} of {} -> {}",
                r.var,
                r.source.describe(),
                r.from_label,
                if forms {
                    r.used_by.join("; ")
                } else {
                    r.used_by.join("; ").replace(" (kept by the form)", "")
                }
            ));
        }
    }
    if !plan.uniques.is_empty() {
        out.push(
            "Unique per VU and iteration (a sign-up's names; replayed, they would collide):".into(),
        );
        for u in &plan.uniques {
            out.push(format!(
                "  {}: {} of {} -> {}",
                u.var,
                u.describe(),
                u.created_by,
                u.used_by.join("; ")
            ));
        }
    }
    if plan.unresolved.is_empty() {
        out.push(
            "Unresolved: none (no generated-looking value sent that no response carried).".into(),
        );
    } else {
        out.push("Unresolved: sent as recorded, found in no earlier response:".into());
        for u in &plan.unresolved {
            if super::secrets::names_a_secret(&u.used_by) {
                // A credential: named, its value not printed (see the warning below).
                out.push(format!("  (a credential, not shown) in {}", u.used_by));
            } else {
                out.push(format!("  {:?} in {}", u.value, u.used_by));
            }
        }
    }
    if plan.left_out.is_empty() {
        out.push("Left out: no request to another origin.".into());
    } else {
        out.push("Left out (other origins; keep one with --keep-origin):".into());
        for (o, n) in &plan.left_out {
            out.push(format!(
                "  {o}: {n} request{}",
                if *n == 1 { "" } else { "s" }
            ));
        }
    }
    if !plan.skipped.is_empty() {
        let list: Vec<String> = plan
            .skipped
            .iter()
            .map(|(scheme, n)| format!("{scheme} {n}"))
            .collect();
        out.push(format!(
            "Skipped (not http or https, nothing to send): {}.",
            list.join(", ")
        ));
    }
    out.extend(super::secrets::warnings(plan));
    out.push("Cookies are left to the cookie jar.".into());
    out
}

/// The k6 script.
pub(crate) fn script(plan: &Plan, name: &str, har: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// {}: a k6 script made by `host new --from-har {}` from a browser's recording",
        comment(name),
        comment(har)
    );
    let _ = writeln!(
        s,
        "// of {} ({} steps, {} requests). Run: host run script.js --config run.toml",
        comment(&plan.origin),
        plan.steps.len(),
        plan.requests
    );
    s.push_str("//\n");
    for line in summary_lines(plan) {
        let _ = writeln!(s, "// {}", comment(&line));
    }
    s.push_str("import http from 'k6/http';\nimport { check, group, sleep } from 'k6';\n\n");
    let _ = writeln!(
        s,
        "// The application's origin: recorded at {}, another with -e BASE_URL=...",
        comment(&plan.origin)
    );
    let _ = writeln!(
        s,
        "const BASE = (__ENV.BASE_URL || {}).replace(/\\/$/, '');\n",
        lit(&plan.origin)
    );
    s.push_str(
        "export const options = {\n  vus: 1,\n  iterations: 1,\n  thresholds: { checks: ['rate==1'] },\n};\n\n",
    );
    s.push_str("export default function () {\n");
    for u in &plan.uniques {
        let _ = writeln!(
            s,
            "  // Unique per VU and iteration: the server refuses a name it already has.\n  const {} = {};",
            u.var,
            unique_expr(u)
        );
    }
    let extracted: Vec<&str> = plan
        .rules
        .iter()
        .filter(|r| r.outside_forms)
        .map(|r| r.var.as_str())
        .collect();
    if !extracted.is_empty() {
        s.push_str("  // Values carried from a response to later requests (see the list above).\n");
        let _ = writeln!(s, "  let {};", extracted.join(", "));
    }
    let carried = super::forms::carried_pages(plan);
    if !carried.is_empty() {
        s.push_str("  // Pages whose form a later step submits.\n");
        let _ = writeln!(s, "  let {};", carried.join(", "));
    }
    if !extracted.is_empty() || !plan.uniques.is_empty() || !carried.is_empty() {
        s.push('\n');
    }
    for (n, step) in plan.steps.iter().enumerate() {
        if step.think_s > 0.0 && n > 0 {
            let _ = writeln!(s, "  sleep({}); // the recorded pause\n", step.think_s);
        }
        let _ = writeln!(s, "  group({}, () => {{", lit(&step.title));
        for item in &step.items {
            match item {
                Item::Call(call) => {
                    if let Some(r) = &call.redirect {
                        let _ =
                            writeln!(s, "    // Follows the recorded redirect ({}).", comment(r));
                    }
                    if call.revalidated {
                        let _ = writeln!(
                            s,
                            "    // Recorded as 304 (the browser's cache asked if it changed); with no cache, 200."
                        );
                    }
                    let expr = match &call.form {
                        Some(form) => {
                            let _ = writeln!(
                                s,
                                "    // Submits the page's form as a browser does (its hidden fields from the live page)."
                            );
                            submit_form(call, form)
                        }
                        None => request(call, plan),
                    };
                    let decl = if carried.contains(&call.var) {
                        ""
                    } else {
                        "const "
                    };
                    let _ = writeln!(s, "    {decl}{} = {};", call.var, expr);
                    let label = format!("{} is {}", call.label(), call.status);
                    let _ = writeln!(
                        s,
                        "    check({}, {{ {}: (r) => r.status === {} }});",
                        call.var,
                        lit(&label),
                        call.status
                    );
                    for rule in plan
                        .rules
                        .iter()
                        .filter(|r| r.from_var == call.var && r.outside_forms)
                    {
                        let _ = writeln!(s, "    {} = {};", rule.var, extraction(rule));
                    }
                }
                Item::Batch(calls) => {
                    let _ = writeln!(
                        s,
                        "    // The page's {} static files, loaded together as a browser does.",
                        calls.len()
                    );
                    if calls.iter().any(|c| c.revalidated) {
                        s.push_str("    // Some were recorded as 304 (the browser's cache asked); with no cache, 200.\n");
                    }
                    s.push_str("    const statics = http.batch([\n");
                    for c in calls {
                        let _ = writeln!(s, "      [{}, {}],", lit(&c.method), url(c, plan));
                    }
                    s.push_str("    ]);\n");
                    let statuses: Vec<String> =
                        calls.iter().map(|c| c.status.to_string()).collect();
                    if calls.iter().all(|c| c.status == calls[0].status) {
                        let _ = writeln!(
                            s,
                            "    check(statics, {{ {}: (rs) => rs.every((r) => r.status === {}) }});",
                            lit(&format!("static files are {}", calls[0].status)),
                            calls[0].status
                        );
                    } else {
                        let _ = writeln!(
                            s,
                            "    const recorded = [{}];\n    check(statics, {{ 'static files have their recorded statuses': (rs) => rs.every((r, i) => r.status === recorded[i]) }});",
                            statuses.join(", ")
                        );
                    }
                }
            }
        }
        s.push_str("  });\n");
    }
    s.push_str("}\n");
    let used = |f: fn(&Source) -> bool| plan.rules.iter().any(|r| r.outside_forms && f(&r.source));
    if used(|s| matches!(s, Source::HeaderParam(..))) {
        s.push_str(QUERY_PARAM);
    }
    if used(|s| matches!(s, Source::Between(..))) {
        s.push_str(FIND_BETWEEN);
    }
    s
}

/// The value of query parameter `name` in the URL `url` (a `Location` header's), or
/// undefined: written into scripts that take a value out of a header's URL.
const QUERY_PARAM: &str = r#"
// The value of the query parameter `name` of `url` (a header's URL), or undefined.
function queryParam(url, name) {
  const m = String(url).match(new RegExp(`[?&]${name}=([^&#]*)`));
  return m ? decodeURIComponent(m[1].replace(/\+/g, ' ')) : undefined;
}
"#;

/// k6-utils' `findBetween`, written into scripts that cut a value out of plain text
/// (the jslib module is a remote import; this script needs none).
const FIND_BETWEEN: &str = r#"
// The text between `left` and `right` in `content` (as k6-utils' findBetween), or undefined.
function findBetween(content, left, right) {
  const start = String(content).indexOf(left);
  if (start < 0) return undefined;
  const from = start + left.length;
  const end = right === '' ? -1 : String(content).indexOf(right, from);
  return String(content).slice(from, end < 0 ? undefined : end);
}
"#;
