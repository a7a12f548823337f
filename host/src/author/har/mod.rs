//! `host new NAME --from-har FILE.har`: a scenario from what a browser recorded.
//!
//! [`model`] reads the HAR leniently (browsers fill different optional fields) and
//! refuses what cannot make a scenario with the entry and field at fault; [`plan`]
//! keeps the application's origin, groups requests into steps (pages, or bursts),
//! batches each page's static files, follows redirects as the client does and names
//! requests by templated paths; [`correlate`] turns values a response handed out and a
//! later request sent back into run-time extractions; [`js`] writes the k6 script and
//! [`rust`] the Rust plugin.

pub(crate) mod correlate;
pub(crate) mod html;
pub(crate) mod js;
pub(crate) mod model;
pub(crate) mod plan;
pub(crate) mod rust;

use anyhow::{bail, Result};
use std::path::Path;

/// `s` cut into literal text (`false`) and variables (`true`) where a correlated
/// value occurs; `subs` (value, variable) longest value first.
pub(crate) fn pieces(s: &str, subs: &[(String, String)]) -> Vec<(bool, String)> {
    let mut pieces: Vec<(bool, String)> = vec![(false, s.to_string())];
    for (value, var) in subs {
        let mut next = Vec::new();
        for (is_var, p) in pieces {
            if is_var {
                next.push((true, p));
                continue;
            }
            let mut rest = p.as_str();
            while let Some(at) = rest.find(value.as_str()) {
                next.push((false, rest[..at].to_string()));
                next.push((true, var.clone()));
                rest = &rest[at + value.len()..];
            }
            next.push((false, rest.to_string()));
        }
        pieces = next;
    }
    pieces.retain(|(v, p)| *v || !p.is_empty());
    pieces
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
    let plan = plan::plan(&rec, opts);
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
            put(
                "run.toml",
                &format!(
                    "# The default config (describe() returns it); flags override it:\n\
                     # --vus, --iterations, --duration, -e BASE_URL=...\n\
                     [scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 1\n\n\
                     [thresholds]\nchecks = [\"rate==1\"]\n\n{}",
                    run_toml(&plan)
                ),
            )?;
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
            bail!("--from-har writes --lang js or rust; Python is not written from a recording yet")
        }
    }
    Ok(Imported {
        summary: js::summary_lines(&plan),
        steps: plan.steps.len(),
        requests: plan.requests,
    })
}
