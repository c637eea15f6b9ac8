//! The report's charts as SVG text (plotters): grouped bars and lines with markers, the two
//! kinds the rpc-snooper study draws. Tables and pages are in the crate root.

use plotters::prelude::*;

/// A chart of a report section.
#[derive(Clone, Debug, PartialEq)]
pub enum Chart {
    /// Grouped bars: one group per category, one bar per series.
    Bars {
        /// The caption.
        title: String,
        /// The groups along x.
        categories: Vec<String>,
        /// Each series' name and one value per category.
        series: Vec<(String, Vec<f64>)>,
        /// The y axis.
        y_label: String,
    },
    /// Lines with markers.
    Lines {
        /// The caption.
        title: String,
        /// Each series' name and its (x, y) points.
        series: Vec<(String, Vec<(f64, f64)>)>,
        /// The x axis.
        x_label: String,
        /// The y axis.
        y_label: String,
    },
}

/// The series colours of every sszgate chart, in order.
pub const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// The lowest and highest finite value, zero included, and their distance (never zero).
/// Every drawn point must lie inside its chart's range: plotters maps a coordinate to a pixel
/// in `i32` and overflows (a panic in debug builds) for a point millions of spans outside it,
/// as negative values did when every range began at zero.
fn extent(values: impl Iterator<Item = f64>) -> (f64, f64, f64) {
    let (low, high) = values
        .filter(|v| v.is_finite())
        .fold((0.0f64, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
    (low, high, (high - low).max(1e-6))
}

impl Chart {
    /// The chart as an SVG document.
    pub fn svg(&self) -> Result<String, String> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (960, 420)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            match self {
                Chart::Bars {
                    title,
                    categories,
                    series,
                    y_label,
                } => {
                    let n = categories.len().max(1);
                    // Room under the lowest bar (or zero) for the category names, drawn by
                    // hand: a plain numeric x axis keeps the bars of a group side by side.
                    let (low, high, span) = extent(series.iter().flat_map(|s| s.1.iter().copied()));
                    let (floor, top) = (low - span * 0.12, high + span * 0.15);
                    let mut chart = ChartBuilder::on(&root)
                        .caption(title, ("sans-serif", 18))
                        .margin(12)
                        .x_label_area_size(10)
                        .y_label_area_size(60)
                        .build_cartesian_2d(0f64..n as f64, floor..top)
                        .map_err(|e| e.to_string())?;
                    chart
                        .configure_mesh()
                        .disable_x_mesh()
                        .x_labels(0)
                        .y_desc(y_label.as_str())
                        .draw()
                        .map_err(|e| e.to_string())?;
                    let font = ("sans-serif", 12).into_font().color(&BLACK);
                    let label_style = font.pos(plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Center,
                    ));
                    chart
                        .draw_series(categories.iter().enumerate().map(|(i, c)| {
                            Text::new(
                                c.clone(),
                                (i as f64 + 0.5, low - span * 0.06),
                                label_style.clone(),
                            )
                        }))
                        .map_err(|e| e.to_string())?;
                    let width = 0.8 / series.len().max(1) as f64;
                    for (k, (name, values)) in series.iter().enumerate() {
                        let color = PALETTE[k % PALETTE.len()];
                        chart
                            .draw_series(
                                values
                                    .iter()
                                    .enumerate()
                                    .filter(|(_, v)| v.is_finite())
                                    .map(|(i, v)| {
                                        let x0 = i as f64 + 0.1 + k as f64 * width;
                                        Rectangle::new(
                                            [(x0, 0.0), (x0 + width * 0.9, *v)],
                                            color.filled(),
                                        )
                                    }),
                            )
                            .map_err(|e| e.to_string())?
                            .label(name.clone())
                            .legend(move |(x, y)| {
                                Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                            });
                    }
                    chart
                        .configure_series_labels()
                        .position(SeriesLabelPosition::UpperRight)
                        .background_style(WHITE.mix(0.85))
                        .border_style(BLACK)
                        .draw()
                        .map_err(|e| e.to_string())?;
                }
                Chart::Lines {
                    title,
                    series,
                    x_label,
                    y_label,
                } => {
                    let points = || series.iter().flat_map(|s| s.1.iter().copied());
                    let (left, right, width) = extent(points().map(|p| p.0));
                    let (bottom, top, height) = extent(points().map(|p| p.1));
                    let (right, top) = (right + width * 0.05, top + height * 0.15);
                    let mut chart = ChartBuilder::on(&root)
                        .caption(title, ("sans-serif", 18))
                        .margin(12)
                        .x_label_area_size(40)
                        .y_label_area_size(60)
                        .build_cartesian_2d(left..right, bottom..top)
                        .map_err(|e| e.to_string())?;
                    chart
                        .configure_mesh()
                        .x_desc(x_label.as_str())
                        .y_desc(y_label.as_str())
                        .draw()
                        .map_err(|e| e.to_string())?;
                    for (k, (name, values)) in series.iter().enumerate() {
                        let color = PALETTE[k % PALETTE.len()];
                        let values: Vec<(f64, f64)> = values
                            .iter()
                            .copied()
                            .filter(|p| p.0.is_finite() && p.1.is_finite())
                            .collect();
                        chart
                            .draw_series(LineSeries::new(values.clone(), color.stroke_width(2)))
                            .map_err(|e| e.to_string())?
                            .label(name.clone())
                            .legend(move |(x, y)| {
                                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                            });
                        chart
                            .draw_series(values.iter().map(|p| Circle::new(*p, 4, color.filled())))
                            .map_err(|e| e.to_string())?;
                    }
                    chart
                        .configure_series_labels()
                        .position(SeriesLabelPosition::UpperLeft)
                        .background_style(WHITE.mix(0.85))
                        .border_style(BLACK)
                        .draw()
                        .map_err(|e| e.to_string())?;
                }
            }
            root.present().map_err(|e| e.to_string())?;
        }
        Ok(svg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers of attribute `name` in every `<tag …>` of `svg`.
    fn attributes(svg: &str, tag: &str, name: &str) -> Vec<f64> {
        svg.split(&format!("<{tag} "))
            .skip(1)
            .filter_map(|element| {
                let at = element.find(&format!(" {name}=\""))? + name.len() + 3;
                let rest = &element[at..];
                rest[..rest.find('"')?].parse().ok()
            })
            .collect()
    }

    /// Differences against a baseline are often all negative (a middle faster than direct
    /// within noise): every point and bar must still be drawn inside the canvas. With ranges
    /// that began at zero, plotters overflowed mapping them (a panic in `sszgate bench e2e`).
    #[test]
    fn negative_values_are_drawn_inside_the_canvas() {
        let lines = Chart::Lines {
            title: "p50 minus direct".into(),
            series: vec![
                ("sszgate".into(), vec![(0.0, -50.0), (72.0, -0.4)]),
                ("rpc-snooper".into(), vec![(0.0, -3.0), (72.0, 12.0)]),
            ],
            x_label: "blobs".into(),
            y_label: "ms".into(),
        }
        .svg()
        .expect("drawn");
        let ys = attributes(&lines, "circle", "cy");
        assert_eq!(ys.len(), 4, "a marker per point: {lines}");
        assert!(ys.iter().all(|y| (0.0..=420.0).contains(y)), "{ys:?}");
        let bars = Chart::Bars {
            title: "all below zero".into(),
            categories: vec!["a".into(), "b".into()],
            series: vec![("sszgate".into(), vec![-50.0, -0.001])],
            y_label: "ms".into(),
        }
        .svg()
        .expect("drawn");
        let tops = attributes(&bars, "rect", "y");
        let heights = attributes(&bars, "rect", "height");
        assert!(tops.len() >= 2, "{bars}");
        for (y, h) in tops.iter().zip(&heights) {
            assert!(
                *y >= 0.0 && y + h <= 420.0,
                "a rect outside the canvas: {y} {h}"
            );
        }
    }
}
