//! Writes a plan as a Rust plugin (the SDK's `loadtest` API): one function per step,
//! named after it, the values carried between responses in one struct, a `check` of
//! each recorded status, the recorded pauses as `sleep`, static files as one
//! `http::batch`. HTML extraction uses the SDK's `extract::Document` (the `html`
//! feature, enabled in the project's Cargo.toml when a rule needs it).

use super::plan::{Call, Item, Plan};
use super::rules::Source;
use std::fmt::Write as _;

use super::escape::{rust_comment as comment, rust_lit as lit};

/// `camelCase` → `camel_case`, for field names.
pub(crate) fn snake(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A function name from a step's title: `POST /survey/login` → `post_survey_login`.
pub(crate) fn fn_name(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    let out = out.trim_end_matches('_').to_string();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("step_{out}")
    } else {
        out
    }
}

/// An expression for `s` with correlated values taken from `v`: a `&str` (a literal or
/// a carried value) or, when values are spliced into text, a `format!`.
fn text(s: &str, subs: &[(String, String)], prefix: Option<&str>) -> String {
    let pieces = super::pieces::pieces(s, subs);
    if prefix.is_none() && pieces.len() == 1 && pieces[0].0 {
        return format!("v.{}.as_str()", snake(&pieces[0].1));
    }
    if prefix.is_none() && pieces.iter().all(|(v, _)| !v) {
        return lit(s);
    }
    let mut fmt = String::new();
    let mut args = Vec::new();
    if let Some(p) = prefix {
        fmt.push_str(p);
    }
    for (is_var, p) in pieces {
        if is_var {
            fmt.push_str("{}");
            args.push(format!("v.{}", snake(&p)));
        } else {
            fmt.push_str(&p.replace('{', "{{").replace('}', "}}"));
        }
    }
    let quoted = lit(&fmt);
    if args.is_empty() {
        format!("format!({quoted})")
    } else {
        format!("format!({quoted}, {})", args.join(", "))
    }
}

fn url(call: &Call, plan: &Plan) -> String {
    let prefix = if call.origin == plan.origin {
        "{base}".to_string()
    } else {
        call.origin.replace('{', "{{").replace('}', "}}")
    };
    text(&call.path, &call.subs, Some(&prefix))
}

