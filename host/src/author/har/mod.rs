//! `host new NAME --from-har FILE.har`: a scenario from what a browser recorded.
//!
//! [`model`] reads the HAR leniently (browsers fill different optional fields) and
//! refuses what cannot make a scenario with the entry and field at fault; [`plan`]
//! keeps the application's origin, groups requests into steps (pages, or bursts),
//! batches each page's static files, follows redirects as the client does and names
//! requests by templated paths; [`correlate`] turns values a response handed out and a
//! later request sent back into run-time extractions and makes a sign-up's names unique
//! per VU and iteration; [`forms`] finds the requests that submit a form of an earlier
//! page; [`js`] writes the k6 script, [`rust`] the Rust plugin and [`py`] the Python one,
//! each writing text of the recording only through [`escape`], comments included.

pub(crate) mod correlate;
pub(crate) mod escape;
pub(crate) mod forms;
#[cfg(test)]
mod hostile_tests;
pub(crate) mod html;
pub(crate) mod index;
pub(crate) mod js;
pub(crate) mod model;
pub(crate) mod pieces;
pub(crate) mod plan;
pub(crate) mod py;
pub(crate) mod rules;
pub(crate) mod rust;
pub(crate) mod secrets;

use anyhow::{bail, Result};
use std::path::Path;

/// The plan of a recording, with its forms found and its values correlated: the
/// passes run here, above the plan they fill, so the plan's types import neither.
fn plan_all(rec: &model::Recording, opts: &plan::Options) -> plan::Plan {
    let mut plan = plan::plan(rec, opts);
    forms::find(rec, &mut plan);
    correlate::correlate(rec, &mut plan);
    plan
}

/// What the import found, for the command's output.
#[derive(Debug)]
pub(crate) struct Imported {
    /// Lines describing the rules, unresolved values and origins left out.
    pub summary: Vec<String>,
    /// Steps written.
    pub steps: usize,
    /// Requests written.
    pub requests: usize,
}

/// `run.toml` beside the script: the recorded application's origin (and any kept) is
/// the only target besides loopback the run may reach.
fn run_toml(plan: &plan::Plan) -> String {
    let mut allow = vec![plan.origin.clone()];
    allow.extend(plan.kept.iter().cloned());
    let list: Vec<String> = allow.iter().map(|o| format!("{o:?}")).collect();
    format!(
        "# The targets this scenario may reach: the recorded application's origin{}.\n\
         # (Loopback is always allowed.)\n\
         [targets]\nallow = [{}]\n",
        if plan.kept.is_empty() {
            ""
        } else {
            " and the origins kept"
        },
        list.join(", ")
    )
}

/// The default run config of a plugin (Rust, Python): one VU, one iteration, every
/// check must pass, and the targets of [`run_toml`].
fn default_config(plan: &plan::Plan) -> String {
    format!(
        "# The default config (describe() returns it); flags override it:\n\
         # --vus, --iterations, --duration, -e BASE_URL=...\n\
         [scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 1\n\n\
         [thresholds]\nchecks = [\"rate==1\"]\n\n{}",
        run_toml(plan)
    )
}

