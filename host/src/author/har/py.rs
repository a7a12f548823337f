//! Writes a plan as a Python plugin (the Python SDK, `loadtest`): one function per step,
//! named after it, the values carried between responses in one object, a check of each
//! recorded status, the recorded pauses as `loadtest.sleep`, a page's static files as
//! one `loadtest.http.batch`, and a form of an earlier page submitted with the SDK's
//! form helper (`res.form(selector).set(...).submit()`), its hidden fields taken from
//! the live page. Values are read as a Python user reads them: `res.html().attr(...)`,
//! `res.html().json_script(id)[...]`, `res.json()[...]`, `res.header(...)`.

use super::escape::py_comment as comment;
use super::plan::{Call, Item, Plan};
use super::rules::Source;
use super::rust::{fn_name, snake};
use std::fmt::Write as _;

/// Python's keywords and the names the generated module uses itself: not usable as a
/// step's function or a carried value's attribute.
const RESERVED: [&str; 42] = [
    "False",
    "None",
    "True",
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "try",
    "while",
    "with",
    "yield",
    "loadtest",
    "os",
    "unique",
    "find_between",
    "query_param",
    "iteration",
    "match",
];

/// `name` made safe as a Python identifier here.
fn py_ident(name: &str) -> String {
    if RESERVED.contains(&name) || name == "Carried" || name == "Recorded" || name == "Plugin" {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// A Python string literal: in single quotes when the text has double quotes and no
/// single ones (a CSS selector such as `form[action="/login"]`), else in double quotes.
fn lit(s: &str) -> String {
    let q = if s.contains('"') && !s.contains('\'') {
        '\''
    } else {
        '"'
    };
    let mut out = String::from(q);
    push_escaped_in(&mut out, s, false, q);
    out.push(q);
    out
}

fn push_escaped(out: &mut String, s: &str, braces: bool) {
    push_escaped_in(out, s, braces, '"')
}

/// `s` escaped for a Python string delimited by `quote`; `braces` doubled for f-strings.
fn push_escaped_in(out: &mut String, s: &str, braces: bool, quote: char) {
    out.push_str(&super::escape::py_escaped(s, braces, quote));
}

/// The attribute of the carried values object for a variable.
fn attr(var: &str) -> String {
    format!("v.{}", py_ident(&snake(var)))
}

/// An expression for `s` with correlated values taken from `v`: a literal, a carried
/// value, or an f-string. `prefix` is raw f-string text put first (`{base}`).
fn text(s: &str, subs: &[(String, String)], prefix: Option<&str>) -> String {
    let pieces = super::pieces::pieces(s, subs);
    if prefix.is_none() && pieces.len() == 1 && pieces[0].0 {
        return attr(&pieces[0].1);
    }
    if prefix.is_none() && pieces.iter().all(|(v, _)| !v) {
        return lit(s);
    }
    let mut out = String::from("f\"");
    if let Some(p) = prefix {
        out.push_str(p);
    }
    for (is_var, p) in pieces {
        if is_var {
            let _ = write!(out, "{{{}}}", attr(&p));
        } else {
            push_escaped(&mut out, &p, true);
        }
    }
    out.push('"');
    out
}

fn url(call: &Call, plan: &Plan) -> String {
    let prefix = if call.origin == plan.origin {
        "{base}".to_string()
    } else {
        let mut o = String::new();
        push_escaped(&mut o, &call.origin, true);
        o
    };
    text(&call.path, &call.subs, Some(&prefix))
}

fn json_expr(v: &serde_json::Value, subs: &[(String, String)]) -> String {
    use serde_json::Value;
    match v {
        Value::String(s) => text(s, subs, None),
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(|x| json_expr(x, subs)).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, x)| format!("{}: {}", lit(k), json_expr(x, subs)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

/// A dict literal of pairs, or a list of tuples when a name repeats.
fn pairs_expr(pairs: &[(String, String)], subs: &[(String, String)]) -> String {
    let unique = pairs
        .iter()
        .enumerate()
        .all(|(i, (k, _))| pairs[..i].iter().all(|(k2, _)| k2 != k));
    let items: Vec<String> = pairs
        .iter()
        .map(|(k, v)| {
            if unique {
                format!("{}: {}", lit(k), text(v, subs, None))
            } else {
                format!("({}, {})", lit(k), text(v, subs, None))
            }
        })
        .collect();
    if unique {
        format!("{{{}}}", items.join(", "))
    } else {
        format!("[{}]", items.join(", "))
    }
}

/// `f(arg, kw=..., ...)`, on one line when short, else one argument a line.
fn call_expr(f: &str, args: &[String], indent: &str) -> String {
    let one = format!("{f}({})", args.join(", "));
    if args.is_empty() || one.len() + indent.len() <= 92 {
        return one;
    }
    let inner = format!("{indent}    ");
    let mut out = format!("{f}(\n");
    for a in args {
        let _ = writeln!(out, "{inner}{a},");
    }
    out.push_str(indent);
    out.push(')');
    out
}

/// The keyword arguments of a request: headers, body, name tag.
fn options(call: &Call) -> Vec<String> {
    let mut headers: Vec<(String, String)> = call.headers.clone();
    let mut args = Vec::new();
    if let Some((b, mime)) = &call.body {
        let mut done = false;
        if mime.contains("x-www-form-urlencoded") {
            let pairs: Vec<(String, String)> = url::form_urlencoded::parse(b.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            if !pairs.is_empty() {
                args.push(format!("form={}", pairs_expr(&pairs, &call.subs)));
                done = true;
            }
        } else if mime.contains("json") {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(b) {
                args.push(format!("json={}", json_expr(&v, &call.subs)));
                done = true;
            }
        }
        if !done {
            if !mime.is_empty() {
                headers.push(("Content-Type".into(), mime.clone()));
            }
            args.push(format!("body={}", text(b, &call.subs, None)));
        }
    }
    if !headers.is_empty() {
        args.insert(0, format!("headers={}", pairs_dict(&headers, &call.subs)));
    }
    if let Some(name) = &call.name {
        args.push(format!("name={}", lit(name)));
    }
    args
}

/// Headers as a dict literal (a repeated name keeps its last value, as a dict does).
fn pairs_dict(pairs: &[(String, String)], subs: &[(String, String)]) -> String {
    let items: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}: {}", lit(k), text(v, subs, None)))
        .collect();
    format!("{{{}}}", items.join(", "))
}

/// The expression sending a call.
fn request(call: &Call, plan: &Plan) -> String {
    let mut args = vec![url(call, plan)];
    if let Some(form) = &call.form {
        let page = if form.carried {
            format!("v.{}", form.page_var)
        } else {
            form.page_var.clone()
        };
        let mut chain = format!("{page}.form({})", lit(&form.selector));
        for (k, v) in &form.fields {
            let _ = write!(chain, ".set({}, {})", lit(k), text(v, &call.subs, None));
        }
        let bare = Call {
            body: None,
            ..call.clone()
        };
        return call_expr(&format!("{chain}.submit"), &options(&bare), "    ");
    }
    args.extend(options(call));
    let f = match call.method.as_str() {
        "GET" => "loadtest.http.get".to_string(),
        "POST" => "loadtest.http.post".to_string(),
        m => {
            args.insert(0, lit(m));
            "loadtest.http.request".to_string()
        }
    };
    call_expr(&f, &args, "    ")
}

/// The extraction expression of a rule from the response in `r`.
fn extraction(source: &Source, r: &str) -> String {
    let path = |p: &str| -> String {
        p.split('.')
            .filter(|s| !s.is_empty())
            .map(|s| {
                if s.chars().all(|c| c.is_ascii_digit()) {
                    format!("[{s}]")
                } else {
                    format!("[{}]", lit(s))
                }
            })
            .collect()
    };
    let css = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    match source {
        Source::Header(h) => format!("{r}.header({})", lit(h)),
        Source::HeaderParam(h, p) => format!("query_param({r}.header({}), {})", lit(h), lit(p)),
        Source::Json(p) => format!("{r}.json(){}", path(p)),
        Source::Input(n) => format!(
            "{r}.html().attr({}, \"value\")",
            lit(&format!("input[name={}]", css(n)))
        ),
        Source::ScriptJson(id, p) => format!("{r}.html().json_script({}){}", lit(id), path(p)),
        Source::Between(a, b) => format!("find_between({r}.text, {}, {})", lit(a), lit(b)),
    }
}

/// The run config as a Python string literal (triple-quoted when it reads as such).
fn config_literal(toml: &str) -> String {
    if toml.contains("\"\"\"") || toml.contains('\\') || toml.ends_with('"') {
        lit(toml)
    } else {
        format!("\"\"\"{toml}\"\"\"")
    }
}

/// `app.py`; `config` is the run config it returns as its default.
pub(crate) fn app_py(plan: &Plan, name: &str, har: &str, config: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\"\"\"`{}`: made by `host new --from-har {}` from a browser's recording of\n{} ({} steps, {} requests).\n",
        comment(name),
        comment(har),
        comment(&plan.origin),
        plan.steps.len(),
        plan.requests
    );
    for line in super::js::summary_lines(plan) {
        let _ = writeln!(s, "{}", comment(&line));
    }
    s.push_str("\"\"\"\n\n");
    if !plan.uniques.is_empty() {
        s.push_str("import os\n\n");
    }
    s.push_str("import loadtest\n\n");
    let _ = writeln!(
        s,
        "# The recorded application's origin; another with -e BASE_URL=...\nDEFAULT_BASE_URL = {}\n",
        lit(&plan.origin)
    );
    let _ = writeln!(
        s,
        "# The default run config (describe() returns it); flags override it.\nDEFAULT_CONFIG = {}\n\n",
        config_literal(config)
    );
    let mut steps: Vec<String> = Vec::new();
    for (n, step) in plan.steps.iter().enumerate() {
        let mut f = py_ident(&fn_name(&step.title));
        if steps.contains(&f) {
            f = format!("{f}_{}", n + 1);
        }
        steps.push(f);
    }
    let _ = writeln!(
        s,
        "class Recorded(loadtest.Scenario):\n    name = {}\n    version = \"0.1.0\"\n    description = {}\n    scenarios = [(\"default\", \"the recorded steps in order\")]\n    default_config = DEFAULT_CONFIG\n",
        lit(name),
        lit(&format!("recorded from {}", plan.origin))
    );
    s.push_str("    def iteration(self, scenario):\n        base = loadtest.env(\"BASE_URL\", DEFAULT_BASE_URL).rstrip(\"/\")\n        v = Carried()\n");
    for u in &plan.uniques {
        let _ = writeln!(
            s,
            "        # The server refuses a name it already has: one per VU and iteration.\n        {} = unique({}, {})",
            attr(&u.var),
            lit(&u.prefix),
            lit(&u.suffix)
        );
    }
    for (n, (step, f)) in plan.steps.iter().zip(&steps).enumerate() {
        if step.think_s > 0.0 && n > 0 {
            let _ = writeln!(
                s,
                "        loadtest.sleep({})  # the recorded pause",
                step.think_s
            );
        }
        let _ = writeln!(s, "        {f}(base, v)");
    }
    s.push_str("\n\nPlugin = loadtest.export(Recorded)\n\n\n");
    s.push_str("class Carried:\n    \"\"\"Values carried from a response to later requests (see the list above).\"\"\"\n\n    def __init__(self):\n");
    let mut fields = 0;
    for r in plan.rules.iter().filter(|r| r.outside_forms) {
        let _ = writeln!(
            s,
            "        # {} of {}.\n        {} = None",
            comment(&r.source.describe()),
            comment(&r.from_label),
            attr(&r.var).replacen("v.", "self.", 1)
        );
        fields += 1;
    }
    for u in &plan.uniques {
        let _ = writeln!(
            s,
            "        # Unique per VU and iteration: {}.\n        {} = None",
            comment(&u.describe()),
            attr(&u.var).replacen("v.", "self.", 1)
        );
        fields += 1;
    }
    let carried = super::forms::carried_pages(plan);
    for var in &carried {
        let _ = writeln!(
            s,
            "        # The page whose form a later step submits.\n        self.{var} = None"
        );
        fields += 1;
    }
    if fields == 0 {
        s.push_str("        pass\n");
    }
    for (step, f) in plan.steps.iter().zip(&steps) {
        let _ = writeln!(
            s,
            "\n\ndef {f}(base, v):\n    \"\"\"{}.\"\"\"",
            comment(&step.title)
        );
        for item in &step.items {
            match item {
                Item::Call(call) => {
                    if let Some(r) = &call.redirect {
                        let _ =
                            writeln!(s, "    # Follows the recorded redirect ({}).", comment(r));
                    }
                    if call.revalidated {
                        s.push_str("    # Recorded as 304 (the browser's cache asked if it changed); with no cache, 200.\n");
                    }
                    if call.form.is_some() {
                        s.push_str("    # Submits the page's form as a browser does (its hidden fields from the live page).\n");
                    }
                    let _ = writeln!(s, "    {} = {}", call.var, request(call, plan));
                    let _ = writeln!(
                        s,
                        "    loadtest.check({}, {}.status == {})",
                        lit(&format!("{} is {}", call.label(), call.status)),
                        call.var,
                        call.status
                    );
                    if carried.contains(&call.var) {
                        let _ = writeln!(
                            s,
                            "    v.{0} = {0}  # a later step submits its form",
                            call.var
                        );
                    }
                    for rule in plan
                        .rules
                        .iter()
                        .filter(|r| r.from_var == call.var && r.outside_forms)
                    {
                        let _ = writeln!(
                            s,
                            "    {} = {}",
                            attr(&rule.var),
                            extraction(&rule.source, &call.var)
                        );
                    }
                }
                Item::Batch(calls) => {
                    let _ = writeln!(
                        s,
                        "    # The page's {} static files, loaded together as a browser does.",
                        calls.len()
                    );
                    if calls.iter().any(|c| c.revalidated) {
                        s.push_str("    # Some were recorded as 304 (the browser's cache asked); with no cache, 200.\n");
                    }
                    s.push_str("    statics = loadtest.http.batch([\n");
                    for c in calls {
                        let opts = options(c);
                        let opts = if opts.is_empty() {
                            "{}".to_string()
                        } else {
                            let kv: Vec<String> = opts
                                .iter()
                                .map(|o| {
                                    let (k, v) = o.split_once('=').expect("key=value");
                                    format!("{}: {v}", lit(k))
                                })
                                .collect();
                            format!("{{{}}}", kv.join(", "))
                        };
                        let _ =
                            writeln!(s, "        ({}, {}, {opts}),", lit(&c.method), url(c, plan));
                    }
                    s.push_str("    ])\n");
                    if calls.iter().all(|c| c.status == calls[0].status) {
                        let _ = writeln!(
                            s,
                            "    loadtest.check(\n        {},\n        all(getattr(r, \"status\", None) == {} for r in statics),\n    )",
                            lit(&format!("static files are {}", calls[0].status)),
                            calls[0].status
                        );
                    } else {
                        let statuses: Vec<String> =
                            calls.iter().map(|c| c.status.to_string()).collect();
                        let _ = writeln!(
                            s,
                            "    recorded = [{}]\n    loadtest.check(\n        \"static files have their recorded statuses\",\n        all(getattr(r, \"status\", None) == want for r, want in zip(statics, recorded)),\n    )",
                            statuses.join(", ")
                        );
                    }
                }
            }
        }
    }
    let used = |f: fn(&Source) -> bool| plan.rules.iter().any(|r| r.outside_forms && f(&r.source));
    if !plan.uniques.is_empty() {
        s.push_str(PY_UNIQUE);
    }
    if used(|x| matches!(x, Source::HeaderParam(..))) {
        s.push_str(PY_QUERY_PARAM);
    }
    if used(|x| matches!(x, Source::Between(..))) {
        s.push_str(PY_FIND_BETWEEN);
    }
    s
}

/// The made value of a unique (a sign-up's user name or email).
const PY_UNIQUE: &str = r#"

def unique(prefix, suffix):
    """`{prefix}-{VU}-{iteration}-{random}{suffix}`: unique per VU and iteration, and
    across runs and hosts by its random part (os.urandom asks WASI's random source at
    run time; the `random` module's seed would be the one frozen into the build)."""
    info = loadtest.info()
    return f"{prefix}-{info.vu_id}-{info.iteration}-{os.urandom(3).hex()}{suffix}"
"#;

const PY_QUERY_PARAM: &str = r#"

def query_param(url, name):
    """The value of the query parameter `name` of `url` (a header's URL), or None."""
    from urllib.parse import parse_qs, urlsplit
    values = parse_qs(urlsplit(url or "").query).get(name)
    return values[0] if values else None
"#;

const PY_FIND_BETWEEN: &str = r#"

def find_between(content, left, right):
    """The text between `left` and `right` in `content`, or None."""
    start = content.find(left)
    if start < 0:
        return None
    start += len(left)
    end = content.find(right, start) if right else -1
    return content[start:] if end < 0 else content[start:end]
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_f_strings_are_python() {
        assert_eq!(lit("a\"b\\c\n\u{1}"), r#"'a"b\\c\n\x01'"#);
        assert_eq!(lit("it's \"x\""), r#""it's \"x\"""#);
        let subs = vec![("t0k3n-abcdef".to_string(), "accessToken".to_string())];
        assert_eq!(
            text("Bearer t0k3n-abcdef {x}", &subs, None),
            "f\"Bearer {v.access_token} {{x}}\""
        );
        assert_eq!(text("t0k3n-abcdef", &subs, None), "v.access_token");
        assert_eq!(text("plain", &subs, None), "\"plain\"");
        assert_eq!(py_ident("import"), "import_");
        let v: serde_json::Value =
            serde_json::from_str(r#"{"a": [1, true, null], "b": "t0k3n-abcdef"}"#).unwrap();
        assert_eq!(
            json_expr(&v, &subs),
            r#"{"a": [1, True, None], "b": v.access_token}"#
        );
    }
}
