//! The host runner: a workload's task programs as real threads on this
//! machine's kernel, measured into the same [`Report`] the simulator fills.
//!
//! `run` bursts spin until the thread has been on a CPU for the burst (so a
//! burst is CPU time received, as in the simulator; see `threads::burn`); sleeps and
//! timers are absolute `clock_nanosleep`s with 1 ns timer slack; channels
//! are pipes whose 8-byte messages carry the sender's timestamp, so a
//! woken reader knows its wakeup latency. Nice, policy, affinity and custom
//! slices go through the real syscalls; groups through the cgroup cpu
//! controller where it can be used per thread. Per-thread CPU time comes
//! from the thread CPU clocks, switches from getrusage(RUSAGE_THREAD),
//! migrations and run delay from /proc; with tracefs, a private instance
//! records sched_switch for exact switch counts and run time per switch.
//! Threads, pipes, cgroups and the trace instance are all gone when `run`
//! returns, after an error or Ctrl-C too.
//!
//! The files: `threads` the workload as threads, `measure` the report
//! they are measured into, [`record`] `schedlab record`; `cgroup`,
//! `tracing`, `sync` and `sys` what they use of the kernel; [`info`] what
//! the kernel is, [`calibrate`] what its operations cost, [`leftovers`]
//! and [`signals`] leaving nothing behind.

pub mod calibrate;
mod cgroup;
pub mod info;
pub mod leftovers;
mod measure;
mod niffies;
mod record;
pub mod signals;
mod stacks;
mod sync;
mod sys;
mod threads;
pub mod tracing;

pub use measure::{
    CONTROLLER_CPU_BEFORE_SPAWN, CONTROLLER_CPU_PER_SPAWN, CONTROLLER_RUN_MEAN_US, CONTROLLER_RUN_P50_US,
    CONTROLLER_RUNS_PER_S, CONTROLLER_STAT_PRIORITY, CPU_AT_GATE_P50, CPU_BEFORE_START_P50, CPU_BEYOND_WORK_PCT,
    FORK_CPU_US, FORKED_CPU_BEFORE_START_P50, IDLE_WAKEUP_MEAN, IDLE_WAKEUP_P50, OTHER_TASKS_CPU_PCT,
    OTHER_TASKS_PINNED_RUNS_PER_S, OTHER_TASKS_RUN_MEAN_US, OTHER_TASKS_RUNS_PER_S, PREEMPT_WAKEUP_P50,
    SLEEP_TIMER_TO_WAKING_US, SLEEPS_BEFORE_START_P50, THREAD_EXIT_P50, TICK_GAP_P50_US, TICKS_DELIVERED,
    TICKS_DELIVERED_MIN_PCT, TIMER_CALL_US, TIMER_LATE_P50, TIMER_LATE_P90, TIMER_LATE_P90_LIMIT_US, TIMER_RETURN_US,
    TIMER_WAKEUP_CPU_US, UPTIME_AT_START, WAIT_RUN_TO_SIGNAL_US, WAIT_SIGNAL_TO_SWITCH_US, WAIT_WAKEUP_CPU_US,
    YIELD_CPU_US, YIELD_SWITCHED_PCT, niffies_ahead_name, sleep_timer_late_name,
};
pub use record::{Recording, record};
pub use sys::ProcStat;
/// CLOCK_MONOTONIC in ns, the clock of the traces schedlab takes.
pub use sys::now as monotonic_now;

use measure::*;
use schedlab_sim::workload::SchedPolicy;
use schedlab_sim::{Nanos, Report, Workload};
use stacks::*;
use std::sync::atomic::Ordering;
use threads::*;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(
        "the workload asks for {want} CPUs but this machine lets schedlab use {have}: pass --cpus {have} or fewer, or use a smaller workload"
    )]
    TooManyCpus { want: u32, have: usize },
    #[error("task '{task}': {message}")]
    Attribute { task: String, message: String },
    #[error("{0}")]
    Setup(String),
    /// A stop signal arrived before the run's window opened: nothing was
    /// measured, and there is no report to print.
    #[error("interrupted by {} before the run started: nothing was measured", signals::name(*.0))]
    Interrupted(libc::c_int),
    /// A stop signal cut the run short after its window opened: what was
    /// measured is reported, and the exit status says it was cut.
    #[error("interrupted by {}: the report covers the run up to the signal", signals::name(*.0))]
    CutShort(libc::c_int),
}

