//! Charts across runs (`cargo calltime history --chart`, and the HTML report): for one root function, the mean,
//! p50 and p99 time per invocation and the calls per invocation, one point per run, dirty runs crossed out.
//! Drawn with plotters' SVG backend.

use anyhow::{anyhow, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::store::SeriesPoint;
use crate::units::format_ns;

/// Series colours (the SVG's `fill` of each series' points); tests count points by them.
pub const MEAN_COLOR: RGBColor = RGBColor(31, 119, 180);
pub const P50_COLOR: RGBColor = RGBColor(44, 160, 44);
pub const P99_COLOR: RGBColor = RGBColor(255, 127, 14);
pub const CALLS_COLOR: RGBColor = RGBColor(148, 103, 189);
pub const DIRTY_COLOR: RGBColor = RGBColor(214, 39, 40);

const WIDTH: u32 = 900;
/// Times spanning more than this factor are drawn on a log scale.
const LOG_SCALE_RATIO: f64 = 50.0;
const TIMES_HEIGHT: u32 = 340;
const CALLS_HEIGHT: u32 = 220;

/// The chart of `root` over `points` (oldest first) as an SVG document.
pub fn render_svg(root: &str, points: &[SeriesPoint]) -> Result<String> {
    if points.is_empty() {
        anyhow::bail!("no run recorded {root}: there is nothing to chart");
    }
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, (WIDTH, TIMES_HEIGHT + CALLS_HEIGHT)).into_drawing_area();
        area.fill(&WHITE).map_err(draw_error)?;
        let (times, calls) = area.split_vertically(TIMES_HEIGHT);
        draw_times(&times, root, points)?;
        draw_calls(&calls, points)?;
        area.present().map_err(draw_error)?;
    }
    Ok(svg)
}

fn draw_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("cannot draw the chart: {e}")
}

/// The x axis: run `i` at `i`, labelled with its id (and label).
fn x_range(points: &[SeriesPoint]) -> std::ops::Range<f64> {
    -0.5..points.len() as f64 - 0.5
}

fn x_label(points: &[SeriesPoint], x: f64) -> String {
    let at = x.round();
    if (x - at).abs() > 1e-6 || at < 0.0 {
        return String::new();
    }
    points.get(at as usize).map_or_else(String::new, |p| match &p.label {
        Some(label) => format!("#{} {label}", p.run_id),
        None => format!("#{}", p.run_id),
    })
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// One panel: runs along x (labelled with their ids), `y_range` up y, a light mesh.
fn panel<'a, 'b>(
    area: &'a Area<'b>,
    caption: (String, u32),
    y_range: std::ops::Range<f64>,
    points: &[SeriesPoint],
    y_label: &dyn Fn(&f64) -> String,
) -> Result<Chart<'a, 'b>> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption.0, ("sans-serif", caption.1))
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range(points), y_range)
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .x_labels(points.len().min(12))
        .light_line_style(TRANSPARENT)
        .x_label_formatter(&|x| x_label(points, *x))
        .y_label_formatter(y_label)
        .draw()
        .map_err(draw_error)?;
    Ok(chart)
}

/// A line through `xy` with a dot on each point; the legend entry `name`.
fn draw_line(chart: &mut Chart<'_, '_>, xy: Vec<(f64, f64)>, color: RGBColor, name: &str) -> Result<()> {
    chart
        .draw_series(LineSeries::new(xy.clone(), color.stroke_width(2)))
        .map_err(draw_error)?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
    chart.draw_series(xy.iter().map(|&p| Circle::new(p, 4, color.filled()))).map_err(draw_error)?;
    Ok(())
}

