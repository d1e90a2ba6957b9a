//! `schedlab compare`: one workload on several schedulers (and real
//! kernels) in one table, with an optional HTML page.

use crate::args::{Common, CompareArgs};
use crate::commands::{program, vm};
use crate::output::{structured_output, timeline_window, write_html};
use crate::render::{self, html};
use crate::simulate::{load_workload, policy_names, run_host, simulate_each, simulate_with_timeline};
use anyhow::{Result, bail};
use rayon::prelude::*;
use schedlab_sim::Report;
use schedlab_sim::report::timeline::Schedule;
use schedlab_sim::time::format_duration;
use std::path::{Path, PathBuf};

pub(crate) fn run(a: CompareArgs) -> Result<()> {
    let CompareArgs {
        common,
        sched,
        host,
        host_opts,
        kernel,
        vm_opts,
        tasks,
        html,
        timeline_at,
        timeline_len,
        program_opts,
    } = a;
    if let Some(path) = &html {
        crate::output::check_output(path, "--html")?;
    }
    let kernel = expand_kernels(kernel)?;
    if program_opts.given() {
        if !sched.is_empty() {
            bail!(
                "--sched: a real program has no simulated rows yet; keep its guest trace (--trace-out FILE) and \
                 `schedlab replay FILE` it on the models"
            );
        }
        return programs(&common, host, &kernel, &vm_opts, &program_opts, tasks, html.as_deref());
    }
    if common.workload.is_empty() {
        bail!(
            "give a workload (a file or a built-in scenario), or real programs after -- with --kernel all or \
             --host"
        );
    }
    if program_opts.trace_out.is_some() && kernel.is_empty() {
        bail!(
            "--trace-out keeps each real kernel's trace: give --kernel (for a simulated schedule, use `schedlab \
             trace`)"
        );
    }
    program_opts.check_for_workload()?;
    let mut w = load_workload(&common)?;
    let names = policy_names(sched, &w)?;
    if host && let Some(note) = as_this_kernel_is_built(&mut w, &names, schedlab_host::info::preemptible_build()) {
        eprintln!("schedlab: {note}");
    }
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
        reports.push(run_host(&w, &host_opts.options())?);
        timelines.push(None);
    }
    // Guests one at a time, each with every host CPU to itself.
    for (name, file) in &kernel {
        let keep = program_opts.trace_out.is_some();
        let (report, trace) = vm::run(&common, &w, file, name, &vm_opts.for_row(name), &host_opts, keep)?;
        program_opts.write_workload_trace(trace, (kernel.len() > 1).then_some(name.as_str()))?;
        reports.push(report);
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
    print_comparison(&common, &heading, &reports, tasks)
}

/// The comparison as --json, --csv or the text table (with --tasks and
/// --hist what they add).
fn print_comparison(common: &Common, heading: &str, reports: &[Report], tasks: bool) -> Result<()> {
    if !structured_output(common, reports, tasks, false)? {
        println!("{heading}\n");
        print!("{}", render::comparison_table(reports));
        // What a scheduler could not honour (cgroups, SCHED_ISO), as `run`
        // says under its report: a row of it is not the workload's.
        let absent: Vec<String> =
            reports.iter().flat_map(|r| r.absent.iter().map(|a| format!("absent: {a}"))).collect();
        if !absent.is_empty() {
            println!();
            for a in absent {
                println!("{a}");
            }
        }
        if tasks {
            println!("\nCPU share per task, % of one CPU:");
            print!("{}", render::task_table(reports, render::PerTask::SharePct));
        }
        if common.hist {
            for r in reports {
                println!("\n{}:", r.scheduler);
                print!("{}", render::log2_hist("wakeup_latency_ns", &r.wakeup_latency));
                print!("{}", render::log2_hist("runtime_per_switch_ns", &r.runtime_per_switch));
            }
        }
    }
    Ok(())
}

