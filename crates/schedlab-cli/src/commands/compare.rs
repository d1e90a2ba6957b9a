//! `schedlab compare`: one workload on several schedulers (and real
//! kernels) in one table, with an optional HTML page.

use crate::args::CompareArgs;
use crate::commands::vm;
use crate::output::{structured_output, timeline_window, write_html};
use crate::render::{self, html};
use crate::simulate::{load_workload, policy_names, run_host, simulate_each, simulate_with_timeline};
use anyhow::{Result, bail};
use rayon::prelude::*;
use schedlab_sim::Report;
use schedlab_sim::report::timeline::Schedule;
use schedlab_sim::time::format_duration;

pub(crate) fn run(a: CompareArgs) -> Result<()> {
    let CompareArgs { common, sched, host, host_opts, kernel, vm_opts, tasks, html, timeline_at, timeline_len } = a;
    let w = load_workload(&common)?;
    let names = policy_names(sched, &w)?;
    if let Some(at) = timeline_at
        && at >= w.duration
    {
        bail!(
            "--timeline-at {} is past the run's end at {}: give a time within it",
            format_duration(at),
            format_duration(w.duration)
        );
    }
    let (mut reports, mut timelines): (Vec<Report>, Vec<Option<Schedule>>) = if html.is_some() {
        let window = timeline_window(&w, timeline_at, timeline_len);
        let runs: Vec<(Report, Schedule)> =
            names.par_iter().map(|n| simulate_with_timeline(&w, n, window)).collect::<Result<_>>()?;
        runs.into_iter().map(|(r, t)| (r, Some(t))).unzip()
    } else {
        let reports = simulate_each(&w, &names)?;
        let none = reports.iter().map(|_| None).collect();
        (reports, none)
    };
    // The real run goes last and alone, so the simulations do not
    // compete with it for CPUs.
    if host {
        reports.push(run_host(&w, &host_opts)?);
        timelines.push(None);
    }
    // Guests one at a time, each with every host CPU to itself.
    for (name, file) in &kernel {
        reports.push(vm::run(&common, &w, file, name, &vm_opts, &host_opts)?);
        timelines.push(None);
    }
    // A finite workload's runs end when its last task exits: the
    // horizon it was given says nothing.
    let span = if reports.iter().all(|r| r.totals.makespan_ns.is_some()) {
        "until every task exited (see makespan)".to_string()
    } else {
        format!("{} simulated", format_duration(w.duration))
    };
    let heading = format!("{}: {} CPUs, HZ={}, {span}, seed {}", w.name, w.nr_cpus(), w.machine.hz, w.seed);
    if let Some(path) = &html {
        write_html(path, &html::page(&format!("schedlab: {}", w.name), &heading, &reports, &timelines))?;
    }
    if !structured_output(&common, &reports, tasks, false)? {
        println!("{heading}\n");
        print!("{}", render::comparison_table(&reports));
        if tasks {
            println!("\nCPU share per task, % of one CPU:");
            print!("{}", render::task_share_table(&reports, None));
        }
        if common.hist {
            for r in &reports {
                println!("\n{}:", r.scheduler);
                print!("{}", render::log2_hist("wakeup_latency_ns", &r.wakeup_latency));
                print!("{}", render::log2_hist("runtime_per_switch_ns", &r.runtime_per_switch));
            }
        }
    }
    Ok(())
}