fn draw_times(area: &Area<'_>, root: &str, points: &[SeriesPoint]) -> Result<()> {
    let series: [(&str, RGBColor, Vec<Option<u64>>); 3] = [
        ("mean", MEAN_COLOR, points.iter().map(|p| Some(p.stat.mean_ns)).collect()),
        ("p50", P50_COLOR, points.iter().map(|p| p.stat.p50_ns).collect()),
        ("p99", P99_COLOR, points.iter().map(|p| p.stat.p99_ns).collect()),
    ];
    let values = || series.iter().flat_map(|(_, _, v)| v.iter().flatten()).copied();
    let top = values().max().unwrap_or(1).max(1) as f64;
    let bottom = values().filter(|&v| v > 0).min().unwrap_or(1) as f64;
    // p99 a thousand times the p50 (a rare slow path) would flatten the other lines: spread decades instead.
    let log = top / bottom > LOG_SCALE_RATIO;
    let y = |ns: f64| if log { ns.max(1.0).log10() } else { ns };
    let (caption, y_range) = if log {
        (format!("{root}: time per invocation, by run (log scale)"), bottom.log10().floor()..top.log10().ceil())
    } else {
        (format!("{root}: time per invocation, by run"), 0.0..top * 1.1)
    };
    let label = |v: &f64| format_ns(if log { 10f64.powf(*v).round() } else { v.max(0.0) } as u64);
    let mut chart = panel(area, (caption, 18), y_range, points, &label)?;
    for (name, color, values) in series {
        let xy = values.iter().enumerate().filter_map(|(i, v)| v.map(|v| (i as f64, y(v as f64)))).collect();
        draw_line(&mut chart, xy, color, name)?;
    }
    draw_dirty_marks(&mut chart, points, |p| y(p.stat.mean_ns as f64))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()
        .map_err(draw_error)?;
    Ok(())
}

fn draw_calls(area: &Area<'_>, points: &[SeriesPoint]) -> Result<()> {
    let top = points.iter().map(|p| p.stat.calls_per_invocation).fold(1.0, f64::max);
    let mut chart =
        panel(area, ("calls per invocation".to_owned(), 15), 0.0..top * 1.15, points, &|y| format!("{y:.0}"))?;
    let xy = points.iter().enumerate().map(|(i, p)| (i as f64, p.stat.calls_per_invocation)).collect();
    draw_line(&mut chart, xy, CALLS_COLOR, "calls per invocation")?;
    draw_dirty_marks(&mut chart, points, |p| p.stat.calls_per_invocation)?;
    Ok(())
}

/// A cross over each dirty run's point, in the legend as "dirty run".
fn draw_dirty_marks(
    chart: &mut ChartContext<
        '_,
        SVGBackend<'_>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    points: &[SeriesPoint],
    y: impl Fn(&SeriesPoint) -> f64,
) -> Result<()> {
    let dirty: Vec<(f64, f64)> =
        points.iter().enumerate().filter(|(_, p)| p.dirty.is_some()).map(|(i, p)| (i as f64, y(p))).collect();
    if dirty.is_empty() {
        return Ok(());
    }
    chart
        .draw_series(dirty.iter().map(|&p| Cross::new(p, 8, DIRTY_COLOR.stroke_width(3))))
        .map_err(draw_error)?
        .label("dirty run")
        .legend(|(x, y)| Cross::new((x + 9, y), 5, DIRTY_COLOR.stroke_width(2)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RootStat;

    fn point(run_id: i64, mean_ns: u64, p50_ns: u64, p99_ns: u64) -> SeriesPoint {
        SeriesPoint {
            run_id,
            recorded_ms: 0,
            label: None,
            stat: RootStat {
                root: "r".into(),
                invocations: 10,
                mean_ns,
                p50_ns: Some(p50_ns),
                p99_ns: Some(p99_ns),
                calls_per_invocation: 3.0,
            },
            dirty: None,
        }
    }

    #[test]
    fn times_spanning_decades_are_drawn_on_a_log_scale() {
        let close = [point(1, 100, 90, 150), point(2, 110, 95, 160)];
        let svg = render_svg("r", &close).unwrap();
        assert!(!svg.contains("(log scale)"));
        // A p99 ten thousand times the p50: linear would put p50 and mean on the axis.
        let spread = [point(1, 1_000_000, 400, 10_000_000), point(2, 1_100_000, 420, 11_000_000)];
        let svg = render_svg("r", &spread).unwrap();
        assert!(svg.contains("r: time per invocation, by run (log scale)"));
        let p50_fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", P50_COLOR.0, P50_COLOR.1, P50_COLOR.2);
        assert_eq!(svg.matches(&p50_fill).count(), 2);
        assert!(render_svg("r", &[]).is_err());
    }
}
