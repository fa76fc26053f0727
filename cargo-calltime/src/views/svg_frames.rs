//! Edits of the SVG inferno draws, frame by frame: tooltips in human units instead of raw nanoseconds, marks
//! (`[panicked]`), colours, frame labels that keep short names whole, and a time axis for flame charts. inferno
//! has no hook for a frame's call path, so it is rebuilt from the geometry: a frame's parent is the frame one row
//! below whose sample range holds its start (`fg:x`, `fg:w`).

use std::collections::HashMap;

use anyhow::{bail, Result};
use regex::{Captures, Regex};

use crate::units::format_ns;

/// One frame as drawn, with the call path inferno drew it for.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Frame names from the root (inferno's `all` left out), unescaped: the names of the folded lines.
    pub path: Vec<String>,
}

/// What to change in a frame; `None` fields keep inferno's.
#[derive(Debug, Clone, Default)]
pub struct Edit {
    /// Appended to the name in the tooltip and the label (` [panicked]`).
    pub mark: String,
    /// The tooltip's part in parentheses; default `9.71ms, 12.34%`.
    pub info: Option<String>,
    /// Appended to the tooltip's part in parentheses (`20,003 calls`).
    pub extra: Option<String>,
    /// An SVG colour (`rgb(r,g,b)`).
    pub fill: Option<String>,
}

/// inferno's default font size and its estimate of a character's width (in font sizes), for the labels.
const FONT_SIZE: f64 = 12.0;
const FONT_WIDTH: f64 = 0.59;
/// Room for the axis under a flame chart's frames, in pixels.
const AXIS_HEIGHT: u64 = 24;

fn frame_pattern() -> Regex {
    Regex::new(
        r#"<g><title>(?P<title>[^<]*)</title><rect x="(?P<x>[^"]*)" y="(?P<y>\d+)" width="(?P<w>[^"]*)" height="(?P<h>\d+)" fill="(?P<fill>[^"]*)" fg:x="(?P<fx>\d+)" fg:w="(?P<fw>\d+)"/><text x="(?P<tx>[^"]*)" y="(?P<ty>[^"]*)">[^<]*</text></g>"#,
    )
    .expect("valid regex")
}

/// The name in an inferno tooltip `name (9,714,172 ns, 12.34%)`.
fn title_name(title: &str) -> &str {
    title.rsplit_once(" (").map_or(title, |(name, _)| name)
}

/// Rewrites every frame of `svg` with `edit` (called with each frame's call path), relabels the frames so names
/// that fit are shown whole, and patches inferno's script so zooming keeps them whole too.
pub fn rewrite(svg: &str, edit: impl FnMut(&Frame) -> Edit) -> Result<String> {
    rewrite_in_units(svg, &format_ns, edit)
}

/// [`rewrite`] for a graph whose widths are not nanoseconds: `format_width` writes a frame's width (bytes, say).
pub fn rewrite_in_units(
    svg: &str,
    format_width: &dyn Fn(u64) -> String,
    mut edit: impl FnMut(&Frame) -> Edit,
) -> Result<String> {
    let pattern = frame_pattern();
    let (Some(total), Some(container_px)) =
        (attribute_of_frames(svg, "total_samples"), attribute_of_frames(svg, "width"))
    else {
        bail!("inferno's SVG has no frames container: cannot edit its frames");
    };
    // Rows from the bottom: the larger y, the shallower the frame.
    let mut rows: Vec<u64> = pattern.captures_iter(svg).filter_map(|c| c["y"].parse().ok()).collect();
    rows.sort_unstable_by(|a, b| b.cmp(a));
    rows.dedup();
    let depth_of: HashMap<u64, usize> = rows.iter().enumerate().map(|(depth, &y)| (y, depth)).collect();
    // (start, width, name) of each frame per depth, in start order, to find parents.
    let mut by_depth: Vec<Vec<(u64, u64, String)>> = vec![Vec::new(); rows.len()];
    for c in pattern.captures_iter(svg) {
        let (Ok(y), Ok(start), Ok(width)) = (c["y"].parse::<u64>(), c["fx"].parse(), c["fw"].parse()) else { continue };
        by_depth[depth_of[&y]].push((start, width, unescape(title_name(&c["title"]))));
    }
    for row in &mut by_depth {
        row.sort_by_key(|f| f.0);
    }
    let path_of = |depth: usize, start: u64| -> Vec<String> {
        let mut path = Vec::with_capacity(depth);
        for d in (1..=depth).rev() {
            let row = &by_depth[d];
            let at = row.partition_point(|f| f.0 <= start).saturating_sub(1);
            if let Some(frame) = row.get(at) {
                path.push(frame.2.clone());
            }
        }
        path.reverse();
        path
    };
    let rewritten = pattern.replace_all(svg, |c: &Captures| {
        let (Ok(y), Ok(start), Ok(width)) = (c["y"].parse::<u64>(), c["fx"].parse::<u64>(), c["fw"].parse::<u64>())
        else {
            return c[0].to_owned();
        };
        let depth = depth_of[&y];
        let name = unescape(title_name(&c["title"]));
        let pct = 100.0 * width as f64 / total.max(1) as f64;
        let info_default = format!("{}, {}", format_width(width), format_pct(pct));
        if depth == 0 {
            return frame_xml(c, &format!("all ({info_default})"), &c["fill"], "all", width, total, container_px);
        }
        let frame = Frame { path: path_of(depth, start) };
        let change = edit(&frame);
        let label = format!("{name}{}", change.mark);
        let info = change.info.unwrap_or(info_default);
        let info = match change.extra {
            Some(extra) => format!("{info}, {extra}"),
            None => info,
        };
        let title = format!("{label} ({info})");
        frame_xml(c, &title, change.fill.as_deref().unwrap_or(&c["fill"]), &label, width, total, container_px)
    });
    patch_script(&rewritten)
}