#[derive(Clone, Debug)]
pub struct HostOptions {
    /// Record sched events with tracefs when it is there.
    pub tracing: bool,
    /// Create the workload's cgroups when the machine permits.
    pub groups: bool,
    /// Trace every task of the machine, not only the workload's: on a
    /// machine of its own (a guest) the placement counts then see where
    /// the kernel's own threads were woken (a CPU with a wakeup pending is
    /// not idle). The workload's figures are read from its threads alone
    /// either way.
    pub trace_machine: bool,
    /// Return the trace as tracefs printed it (`HostRun::trace`), for
    /// `--trace-out`.
    pub keep_trace: bool,
    /// More events to record (names under tracefs's events/, a bare name
    /// being a sched event), for the kept trace; the figures ignore them.
    pub extra_events: Vec<String>,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions { tracing: true, groups: true, trace_machine: false, keep_trace: false, extra_events: Vec::new() }
    }
}

pub struct HostRun {
    pub report: Report,
    /// Things the user should know: groups or tracing not used, and why.
    pub warnings: Vec<String>,
    /// What killed runs had left and this one removed first (said on
    /// stderr when it was removed: see `leftovers::sweep`).
    pub removed: Vec<String>,
    /// The run's trace as tracefs printed it (every event of the instance,
    /// from before t0 to the end), when `HostOptions::keep_trace` asked
    /// for it and tracing was on.
    pub trace: Option<String>,
}

/// Runs the workload on this machine for its duration (or until a stop
/// signal: Ctrl-C, SIGTERM, SIGHUP).
pub fn run(w: &Workload, opts: &HostOptions) -> Result<HostRun, HostError> {
    // From the first line: a signal during setup must still reach the
    // cleanup below rather than kill the process with cgroups and a trace
    // instance in place.
    let _signals = signals::StopSignals::install();
    let allowed = sys::allowed_cpus();
    let want = w.nr_cpus();
    if want as usize > allowed.len() {
        return Err(HostError::TooManyCpus { want, have: allowed.len() });
    }
    if w.measure_from > 0 {
        // Only `schedlab validate` sets it, on the simulation of a run this
        // runner has made: its own window starts at its t0.
        return Err(HostError::Setup(
            "the workload counts from a later time than its start, which only a simulation can: run it without \
             measure_from"
                .into(),
        ));
    }
    if let Some(t) = w.tasks.iter().find(|t| t.policy == SchedPolicy::Iso) {
        return Err(HostError::Attribute {
            task: t.name.clone(),
            message: "policy \"iso\" (SCHED_ISO) exists only in BFS and MuQSS (-ck) kernels and this kernel has \
                      none: run it in the simulation, or use policy \"normal\" on the host"
                .into(),
        });
    }
    // An event asked for by name that the kernel lacks is an error, not a
    // run traced without it (host, compare --host and a guest alike).
    if opts.tracing
        && let Some(why) = tracing::missing_event(&opts.extra_events)
    {
        return Err(HostError::Setup(format!("--trace-event: {why}")));
    }
    let cpu_map: Vec<usize> = allowed[..want as usize].to_vec();
    let kernel = info::read();
    let removed = leftovers::sweep();
    let mut warnings = Vec::new();
    let mut notes = kernel.notes.clone();

    let (cgroups, cgroups_state) = setup_cgroups(w, opts, &mut warnings);
    let (tracer, tracing_state) = setup_tracer(opts, allowed.len(), &mut warnings);
    // In another PID namespace the trace cannot name the threads (tracefs
    // prints the kernel's PIDs): they read their counts from /proc there.
    let traced = tracer.is_some() && signals::in_initial_pid_namespace();
    let (sh, spawned) = start_threads(w, cpu_map, cgroups, traced)?;
    // The controller (this thread) ends the run: as an ordinary task among
    // thousands of runnable ones it would wake seconds late, and the run
    // with it. It only sleeps and keeps books, so it runs SCHED_FIFO,
    // raised after the spawning so that no task thread inherits it.
    let _controller = match ControllerPriority::raise() {
        Ok(g) => Some(g),
        Err(why) => {
            warnings.push(format!("controller: {why}; with more runnable tasks than CPUs the run may end late"));
            None
        }
    };
    while sh.arrived.load(Ordering::SeqCst) < spawned {
        sys::sleep_until(sys::now() + 1_000_000);
    }
    let failed = !sh.errors.lock().expect("lock").is_empty();
    if failed {
        sh.stop.store(true, Ordering::SeqCst);
    }
    // MuQSS stamps deadlines on each CPU's own niffies: how far apart they
    // stand as the workload starts (its threads all wait at the gate).
    let niffies_ahead = if failed { None } else { niffies::gaps(&sh.cpu_map) };
    if let Some(t) = &tracer {
        t.set_on(true);
    }
    let Window { t0, end, stop, stat0, stat1 } = open_gate_and_wait(&sh, w.duration, spawned, failed);
    stop_threads(&sh);
    if let Some(e) = sh.errors.lock().expect("lock").drain(..).next() {
        return Err(e);
    }
    if let Some(sig) = signals::received().filter(|_| stop < end) {
        if stop <= t0 {
            return Err(HostError::Interrupted(sig));
        }
        notes.push(format!("interrupted by {} after {:.3} s", signals::name(sig), (stop - t0) as f64 / 1e9));
    }
    let mut trace =
        tracer.as_ref().and_then(|t| collect_trace(t, t0, stop, kernel.hz, opts.keep_trace, &mut notes, &mut warnings));
    let trace_text = trace.as_mut().and_then(|c| c.text.take());
    drop(tracer);

    let results: Vec<_> =
        sh.results.lock().expect("lock").iter().filter_map(|slot| slot.lock().expect("lock").take()).collect();
    let (mut report, foreign) = build_report(
        &sh,
        results,
        trace.as_ref().map(|c| c.events.as_slice()),
        trace.as_ref().and_then(|c| c.timers),
        t0,
        stop,
        &stat0,
        &stat1,
        kernel.host_info("this machine", tracing_state, cgroups_state, notes),
        kernel.tunables.clone(),
        opts.trace_machine,
    );
    warnings.extend(foreign);
    for (cpu, ahead) in niffies_ahead.iter().flatten().enumerate().skip(1) {
        report.extra.push((niffies_ahead_name(cpu as u32), (ahead / 1e5).round() / 10.0));
    }
    Ok(HostRun { report, warnings, removed, trace: trace_text })
}

