//! The plots of the HTML report, the sweep and docs/experiments.md, drawn
//! as plain SVG so a page needs no script library and no network: line
//! plots (log or linear axes), log-log histogram panels on shared axes,
//! bar charts and a CPU timeline. Written here rather than with a plotting
//! crate because every plot is a few rectangles and lines on an axis, and
//! the text needs no font metrics when the browser lays it out.

use schedlab_sim::report::HistSummary;
use schedlab_sim::report::timeline::Segment;
use std::fmt::Write;

/// Tableau 10: distinguishable lines, one per scheduler.
pub const PALETTE: [&str; 12] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
    "#1b1b1b", "#86bcb6",
];

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Nanoseconds as the label of a time axis: 100ns, 10us, 4ms, 2s.
pub fn time_label(ns: f64) -> String {
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "us")
    } else {
        (ns, "ns")
    };
    format!("{}{unit}", trim_number(v))
}

/// A count or value without trailing zeros, with k/M for large ones.
pub fn number_label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim_number(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim_number(v / 1e3))
    } else {
        trim_number(v)
    }
}

fn trim_number(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".to_string() } else { s.to_string() }
}

/// One axis: data range to pixel range, linear or logarithmic.
#[derive(Clone, Copy, Debug)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    pub px0: f64,
    pub px1: f64,
}

impl Axis {
    pub fn new(lo: f64, hi: f64, log: bool, px0: f64, px1: f64) -> Axis {
        let (lo, hi) = if log {
            let lo = lo.max(f64::MIN_POSITIVE);
            (lo, if hi > lo { hi } else { lo * 10.0 })
        } else if hi > lo {
            (lo, hi)
        } else {
            (lo, lo + 1.0)
        };
        Axis { lo, hi, log, px0, px1 }
    }

    pub fn map(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.max(self.lo).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.px0 + f.clamp(0.0, 1.0) * (self.px1 - self.px0)
    }

    /// Tick values: powers of 10 on a log axis (powers of 2 when it spans
    /// less than four decades, as thread counts do), 1-2-5 steps otherwise.
    pub fn ticks(&self) -> Vec<f64> {
        if self.log {
            let base: f64 = if self.hi / self.lo < 1e4 && self.lo >= 1.0 { 2.0 } else { 10.0 };
            let mut v = base.powf(self.lo.log(base).ceil() - 1e-9).max(self.lo);
            v = base.powf(v.log(base).round());
            if v < self.lo * (1.0 - 1e-9) {
                v *= base;
            }
            let mut out = Vec::new();
            while v <= self.hi * (1.0 + 1e-9) {
                out.push(v);
                v *= base;
            }
            // Too dense for labels: every other power.
            while out.len() > 12 {
                out = out.into_iter().step_by(2).collect();
            }
            out
        } else {
            let raw = (self.hi - self.lo) / 5.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
            let mut v = (self.lo / step).ceil() * step;
            let mut out = Vec::new();
            while v <= self.hi + step * 1e-9 {
                out.push(v);
                v += step;
            }
            out
        }
    }
}

/// A plot area inside an SVG: axes with ticks, labels and grid lines.
pub struct Frame {
    pub x: Axis,
    pub y: Axis,
}

impl Frame {
    /// Draws both axes with their ticks; `fx`/`fy` label tick values.
    pub fn draw(
        &self,
        out: &mut String,
        x_title: &str,
        y_title: &str,
        fx: &dyn Fn(f64) -> String,
        fy: &dyn Fn(f64) -> String,
    ) {
        let (x0, x1, y0, y1) = (self.x.px0, self.x.px1, self.y.px0, self.y.px1);
        let _ = write!(
            out,
            r##"<rect x="{x0}" y="{y1}" width="{}" height="{}" fill="#fff" stroke="#999"/>"##,
            x1 - x0,
            y0 - y1
        );
        for t in self.x.ticks() {
            let px = self.x.map(t);
            let label = fx(t);
            if label.is_empty() {
                continue;
            }
            let _ = write!(
                out,
                r##"<line x1="{px:.1}" y1="{y0}" x2="{px:.1}" y2="{y1}" stroke="#e4e4e4"/><text x="{px:.1}" y="{}" font-size="10" text-anchor="middle">{}</text>"##,
                y0 + 12.0,
                esc(&label)
            );
        }
        for t in self.y.ticks() {
            let py = self.y.map(t);
            let _ = write!(
                out,
                r##"<line x1="{x0}" y1="{py:.1}" x2="{x1}" y2="{py:.1}" stroke="#e4e4e4"/><text x="{}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"##,
                x0 - 4.0,
                py + 3.0,
                esc(&fy(t))
            );
        }
        let _ = write!(
            out,
            r##"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle">{}</text>"##,
            (x0 + x1) / 2.0,
            y0 + 26.0,
            esc(x_title)
        );
        let _ = write!(
            out,
            r##"<text x="{}" y="{:.1}" font-size="11" text-anchor="middle" transform="rotate(-90 {} {:.1})">{}</text>"##,
            x0 - 42.0,
            (y0 + y1) / 2.0,
            x0 - 42.0,
            (y0 + y1) / 2.0,
            esc(y_title)
        );
    }
}

