//! `report.html`: one self-contained page (inline CSS and SVG, no scripts) with the
//! run's facts, threshold verdicts, charts over time and the metric table.

use super::chart_data::ChartData;
use super::charts::{self, colors, Chart, Line};
use crate::metrics::summary::Stats;
use crate::summary::Summary;
use anyhow::Result;
use quick_xml::escape::escape;
use std::fmt::Write;

/// The page's CSS, shared with the other pages drawn like it (`host runs trend --html`).
pub(crate) const STYLE: &str = r#"
body { font-family: sans-serif; margin: 24px auto; max-width: 1040px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.meta { color: #555; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; }
td, th { padding: 3px 10px; text-align: left; border-bottom: 1px solid #eee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.ok { color: #2ca02c; font-weight: bold; }
.fail { color: #d62728; font-weight: bold; }
.chart { margin: 10px 0; }
.chart svg { display: block; }
"#;

/// The charts of a run, in page order; iteration latency only when an open-model
/// scenario measured it.
pub(crate) fn charts(data: &ChartData) -> Vec<Chart> {
    let mut out = vec![
        Chart {
            title: "Throughput",
            y_label: "per second",
            lines: vec![
                line("requests/s", colors::BLUE, data, |s| s.requests),
                Line {
                    dashed: true,
                    ..line("iterations/s", colors::GREEN, data, |s| s.iterations)
                },
            ],
        },
        Chart {
            title: "HTTP request duration (http_req_duration)",
            y_label: "milliseconds",
            lines: vec![
                line("p50", colors::BLUE, data, |s| s.http[0]),
                line("p95", colors::ORANGE, data, |s| s.http[1]),
                line("p99", colors::RED, data, |s| s.http[2]),
            ],
        },
    ];
    if data.has_iteration_latency() {
        out.push(Chart {
            title: "Iteration latency from due time (iteration_latency)",
            y_label: "milliseconds",
            lines: vec![
                line("p50", colors::BLUE, data, |s| s.latency[0]),
                line("p95", colors::ORANGE, data, |s| s.latency[1]),
                line("p99", colors::RED, data, |s| s.latency[2]),
            ],
        });
    }
    out.extend([
        Chart {
            title: "Virtual users",
            y_label: "VUs",
            lines: vec![
                line("vus (active)", colors::BLUE, data, |s| s.vus),
                line("vus_max (made)", colors::PURPLE, data, |s| s.vus_max),
            ],
        },
        Chart {
            title: "Errors",
            y_label: "per second",
            lines: vec![
                line("failed requests/s", colors::RED, data, |s| {
                    s.failed_requests
                }),
                line("plugin errors/s", colors::ORANGE, data, |s| s.plugin_errors),
            ],
        },
        Chart {
            title: "Dropped iterations",
            y_label: "per second",
            lines: vec![line("dropped/s", colors::RED, data, |s| s.dropped)],
        },
    ]);
    if !data.services.is_empty() {
        out.push(Chart {
            title: "CPU by service (100% = one core)",
            y_label: "% of one core",
            lines: service_lines(data, |p| p.1),
        });
        out.push(Chart {
            title: "Memory by service",
            y_label: "MiB",
            lines: service_lines(data, |p| p.2),
        });
    }
    out
}

/// A line per sampled service; the generator is grey and dashed, so the target's lines
/// stand out.
fn service_lines(data: &ChartData, field: impl Fn(&(f32, f32, f32)) -> f32) -> Vec<Line> {
    let mut next = 0;
    data.services
        .iter()
        .map(|(label, series)| {
            let generator = label == "generator";
            let color = if generator {
                colors::GREY
            } else {
                next += 1;
                colors::CYCLE[(next - 1) % colors::CYCLE.len()]
            };
            Line {
                label: label.clone(),
                color,
                points: series.points.iter().map(|p| (p.0, field(p))).collect(),
                dashed: generator,
            }
        })
        .collect()
}

fn line(
    label: &'static str,
    color: plotters::style::RGBColor,
    data: &ChartData,
    field: impl Fn(&super::chart_data::Second) -> f32,
) -> Line {
    Line {
        label: label.into(),
        color,
        points: data.points(field),
        dashed: false,
    }
}

/// Renders the page.
pub(crate) fn render(summary: &Summary, data: &ChartData) -> Result<String> {
    let mut html = String::new();
    let e = |s: &str| escape(s).into_owned();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{} — host report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        e(&summary.plugin.name)
    );
    let _ = writeln!(
        html,
        "<h1>{} {}</h1>\n<p class=\"meta\">{} after {:.1} s · started {} · host {} · {} ({} CPUs)</p>",
        e(&summary.plugin.name),
        e(&summary.plugin.version),
        e(summary.status.as_str()),
        summary.duration_s,
        e(&summary.started_at),
        e(&summary.host.version),
        e(&summary.machine.hostname),
        summary.machine.cpus
    );
    if let Some(reason) = &summary.stop_reason {
        let _ = writeln!(
            html,
            "<p class=\"fail\">stopped early: {}</p>",
            e(&serde_json::to_string(reason).unwrap_or_default())
        );
    }

    if !summary.warnings.is_empty() {
        html.push_str("<h2>Warnings</h2>\n<ul class=\"warnings\">\n");
        for w in &summary.warnings {
            let _ = writeln!(html, "<li class=\"fail\">{}</li>", e(w));
        }
        html.push_str("</ul>\n");
    }

    if !summary.thresholds.is_empty() {
        html.push_str("<h2>Thresholds</h2>\n<table>\n<tr><th></th><th>metric</th><th>threshold</th><th>observed</th></tr>\n");
        for t in &summary.thresholds {
            let (class, mark) = if t.ok { ("ok", "✓") } else { ("fail", "✗") };
            let _ = writeln!(
                html,
                "<tr><td class=\"{class}\">{mark}</td><td>{}</td><td>{}</td><td>{}{}</td></tr>",
                e(&t.metric),
                e(&t.threshold),
                e(&t.observed_text()),
                t.note
                    .as_ref()
                    .map(|n| format!(" ({})", e(n)))
                    .unwrap_or_default()
            );
        }
        html.push_str("</table>\n");
    }

    html.push_str("<h2>Over time</h2>\n");
    // One axis for every chart, so a CPU peak lines up with the latency it caused.
    let x_max = data
        .services
        .iter()
        .filter_map(|(_, s)| s.points.last().map(|p| p.0))
        .chain(data.seconds.last().map(|s| s.t))
        .fold(0.0, f32::max);
    for chart in charts(data) {
        let svg = charts::draw(&chart, x_max)?;
        let _ = writeln!(html, "<div class=\"chart\">{svg}</div>");
    }

    if let Some(stack) = &summary.stack {
        html.push_str(&resources_table(stack));
    }

    html.push_str("<h2>Scenarios</h2>\n<table>\n<tr><th>scenario</th><th>executor</th><th>completed</th><th>failed</th><th>interrupted</th><th>dropped</th><th>VUs</th></tr>\n");
    for (name, s) in &summary.scenarios {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            e(name),
            e(&s.executor),
            s.completed,
            s.failed,
            s.interrupted,
            s.dropped,
            s.vus_allocated
        );
    }
    html.push_str("</table>\n");

    if !summary.checks.is_empty() {
        html.push_str("<h2>Checks</h2>\n<table>\n<tr><th></th><th>check</th><th>passes</th><th>fails</th></tr>\n");
        for c in &summary.checks {
            let (class, mark) = if c.fails == 0 {
                ("ok", "✓")
            } else {
                ("fail", "✗")
            };
            let _ = writeln!(
                html,
                "<tr><td class=\"{class}\">{mark}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                e(&c.name),
                c.passes,
                c.fails
            );
        }
        html.push_str("</table>\n");
    }

    if !summary.endpoints.is_empty() {
        html.push_str("<h2>Endpoints</h2>\n<table>\n<tr><th>method</th><th>name</th><th>count</th><th>rate/s</th><th>errors</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th></tr>\n");
        for r in &summary.endpoints {
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.2} %</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.2}</td></tr>",
                e(&r.method),
                e(&r.name),
                r.count,
                r.rate,
                r.error_rate * 100.0,
                r.p50,
                r.p95,
                r.p99
            );
        }
        html.push_str("</table>\n");
    }

    html.push_str(
        "<h2>Metrics</h2>\n<table>\n<tr><th>metric</th><th>type</th><th>values</th></tr>\n",
    );
    for m in summary.metrics.values() {
        let (kind, values) = match &m.stats {
            Stats::Counter { count, rate } => ("counter", format!("{count} ({rate:.2}/s)")),
            Stats::Gauge { value, min, max } => ("gauge", format!("{value} (min {min}, max {max})")),
            Stats::Rate { rate, passes, fails } => (
                "rate",
                format!("{:.2}% ({passes} true, {fails} false)", rate * 100.0),
            ),
            Stats::Trend(t) => (
                "trend",
                format!(
                    "avg {:.3} · med {:.3} · p90 {:.3} · p95 {:.3} · p99 {:.3} · max {:.3} · count {}",
                    t.avg, t.med, t.p90, t.p95, t.p99, t.max, t.count
                ),
            ),
        };
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{kind}</td><td>{}</td></tr>",
            e(&m.name),
            e(&values)
        );
    }
    html.push_str("</table>\n<p class=\"meta\">Trend values of timings are in milliseconds.</p>\n</body>\n</html>\n");
    Ok(html)
}

