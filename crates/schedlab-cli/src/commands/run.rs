//! `schedlab run`: one simulated scheduler, its report and optionally its HTML page.

use crate::args::Common;
use crate::output::{TIMELINE_LEN, print_one, timeline_window, write_html};
use crate::render::html;
use crate::simulate::{load_workload, one_scheduler, simulate, simulate_with_timeline};
use anyhow::Result;
use schedlab_sim::time::format_duration;

pub(crate) fn run(common: Common, sched: String, tasks: bool, html: Option<std::path::PathBuf>) -> Result<()> {
    one_scheduler("run", &sched)?;
    if let Some(path) = &html {
        crate::output::check_output(path, "--html")?;
    }
    let w = load_workload(&common)?;
    crate::simulate::check_scopes(&w, std::slice::from_ref(&sched))?;
    let report = match &html {
        Some(path) => {
            let (report, timeline) = simulate_with_timeline(&w, &sched, timeline_window(&w, None, TIMELINE_LEN))?;
            let heading = format!(
                "{} on {}: {} CPUs, HZ={}, {} simulated, seed {}",
                report.scheduler,
                w.name,
                w.nr_cpus(),
                w.machine.hz,
                format_duration(w.duration),
                w.seed
            );
            write_html(
                path,
                &html::page(
                    &format!("schedlab: {}", w.name),
                    &heading,
                    std::slice::from_ref(&report),
                    &[Some(timeline)],
                ),
            )?;
            report
        }
        None => simulate(&w, &sched)?,
    };
    print_one(&common, &report, tasks)?;
    Ok(())
}
