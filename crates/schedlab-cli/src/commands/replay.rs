//! `schedlab replay`: a recorded trace re-run on simulated schedulers.

use crate::args::{Common, overrides};
use crate::output::structured_output;
use crate::render;
use crate::simulate::{policy_names, simulate_each, simulate_to_ftrace};
use anyhow::{Result, anyhow, bail};
use schedlab_sim::Report;
use schedlab_sim::report::recorded;
use std::path::Path;

pub(crate) fn run(common: &Common, sched: Vec<String>, tasks: bool, trace_out: Option<&Path>) -> Result<()> {
    let path = Path::new(&common.workload);
    let text = match path.is_file().then(|| super::binary_trace::text_of(path)).transpose()?.flatten() {
        Some(text) => text,
        None => schedlab_sim::formats::input::read_input_file(path, "trace")
            .map_err(|e| anyhow!("{e} (replay takes the path of a recorded trace)"))?,
    };
    if !common.param.is_empty() {
        bail!("--param: a trace has no parameters");
    }
    let (w, recorded) =
        schedlab_sim::formats::replay::workload_from_trace(&text, &common.workload, &overrides(common))?;
    let names = policy_names(sched, &w)?;
    let mut reports = vec![recording_row(&text, &common.workload, w.nr_cpus())?];
    match trace_out {
        Some(out) => {
            let [name] = &names[..] else {
                bail!("--trace-out writes one scheduler's schedule: give one --sched");
            };
            reports.push(simulate_to_ftrace(&w, name, out)?);
        }
        None => reports.extend(simulate_each(&w, &names)?),
    }
    if structured_output(common, &reports, tasks, false)? {
        return Ok(());
    }
    println!(
        "replay of {}: {} events, {} tasks, {} CPUs, {} recorded\n",
        common.workload,
        recorded.events,
        w.tasks.len(),
        w.nr_cpus(),
        schedlab_sim::time::format_duration(recorded.duration)
    );
    print!("{}", render::comparison_table(&reports));
    if tasks {
        println!("\nCPU time per task, ms (the recording, then each scheduler):");
        print!("{}", render::task_table(&reports, render::PerTask::CpuTimeMs));
    }
    Ok(())
}

/// The recording itself as a report, the first row: what happened, beside
/// what each model makes of it (every task of the trace, over its span).
fn recording_row(text: &str, origin: &str, nr_cpus: u32) -> Result<Report> {
    let parsed = recorded::parse(text).map_err(|e| anyhow!("{origin}: {e}"))?;
    let (from, to) = parsed.sched_span().ok_or_else(|| anyhow!("{origin}: the trace holds no sched event"))?;
    let run = recorded::RecordedRun { roots: Vec::new(), from, to, nr_cpus };
    let head = Report {
        source: "recorded".into(),
        scheduler: "recorded".into(),
        workload: origin.to_string(),
        ..Report::default()
    };
    Ok(recorded::report(&parsed, &run, head))
}
