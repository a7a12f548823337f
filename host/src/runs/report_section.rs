//! report.html beside the run's last runs: once the run is recorded, a table of the
//! latest runs of the same plugin and scenarios (this one marked) with their key
//! figures is put into the page, so a reader sees at a glance whether this run is like
//! the ones before it. The page is rewritten whole (a temporary file renamed), so it
//! stays either the old page or the new one.

use super::query::{self, Filter, RunRow};
use anyhow::{Context, Result};
use quick_xml::escape::escape;
use rusqlite::Connection;
use std::fmt::Write;
use std::path::Path;

/// How many runs the table shows, this one included.
const LAST_RUNS: usize = 10;

/// The figures shown per run: (metric, stat, heading).
const COLUMNS: &[(&str, &str, &str)] = &[
    ("http_req_duration", "p95", "http_req_duration p95 (ms)"),
    ("http_req_duration", "avg", "avg (ms)"),
    ("http_reqs", "rate", "http_reqs /s"),
    ("http_req_failed", "rate", "failed"),
    ("iteration_duration", "p95", "iteration p95 (ms)"),
];

/// The marker the section starts with, so a page is never given it twice.
const MARK: &str = "<h2 id=\"last-runs\">";

/// Adds the table of run `id`'s last runs to the report.html of its folder `dir`.
pub(crate) fn add(conn: &Connection, id: i64, dir: &Path) -> Result<()> {
    let run = query::get(conn, id)?;
    let mut runs: Vec<RunRow> = query::list(
        conn,
        &Filter {
            plugin: Some(run.plugin.clone()),
            ..Filter::default()
        },
    )?
    .into_iter()
    .filter(|r| r.scenarios == run.scenarios && (r.started_at <= run.started_at || r.id == id))
    .collect();
    if runs.len() > LAST_RUNS {
        runs.drain(..runs.len() - LAST_RUNS);
    }
    let path = dir.join("report.html");
    let page = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if page.contains(MARK) {
        return Ok(());
    }
    let section = render(conn, id, &runs)?;
    let page = match page.rfind("</body>") {
        Some(at) => format!("{}{section}{}", &page[..at], &page[at..]),
        None => page + &section,
    };
    crate::files::write_whole(dir, "report.html", page.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

fn render(conn: &Connection, id: i64, runs: &[RunRow]) -> Result<String> {
    let e = |s: &str| escape(s).into_owned();
    let mut html = String::new();
    let _ = writeln!(
        html,
        "{MARK}Beside its last runs</h2>\n<p class=\"meta\">the latest {} runs of this plugin and \
         these scenarios in the store of runs (`host runs list`); this run in bold</p>\n<table>",
        runs.len()
    );
    html.push_str("<tr><th>run</th><th>started</th><th>status</th><th>exit</th>");
    for (_, _, heading) in COLUMNS {
        let _ = write!(html, "<th>{}</th>", e(heading));
    }
    html.push_str("</tr>\n");
    for r in runs {
        let (open, close) = if r.id == id {
            ("<b>", "</b>")
        } else {
            ("", "")
        };
        let _ = write!(
            html,
            "<tr><td>{open}{}{close}</td><td>{}</td><td>{}</td><td>{}</td>",
            r.id,
            e(&r.started_at),
            e(&r.status),
            r.exit_code.map_or_else(|| "-".into(), |c| c.to_string())
        );
        for (metric, stat, _) in COLUMNS {
            let value = query::figure(conn, r.id, metric, stat)?;
            let text = match value {
                None => "-".to_string(),
                Some(v) if *metric == "http_req_failed" => format!("{:.2}%", v * 100.0),
                Some(v) => format!("{v:.3}"),
            };
            let _ = write!(html, "<td class=\"num\">{open}{text}{close}</td>");
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n");
    Ok(html)
}
