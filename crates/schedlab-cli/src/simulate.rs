//! What most commands share: loading a workload with the command line's
//! overrides, choosing and checking the policies, simulating, and running
//! the host runner.

use crate::args::{Common, overrides};
use anyhow::{Context, Result, anyhow, bail};
use rayon::prelude::*;
use schedlab_sim::report::timeline::{Schedule, Timeline};
use schedlab_sim::{Observer, Overrides, Report, Workload};

pub(crate) fn load_workload(c: &Common) -> Result<Workload> {
    let w = load_workload_with(c, &overrides(c))?;
    for lint in w.lints() {
        eprintln!("schedlab: warning: {}", crate::for_terminal(&format!("{}: {lint}", c.workload)));
    }
    Ok(w)
}

/// The workload `c` names, read with overrides `ov` in place of the
/// command line's (a sweep varies them).
pub(crate) fn load_workload_with(c: &Common, ov: &Overrides) -> Result<Workload> {
    let loaded = schedlab_sim::formats::input::load(&c.workload, ov).map_err(|e| anyhow!(e))?;
    // Said once, not at every point of a sweep.
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if let Some(note) = loaded.note
        && !SAID.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        eprintln!("schedlab: {}", crate::for_terminal(&note.to_string()));
    }
    Ok(loaded.workload)
}

pub(crate) fn simulate(w: &Workload, sched: &str) -> Result<Report> {
    let w = for_scheduler(w, sched);
    schedlab_policies::simulate(&w, sched).map_err(|e| anyhow!(e))
}

/// `w` as `sched` runs it: a tunable set as `SCHED:NAME=VALUE` (`--set
/// rr:rr_slice_ns=...` beside eevdf in one compare) reaches that scheduler
/// alone, under its own name; unscoped ones reach every scheduler.
pub(crate) fn for_scheduler<'w>(w: &'w Workload, sched: &str) -> std::borrow::Cow<'w, Workload> {
    if !w.tunables.keys().any(|k| k.contains(':')) {
        return std::borrow::Cow::Borrowed(w);
    }
    let mut own = w.clone();
    own.tunables = w
        .tunables
        .iter()
        .filter_map(|(k, v)| match k.split_once(':') {
            None => Some((k.clone(), *v)),
            Some((s, name)) if s == sched => Some((name.to_string(), *v)),
            Some(_) => None,
        })
        .collect();
    std::borrow::Cow::Owned(own)
}

/// A tunable scoped to one scheduler (`--set SCHED:NAME=VALUE`) must name
/// one of those run (`names`); its NAME is checked when that scheduler is
/// built.
pub(crate) fn check_scopes(w: &Workload, names: &[String]) -> Result<()> {
    for key in w.tunables.keys() {
        if let Some((s, _)) = key.split_once(':')
            && !names.iter().any(|n| n == s)
        {
            bail!("--set {key}: {s} is not among the schedulers run ({}); give --sched {s},...", names.join(","));
        }
    }
    Ok(())
}

/// `w` simulated on each of `names`, in parallel, reports in that order.
pub(crate) fn simulate_each(w: &Workload, names: &[String]) -> Result<Vec<Report>> {
    names.par_iter().map(|n| simulate(w, n)).collect()
}

/// `w` simulated on `sched`, its schedule written to `path` as ftrace text
/// as it runs (tracefs's layout, for the same tools and analyses as a real
/// kernel's trace).
pub(crate) fn simulate_to_ftrace(w: &Workload, sched: &str, path: &std::path::Path) -> Result<Report> {
    use schedlab_sim::formats::trace_out::{TraceFormat, TraceWriter};
    let file = std::fs::File::create(path)
        .with_context(|| format!("cannot create {}: check the directory exists and is writable", path.display()))?;
    let mut writer = TraceWriter::new(w, Box::new(std::io::BufWriter::new(file)), TraceFormat::Ftrace);
    let report = simulate_observed(w, sched, &mut writer)?;
    writer.finish(report.duration_ns).with_context(|| format!("writing {}", path.display()))?;
    Ok(report)
}

