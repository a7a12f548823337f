//! `sweep.html`: one self-contained page (inline SVG, no scripts, nothing fetched) with
//! the sweep's charts: throughput against offered load, throughput against
//! concurrency with the USL curve, latency percentiles against throughput with the
//! latency the USL predicts, and CPU per service against throughput.

use super::figures::LevelFigures;
use super::report::{model_lines, SweepResult};
use crate::output::charts::{self, colors, Chart, Line};
use anyhow::Result;
use plotters::style::RGBColor;

/// Draws an x–y chart as SVG text, with the report's chart drawing: the x axis runs
/// to a little past the farthest point.
fn chart(
    title: &'static str,
    x_desc: &str,
    y_desc: &'static str,
    lines: Vec<Line>,
) -> Result<String> {
    let x_far = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(0f32, f32::max);
    let chart = Chart {
        title,
        y_label: y_desc,
        lines,
    };
    charts::draw_xy(&chart, x_desc, x_far * 1.05)
}

fn line(
    label: &str,
    color: RGBColor,
    levels: &[&LevelFigures],
    f: impl Fn(&LevelFigures) -> Option<(f64, f64)>,
) -> Line {
    Line {
        label: label.into(),
        color,
        points: levels
            .iter()
            .filter_map(|&l| f(l))
            .map(|(x, y)| (x as f32, y as f32))
            .collect(),
        dashed: false,
    }
}

