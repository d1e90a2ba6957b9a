//! How reports leave: the text tables, --json and --csv, HTML pages.

use crate::args::Common;
use crate::render;
use anyhow::{Context, Result};
use schedlab_sim::{Report, Workload, report};

/// --json or --csv output of a set of reports; false when neither was asked
/// for. `single` prints a lone report as an object, not an array.
pub(crate) fn structured_output(c: &Common, reports: &[Report], tasks: bool, single: bool) -> Result<bool> {
    if c.json {
        if single && reports.len() == 1 {
            println!("{}", serde_json::to_string_pretty(&reports[0])?);
        } else {
            println!("{}", serde_json::to_string_pretty(reports)?);
        }
        return Ok(true);
    }
    if !c.csv {
        return Ok(false);
    }
    let mut out = csv::Writer::from_writer(std::io::stdout().lock());
    if tasks {
        out.write_record(report::TASK_COLUMNS)?;
        for r in reports {
            for rec in r.task_records() {
                out.write_record(&rec)?;
            }
        }
    } else {
        out.write_record(report::SUMMARY_COLUMNS)?;
        for r in reports {
            out.write_record(r.summary_record())?;
        }
    }
    out.flush()?;
    Ok(true)
}

/// One report as run, vm and host print it: JSON or CSV when asked, else
/// the summary (and with `tasks` a line per task).
pub(crate) fn print_one(c: &Common, report: &Report, tasks: bool) -> Result<()> {
    if !structured_output(c, std::slice::from_ref(report), tasks, true)? {
        print!("{}", render::run_summary(report, c.hist));
        if tasks {
            println!();
            print!("{}", render::task_lines(report));
        }
    }
    Ok(())
}

/// The HTML page's timeline window when none is asked for.
pub(crate) const TIMELINE_LEN: u64 = 200_000_000;

/// The timeline window from `at` (default: centred in runs of a second or
/// more, from the start in shorter ones), `len` long.
pub(crate) fn timeline_window(w: &Workload, at: Option<u64>, len: u64) -> (u64, u64) {
    let from = at.unwrap_or(if w.duration >= 1_000_000_000 { (w.duration / 2).saturating_sub(len / 2) } else { 0 });
    (from, from.saturating_add(len))
}

pub(crate) fn write_html(path: &std::path::Path, page: &str) -> Result<()> {
    std::fs::write(path, page)
        .with_context(|| format!("cannot write {}: check the directory exists and is writable", path.display()))?;
    eprintln!("schedlab: wrote {}", path.display());
    Ok(())
}