/// The measured window of a run: from t0 to its end (or the last task's
/// exit, or a stop signal), with each CPU's (busy, idle) jiffies from
/// /proc/stat at both ends.
struct Window {
    t0: Nanos,
    end: Nanos,
    stop: Nanos,
    stat0: Vec<(u64, u64)>,
    stat1: Vec<(u64, u64)>,
}

/// Opens the start gate and waits out the run.
fn open_gate_and_wait(sh: &Shared, duration: Nanos, spawned: u32, failed: bool) -> Window {
    // The gate is a futex, and opening it wakes every thread at once: under
    // a policy that lets a woken futex waiter preempt (BORE 6.5.5 gives it a
    // deadline of now) that is a burst of a switch per thread, which no
    // workload asked for and a simulation, whose tasks are runnable at t=0,
    // does not have. So t0 lies ahead of the opening, far enough for every
    // thread to go back to sleep until it: at t0 they all become runnable
    // from their timers together, and the analysis counts from t0.
    let t0 = sys::now() + START_MARGIN_NS + START_MARGIN_PER_THREAD_NS * spawned as u64;
    sh.t0.store(t0, Ordering::SeqCst);
    let end = t0 + duration;
    sh.end.store(end, Ordering::SeqCst);
    sh.go.open();
    // The machine's counts are read before t0, not at it: the controller
    // is a SCHED_FIFO thread, and reading /proc/stat took a TCG guest's
    // controller 2-3 ms, during which it held a CPU from t0 that the
    // workload's threads, all waking then, would otherwise have had
    // (fork-burst's first children all queued beside their parent, five of
    // jitter's six stress-ng workers woke on the other CPU). Its threads
    // are all asleep until t0 by then, and /proc/stat counts in 10 ms
    // units anyway.
    let stat_at = t0.saturating_sub(STAT_LEAD_NS);
    while sys::now() < stat_at && signals::received().is_none() {
        sys::sleep_until(stat_at);
    }
    let stat0 = sys::cpu_times();
    if !failed {
        // Wake every WATCH_PERIOD_NS to see whether every task has exited:
        // a finite workload ends there, with its makespan.
        loop {
            let now = sys::now();
            if now >= end || signals::received().is_some() || sh.live.load(Ordering::SeqCst) == 0 {
                break;
            }
            sys::sleep_until(end.min(now + WATCH_PERIOD_NS));
        }
    }
    let stat1 = sys::cpu_times();
    let stop = sys::now().min(end);
    Window { t0, end, stop, stat0, stat1 }
}