/// The page.
pub(crate) fn render(r: &SweepResult) -> Result<String> {
    // Charts read in order of load; refined levels ran last but sit in between.
    let mut levels: Vec<&LevelFigures> = r
        .levels
        .iter()
        .filter(|l| l.throughput_per_s > 0.0)
        .collect();
    levels.sort_by(|a, b| a.offered_per_s.total_cmp(&b.offered_per_s));
    let mut charts = Vec::new();

    let offered_max = levels.iter().map(|l| l.offered_per_s).fold(0.0, f64::max);
    charts.push(chart(
        "Throughput against offered load",
        "offered load (iterations/s)",
        "throughput (iterations/s)",
        vec![
            line("throughput", colors::BLUE, &levels, |l| {
                Some((l.offered_per_s, l.throughput_per_s))
            }),
            Line {
                label: "offered = achieved".into(),
                color: colors::GREY,
                points: vec![(0.0, 0.0), (offered_max as f32, offered_max as f32)],
                dashed: true,
            },
        ],
    )?);

    if !r.model.usl_points.is_empty() {
        let mut series = vec![Line {
            label: "levels".into(),
            color: colors::BLUE,
            points: {
                let mut p: Vec<(f32, f32)> = r
                    .model
                    .usl_points
                    .iter()
                    .map(|&(n, x)| (n as f32, x as f32))
                    .collect();
                p.sort_by(|a, b| a.0.total_cmp(&b.0));
                p
            },
            dashed: false,
        }];
        if let Some(u) = &r.model.usl {
            let n_max = r.model.usl_points.iter().map(|p| p.0).fold(0.0, f64::max);
            series.push(Line {
                label: match &r.model.usl_range {
                    Some(range) if range.above_measured => format!(
                        "USL fit (peak {:.0}/s: above every level measured)",
                        u.peak_throughput
                    ),
                    Some(range) if !range.peak_within => format!(
                        "USL fit (peak {:.0}/s: extrapolated past N = {:.0} to {:.0})",
                        u.peak_throughput, range.fitted[0], range.fitted[1]
                    ),
                    _ => format!("USL fit (peak {:.0}/s)", u.peak_throughput),
                },
                color: colors::RED,
                points: (0..=100)
                    .map(|i| {
                        let n = n_max * i as f64 / 100.0;
                        (n as f32, u.throughput(n).max(0.0) as f32)
                    })
                    .collect(),
                dashed: true,
            });
        }
        charts.push(chart(
            "Throughput against concurrency, with the USL fit",
            "concurrency N (VUs, or work in flight by Little's law)",
            "throughput (iterations/s)",
            series,
        )?);
    }

    let http = |f: fn(&super::figures::Percentiles) -> f64| {
        move |l: &LevelFigures| l.http_req_duration.map(|p| (l.throughput_per_s, f(&p)))
    };
    let mut latency = vec![
        line("p50", colors::GREEN, &levels, http(|p| p.p50)),
        line("p95", colors::ORANGE, &levels, http(|p| p.p95)),
        line("p99", colors::RED, &levels, http(|p| p.p99)),
    ];
    if let Some(u) = &r.model.usl {
        // By Little's law the USL predicts a mean time in the system of N / X(N).
        let n_max = r.model.usl_points.iter().map(|p| p.0).fold(0.0, f64::max);
        let x_max = levels
            .iter()
            .map(|l| l.throughput_per_s)
            .fold(0.0, f64::max);
        latency.push(Line {
            label: "USL: mean latency N/X(N)".into(),
            color: colors::PURPLE,
            points: (1..=100)
                .map(|i| n_max * i as f64 / 100.0)
                .map(|n| (u.throughput(n), n / u.throughput(n) * 1000.0))
                .filter(|(x, r)| x.is_finite() && r.is_finite() && *x <= x_max * 1.05)
                .map(|(x, r)| (x as f32, r as f32))
                .collect(),
            dashed: true,
        });
    }
    charts.push(chart(
        "http_req_duration percentiles against throughput",
        "throughput (iterations/s)",
        "milliseconds",
        latency,
    )?);

    let mut names: Vec<&str> = levels
        .iter()
        .flat_map(|l| l.services.iter().map(|s| s.service.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    if !names.is_empty() {
        let series: Vec<Line> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let color = if *name == "generator" {
                    colors::GREY
                } else {
                    colors::CYCLE[i % colors::CYCLE.len()]
                };
                line(&format!("{name} (avg)"), color, &levels, |l| {
                    let s = l.services.iter().find(|s| s.service == *name)?;
                    Some((l.throughput_per_s, s.cpu_avg_percent))
                })
            })
            .collect();
        charts.push(chart(
            "CPU per service against throughput",
            "throughput (iterations/s)",
            "CPU, % of one core",
            series,
        )?);
    }

    let mut page = String::from(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Sweep</title>\n\
         <style>body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}\
         table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}\
         .fail{color:#d62728}.invalid{color:#7f7f7f}.pass{color:#2ca02c}li{margin:.3em 0}</style>\n\
         </head><body>\n",
    );
    page.push_str(&format!(
        "<h1>Sweep of {}</h1>\n<p>Levels in {}; each held {:.0} s.{}</p>\n",
        escape(&r.plugin),
        escape(&r.unit),
        r.hold_s,
        if r.interrupted {
            " <b>Interrupted: only the levels done are shown.</b>"
        } else {
            ""
        }
    ));
    page.push_str("<h2>Capacity model</h2>\n<ul>\n");
    for l in model_lines(r) {
        page.push_str(&format!(
            "<li>{}</li>\n",
            escape(l.trim_start_matches("- ").trim())
        ));
    }
    page.push_str("</ul>\n<h2>Levels</h2>\n<table><tr><th>level</th><th>throughput/s</th><th>p50</th><th>p95</th><th>p99 (ms)</th><th>errors</th><th>dropped</th><th>verdict</th></tr>\n");
    for l in &r.levels {
        let p = l.http_req_duration.unwrap_or_default();
        page.push_str(&format!(
            "<tr><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.2}%</td><td>{}</td><td class=\"{}\" style=\"text-align:left\">{}</td></tr>\n",
            super::levels::label(l.level),
            l.throughput_per_s,
            p.p50,
            p.p95,
            p.p99,
            l.error_rate * 100.0,
            l.dropped,
            l.verdict.word(),
            escape(&l.verdict.text())
        ));
    }
    page.push_str("</table>\n<h2>Charts</h2>\n");
    for svg in charts {
        page.push_str("<div>");
        page.push_str(&svg);
        page.push_str("</div>\n");
    }
    page.push_str("</body></html>\n");
    Ok(page)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