/// --kernel's entries with `all` replaced by every kernel of the kernels'
/// directory, each once.
fn expand_kernels(kernel: Vec<(String, PathBuf)>) -> Result<Vec<(String, PathBuf)>> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for (name, file) in kernel {
        let more = if name == "all" && file.as_os_str().is_empty() {
            program::all_kernels(&program::kernels_dir())?
        } else {
            vec![(name, file)]
        };
        for k in more {
            if !out.iter().any(|(n, _)| *n == k.0) {
                out.push(k);
            }
        }
    }
    Ok(out)
}

/// Real programs on each kernel, one guest at a time, and on this
/// machine's kernel with --host: one row each.
fn programs(
    common: &Common,
    host: bool,
    kernel: &[(String, PathBuf)],
    vm_opts: &vm::VmArgs,
    a: &program::ProgramArgs,
    tasks: bool,
    html: Option<&Path>,
) -> Result<()> {
    program::refuse_workload_flags(common)?;
    if kernel.is_empty() && !host {
        bail!("a real program runs in real kernels: give --kernel all (or names, or NAME=FILE) and/or --host");
    }
    let cpus = common.cpus.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get() as u32));
    let mut prepared = program::prepare(a, vm_opts.memory, vm_opts.timeout.unwrap_or(program::DEFAULT_TIMEOUT_NS))?;
    // Each kernel's trace comes back for its model's row.
    prepared.keep_trace();
    let mut reports = Vec::new();
    let mut failed = 0;
    for (label, file) in kernel {
        eprintln!("schedlab: booting {label} ({} vCPUs) for '{}'", cpus, a.program.join(" "));
        let result = program::run_vm(&prepared, file, label, cpus, &vm_opts.for_row(label))?;
        if program::outcome(&result, label) != 0 {
            failed += 1;
        }
        if let Some(out) = &a.trace_out {
            program::write_trace(&result, out, Some(label))?;
        }
        let model = program::model_row(&result, label)?;
        reports.push(result.report);
        reports.extend(model);
    }
    // The imitation runs as long as the real runs did (the first one's
    // window): a preset of `cyclictest -l 3000 + stress-ng --timeout 600`
    // would otherwise simulate stress-ng's 600 s.
    let span = reports.first().map(|r| r.duration_ns);
    reports.extend(preset_rows(common, a, kernel, cpus, span));
    if host {
        let (report, status) = program::run_host(a)?;
        if status != 0 {
            eprintln!("schedlab: host: '{}' exited with {status}", a.program.join(" "));
            failed += 1;
        }
        reports.push(report);
    }
    let heading = format!(
        "{}: {cpus} CPUs, real kernels, each row from its own trace of every task",
        reports.first().map_or(String::new(), |r| r.workload.clone())
    );
    if let Some(path) = html {
        let timelines: Vec<Option<Schedule>> = reports.iter().map(|_| None).collect();
        write_html(path, &html::page(&format!("schedlab: {}", a.program.join(" ")), &heading, &reports, &timelines))?;
    }
    print_comparison(common, &heading, &reports, tasks)?;
    if failed > 0 {
        bail!("the program failed on {failed} of {} kernels (see above)", reports.len());
    }
    Ok(())
}

/// Where the programs are tools that schedlab imitates (a preset: stress-ng,
/// cyclictest, hackbench, perf bench, lat_ctx), the preset simulated on the
/// models of the kernels: the imitation beside the real tool. A command
/// line the preset does not read is said once and left out.
fn preset_rows(
    common: &Common,
    a: &program::ProgramArgs,
    kernel: &[(String, PathBuf)],
    cpus: u32,
    span: Option<u64>,
) -> Vec<Report> {
    let line = a.program.join(" ");
    if !schedlab_sim::formats::presets::is_preset(&line) {
        return Vec::new();
    }
    let mut c = crate::args::common(&line, &[], 0);
    (c.duration, c.cpus, c.seed) = (span.filter(|&d| d > 0), Some(cpus), common.seed);
    let w = match load_workload(&c) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("schedlab: compare: no simulated rows of '{line}': {e:#}");
            return Vec::new();
        }
    };
    // Each model once, in the kernels' order (bmq-6.1 and bmq-6.12 both
    // have bmq's, wherever they stand in --kernel).
    let mut models: Vec<&str> = Vec::new();
    for m in kernel.iter().filter_map(|(l, _)| program::model_of(l)) {
        if !models.contains(&m) {
            models.push(m);
        }
    }
    let mut rows = Vec::new();
    for m in models {
        match crate::simulate::simulate(&w, m) {
            Ok(mut r) => {
                r.scheduler = format!("{m} (preset)");
                rows.push(r);
            }
            Err(e) => eprintln!("schedlab: compare: {m} on the preset of '{line}': {e:#}"),
        }
    }
    rows
}

