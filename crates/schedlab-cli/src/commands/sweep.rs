//! `schedlab sweep`: one workload over a grid of parameter values and
//! schedulers, run in parallel on every core, written as CSV with a line
//! plot of a metric against the first varied parameter, one line per
//! scheduler.

use crate::args::{Common, overrides};
use crate::render::svg;
use crate::simulate::{load_workload_with, policy_names, simulate};
use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use schedlab_sim::grid::{Axis, combinations, overrides_at, parse_axis};
use schedlab_sim::report::{SUMMARY_COLUMNS, numeric_columns};
use schedlab_sim::{Overrides, Report};

pub struct SweepRequest<'a> {
    pub common: &'a Common,
    pub vary: &'a [String],
    pub sched: Vec<String>,
    pub metrics: &'a [String],
    pub output: Option<&'a std::path::Path>,
    pub plot: Option<&'a std::path::Path>,
    pub jobs: Option<usize>,
}

/// One run of the grid: the varied values in axis order, and its report.
pub struct Point {
    pub values: Vec<i64>,
    pub report: Report,
}

/// Every combination of the axes' values (row-major, the first axis
/// outermost) on every scheduler (innermost), run in parallel on
/// `threads` threads with a progress bar when stderr is a terminal.
pub fn run_grid(c: &Common, base: &Overrides, axes: &[Axis], names: &[String], threads: usize) -> Result<Vec<Point>> {
    let grid = combinations(axes);
    let jobs: Vec<(Vec<i64>, &str)> =
        grid.iter().flat_map(|g| names.iter().map(move |n| (g.clone(), n.as_str()))).collect();
    // indicatif draws nothing when stderr is not a terminal.
    let bar = ProgressBar::new(jobs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed} elapsed, ~{eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let run_one = |(values, sched): &(Vec<i64>, &str)| -> Result<Point> {
        let ov = overrides_at(base, axes, values);
        let at: Vec<String> = axes.iter().zip(values).map(|(a, v)| format!("{}={v}", a.name)).collect();
        let w = load_workload_with(c, &ov).with_context(|| at.join(" "))?;
        let report = simulate(&w, sched).with_context(|| at.join(" "))?;
        bar.inc(1);
        Ok(Point { values: values.clone(), report })
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().context("cannot start worker threads")?;
    let points = pool.install(|| jobs.par_iter().map(run_one).collect::<Result<Vec<_>>>());
    bar.finish_and_clear();
    points
}

pub fn run(req: SweepRequest) -> Result<()> {
    let c = req.common;
    if let Some(path) = req.output {
        crate::output::check_output(path, "-o")?;
    }
    if let Some(path) = req.plot {
        crate::output::check_output(path, "--plot")?;
    }
    let base = overrides(c);
    let w = load_workload_with(c, &base)?;
    if req.vary.is_empty() {
        bail!("sweep needs at least one --vary NAME=VALUES, e.g. --vary threads=1,2,4,...,4096");
    }
    let params: Vec<String> = w.params.keys().cloned().collect();
    let axes: Vec<Axis> = req
        .vary
        .iter()
        .map(|v| parse_axis(v, &params, &w.count_params).map_err(|e| anyhow::anyhow!(e)))
        .collect::<Result<_>>()?;
    let known = numeric_columns();
    for m in req.metrics {
        if !known.contains(&m.as_str()) {
            bail!("--metric {m}: not a numeric report column; choose from {}", known.join(", "));
        }
    }
    let names = policy_names(req.sched, &w)?;
    let threads = req.jobs.unwrap_or_else(rayon::current_num_threads).max(1);
    let started = std::time::Instant::now();
    let points = run_grid(c, &base, &axes, &names, threads)?;
    let wall = started.elapsed().as_secs_f64();
    let events: u64 = points.iter().map(|p| p.report.totals.events).sum();
    eprintln!(
        "schedlab: sweep: {} runs in {wall:.2} s on {threads} thread{} ({:.1} M events/s)",
        points.len(),
        if threads == 1 { "" } else { "s" },
        events as f64 / wall.max(1e-9) / 1e6
    );

    let mut csv_out = csv::Writer::from_writer(Vec::new());
    // An axis that is a report column already (seed, cpus) is not written
    // twice: the report's column holds the same value.
    let own_column: Vec<bool> = axes.iter().map(|a| !SUMMARY_COLUMNS.contains(&a.name.as_str())).collect();
    let mut header: Vec<&str> =
        axes.iter().zip(&own_column).filter(|(_, own)| **own).map(|(a, _)| a.name.as_str()).collect();
    header.extend(SUMMARY_COLUMNS);
    csv_out.write_record(&header)?;
    for p in &points {
        let mut rec: Vec<String> =
            p.values.iter().zip(&own_column).filter(|(_, own)| **own).map(|(v, _)| v.to_string()).collect();
        rec.extend(p.report.summary_record());
        csv_out.write_record(&rec)?;
    }
    let csv_bytes = csv_out.into_inner().context("writing CSV")?;
    match req.output {
        Some(path) => {
            crate::output::write_whole(path, &csv_bytes)?;
            print!("{}", text_table(&axes, &names, &points, &req.metrics[0]));
        }
        None => print!("{}", String::from_utf8_lossy(&csv_bytes)),
    }
    if let Some(plot) = req.plot {
        for m in req.metrics {
            let path = if req.metrics.len() == 1 { plot.to_path_buf() } else { with_suffix(plot, m) };
            crate::output::write_whole(&path, plot_svg(&w.name, &axes, &names, &points, m).as_bytes())?;
        }
    }
    Ok(())
}

/// plot.svg with metric m: plot-m.svg.
fn with_suffix(path: &std::path::Path, m: &str) -> std::path::PathBuf {
    let stem = path.file_stem().map_or("plot".into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}-{m}.svg"))
}

/// Lines of the plot: per scheduler, and per value of the other axes.
pub fn series(axes: &[Axis], names: &[String], points: &[Point], metric: &str) -> Vec<svg::Series> {
    let mut out: Vec<svg::Series> = Vec::new();
    for p in points {
        let rest: Vec<String> = axes.iter().zip(&p.values).skip(1).map(|(a, v)| format!(" {}={v}", a.name)).collect();
        let name = format!("{}{}", p.report.scheduler, rest.concat());
        let Some(y) = p.report.metric(metric) else { continue };
        let x = p.values[0] as f64;
        match out.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push((x, y)),
            None => out.push(svg::Series { name, points: vec![(x, y)] }),
        }
    }
    // Lines in the order the schedulers were asked for.
    out.sort_by_key(|s| names.iter().position(|n| s.name.split(' ').next() == Some(n.as_str())));
    out
}

/// A line plot of `metric` against the first axis.
pub fn plot_svg(workload: &str, axes: &[Axis], names: &[String], points: &[Point], metric: &str) -> String {
    let lines = series(axes, names, points, metric);
    let xs = &axes[0].values;
    let (lo, hi) = (xs.iter().min().copied().unwrap_or(1), xs.iter().max().copied().unwrap_or(1));
    let ys: Vec<f64> = lines.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
    let ymin = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let ymax = ys.iter().copied().fold(0.0, f64::max);
    let (label, unit) = svg::metric_label(metric);
    let title = format!("{workload}: {label} against {}", axes[0].name);
    svg::LinePlot {
        title: &title,
        x_title: &axes[0].name,
        y_title: &label,
        y_unit: unit,
        x_log: lo > 0 && hi / lo >= 16,
        y_log: ymin > 0.0 && ymax / ymin >= 50.0,
        series: &lines,
    }
    .svg()
}

/// `metric` as a table: a row per grid point, a column per scheduler.
pub fn text_table(axes: &[Axis], names: &[String], points: &[Point], metric: &str) -> String {
    let mut out = format!("{metric}\n");
    let header: Vec<String> = axes.iter().map(|a| a.name.clone()).chain(names.iter().cloned()).collect();
    let mut rows: Vec<Vec<String>> = Vec::new();
    for chunk in points.chunks(names.len().max(1)) {
        let mut row: Vec<String> = chunk[0].values.iter().map(i64::to_string).collect();
        row.extend(chunk.iter().map(|p| p.report.metric(metric).map_or("-".into(), |v| format!("{v:.6}"))).map(|s| {
            // Six decimals for the parse, then trimmed for the eye.
            let t = s.trim_end_matches('0').trim_end_matches('.');
            if t.is_empty() { "0".to_string() } else { t.to_string() }
        }));
        rows.push(row);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r[i].len()).chain([header[i].len()]).max().unwrap_or(0))
        .collect();
    let line = |cells: &[String]| {
        cells.iter().zip(&widths).map(|(c, w)| format!("{c:>w$}")).collect::<Vec<_>>().join("  ") + "\n"
    };
    out.push_str(&line(&header));
    for r in &rows {
        out.push_str(&line(r));
    }
    out
}