fn format_pct(pct: f64) -> String {
    format!("{pct:.2}%")
}

/// A frame's XML with a new tooltip, colour and label.
fn frame_xml(c: &Captures, title: &str, fill: &str, label: &str, width: u64, total: u64, container_px: u64) -> String {
    let width_px = width as f64 / total.max(1) as f64 * container_px as f64;
    format!(
        r#"<g><title>{}</title><rect x="{}" y="{}" width="{}" height="{}" fill="{}" fg:x="{}" fg:w="{}"/><text x="{}" y="{}">{}</text></g>"#,
        escape(title),
        &c["x"],
        &c["y"],
        &c["w"],
        &c["h"],
        escape(fill),
        &c["fx"],
        &c["fw"],
        &c["tx"],
        &c["ty"],
        escape(&fit_label(label, width_px))
    )
}

/// The label a frame `width_px` wide shows: the whole name when it fits (inferno needs one character more than
/// the name), else its start and `..` when at least 3 characters of it fit, else nothing (never `..m`).
pub fn fit_label(name: &str, width_px: f64) -> String {
    let fits = ((width_px - 3.0) / (FONT_SIZE * FONT_WIDTH)).floor().max(0.0) as usize;
    let chars = name.chars().count();
    if chars <= fits {
        return name.to_owned();
    }
    if fits < 5 {
        return String::new();
    }
    let mut label: String = name.chars().take(fits - 2).collect();
    label.push_str("..");
    label
}

