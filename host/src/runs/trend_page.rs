//! `host runs trend --html FILE`: a statistic across runs drawn as report.html draws a
//! run (the same chart code and style), one point per run, with the table below.

use super::text::TrendPoint;
use crate::output::charts::{self, colors, Chart, Line};
use anyhow::Result;
use quick_xml::escape::escape;
use std::fmt::Write;

/// The self-contained page of `metric`'s `stat` over `points` (oldest first).
pub(crate) fn render(metric: &str, stat: &str, points: &[TrendPoint]) -> Result<String> {
    let e = |s: &str| escape(s).into_owned();
    let line = Line {
        label: format!("{metric} {stat}"),
        color: colors::BLUE,
        points: points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((i as f32 + 1.0, p.value? as f32)))
            .collect(),
        dashed: false,
    };
    let chart = Chart {
        title: "Across runs",
        y_label: "value",
        lines: vec![line],
    };
    let svg = charts::draw_xy(
        &chart,
        "run, oldest first",
        points.len().max(1) as f32 + 1.0,
    )?;
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{} {} — host runs trend</title>\n<style>{}</style>\n</head>\n<body>\n",
        e(metric),
        e(stat),
        crate::output::report::STYLE
    );
    let _ = writeln!(
        html,
        "<h1>{} {} across {} runs</h1>\n<div class=\"chart\">{svg}</div>",
        e(metric),
        e(stat),
        points.len()
    );
    html.push_str(
        "<table>\n<tr><th>#</th><th>run</th><th>plugin</th><th>started</th><th>status</th><th>value</th></tr>\n",
    );
    for (i, p) in points.iter().enumerate() {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
            i + 1,
            p.run.id,
            e(&p.run.plugin),
            e(&p.run.plugin_version),
            e(&p.run.started_at),
            e(&p.run.status),
            p.value.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"))
        );
    }
    html.push_str("</table>\n</body>\n</html>\n");
    Ok(html)
}