/// The tunables each of `names` knows, by their kernel names, whatever
/// `w` sets.
pub(crate) fn tunables_known(w: &Workload, names: &[String]) -> Vec<Vec<&'static str>> {
    let mut bare = w.clone();
    bare.tunables.clear();
    names
        .iter()
        .map(|n| {
            schedlab_policies::build(n, &bare)
                .map(|p| p.tunables().iter().map(|t| t.name).collect())
                .unwrap_or_default()
        })
        .collect()
}

/// A simulated run whose events `observer` sees as they happen.
pub(crate) fn simulate_observed<'w>(w: &'w Workload, sched: &str, observer: &'w mut dyn Observer) -> Result<Report> {
    let w = for_scheduler(w, sched);
    schedlab_policies::simulate_observed(&w, sched, observer).map_err(|e| anyhow!(e))
}

/// A simulated run that also keeps the schedule between `window.0` and
/// `window.1`, for the HTML report's timeline.
pub(crate) fn simulate_with_timeline(w: &Workload, sched: &str, window: (u64, u64)) -> Result<(Report, Schedule)> {
    let mut timeline = Timeline::new(w, window.0, window.1);
    let report = simulate_observed(w, sched, &mut timeline)?;
    let schedule = timeline.finish(report.duration_ns);
    Ok((report, schedule))
}

/// `run` and `trace` simulate one scheduler; a list is for `compare`.
pub(crate) fn one_scheduler(command: &str, sched: &str) -> Result<()> {
    if sched.contains(',') {
        bail!("{command} takes one scheduler, not '{sched}': use compare for several (compare --sched {sched})");
    }
    Ok(())
}

pub(crate) fn policy_names(sched: Vec<String>, w: &Workload) -> Result<Vec<String>> {
    let names: Vec<String> =
        if sched.is_empty() { schedlab_policies::all().iter().map(|p| p.name.to_string()).collect() } else { sched };
    for n in &names {
        if !schedlab_policies::all().iter().any(|p| p.name == n) {
            // Build once for the error message naming the choices.
            schedlab_policies::build(n, w).map_err(|e| anyhow!(e))?;
        }
    }
    check_scopes(w, &names)?;
    // A tunable is one policy's: say which of those compared have it.
    if w.tunables.keys().all(|k| k.contains(':')) {
        return Ok(names);
    }
    let known = tunables_known(w, &names);
    for tunable in w.tunables.keys().filter(|k| !k.contains(':')) {
        let (have, lack): (Vec<_>, Vec<_>) = names.iter().zip(&known).partition(|(_, k)| k.contains(&tunable.as_str()));
        if !lack.is_empty() {
            let list = |v: &[(&String, &Vec<&str>)]| v.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(",");
            bail!(
                "--set {tunable}: {} {} no such tunable{}",
                list(&lack),
                if lack.len() == 1 { "has" } else { "have" },
                if have.is_empty() {
                    let all = known.iter().flatten().copied();
                    match schedlab_sim::names::nearest(tunable, all) {
                        Some(near) => format!(" (did you mean '{near}'? see schedlab list)"),
                        None => " (see schedlab list)".to_string(),
                    }
                } else {
                    format!(
                        "; {} {}: pass --sched {}",
                        list(&have),
                        if have.len() == 1 { "has it" } else { "have it" },
                        list(&have)
                    )
                }
            );
        }
    }
    Ok(names)
}

pub(crate) fn run_host(w: &Workload, opts: &schedlab_host::HostOptions) -> Result<Report> {
    Ok(run_host_traced(w, opts)?.0)
}

/// `run_host`, with the run's trace text when `opts.keep_trace` asked for
/// it and tracing was on.
pub(crate) fn run_host_traced(w: &Workload, opts: &schedlab_host::HostOptions) -> Result<(Report, Option<String>)> {
    let run = schedlab_host::run(w, opts)?;
    for warning in &run.warnings {
        eprintln!("schedlab: host: {}", crate::for_terminal(&warning.to_string()));
    }
    Ok((run.report, run.trace))
}
