//! `schedlab replay`: a recorded trace re-run on simulated schedulers.

use crate::args::{Common, overrides};
use crate::output::structured_output;
use crate::render;
use crate::simulate::{policy_names, simulate_each};
use anyhow::{Result, anyhow, bail};

pub(crate) fn run(common: &Common, sched: Vec<String>, tasks: bool) -> Result<()> {
    let text = schedlab_sim::formats::input::read_input_file(std::path::Path::new(&common.workload), "trace")
        .map_err(|e| anyhow!("{e} (replay takes the path of a recorded trace)"))?;
    if !common.param.is_empty() {
        bail!("--param: a trace has no parameters");
    }
    let (w, recorded) =
        schedlab_sim::formats::replay::workload_from_trace(&text, &common.workload, &overrides(common))?;
    let names = policy_names(sched, &w)?;
    let reports = simulate_each(&w, &names)?;
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
        println!("\nCPU time per task, ms (recorded, then each scheduler):");
        print!("{}", render::task_share_table(&reports, Some(&recorded.cpu_time)));
    }
    Ok(())
}