/// An SVG of the given size with `title` as its accessible name and as a
/// bold heading centred on the baseline `title_y`.
fn open_svg(width: f64, height: f64, title: &str, title_y: f64) -> String {
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" role="img" aria-label="{t}"><title>{t}</title><text x="{}" y="{title_y}" font-size="13" text-anchor="middle" font-weight="bold">{t}</text>"##,
        width / 2.0,
        t = esc(title)
    )
}

/// One line of a line plot.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// What a plot's values are, for its tick labels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    /// Counts and rates: 250, 12k, 3M.
    Count,
    /// Nanoseconds, labelled in the unit that reads best: 8s, 400ms.
    Nanos,
}

/// A report column's name as an axis reads it, and its unit:
/// `context_switches_per_sec` is "context switches/s", `makespan_ns` is
/// "makespan" in time units.
pub fn metric_label(column: &str) -> (String, Unit) {
    let (base, unit) = match column.strip_suffix("_ns") {
        Some(b) => (b, Unit::Nanos),
        None => (column, Unit::Count),
    };
    let label = match base {
        "jain_fairness" => "Jain's fairness index (all tasks)".to_string(),
        "jain_fairness_min_spec" => "Jain's fairness index (lowest kind)".to_string(),
        _ => base.replace("_per_sec", "/s").replace("_pct", " %").replace('_', " "),
    };
    (label, unit)
}

pub struct LinePlot<'a> {
    pub title: &'a str,
    pub x_title: &'a str,
    pub y_title: &'a str,
    pub y_unit: Unit,
    pub x_log: bool,
    pub y_log: bool,
    pub series: &'a [Series],
}

/// Characters of a legend line (11 px sans-serif in 165 px).
const LEGEND_CHARS: usize = 26;