/// The sampled services' figures, as stats.md has them.
fn resources_table(stack: &crate::sampling::StackSummary) -> String {
    use crate::sampling::files::bytes;
    let e = |s: &str| escape(s).into_owned();
    let mut html = String::from("<h2>Resources</h2>\n<table>\n<tr><th>service</th><th>source</th><th>CPU avg</th><th>CPU peak</th><th>peak of cpuset</th><th>memory peak</th><th>of limit</th><th>net rx / tx</th><th>block read / write</th></tr>\n");
    let opt = |n: Option<u64>| n.map_or_else(|| "—".to_string(), bytes);
    for s in &stack.services {
        let limit = match (s.memory_peak_share, s.memory_limit_bytes) {
            (Some(share), Some(limit)) => format!("{:.0}% of {}", share * 100.0, bytes(limit)),
            _ => "no limit".into(),
        };
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{:.1}%</td><td class=\"num\">{:.1}%</td><td class=\"num\">{:.0}% of {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} / {}</td><td class=\"num\">{} / {}</td></tr>",
            e(&s.service),
            e(&s.source),
            s.cpu_avg_percent,
            s.cpu_peak_percent,
            s.cpu_peak_share * 100.0,
            s.cpus,
            bytes(s.memory_peak_bytes),
            limit,
            opt(s.net_rx_bytes),
            opt(s.net_tx_bytes),
            opt(s.blk_read_bytes),
            opt(s.blk_write_bytes),
        );
    }
    let _ = writeln!(
        html,
        "</table>\n<p class=\"meta\">Sampled every {} s; CPU in % of one core, peak also as a share of the cores the service may use; memory without page cache (containers) or resident (processes).</p>",
        stack.stats_interval_s
    );
    html
}