/// inferno's script takes a label from the tooltip minus `(...)`, leaving a trailing space that makes short names
/// not fit, and then cuts them to `..m`: strip the space, and show nothing rather than one character.
fn patch_script(svg: &str) -> Result<String> {
    let patches = [
        (r#".replace(/\([^(]*\)$/,"")"#, r#".replace(/\s*\([^(]*\)$/,"")"#),
        (
            "var substringLength = Math.floor(w / known_font_width) - 2;",
            "var substringLength = Math.floor(w / known_font_width) - 2;\n        if (substringLength < 3) { \
             textElemNewAttributes.push([newX, \"\"]); continue; }",
        ),
        (
            r#"t.textContent = ".." + txt.substring(x, txt.length);"#,
            r#"t.textContent = txt.length - x < 3 ? "" : ".." + txt.substring(x, txt.length);"#,
        ),
    ];
    let mut out = svg.to_owned();
    for (from, to) in patches {
        if !out.contains(from) {
            bail!("inferno's script changed (no `{from}`): cannot fix its labels");
        }
        out = out.replace(from, to);
    }
    Ok(out)
}

/// An attribute of `<svg id="frames" ...>`, as a number.
fn attribute_of_frames(svg: &str, name: &str) -> Option<u64> {
    let start = svg.find(r#"<svg id="frames""#)?;
    let tag = &svg[start..start + svg[start..].find('>')?];
    let key = format!(r#" {name}=""#);
    let value = &tag[tag.find(&key)? + key.len()..];
    value[..value.find('"')?].parse().ok()
}

/// Adds a time axis under a flame chart's frames (ticks at round durations from the chart's start, human units),
/// making the image taller. The axis is of the whole chart: zooming in does not rescale it.
pub fn add_time_axis(svg: &str) -> Result<String> {
    let (Some(total), Some(container_px)) =
        (attribute_of_frames(svg, "total_samples"), attribute_of_frames(svg, "width"))
    else {
        bail!("inferno's SVG has no frames container: cannot add a time axis");
    };
    let height_re = Regex::new(r#"<svg version="1.1" width="(\d+)" height="(\d+)""#).expect("valid regex");
    let Some(height) = height_re.captures(svg).and_then(|c| c[2].parse::<u64>().ok()) else {
        bail!("inferno's SVG has no height: cannot add a time axis");
    };
    // The root row ends 34 px (inferno's bottom padding) above the image's bottom.
    let axis_y = height - 34 + 2;
    let new_height = height + AXIS_HEIGHT;
    let mut out = svg.replacen(&format!(r#" height="{height}" "#), &format!(r#" height="{new_height}" "#), 1);
    let view_box = Regex::new(r#"viewBox="0 0 (\d+) (\d+)""#).expect("valid regex");
    out = view_box.replacen(&out, 1, format!(r#"viewBox="0 0 $1 {new_height}""#).as_str()).into_owned();
    out = out.replacen(
        &format!(r#"width="100%" height="{height}" fill="url(#background)""#),
        &format!(r#"width="100%" height="{new_height}" fill="url(#background)""#),
        1,
    );
    // The details line and the search count sit under the axis.
    let bottom_text = Regex::new(r#"(<text id="(?:details|matched)"[^>]* y=")([\d.]+)""#).expect("valid regex");
    out = bottom_text
        .replace_all(&out, |c: &Captures| {
            let y: f64 = c[2].parse().unwrap_or(0.0);
            format!("{}{:.2}\"", &c[1], y + AXIS_HEIGHT as f64)
        })
        .into_owned();
    let axis = axis_xml(total, container_px, axis_y);
    let Some(at) = out.find(r#"<svg id="frames""#) else { bail!("inferno's SVG has no frames container") };
    out.insert_str(at, &axis);
    // inferno's script sizes the frames to the window: the axis follows.
    let resize = "frames.attributes.width.value = svg.width.baseVal.value - xpad * 2;";
    if !out.contains(resize) {
        bail!("inferno's script changed (no `{resize}`): cannot keep the time axis under the frames");
    }
    Ok(out.replacen(
        resize,
        &format!(
            "{resize}\n            var axis = document.getElementById(\"time-axis\");\n            \
             if (axis) axis.attributes.width.value = frames.attributes.width.value;"
        ),
        1,
    ))
}

/// The axis: a line, and a tick with its duration at each round step (1, 2 or 5 times a power of ten), in an
/// `<svg>` placed and sized like the frames' (the script resizes both), positions in percent.
fn axis_xml(total_ns: u64, container_px: u64, y: u64) -> String {
    let step = tick_step(total_ns);
    let pct_of = |ns: u64| 100.0 * ns as f64 / total_ns.max(1) as f64;
    let mut xml = format!(
        r#"<svg id="time-axis" x="10" width="{container_px}" overflow="visible"><title>time since the invocation started</title><line x1="0%" y1="{y}" x2="100%" y2="{y}" stroke="rgb(80,80,80)"/>"#
    );
    let mut at = 0;
    while at <= total_ns {
        let x = pct_of(at);
        let label = if at == 0 { "0".to_owned() } else { format_ns(at) };
        // The end labels stay inside the image.
        let anchor = if at == 0 {
            "start"
        } else if x > 95.0 {
            "end"
        } else {
            "middle"
        };
        xml.push_str(&format!(
            r#"<line x1="{x:.4}%" y1="{y}" x2="{x:.4}%" y2="{}" stroke="rgb(80,80,80)"/><text class="tick" x="{x:.4}%" y="{}" text-anchor="{anchor}" font-size="11">{}</text>"#,
            y + 5,
            y + 16,
            escape(&label)
        ));
        at = at.saturating_add(step);
        if step == 0 {
            break;
        }
    }
    xml.push_str("</svg>\n");
    xml
}

/// A round step giving at most 10 ticks over `total` (and at least 1 ns).
pub fn tick_step(total: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for factor in [1, 2, 5] {
            let candidate = step.saturating_mul(factor);
            if total / candidate <= 10 {
                return candidate;
            }
        }
        step = step.saturating_mul(10);
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_show_whole_where_they_fit_and_never_as_one_character() {
        assert_eq!(fit_label("sum", 30.0), "sum");
        assert_eq!(fit_label("sum", 20.0), "");
        assert_eq!(fit_label("render::render", 60.0), "render..");
        assert_eq!(fit_label("render::render", 40.0), "ren..");
        assert_eq!(fit_label("render::render", 30.0), "");
    }

    #[test]
    fn ticks_are_round_and_at_most_ten() {
        assert_eq!(tick_step(9_714_172), 1_000_000);
        assert_eq!(tick_step(25_000), 5_000);
        assert_eq!(tick_step(3), 1);
        assert_eq!(tick_step(0), 1);
    }
}