/// A marker per line, so lines that cross or run close stay apart.
fn marker(out: &mut String, shape: usize, x: f64, y: f64, color: &str) {
    let _ = match shape % 4 {
        0 => write!(out, r#"<circle cx="{x:.1}" cy="{y:.1}" r="2.6" fill="{color}"/>"#),
        1 => write!(out, r#"<rect x="{:.1}" y="{:.1}" width="5" height="5" fill="{color}"/>"#, x - 2.5, y - 2.5),
        2 => write!(
            out,
            r#"<path d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{color}"/>"#,
            y - 3.2,
            x + 3.0,
            y + 2.4,
            x - 3.0,
            y + 2.4
        ),
        _ => write!(
            out,
            r#"<path d="M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z" fill="{color}"/>"#,
            y - 3.4,
            x + 3.4,
            y + 3.4,
            x - 3.4
        ),
    };
}

/// Series whose points all lie within `tolerance` of each other's: drawn
/// once, so that one line does not hide the others, and named together.
fn merge_coinciding(series: &[Series], tolerance: f64) -> Vec<(Vec<&str>, &Series)> {
    let mut groups: Vec<(Vec<&str>, &Series)> = Vec::new();
    for s in series {
        let same = |other: &Series| {
            other.points.len() == s.points.len()
                && other
                    .points
                    .iter()
                    .zip(&s.points)
                    .all(|(a, b)| a.0 == b.0 && ((a.1 - b.1).abs() <= tolerance || (a.1.is_nan() && b.1.is_nan())))
        };
        match groups.iter_mut().find(|(_, first)| same(first)) {
            Some((names, _)) => names.push(&s.name),
            None => groups.push((vec![&s.name], s)),
        }
    }
    groups
}

impl LinePlot<'_> {
    pub fn svg(&self) -> String {
        let (w, h) = (820.0, 420.0);
        let legend_w = 190.0;
        let pts = || self.series.iter().flat_map(|s| s.points.iter()).filter(|p| p.0.is_finite() && p.1.is_finite());
        let positive = |v: f64, log: bool| !log || v > 0.0;
        let xs: Vec<f64> = pts().map(|p| p.0).filter(|v| positive(*v, self.x_log)).collect();
        let ys: Vec<f64> = pts().map(|p| p.1).filter(|v| positive(*v, self.y_log)).collect();
        let range = |v: &[f64]| v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        let (xlo, xhi) = range(&xs);
        let (ylo, yhi) = range(&ys);
        let (xlo, xhi) = if xs.is_empty() { (1.0, 10.0) } else { (xlo, xhi) };
        let (ylo, yhi) = if ys.is_empty() { (1.0, 10.0) } else { (ylo, yhi) };
        let ylo = if self.y_log { ylo / 1.2 } else { ylo.min(0.0) };
        let yhi = if self.y_log { yhi * 1.2 } else { yhi + (yhi - ylo).abs() * 0.05 };
        let frame = Frame {
            x: Axis::new(xlo, xhi, self.x_log, 70.0, w - legend_w - 10.0),
            y: Axis::new(ylo, yhi, self.y_log, h - 45.0, 30.0),
        };
        let mut out = open_svg(w, h, self.title, 18.0);
        let fy: &dyn Fn(f64) -> String = match self.y_unit {
            Unit::Count => &number_label,
            Unit::Nanos => &time_label,
        };
        frame.draw(&mut out, self.x_title, self.y_title, &number_label, fy);
        // Lines less than half a pixel apart everywhere are one line.
        let tolerance = if self.y_log { 0.0 } else { (yhi - ylo).abs() / (h - 75.0) * 0.5 };
        let mut ly = 40.0;
        for (i, (names, s)) in merge_coinciding(self.series, tolerance).into_iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let dash = if i >= PALETTE.len() { r#" stroke-dasharray="4 3""# } else { "" };
            let path: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|p| positive(p.0, self.x_log) && positive(p.1, self.y_log) && p.1.is_finite())
                .map(|&(x, y)| (frame.x.map(x), frame.y.map(y)))
                .collect();
            let coords: Vec<String> = path.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let _ = write!(
                out,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.8"{dash} points="{}"/>"#,
                coords.join(" ")
            );
            for &(x, y) in &path {
                marker(&mut out, i, x, y, color);
            }
            let lx = w - legend_w;
            let _ = write!(
                out,
                r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2.5"{dash}/>"#,
                lx + 18.0
            );
            marker(&mut out, i, lx + 9.0, ly, color);
            // Coinciding lines share an entry: "bmq = pds = tt", wrapped.
            let mut lines: Vec<String> = vec![String::new()];
            for (k, name) in names.iter().enumerate() {
                let piece = if k + 1 < names.len() { format!("{name} = ") } else { name.to_string() };
                let last = lines.last_mut().expect("one line at least");
                if !last.is_empty() && last.len() + piece.trim_end().len() > LEGEND_CHARS {
                    lines.push(piece);
                } else {
                    last.push_str(&piece);
                }
            }
            for (k, text) in lines.iter().enumerate() {
                let _ = write!(
                    out,
                    r#"<text x="{}" y="{}" font-size="11">{}</text>"#,
                    lx + 23.0,
                    ly + 4.0 + k as f64 * 13.0,
                    esc(text.trim_end())
                );
            }
            ly += 16.0 + (lines.len() - 1) as f64 * 13.0;
        }
        out.push_str("</svg>");
        out
    }
}

const PANEL_W: f64 = 540.0;
const PANEL_H: f64 = 190.0;
const PANEL_COLS: usize = 2;

/// An SVG for `n` panels, two to a row, under a bold `title`.
fn open_panels(title: &str, n: usize) -> String {
    let rows = n.div_ceil(PANEL_COLS).max(1);
    let (w, h) = (PANEL_COLS as f64 * PANEL_W + 20.0, rows as f64 * PANEL_H + 30.0);
    open_svg(w, h, title, 18.0)
}

/// Top-left corner of panel `i`.
fn panel_origin(i: usize) -> (f64, f64) {
    (10.0 + (i % PANEL_COLS) as f64 * PANEL_W, 30.0 + (i / PANEL_COLS) as f64 * PANEL_H)
}