fn json_expr(v: &serde_json::Value, subs: &[(String, String)]) -> String {
    use serde_json::Value;
    match v {
        Value::String(s) => text(s, subs, None),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(|x| json_expr(x, subs)).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, x)| format!("{}: {}", lit(k), json_expr(x, subs)))
                .collect();
            format!("{{ {} }}", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// The builder chain of a call (without `.send()`).
fn builder(call: &Call, plan: &Plan) -> String {
    let f = match call.method.as_str() {
        "GET" => "http::get".to_string(),
        "POST" => "http::post".to_string(),
        "PUT" => "http::put".to_string(),
        "PATCH" => "http::patch".to_string(),
        "DELETE" => "http::delete".to_string(),
        "HEAD" => "http::head".to_string(),
        m => format!("http::request({}, ", lit(m)),
    };
    let mut out = if f.ends_with(", ") {
        format!("{f}{})", url(call, plan))
    } else {
        format!("{f}({})", url(call, plan))
    };
    for (k, val) in &call.headers {
        let _ = write!(
            out,
            "\n        .header({}, {})",
            lit(k),
            text(val, &call.subs, None)
        );
    }
    if let Some((b, mime)) = &call.body {
        let mut done = false;
        if mime.contains("x-www-form-urlencoded") {
            let pairs: Vec<(String, String)> = url::form_urlencoded::parse(b.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            if !pairs.is_empty() {
                let fields: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| {
                        let e = text(v, &call.subs, None);
                        // `form` takes `&str` pairs: a `format!` is borrowed for the call.
                        let e = if e.starts_with("format!") {
                            format!("{e}.as_str()")
                        } else {
                            e
                        };
                        format!("({}, {e})", lit(k))
                    })
                    .collect();
                let _ = write!(out, "\n        .form(&[{}])", fields.join(", "));
                done = true;
            }
        } else if mime.contains("json") {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(b) {
                let _ = write!(
                    out,
                    "\n        .json(&json!({}))",
                    json_expr(&v, &call.subs)
                );
                done = true;
            }
        }
        if !done {
            let _ = write!(
                out,
                "\n        .header(\"Content-Type\", {})\n        .body({})",
                lit(mime),
                text(b, &call.subs, None)
            );
        }
    }
    if let Some(name) = &call.name {
        let _ = write!(out, "\n        .name({})", lit(name));
    }
    out
}

fn extraction(source: &Source, r: &str) -> String {
    match source {
        Source::Header(h) => format!("header_value(&{r}, {})?", lit(h)),
        Source::HeaderParam(h, p) => format!("header_param(&{r}, {}, {})?", lit(h), lit(p)),
        Source::Json(p) => format!("json_value(&{r}, {})?", lit(p)),
        Source::Input(n) => format!("input_value(&{r}, {})?", lit(n)),
        Source::ScriptJson(id, p) => format!("script_json(&{r}, {}, {})?", lit(id), lit(p)),
        Source::Between(a, b) => format!("between_value(&{r}, {}, {})?", lit(a), lit(b)),
    }
}

/// Whether the plan needs the SDK's `html` feature.
pub(crate) fn needs_html(plan: &Plan) -> bool {
    plan.rules
        .iter()
        .any(|r| matches!(r.source, Source::Input(_) | Source::ScriptJson(..)))
}

/// `src/lib.rs`.
pub(crate) fn lib_rs(plan: &Plan, name: &str, har: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "//! `{}`: made by `host new --from-har {}` from a browser's recording of\n//! {} ({} steps, {} requests).\n//!",
        comment(name),
        comment(har),
        comment(&plan.origin),
        plan.steps.len(),
        plan.requests
    );
    for line in super::js::summary_lines_for(plan, false) {
        let _ = writeln!(s, "//! {}", comment(&line));
    }
    let uses_json = plan
        .steps
        .iter()
        .flat_map(|st| &st.items)
        .any(|it| match it {
            Item::Call(c) => c.body.as_ref().is_some_and(|(b, m)| {
                m.contains("json") && serde_json::from_str::<serde_json::Value>(b).is_ok()
            }),
            Item::Batch(_) => false,
        });
    let json_use = if uses_json { "{json, Value}" } else { "Value" };
    let _ = write!(
        s,
        "\nuse loadtest::http::{{self, Response}};\nuse loadtest::serde_json::{json_use};\nuse loadtest::{{check, PluginInfo, Scenario}};\nuse std::time::Duration;\n\n"
    );
    let _ = writeln!(
        s,
        "/// The recorded application's origin; another with `-e BASE_URL=...`.\nconst DEFAULT_BASE_URL: &str = {};\n",
        lit(&plan.origin)
    );
    s.push_str("/// Values carried from a response to later requests (see the list above).\n#[derive(Default)]\nstruct Carried {\n");
    for r in &plan.rules {
        let _ = writeln!(
            s,
            "    /// {} of {}.",
            comment(&r.source.describe()),
            comment(&r.from_label)
        );
        let _ = writeln!(s, "    {}: String,", snake(&r.var));
    }
    for u in &plan.uniques {
        let _ = writeln!(
            s,
            "    /// Unique per VU and iteration: {} of {}.",
            comment(&u.describe()),
            comment(&u.created_by)
        );
        let _ = writeln!(s, "    {}: String,", snake(&u.var));
    }
    s.push_str(
        "}\n\nstruct Plugin;\n\nimpl Scenario for Plugin {\n    fn describe() -> PluginInfo {\n",
    );
    let _ = writeln!(
        s,
        "        PluginInfo::new({})\n            .version(env!(\"CARGO_PKG_VERSION\"))\n            .description({})\n            .scenario(\"default\", \"the recorded steps in order\")\n            .default_config(include_str!(\"../run.toml\"))\n    }}\n",
        lit(name),
        lit(&format!("recorded from {}", plan.origin))
    );
    s.push_str("    fn iteration(_scenario: String) -> Result<(), String> {\n        let base = loadtest::vu::env_or(\"BASE_URL\", DEFAULT_BASE_URL);\n        let base = base.trim_end_matches('/');\n        let mut v = Carried::default();\n");
    for u in &plan.uniques {
        let _ = writeln!(
            s,
            "        // The server refuses a name it already has: one per VU and iteration.\n        v.{} = unique({}, {});",
            snake(&u.var),
            lit(&u.prefix),
            lit(&u.suffix)
        );
    }
    let mut names: Vec<String> = Vec::new();
    for (n, step) in plan.steps.iter().enumerate() {
        let mut f = fn_name(&step.title);
        if names.contains(&f) {
            f = format!("{f}_{}", n + 1);
        }
        names.push(f.clone());
        if step.think_s > 0.0 && n > 0 {
            let _ = writeln!(
                s,
                "        loadtest::sleep(Duration::from_millis({})); // the recorded pause",
                (step.think_s * 1000.0).round() as u64
            );
        }
        let _ = writeln!(s, "        {f}(base, &mut v)?;");
    }
    s.push_str("        Ok(())\n    }\n}\n\nloadtest::export!(Plugin);\n");
    for (step, f) in plan.steps.iter().zip(&names) {
        let _ = writeln!(
            s,
            "\n/// {}.\n#[allow(unused_variables)]\nfn {f}(base: &str, v: &mut Carried) -> Result<(), String> {{",
            comment(&step.title)
        );
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
                    let _ = writeln!(
                        s,
                        "    let {} = {}\n        .send()?;",
                        call.var,
                        builder(call, plan)
                    );
                    let _ = writeln!(
                        s,
                        "    check({}, {}.status() == {});",
                        lit(&format!("{} is {}", call.label(), call.status)),
                        call.var,
                        call.status
                    );
                    for rule in plan.rules.iter().filter(|r| r.from_var == call.var) {
                        let _ = writeln!(
                            s,
                            "    v.{} = {};",
                            snake(&rule.var),
                            extraction(&rule.source, &call.var)
                        );
                    }
                }
                Item::Batch(calls) => {
                    let _ = writeln!(
                        s,
                        "    // The page's {} static files, loaded together as a browser does.\n    let statics = http::batch(vec![",
                        calls.len()
                    );
                    for c in calls {
                        let _ = writeln!(s, "        {},", builder(c, plan));
                    }
                    let expected: Vec<String> =
                        calls.iter().map(|c| c.status.to_string()).collect();
                    let _ = writeln!(
                        s,
                        "    ]);\n    let recorded = [{}];\n    check(\n        \"static files have their recorded statuses\",\n        statics.iter().zip(recorded).all(|(r, s)| r.as_ref().is_ok_and(|r| r.status() == s)),\n    );",
                        expected.join(", ")
                    );
                }
            }
        }
        s.push_str("    Ok(())\n}\n");
    }
    s.push_str(if needs_html(plan) {
        RUST_HELPERS_HTML
    } else {
        ""
    });
    if !plan.uniques.is_empty() {
        s.push_str(RUST_UNIQUE);
    }
    s.push_str(RUST_HELPERS);
    s
}