/// The fair models follow the guests' PREEMPT_VOLUNTARY builds, where a CPU
/// going idle pulls the whole imbalance; a distribution kernel is built
/// preemptible (PREEMPT_DYNAMIC) and pulls one task. Held against this
/// machine's kernel, the models that know the build option are simulated as
/// that kernel is built, unless the command line sets it: the note says so.
fn as_this_kernel_is_built(
    w: &mut schedlab_sim::Workload,
    names: &[String],
    preemptible: Option<bool>,
) -> Option<String> {
    const OPTION: &str = "CONFIG_PREEMPTION";
    if preemptible != Some(true) || w.tunables.keys().any(|k| k == OPTION || k.ends_with(&format!(":{OPTION}"))) {
        return None;
    }
    let knowing: Vec<&String> = names
        .iter()
        .zip(crate::simulate::tunables_known(w, names))
        .filter(|(_, known)| known.contains(&OPTION))
        .map(|(n, _)| n)
        .collect();
    for n in &knowing {
        w.tunables.insert(format!("{n}:{OPTION}"), 1);
    }
    (!knowing.is_empty()).then(|| {
        format!(
            "{} simulated as this machine's kernel is built, {OPTION}=1 (a CPU going idle pulls one task; \
             --set {OPTION}=0 for the voluntary build the models are validated against)",
            knowing.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_schedlab_imitates_gets_its_preset_on_each_kernels_model() {
        let common = crate::args::common("", &[], 0);
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let a = program::ProgramArgs { program: words("stress-ng --cpu 3 --timeout 60"), ..Default::default() };
        // scx-6.12 runs EEVDF too: its preset is eevdf's, not a second row.
        let kernels = ["eevdf-6.12", "bmq-6.1", "scx-6.12"].map(|k| (k.to_string(), PathBuf::new()));
        let rows = preset_rows(&common, &a, &kernels, 2, Some(2_000_000_000));
        let names: Vec<&str> = rows.iter().map(|r| r.scheduler.as_str()).collect();
        assert_eq!(names, ["eevdf (preset)", "bmq (preset)"]);
        assert!(rows.iter().all(|r| r.duration_ns == 2_000_000_000 && r.cpus == 2), "as long as the real run");
        // A program schedlab does not imitate has none.
        let a = program::ProgramArgs { program: words("make -j4"), ..Default::default() };
        assert!(preset_rows(&common, &a, &kernels, 2, None).is_empty());
    }

    #[test]
    fn a_preemptible_host_kernel_is_simulated_as_built_unless_the_command_line_says() {
        let load = || schedlab_sim::formats::input::load("fork-burst", &Default::default()).unwrap().workload;
        let names = vec!["cfs".to_string(), "bmq".to_string(), "eevdf".to_string()];
        let mut w = load();
        let note = as_this_kernel_is_built(&mut w, &names, Some(true)).unwrap();
        assert!(note.starts_with("cfs, eevdf simulated"), "{note}");
        // bmq has no such option: only the fair models get it.
        assert_eq!(w.tunables.get("cfs:CONFIG_PREEMPTION"), Some(&1));
        assert_eq!(w.tunables.get("eevdf:CONFIG_PREEMPTION"), Some(&1));
        assert_eq!(w.tunables.len(), 2);
        // A voluntary build, an unknown one, or the option given: nothing.
        for (preemptible, set) in [(Some(false), None), (None, None), (Some(true), Some("CONFIG_PREEMPTION"))] {
            let mut w = load();
            if let Some(k) = set {
                w.tunables.insert(k.into(), 0);
            }
            let before = w.tunables.clone();
            assert!(as_this_kernel_is_built(&mut w, &names, preemptible).is_none());
            assert_eq!(w.tunables, before);
        }
    }
}