fn panel_title(out: &mut String, ox: f64, oy: f64, name: &str) {
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" font-size="12" font-weight="bold">{}</text>"#,
        ox + 58.0,
        oy + 12.0,
        esc(name)
    );
}

/// Histograms of several runs in a grid of panels sharing both axes: log2
/// buckets on a log time axis, counts on a log axis (as cyclictest and
/// jitterdebugger histograms are read), with each run's p99 and max marked.
pub fn hist_panels(title: &str, x_title: &str, panels: &[(String, &HistSummary)]) -> String {
    let mut out = open_panels(title, panels.len());
    let lo = panels.iter().flat_map(|(_, s)| s.buckets.iter()).map(|b| b.lo.max(1)).min().unwrap_or(1) as f64;
    // Half a bucket of room past the last one, so it does not end on the
    // frame and look cut off.
    let hi = panels.iter().flat_map(|(_, s)| s.buckets.iter()).map(|b| b.hi).max().unwrap_or(2) as f64 * 1.5;
    let top = panels.iter().flat_map(|(_, s)| s.buckets.iter()).map(|b| b.count).max().unwrap_or(1).max(1) as f64;
    for (i, (name, s)) in panels.iter().enumerate() {
        let (ox, oy) = panel_origin(i);
        let frame = Frame {
            x: Axis::new(lo, hi, true, ox + 55.0, ox + PANEL_W - 10.0),
            y: Axis::new(0.8, top * 1.5, true, oy + PANEL_H - 40.0, oy + 18.0),
        };
        frame.draw(&mut out, x_title, "count", &time_label, &number_label);
        panel_title(&mut out, ox, oy, name);
        let color = PALETTE[i % PALETTE.len()];
        for b in &s.buckets {
            let (x0, x1) = (frame.x.map(b.lo.max(1) as f64), frame.x.map(b.hi as f64));
            let y = frame.y.map(b.count as f64);
            let _ = write!(
                out,
                r#"<rect x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>[{}, {}): {}</title></rect>"#,
                (x1 - x0 - 0.5).max(0.5),
                (frame.y.px0 - y).max(0.0),
                time_label(b.lo as f64),
                time_label(b.hi as f64),
                b.count
            );
        }
        if s.count > 0 {
            for (label, v, dash) in [("p99", s.p99, "4 2"), ("max", s.max, "1 2")] {
                let x = frame.x.map(v.max(1) as f64);
                // Near the right edge the label goes on the line's left.
                let (tx, anchor) = if x > frame.x.px1 - 70.0 { (x - 2.0, "end") } else { (x + 2.0, "start") };
                let _ = write!(
                    out,
                    r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#333" stroke-dasharray="{dash}"/><text x="{tx:.1}" y="{}" font-size="9" text-anchor="{anchor}" stroke="#fff" stroke-width="3" paint-order="stroke">{label} {}</text>"##,
                    frame.y.px0,
                    frame.y.px1,
                    frame.y.px1 + if label == "max" { 20.0 } else { 10.0 },
                    time_label(v as f64)
                );
            }
        } else {
            let _ = write!(
                out,
                r##"<text x="{}" y="{}" font-size="11" fill="#777">no samples</text>"##,
                ox + PANEL_W / 2.0 - 20.0,
                oy + PANEL_H / 2.0
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// One bar: what it is (a task), the group it belongs to (its [[task]]
/// entry), its value.
pub struct Bar {
    pub label: String,
    pub group: String,
    pub value: f64,
}

/// A panel of bars: its title and its bars, groups kept together.
pub type BarPanel = (String, Vec<Bar>);

/// Pixels a character of `size` px sans-serif takes, about: for fitting
/// labels without font metrics.
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.58
}

/// `text` cut to fit `width` px at `size`, with an ellipsis.
fn fit(text: &str, width: f64, size: f64) -> String {
    if text_width(text, size) <= width {
        return text.to_string();
    }
    let keep = ((width / (size * 0.58)) as usize).saturating_sub(1);
    if keep == 0 { String::new() } else { format!("{}…", text.chars().take(keep).collect::<String>()) }
}

/// A bar per (label, value) in each panel, panels sharing the value axis:
/// per-task CPU share, one panel per scheduler. `reference` draws a dashed
/// line at the fair value.
pub fn bar_panels(title: &str, y_title: &str, panels: &[BarPanel], reference: Option<f64>) -> String {
    let mut out = open_panels(title, panels.len());
    let top = panels.iter().flat_map(|(_, b)| b.iter().map(|x| x.value)).chain(reference).fold(0.0, f64::max).max(1e-9);
    for (i, (name, bars)) in panels.iter().enumerate() {
        let (ox, oy) = panel_origin(i);
        let frame = Frame {
            x: Axis::new(0.0, bars.len().max(1) as f64, false, ox + 55.0, ox + PANEL_W - 10.0),
            y: Axis::new(0.0, top * 1.1, false, oy + PANEL_H - 40.0, oy + 18.0),
        };
        // Bars are categories: no numeric x ticks.
        frame.draw(&mut out, "", y_title, &|_| String::new(), &number_label);
        panel_title(&mut out, ox, oy, name);
        let color = PALETTE[i % PALETTE.len()];
        let bw = (frame.x.px1 - frame.x.px0) / bars.len().max(1) as f64;
        for (j, b) in bars.iter().enumerate() {
            let y = frame.y.map(b.value);
            let _ = write!(
                out,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{}: {:.2}</title></rect>"#,
                frame.x.px0 + j as f64 * bw + bw * 0.1,
                bw * 0.8,
                (frame.y.px0 - y).max(0.0),
                esc(&b.label),
                b.value
            );
        }
        // Under each run of bars of one group, the group's name (cut to
        // its width; the full name on hover), with a tick at each end.
        let mut j = 0;
        while j < bars.len() {
            let mut e = j + 1;
            while e < bars.len() && bars[e].group == bars[j].group {
                e += 1;
            }
            let (a, b) = (frame.x.px0 + j as f64 * bw, frame.x.px0 + e as f64 * bw);
            let name = if e - j > 1 { format!("{} ×{}", bars[j].group, e - j) } else { bars[j].group.clone() };
            let _ = write!(
                out,
                r##"<line x1="{:.1}" y1="{}" x2="{:.1}" y2="{}" stroke="#999"/><text x="{:.1}" y="{}" font-size="10" text-anchor="middle"><title>{}</title>{}</text>"##,
                a + 2.0,
                frame.y.px0 + 4.0,
                b - 2.0,
                frame.y.px0 + 4.0,
                (a + b) / 2.0,
                frame.y.px0 + 16.0,
                esc(&name),
                esc(&fit(&name, b - a - 4.0, 10.0))
            );
            j = e;
        }
        if let Some(r) = reference {
            let y = frame.y.map(r);
            let _ = write!(
                out,
                r##"<line x1="{}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#333" stroke-dasharray="4 2"><title>fair share {r:.2}</title></line>"##,
                frame.x.px0, frame.x.px1
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// A task's colour in timelines: hues spread by the golden angle so
/// neighbouring task ids differ.
pub fn task_color(task: u32) -> String {
    let hue = (task as f64 * 137.508) % 360.0;
    format!("hsl({hue:.0},62%,{}%)", 45 + (task % 3) * 8)
}

/// Tasks named in a timeline's legend, and the legend's columns.
const LEGEND_TASKS: usize = 18;
const LEGEND_COLS: usize = 6;

/// Per CPU and column of a timeline `columns` wide over `span` ns from
/// `from`: the task that ran longest in it (u32::MAX: idle).
fn dominant_tasks(cpus: u32, from: u64, span: f64, columns: usize, segments: &[Segment]) -> Vec<Vec<u32>> {
    // Per CPU and column: how long each task ran in it.
    let mut acc: Vec<Vec<Vec<(u32, f64)>>> = vec![vec![Vec::new(); columns]; cpus as usize];
    for s in segments.iter().filter(|s| s.cpu < cpus) {
        let a = (s.start.saturating_sub(from)) as f64 / span * columns as f64;
        let b = (s.end.saturating_sub(from)) as f64 / span * columns as f64;
        let mut c = a.floor() as usize;
        while (c as f64) < b && c < columns {
            let overlap = b.min(c as f64 + 1.0) - a.max(c as f64);
            let cell = &mut acc[s.cpu as usize][c];
            match cell.iter_mut().find(|(t, _)| *t == s.task) {
                Some(e) => e.1 += overlap,
                None => cell.push((s.task, overlap)),
            }
            c += 1;
        }
    }
    // Per CPU and column: the task that ran longest in it (u32::MAX: idle).
    acc.iter()
        .map(|cols| {
            cols.iter()
                .map(|cell| {
                    cell.iter().max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0))).map_or(u32::MAX, |e| e.0)
                })
                .collect()
        })
        .collect()
}

/// Which task ran on which CPU between `from` and `to`: one row per CPU,
/// one pixel column per (to - from) / width; where several tasks share a
/// column the one that ran longest in it is drawn.
pub fn timeline(
    title: &str,
    cpus: u32,
    from: u64,
    to: u64,
    segments: &[Segment],
    name: &dyn Fn(u32) -> String,
) -> String {
    let columns = 1000usize;
    let row_h = (200.0 / cpus.max(1) as f64).clamp(3.0, 18.0);
    let (x0, y0) = (55.0, 28.0);
    let (w, h) = (x0 + columns as f64 + 15.0, y0 + row_h * cpus as f64 + 32.0);
    let span = (to.saturating_sub(from)).max(1) as f64;
    let dominant = dominant_tasks(cpus, from, span, columns, segments);
    // The legend: the tasks that fill most of the window, by columns.
    let mut shown: Vec<(u32, usize)> = Vec::new();
    for &t in dominant.iter().flatten().filter(|&&t| t != u32::MAX) {
        match shown.iter_mut().find(|(x, _)| *x == t) {
            Some(e) => e.1 += 1,
            None => shown.push((t, 1)),
        }
    }
    shown.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let more = shown.len().saturating_sub(LEGEND_TASKS);
    shown.truncate(LEGEND_TASKS);
    let legend_rows = shown.len().div_ceil(LEGEND_COLS) + usize::from(more > 0);
    let h = h + legend_rows as f64 * 14.0 + 4.0;
    let mut out = open_svg(w, h, title, 16.0);
    let ly0 = y0 + row_h * cpus as f64 + 34.0;
    for (k, (t, _)) in shown.iter().enumerate() {
        let (lx, ly) = (x0 + (k % LEGEND_COLS) as f64 * 170.0, ly0 + (k / LEGEND_COLS) as f64 * 14.0);
        let _ = write!(
            out,
            r#"<rect x="{lx}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{}" y="{ly:.1}" font-size="10">{}</text>"#,
            ly - 9.0,
            task_color(*t),
            lx + 14.0,
            esc(&fit(&name(*t), 150.0, 10.0))
        );
    }
    if more > 0 {
        let _ = write!(
            out,
            r##"<text x="{x0}" y="{:.1}" font-size="10" fill="#555">and {more} more tasks: hover over the timeline for names</text>"##,
            ly0 + (legend_rows - 1) as f64 * 14.0
        );
    }
    let _ = write!(
        out,
        r##"<rect x="{x0}" y="{y0}" width="{columns}" height="{:.1}" fill="#f4f4f4" stroke="#999"/>"##,
        row_h * cpus as f64
    );
    for (cpu, cols) in dominant.iter().enumerate() {
        let y = y0 + cpu as f64 * row_h;
        if cpus <= 32 || cpu % (cpus as usize / 16).max(1) == 0 {
            let _ = write!(
                out,
                r#"<text x="{}" y="{:.1}" font-size="{}" text-anchor="end">CPU{cpu}</text>"#,
                x0 - 4.0,
                y + row_h * 0.75,
                (row_h * 0.8).clamp(6.0, 10.0)
            );
        }
        // Runs of columns with the same task become one rectangle.
        let mut c = 0;
        while c < columns {
            let t = cols[c];
            let mut e = c + 1;
            while e < columns && cols[e] == t {
                e += 1;
            }
            if t != u32::MAX {
                let _ = write!(
                    out,
                    r#"<rect x="{:.0}" y="{y:.1}" width="{}" height="{:.1}" fill="{}"><title>CPU{cpu} {} {}..{}</title></rect>"#,
                    x0 + c as f64,
                    e - c,
                    row_h - 0.5,
                    task_color(t),
                    esc(&name(t)),
                    time_label(from as f64 + c as f64 * span / columns as f64),
                    time_label(from as f64 + e as f64 * span / columns as f64),
                );
            }
            c = e;
        }
    }
    let axis = Axis::new(from as f64, to as f64, false, x0, x0 + columns as f64);
    let yb = y0 + row_h * cpus as f64;
    for t in axis.ticks() {
        let px = axis.map(t);
        let _ = write!(
            out,
            r##"<line x1="{px:.1}" y1="{yb}" x2="{px:.1}" y2="{}" stroke="#999"/><text x="{px:.1}" y="{}" font-size="10" text-anchor="middle">{}</text>"##,
            yb + 4.0,
            yb + 15.0,
            time_label(t)
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::{Bar, LinePlot, Series, Unit, bar_panels, merge_coinciding, metric_label};

    #[test]
    fn plots_speak_in_labels_and_units_not_column_names() {
        assert_eq!(metric_label("context_switches_per_sec"), ("context switches/s".to_string(), Unit::Count));
        assert_eq!(metric_label("makespan_ns"), ("makespan".to_string(), Unit::Nanos));
        let series = [Series { name: "cfs".into(), points: vec![(2.0, 8e9), (4.0, 4e9)] }];
        let svg = LinePlot {
            title: "t",
            x_title: "cpus",
            y_title: "makespan",
            y_unit: Unit::Nanos,
            x_log: false,
            y_log: false,
            series: &series,
        }
        .svg();
        assert!(svg.contains(">8s<") && !svg.contains("8000M"), "time ticks in seconds");
    }

    #[test]
    fn coinciding_lines_share_one_legend_entry() {
        let s = |name: &str, ys: [f64; 3]| Series {
            name: name.into(),
            points: vec![(1.0, ys[0]), (2.0, ys[1]), (4.0, ys[2])],
        };
        let all = [s("bmq", [0.0, 250.0, 250.0]), s("eevdf", [0.0, 200.0, 250.0]), s("pds", [0.0, 250.2, 250.0])];
        let groups = merge_coinciding(&all, 0.5);
        let names: Vec<Vec<&str>> = groups.iter().map(|(n, _)| n.clone()).collect();
        assert_eq!(names, vec![vec!["bmq", "pds"], vec!["eevdf"]]);
    }

    #[test]
    fn bars_are_named_by_their_group() {
        let bar = |l: &str, g: &str| Bar { label: l.into(), group: g.into(), value: 10.0 };
        let panels = [("cfs".to_string(), vec![bar("hog-0", "hog"), bar("hog-1", "hog"), bar("timer", "timer")])];
        let svg = bar_panels("share", "%", &panels, None);
        assert!(svg.contains("hog ×2") && svg.contains(">timer<"), "{svg}");
    }

    use super::*;

    #[test]
    fn log_axis_maps_decades_evenly_and_ticks_powers() {
        let a = Axis::new(100.0, 1e6, true, 0.0, 400.0);
        assert!((a.map(100.0) - 0.0).abs() < 1e-9);
        assert!((a.map(1e4) - 200.0).abs() < 1e-9);
        assert_eq!(a.ticks(), vec![100.0, 1e3, 1e4, 1e5, 1e6]);
        let threads = Axis::new(1.0, 4096.0, true, 0.0, 1.0);
        assert_eq!(threads.ticks().first(), Some(&1.0));
        assert_eq!(threads.ticks().last(), Some(&4096.0));
    }

    #[test]
    fn linear_ticks_are_round() {
        let a = Axis::new(0.0, 97.0, false, 0.0, 1.0);
        assert_eq!(a.ticks(), vec![0.0, 20.0, 40.0, 60.0, 80.0]);
    }

    #[test]
    fn labels() {
        assert_eq!(time_label(1500.0), "1.5us");
        assert_eq!(time_label(4e6), "4ms");
        assert_eq!(number_label(25000.0), "25k");
        assert_eq!(esc("a<b&\"c\""), "a&lt;b&amp;&quot;c&quot;");
    }

    #[test]
    fn timeline_draws_the_dominant_task_of_each_column() {
        // Task 1 runs 0..90 ns and task 2 90..100 on CPU 0; 10 ns per column
        // at 800 columns means 8000 ns: use a wider window instead.
        let segs = [
            Segment { cpu: 0, task: 1, start: 0, end: 600 },
            Segment { cpu: 0, task: 2, start: 600, end: 800 },
            Segment { cpu: 1, task: 3, start: 400, end: 800 },
        ];
        let svg = timeline("t", 2, 0, 800, &segs, &|t| format!("task{t}"));
        assert!(svg.contains("CPU0 task1 0ns..600ns"), "{svg}");
        assert!(svg.contains("CPU0 task2 600ns..800ns"), "{svg}");
        assert!(svg.contains("CPU1 task3 400ns..800ns"), "{svg}");
        assert!(!svg.contains("CPU1 task1"));
    }
}
