//! `html-parse-bench`: parses a page and looks up a hidden form field and a JSON
//! `<script>` in it, `REPS` times per iteration, in the guest (`guest`: scraper inside
//! the plugin) or on the host (`host`: `loadtest::html`), and records the cost of one
//! parse with its lookups (`parse_us`) and the plugin's linear memory (`wasm_memory_kib`,
//! which never shrinks: what a guest-side parser leaves each VU holding).
//!
//! Environment: `PAGE` (`survey`: the demo target's survey page, 0.7 KB; `big`: a
//! generated page of about 100 KB), `REPS` (20).

use loadtest::{metrics, vu, PluginInfo, Scenario};
use std::sync::OnceLock;
use std::time::Instant;

const SURVEY: &str = include_str!("../../survey.html");

/// A page of about 100 KB: a navigation, a table of 600 rows with links, the survey's
/// form and its JSON island at the end (so a lookup walks the whole tree).
fn big_page() -> &'static str {
    static PAGE: OnceLock<String> = OnceLock::new();
    PAGE.get_or_init(|| {
        let mut page = String::from("<!doctype html><html><head><title>Notes</title><link rel=stylesheet href=/app.css></head><body><nav><ul>");
        for i in 0..40 {
            page.push_str(&format!("<li><a href=\"/section/{i}\" class=\"nav-link\">Section {i}</a></li>"));
        }
        page.push_str("</ul></nav><main><table class=notes><thead><tr><th>Id<th>Title<th>Owner<th>Updated</tr></thead><tbody>");
        for i in 0..600 {
            page.push_str(&format!(
                "<tr data-id=\"{i}\"><td>{i}</td><td><a href=\"/notes/{i}\">Note number {i} about something</a></td><td>user-{}</td><td>2026-12-0{}</td></tr>",
                i % 17,
                i % 9 + 1
            ));
        }
        page.push_str("</tbody></table>");
        let start = SURVEY.find("<h1>").unwrap();
        let end = SURVEY.find("</body>").unwrap();
        page.push_str(&SURVEY[start..end]);
        page.push_str("</main></body></html>");
        page
    })
}

struct Bench;

/// The lookups a plugin makes on the survey page.
fn guest(page: &str) -> Result<usize, String> {
    let doc = scraper::Html::parse_document(page);
    let csrf = scraper::Selector::parse("input[name=csrf]").unwrap();
    let data = scraper::Selector::parse("script#survey-data").unwrap();
    let token = doc
        .select(&csrf)
        .next()
        .and_then(|e| e.value().attr("value"))
        .ok_or("no csrf")?;
    let json: String = doc.select(&data).next().ok_or("no data")?.text().collect();
    Ok(token.len() + json.len())
}

fn host(page: &str) -> Result<usize, String> {
    let doc = loadtest::html::Document::parse(page);
    let token = doc.attr("input[name=csrf]", "value")?.ok_or("no csrf")?;
    let json = doc.text("script#survey-data")?.ok_or("no data")?;
    Ok(token.len() + json.len())
}

impl Scenario for Bench {
    fn describe() -> PluginInfo {
        PluginInfo::new("html-parse-bench")
            .scenario("guest", "parse and look up inside the plugin (scraper in wasm)")
            .scenario("host", "parse and look up on the host (loadtest::html)")
            .default_config("[scenarios.guest]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 50\nexec = \"guest\"\n")
    }

    fn iteration(scenario: String) -> Result<(), String> {
        let page = match vu::env_or("PAGE", "survey").as_str() {
            "big" => big_page(),
            _ => SURVEY,
        };
        let reps: u32 = vu::env_parse("REPS", 20);
        let started = Instant::now();
        let mut seen = 0;
        for _ in 0..reps {
            seen += match scenario.as_str() {
                "host" => host(page)?,
                _ => guest(page)?,
            };
        }
        let us = started.elapsed().as_secs_f64() * 1e6 / f64::from(reps);
        metrics::check("found", seen > 0);
        metrics::trend("parse_us", us, &[]);
        metrics::gauge(
            "wasm_memory_kib",
            (core::arch::wasm32::memory_size(0) * 64) as f64,
            &[],
        );
        metrics::gauge("page_kib", page.len() as f64 / 1024.0, &[]);
        Ok(())
    }
}

loadtest::export!(Bench);
