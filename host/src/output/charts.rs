//! Line charts drawn as SVG text with plotters, for the self-contained report.

use anyhow::{anyhow, Result};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width and height of every chart, in CSS pixels.
pub(crate) const SIZE: (u32, u32) = (1000, 280);

/// The palette; tests look for these colours in the rendered page.
pub(crate) mod colors {
    use plotters::style::RGBColor;
    /// First line of a chart.
    pub(crate) const BLUE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
    /// Second line.
    pub(crate) const ORANGE: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
    /// Third line, and errors.
    pub(crate) const RED: RGBColor = RGBColor(0xd6, 0x27, 0x28);
    /// Success-like series.
    pub(crate) const GREEN: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
    /// Extra series.
    pub(crate) const PURPLE: RGBColor = RGBColor(0x94, 0x67, 0xbd);
    /// More series (one line per sampled service).
    pub(crate) const BROWN: RGBColor = RGBColor(0x8c, 0x56, 0x4b);
    /// More series.
    pub(crate) const PINK: RGBColor = RGBColor(0xe3, 0x77, 0xc2);
    /// More series.
    pub(crate) const CYAN: RGBColor = RGBColor(0x17, 0xbe, 0xcf);
    /// The generator's line: grey, as it is not the target.
    pub(crate) const GREY: RGBColor = RGBColor(0x7f, 0x7f, 0x7f);
    /// Colours given to services in turn.
    pub(crate) const CYCLE: [RGBColor; 8] = [BLUE, ORANGE, GREEN, RED, PURPLE, BROWN, PINK, CYAN];
}

/// One line of a chart.
pub(crate) struct Line {
    /// Legend text.
    pub label: String,
    /// Its colour.
    pub color: RGBColor,
    /// `(seconds, value)` points in time order.
    pub points: Vec<(f32, f32)>,
    /// Drawn dashed, so a line that coincides with another one still shows.
    pub dashed: bool,
}

/// A chart: a title, the y axis' meaning and its lines.
pub(crate) struct Chart {
    /// Shown above the plot.
    pub title: &'static str,
    /// Shown along the y axis.
    pub y_label: &'static str,
    /// The lines.
    pub lines: Vec<Line>,
}

/// Below this many points each point gets a dot, so short runs still show something.
const DOTS_BELOW: usize = 60;

/// The points of a line that can be drawn: an infinite or NaN value (a rate over no
/// time, say) is left out rather than allowed to break the chart.
fn finite(points: &[(f32, f32)]) -> impl Iterator<Item = (f32, f32)> + Clone + '_ {
    points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
}

/// Draws `chart` over `0..x_max` seconds as an SVG document.
pub(crate) fn draw(chart: &Chart, x_max: f32) -> Result<String> {
    draw_xy(chart, "seconds since start", x_max)
}

/// Draws `chart` over `0..x_max` of an x axis described by `x_desc` (time for a run's
/// report, offered load or throughput for a sweep) as an SVG document.
pub(crate) fn draw_xy(chart: &Chart, x_desc: &str, x_max: f32) -> Result<String> {
    let mut svg = String::new();
    {
        let err = |e: &dyn std::fmt::Display| anyhow!("cannot draw chart `{}`: {e}", chart.title);
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let y_top = chart
            .lines
            .iter()
            .flat_map(|l| finite(&l.points).map(|p| p.1))
            .fold(0f32, f32::max);
        let y_max = if y_top > 0.0 { y_top * 1.15 } else { 1.0 };
        // An infinite axis sends the mesh's tick search into an endless loop: the
        // report would never be written.
        let y_max = if y_max.is_finite() { y_max } else { f32::MAX };
        let x_max = if x_max.is_finite() {
            x_max.max(1.0)
        } else {
            1.0
        };
        let mut plot = ChartBuilder::on(&root)
            .caption(chart.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(64)
            .build_cartesian_2d(0f32..x_max, 0f32..y_max)
            .map_err(|e| err(&e))?;
        plot.configure_mesh()
            .x_desc(x_desc)
            .y_desc(chart.y_label)
            .y_label_formatter(&|v| axis_number(*v))
            .x_label_formatter(&|v| axis_number(*v))
            .light_line_style(RGBColor(238, 238, 238))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(|e| err(&e))?;
        for line in &chart.lines {
            let color = line.color;
            let style = ShapeStyle {
                color: color.to_rgba(),
                filled: false,
                stroke_width: 2,
            };
            let dots = if line.points.len() < DOTS_BELOW { 3 } else { 0 };
            let points = finite(&line.points);
            let drawn = if line.dashed {
                plot.draw_series(DashedLineSeries::new(points, 8, 6, style))
            } else {
                plot.draw_series(LineSeries::new(points, style).point_size(dots))
            };
            drawn
                .map_err(|e| err(&e))?
                .label(line.label.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 16, y + 6)], color.filled())
                });
        }
        plot.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(|e| err(&e))?;
        if chart.lines.iter().all(|l| l.points.is_empty()) {
            let style = ("sans-serif", 16)
                .into_font()
                .color(&RGBColor(140, 140, 140))
                .pos(Pos::new(HPos::Center, VPos::Center));
            root.draw(&Text::new(
                "no samples in this run",
                (SIZE.0 as i32 / 2, SIZE.1 as i32 / 2),
                style,
            ))
            .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

/// Axis labels without needless decimals: `3500`, `2.5`, `0.25`.
fn axis_number(v: f32) -> String {
    if v.abs() >= 100.0 {
        return format!("{v:.0}");
    }
    let text = format!("{v:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_lines_with_their_colours_and_legend() {
        let chart = Chart {
            title: "Requests per second",
            y_label: "requests/s",
            lines: vec![Line {
                label: "http_reqs".into(),
                color: colors::BLUE,
                points: vec![(1.0, 10.0), (2.0, 12.0), (3.0, 11.0)],
                dashed: false,
            }],
        };
        let svg = draw(&chart, 3.0).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(svg.contains("Requests per second"));
        assert!(svg.contains("http_reqs"));
        assert!(svg.to_uppercase().contains("#1F77B4"), "the line's colour");
    }

    #[test]
    fn infinite_and_nan_points_are_left_out_and_the_chart_still_draws() {
        for bad in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            let chart = Chart {
                title: "Requests per second",
                y_label: "requests/s",
                lines: vec![Line {
                    label: "http_reqs".into(),
                    color: colors::BLUE,
                    points: vec![(1.0, 10.0), (2.0, bad), (bad, 5.0), (3.0, 11.0)],
                    dashed: false,
                }],
            };
            let svg = draw(&chart, 3.0).unwrap();
            assert!(svg.contains("http_reqs"), "{bad}");
            let svg = draw(&chart, bad).unwrap();
            assert!(svg.starts_with("<svg"), "{bad} as the x axis' end");
        }
    }

    #[test]
    fn an_empty_chart_still_draws() {
        let chart = Chart {
            title: "Dropped iterations",
            y_label: "per second",
            lines: vec![Line {
                label: "dropped_iterations".into(),
                color: colors::RED,
                points: vec![],
                dashed: true,
            }],
        };
        let svg = draw(&chart, 0.0).unwrap();
        assert!(svg.contains("<svg") && svg.contains("no samples in this run"));
    }

    #[test]
    fn axis_labels_drop_needless_decimals() {
        assert_eq!(axis_number(3500.0), "3500");
        assert_eq!(axis_number(2.5), "2.5");
        assert_eq!(axis_number(0.25), "0.25");
        assert_eq!(axis_number(0.0), "0");
    }
}