/// Writes the project for `har` into `dir` (absent or empty) in `lang`. The recording
/// is read and analysed first: a refused HAR leaves no folder behind.
pub(crate) fn write(
    dir: &Path,
    name: &str,
    har: &Path,
    lang: super::Lang,
    opts: &plan::Options,
) -> Result<Imported> {
    let rec = model::read(har)?;
    let plan = plan_all(&rec, opts);
    if plan.origin.is_empty() {
        bail!(
            "{} has no http or https request (only {}): nothing to make a scenario of",
            har.display(),
            plan.skipped
                .iter()
                .map(|(s, n)| format!("{n} {s}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if plan.steps.is_empty() {
        bail!(
            "{} has no request to {} that was answered: nothing to make a scenario of",
            har.display(),
            plan.origin
        );
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let har_name = har
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let put = |rel: &str, text: &str| -> Result<()> {
        use anyhow::Context as _;
        std::fs::write(dir.join(rel), text)
            .with_context(|| format!("cannot write {}", dir.join(rel).display()))
    };
    match lang {
        super::Lang::Js => {
            put("script.js", &js::script(&plan, name, &har_name))?;
            put("run.toml", &run_toml(&plan))?;
            put(".gitignore", "*.wasm\n/results\n")?;
            put(
                "README.md",
                &format!(
                    "# {name}\n\nA k6 script made by `host new {name} --from-har {har_name}` from a browser's\n\
                     recording of {}. Every request, check and extraction is in `script.js`; edit it freely.\n\n\
                     \x20   host run script.js --config run.toml -e BASE_URL={}\n",
                    plan.origin, plan.origin
                ),
            )?;
        }
        super::Lang::Rust => {
            let fill = |t: &str| super::templates::render(t, name);
            let mut cargo = fill(super::templates::CARGO_TOML);
            if rust::needs_html(&plan) {
                // The extractions read pages with the SDK's HTML parser.
                cargo = cargo.replace(
                    "loadtest-sdk = { path = \"sdk\" }",
                    "loadtest-sdk = { path = \"sdk\", features = [\"html\"] }",
                );
            }
            std::fs::create_dir_all(dir.join("src"))?;
            std::fs::create_dir_all(dir.join(".cargo"))?;
            put("Cargo.toml", &cargo)?;
            put("Cargo.lock", super::sdk::PLUGINS_LOCK)?;
            put(".cargo/config.toml", super::templates::CARGO_CONFIG)?;
            put("run.toml", &default_config(&plan))?;
            put("src/lib.rs", &rust::lib_rs(&plan, name, &har_name))?;
            put("README.md", &fill(super::templates::README))?;
            put(".gitignore", super::templates::GITIGNORE)?;
            for (rel, text) in super::sdk::SDK_FILES {
                let path = dir.join("sdk").join(rel);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                put(&format!("sdk/{rel}"), text)?;
            }
        }
        super::Lang::Python => {
            let config = default_config(&plan);
            put("app.py", &py::app_py(&plan, name, &har_name, &config))?;
            put("run.toml", &config)?;
            put(
                "README.md",
                &super::templates::render(super::templates::PY_README, name),
            )?;
            put(".gitignore", super::templates::PY_GITIGNORE)?;
            super::sdk::write_python_sdk(dir)?;
        }
    }
    Ok(Imported {
        summary: js::summary_lines_for(&plan, lang != super::Lang::Rust),
        steps: plan.steps.len(),
        requests: plan.requests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(plan: &plan::Plan) -> Vec<&plan::Call> {
        plan.steps
            .iter()
            .flat_map(|s| &s.items)
            .filter_map(|i| match i {
                plan::Item::Call(c) => Some(c),
                plan::Item::Batch(_) => None,
            })
            .collect()
    }

    #[test]
    fn a_revalidated_page_expects_200_and_a_sign_up_name_is_made_unique() {
        let rec = model::parse(
            r#"{"log":{"entries":[
              {"startedDateTime":"2024-05-01T10:00:00Z","_resourceType":"document","request":{"method":"GET","url":"http://a.test/app","headers":[{"name":"If-None-Match","value":"\"abc\""},{"name":"If-Modified-Since","value":"Wed, 01 May 2024 09:00:00 GMT"}]},"response":{"status":304,"headers":[{"name":"ETag","value":"\"abc\""}]}},
              {"startedDateTime":"2024-05-01T10:00:02Z","request":{"method":"POST","url":"http://a.test/signup","postData":{"mimeType":"application/json","text":"{\"email\":\"ann@example.com\",\"password\":\"pw-secret\"}"}},"response":{"status":201,"content":{"mimeType":"application/json","text":"{\"id\":7}"}}},
              {"startedDateTime":"2024-05-01T10:00:04Z","request":{"method":"POST","url":"http://a.test/login","postData":{"mimeType":"application/x-www-form-urlencoded","text":"email=ann%40example.com&password=pw-secret"}},"response":{"status":200}}
            ]}}"#,
        )
        .unwrap();
        let plan = plan_all(&rec, &plan::Options::default());
        let calls = calls(&plan);
        // The 304 of the browser's cache is a 200 without it, and no conditional header
        // is replayed.
        assert_eq!(calls[0].status, 200);
        assert!(calls[0].revalidated);
        assert!(calls[0].headers.is_empty(), "{:?}", calls[0].headers);
        // The sign-up's email is made per VU and iteration, also where the sign-in sends it.
        assert_eq!(plan.uniques.len(), 1, "{:?}", plan.uniques);
        let u = &plan.uniques[0];
        assert_eq!((u.var.as_str(), u.prefix.as_str()), ("email", "ann"));
        assert_eq!(u.suffix, "@example.com");
        assert_eq!(u.used_by, vec!["POST /signup", "POST /login"]);
        let js = js::script(&plan, "t", "t.har");
        assert!(
            js.contains("const email = `ann-${__VU}-${__ITER}-${Math.random().toString(36).slice(2, 8)}@example.com`;"),
            "{js}"
        );
        assert!(js.contains("JSON.stringify({ email: email,"), "{js}");
        assert!(
            js.contains("{ email: email, password: 'pw-secret' }"),
            "{js}"
        );
        assert!(
            js.contains("'GET /app is 200': (r) => r.status === 200"),
            "{js}"
        );
        assert!(!js.to_ascii_lowercase().contains("if-none-match"), "{js}");
        let lines = js::summary_lines(&plan).join("\n");
        assert!(
            lines.contains(
                "email: ann-<VU>-<iteration>-<random>@example.com (recorded \"ann@example.com\")"
            ),
            "{lines}"
        );
        let py = py::app_py(&plan, "t", "t.har", "");
        assert!(
            py.contains("v.email = unique(\"ann\", \"@example.com\")"),
            "{py}"
        );
        assert!(
            py.contains("json={\"email\": v.email, \"password\": \"pw-secret\"}"),
            "{py}"
        );
        assert!(
            py.contains("loadtest.check(\"GET /app is 200\", res1.status == 200)"),
            "{py}"
        );
        let rs = rust::lib_rs(&plan, "t", "t.har");
        assert!(
            rs.contains("v.email = unique(\"ann\", \"@example.com\");"),
            "{rs}"
        );
    }
}
