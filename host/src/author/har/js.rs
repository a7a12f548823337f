//! Writes a plan as a k6 script: one `group` per step named as the step, the
//! recorded think times as `sleep`, a page's static files as one `http.batch`, a
//! `check` of each recorded status, and each correlated value extracted right after
//! the response that carries it. Extraction uses small helpers written into the
//! script (string and regular-expression search), so the script needs nothing beyond
//! `k6/http` and `k6`.

use super::correlate::{Rule, Source};
use super::plan::{Call, Item, Plan};
use std::fmt::Write as _;

/// A JavaScript string literal of `s`.
fn lit(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Text for a template literal (between backticks).
fn tpl_text(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('`', "\\`")
        .replace("${", "\\${")
}

/// `s` with each substituted value replaced by its variable: a plain literal when none
/// occurs, a template literal otherwise.
fn text(s: &str, subs: &[(String, String)], prefix: Option<&str>) -> String {
    let pieces = super::pieces(s, subs);
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

/// The extraction expression of a rule.
fn extraction(rule: &Rule) -> String {
    let r = &rule.from_var;
    match &rule.source {
        Source::Header(h) => format!("headerValue({r}, {})", lit(h)),
        Source::HeaderParam(h, p) => format!("headerParam({r}, {}, {})", lit(h), lit(p)),
        Source::Json(p) => format!("jsonValue({r}, {})", lit(p)),
        Source::Input(n) => format!("inputValue({r}, {})", lit(n)),
        Source::ScriptJson(id, p) => format!("scriptJson({r}, {}, {})", lit(id), lit(p)),
        Source::Between(a, b) => format!("between({r}, {}, {})", lit(a), lit(b)),
    }
}

/// Comment lines (`// ...`) listing the rules, the unresolved values and what was left out.
pub(crate) fn summary_lines(plan: &Plan) -> Vec<String> {
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
                r.used_by.join("; ")
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
            out.push(format!("  {:?} in {}", u.value, u.used_by));
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
    out.push("Cookies are left to the cookie jar.".into());
    out
}

/// The k6 script.
pub(crate) fn script(plan: &Plan, name: &str, har: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// {name}: a k6 script made by `host new --from-har {har}` from a browser's recording"
    );
    let _ = writeln!(
        s,
        "// of {} ({} steps, {} requests). Run: host run script.js --config run.toml",
        plan.origin,
        plan.steps.len(),
        plan.requests
    );
    s.push_str("//\n");
    for line in summary_lines(plan) {
        let _ = writeln!(s, "// {line}");
    }
    s.push_str("import http from 'k6/http';\nimport { check, group, sleep } from 'k6';\n\n");
    let _ = writeln!(
        s,
        "// The application's origin: recorded at {}, another with -e BASE_URL=...",
        plan.origin
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
    if !plan.rules.is_empty() {
        s.push_str("  // Values carried from a response to later requests (see the list above).\n");
        let vars: Vec<&str> = plan.rules.iter().map(|r| r.var.as_str()).collect();
        let _ = writeln!(s, "  let {};\n", vars.join(", "));
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
                        let _ = writeln!(s, "    // Follows the recorded redirect ({r}).");
                    }
                    let _ = writeln!(s, "    const {} = {};", call.var, request(call, plan));
                    let label = format!("{} is {}", call.label(), call.status);
                    let _ = writeln!(
                        s,
                        "    check({}, {{ {}: (r) => r.status === {} }});",
                        call.var,
                        lit(&label),
                        call.status
                    );
                    for rule in plan.rules.iter().filter(|r| r.from_var == call.var) {
                        let _ = writeln!(s, "    {} = {};", rule.var, extraction(rule));
                    }
                }
                Item::Batch(calls) => {
                    let _ = writeln!(
                        s,
                        "    // The page's {} static files, loaded together as a browser does.",
                        calls.len()
                    );
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
    s.push_str(HELPERS);
    s
}

/// Extraction helpers, written into every script: each throws, naming what it looked
/// for and where, when the response lacks it (a failed iteration with that message,
/// instead of a request that replays `undefined`).
const HELPERS: &str = r#"
// ---- Extraction helpers (plain string search; k6/html's parseHTML would do the same
// with selectors). Each throws, naming what it looked for, when a response lacks it.

function where(res) {
  return `${res.request.method} ${res.url} (status ${res.status})`;
}

function decodeEntities(s) {
  return s.replace(/&quot;/g, '"').replace(/&#39;|&#x27;/g, "'").replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

function attr(tag, name) {
  const m = tag.match(new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i'));
  return m ? decodeEntities(m[1] ?? m[2] ?? m[3]) : undefined;
}

function pick(value, path, what, res) {
  for (const part of path.split('.')) {
    if (value === null || value === undefined) break;
    value = value[part];
  }
  if (value === null || value === undefined) throw new Error(`no ${what} in the response of ${where(res)}`);
  return String(value);
}

function inputValue(res, name) {
  for (const tag of String(res.body).match(/<input\b[^>]*>/gi) || []) {
    if (attr(tag, 'name') === name && attr(tag, 'value') !== undefined) return attr(tag, 'value');
  }
  throw new Error(`no <input name="${name}" value=...> in the response of ${where(res)}`);
}

function scriptJson(res, id, path) {
  for (const m of String(res.body).matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    if (attr(m[1], 'id') === id) return pick(JSON.parse(m[2]), path, `${path} in <script id="${id}">`, res);
  }
  throw new Error(`no <script id="${id}"> in the response of ${where(res)}`);
}

function jsonValue(res, path) {
  return pick(JSON.parse(res.body), path, `JSON field ${path}`, res);
}

function headerValue(res, name) {
  for (const k in res.headers) if (k.toLowerCase() === name.toLowerCase()) return res.headers[k];
  throw new Error(`no ${name} header in the response of ${where(res)}`);
}

function headerParam(res, name, param) {
  const m = headerValue(res, name).match(new RegExp(`[?&]${param}=([^&#]*)`));
  if (!m) throw new Error(`no ${param}= in the ${name} header of ${where(res)}`);
  return decodeURIComponent(m[1].replace(/\+/g, ' '));
}

function between(res, left, right) {
  const body = String(res.body);
  const start = body.indexOf(left);
  if (start < 0) throw new Error(`no ${JSON.stringify(left)} in the response of ${where(res)}`);
  const from = start + left.length;
  const end = right === '' ? body.length : body.indexOf(right, from);
  return body.slice(from, end < 0 ? body.length : end);
}
"#;