/// The made value of a unique (a sign-up's user name or email).
const RUST_UNIQUE: &str = r#"
/// `{prefix}-{VU}-{iteration}-{random}{suffix}`: unique per VU and iteration, and across
/// runs and hosts by its random part (std's hasher keys come from WASI's random source).
fn unique(prefix: &str, suffix: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    let info = loadtest::vu::info();
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    format!(
        "{prefix}-{}-{}-{:06x}{suffix}",
        info.vu_id,
        info.iteration,
        random & 0xff_ffff
    )
}
"#;

/// Extraction helpers of every generated Rust plugin: each fails the iteration, naming
/// what it looked for, when the response lacks it.
const RUST_HELPERS: &str = r#"
// ---- Extraction helpers. Each fails the iteration, naming what it looked for.

fn missing(what: &str, res: &Response) -> String {
    format!("no {what} in the response of {} (status {})", res.url(), res.status())
}

#[allow(dead_code)]
fn pick(value: &Value, path: &str, what: &str, res: &Response) -> Result<String, String> {
    let pointer = format!("/{}", path.replace('.', "/"));
    match value.pointer(&pointer) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Null) | None => Err(missing(what, res)),
        Some(other) => Ok(other.to_string()),
    }
}

#[allow(dead_code)]
fn json_value(res: &Response, path: &str) -> Result<String, String> {
    let value: Value = res.json()?;
    pick(&value, path, &format!("JSON field {path}"), res)
}

#[allow(dead_code)]
fn header_value(res: &Response, name: &str) -> Result<String, String> {
    res.header(name)
        .map(str::to_owned)
        .ok_or_else(|| missing(&format!("{name} header"), res))
}

#[allow(dead_code)]
fn header_param(res: &Response, name: &str, param: &str) -> Result<String, String> {
    let value = header_value(res, name)?;
    let query = value.split_once('?').map_or("", |q| q.1);
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(&format!("{param}=")))
        .map(str::to_owned)
        .ok_or_else(|| missing(&format!("{param}= in the {name} header"), res))
}

#[allow(dead_code)]
fn between_value(res: &Response, left: &str, right: &str) -> Result<String, String> {
    let text = res.text();
    let found = if right.is_empty() {
        text.find(left).map(|at| &text[at + left.len()..])
    } else {
        loadtest::extract::between(&text, left, right)
    };
    found
        .map(str::to_owned)
        .ok_or_else(|| missing(&format!("text between {left:?} and {right:?}"), res))
}
"#;

/// Helpers over the SDK's HTML parser (`html` feature).
const RUST_HELPERS_HTML: &str = r#"
#[allow(dead_code)]
fn input_value(res: &Response, name: &str) -> Result<String, String> {
    res.html()
        .attr(&format!("input[name=\"{name}\"]"), "value")?
        .ok_or_else(|| missing(&format!("<input name=\"{name}\" value=...>"), res))
}

#[allow(dead_code)]
fn script_json(res: &Response, id: &str, path: &str) -> Result<String, String> {
    let value: Value = res.html().json_script(id)?;
    pick(&value, path, &format!("{path} in <script id=\"{id}\">"), res)
}
"#;