/// The workload's groups as cgroups, if it has any and may use them, and
/// what the report says of them.
fn setup_cgroups(w: &Workload, opts: &HostOptions, warnings: &mut Vec<String>) -> (Option<cgroup::Cgroups>, String) {
    let mut cgroups_state = "the workload has no groups".to_string();
    let cgroups = if w.groups.len() > 1 && opts.groups {
        match cgroup::Cgroups::setup(&w.groups) {
            Ok(cg) => {
                cgroups_state = "cgroup v1 cpu controller (cpu.shares, cpu.cfs_quota_us)".into();
                Some(cg)
            }
            Err(why) => {
                warnings.push(format!("groups: {why}"));
                cgroups_state = why;
                None
            }
        }
    } else {
        if w.groups.len() > 1 {
            cgroups_state = "groups turned off".into();
        }
        None
    };
    (cgroups, cgroups_state)
}

/// A private tracefs instance, if tracing is on and possible, and what the
/// report says of it.
fn setup_tracer(opts: &HostOptions, nr_cpus: usize, warnings: &mut Vec<String>) -> (Option<tracing::Tracer>, String) {
    if opts.tracing {
        match tracing::Tracer::new(nr_cpus, opts.trace_machine, &opts.extra_events) {
            Ok(t) => {
                let scope = if opts.trace_machine { ", every task of the machine" } else { "" };
                let extra: String = opts.extra_events.iter().map(|e| format!(", {e}")).collect();
                (Some(t), format!("tracefs instance{scope} (sched_switch, sched_wakeup, sched_migrate_task{extra})"))
            }
            Err(why) => {
                warnings.push(format!("tracing: {why}"));
                (None, why)
            }
        }
    } else {
        (None, "tracing turned off".to_string())
    }
}

/// The trace's events and timer lateness, with a note when its buffers
/// overran.
fn collect_trace(
    t: &tracing::Tracer,
    t0: Nanos,
    stop: Nanos,
    hz: Option<u32>,
    keep_text: bool,
    notes: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Option<tracing::Collected> {
    match t.collect(t0, stop, hz.map(|hz| 1_000_000_000 / u64::from(hz)), keep_text) {
        Ok(c) => {
            if c.overrun > 0 {
                notes.push(format!("the trace buffers dropped {} events: switch figures are partial", c.overrun));
            }
            Some(c)
        }
        Err(e) => {
            warnings.push(format!("tracing: {e}"));
            None
        }
    }
}

/// Time between opening the start gate and t0: enough for every woken
/// thread to touch its stack, read its starting counts and reach its sleep
/// until t0, even under TCG. With 1024 spinners on one CPU of a TCG guest,
/// 0.4 ms a thread was too little (the last threads did that work inside
/// the window, uncounted: the spinners' mean share fell 25-60%); at 1 ms
/// the spinners of cfs, eevdf, bore, muqss, bmq and pds guests got
/// 0.096-0.097% each, 1/1024 of the CPU (tt's 0.087%, as before the
/// change; cacule's 0.05-0.09%, which moves from boot to boot).
const START_MARGIN_NS: u64 = 20_000_000;

/// How long before t0 the controller reads the machine's starting counts:
/// more than the 2-3 ms the read takes a TCG guest, less than the margin
/// the threads have to fall asleep until t0.
const STAT_LEAD_NS: u64 = 10_000_000;

const START_MARGIN_PER_THREAD_NS: u64 = 1_000_000;

/// How often the controller, a SCHED_FIFO thread, wakes during the run to
/// see whether the workload has ended: the whole-machine trace of a guest
/// counts these wakeups (`controller_runs_per_s`).
const WATCH_PERIOD_NS: u64 = 250_000_000;
