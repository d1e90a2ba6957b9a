//! The measured report of a host run: the sched trace's switches, run
//! time per switch and placement decisions, per-thread CPU time and
//! switches, /proc/stat's busy time and what it says of other processes
//! and lost ticks.

use crate::*;
use schedlab_sim::formats::ftrace::{SchedEvent, SchedEventKind};
use schedlab_sim::report::{CpuReport, HostInfo, RunCounts, TaskRaw, assemble};
use schedlab_sim::workload::Op;
use schedlab_sim::{Nanos, Report, Workload, report::Hist};
use std::collections::HashMap;

pub(crate) struct TraceFigures {
    pub(crate) switches: u64,
    /// Involuntary switches of our threads to another process's thread (a
    /// kernel thread, a daemon): preemption the workload did not cause.
    pub(crate) preempted_by_others: u64,
    pub(crate) per_tid: HashMap<i32, (u64, u64, u64)>,
    pub(crate) rps: Vec<Hist>,
    /// Time on a CPU of each of our threads inside [t0, stop] while it ran
    /// its program (from `begun` to `ended`): its start and exit left out.
    pub(crate) on_cpu: HashMap<i32, Nanos>,
    /// Time each of our threads was runnable and not running inside [t0,
    /// stop], as schedstat's run_delay counts it: from its wakeup (a
    /// forked one's sched_wakeup_new) or its preemption to its next run.
    pub(crate) run_delay: HashMap<i32, Nanos>,
    /// Of each of our threads that ended its program (`ended`) and exited
    /// (switched out as a dead task), its time on a CPU in between: its
    /// exit.
    pub(crate) exit_cpu: HashMap<i32, Nanos>,
    /// Runs of other tasks (not the idle task) that began inside [t0,
    /// stop], and their time on a CPU there: all of the machine's other
    /// work where the trace is the whole machine's.
    pub(crate) other_runs: u64,
    pub(crate) other_on_cpu: Nanos,
    /// The other tasks' runs counted by task: which of them are bound to a
    /// CPU is read from each task once the run is over.
    pub(crate) other_runs_of: HashMap<i32, u64>,
    /// Of those, each run of the runner's controller, its time on a CPU
    /// inside the window: a SCHED_FIFO thread an hrtimer wakes every 250 ms
    /// (WATCH_PERIOD_NS), where the kernel's threads wake from the tick's
    /// softirq.
    pub(crate) controller_runs: Vec<Nanos>,
    /// Of each of our threads' runs in which it woke another of ours
    /// (sched_waking in its context), the time from its switch-in to the
    /// first such wakeup and from that wakeup to its switch-out: sums and
    /// how many runs.
    pub(crate) before_waking: HashMap<i32, (Nanos, u64)>,
    pub(crate) after_waking: HashMap<i32, (Nanos, u64)>,
    /// From each wakeup one of ours sent to another of ours on an idle CPU
    /// (sched_waking on the waker's CPU) to the wakee's switch-in there:
    /// the IPI and the idle exit.
    pub(crate) idle_wakeups: Vec<Nanos>,
    /// From each wakeup of ours aimed at a CPU running another task to the
    /// wakee's switch-in there, where it preempted that task within
    /// [`PREEMPT_WITHIN`]: the wakeup's interrupt returning into schedule().
    pub(crate) preempting_wakeups: Vec<Nanos>,
}

/// Of the other tasks' runs, those of tasks that may run on one CPU only
/// (`cpus_allowed` gives a task's count; a task gone since, None, was a
/// process, not a per-CPU kernel thread).
pub(crate) fn pinned_runs(runs_of: &HashMap<i32, u64>, cpus_allowed: impl Fn(i32) -> Option<usize>) -> u64 {
    runs_of.iter().filter(|(tid, _)| cpus_allowed(**tid) == Some(1)).map(|(_, runs)| runs).sum()
}

/// A preemption later than this after its wakeup was not decided at the
/// wakeup (the task waited for a tick or a slice's end).
pub(crate) const PREEMPT_WITHIN: Nanos = 1_000_000;

/// The runner's threads a trace is read for: each task thread's spec (of
/// `nr_specs`), when its program began and ended, and the controller's
/// thread id (0, the idle task's, where it is not known).
#[derive(Clone, Copy)]
pub(crate) struct Ours<'a> {
    pub(crate) spec_of: &'a HashMap<i32, u32>,
    pub(crate) nr_specs: usize,
    pub(crate) begun: &'a HashMap<i32, Nanos>,
    pub(crate) ended: &'a HashMap<i32, Nanos>,
    pub(crate) controller: i32,
}

/// Switches, voluntary/involuntary splits, migrations and run time per
/// switch of our threads, from the trace, inside [t0, stop].
pub(crate) fn analyse_trace(events: &[SchedEvent], ours: &Ours, t0: Nanos, stop: Nanos) -> TraceFigures {
    let Ours { spec_of, nr_specs, begun, ended, controller } = *ours;
    let mut f = TraceFigures {
        switches: 0,
        preempted_by_others: 0,
        per_tid: HashMap::new(),
        rps: vec![Hist::default(); nr_specs],
        on_cpu: HashMap::new(),
        run_delay: HashMap::new(),
        exit_cpu: HashMap::new(),
        other_runs: 0,
        other_on_cpu: 0,
        other_runs_of: HashMap::new(),
        controller_runs: Vec::new(),
        before_waking: HashMap::new(),
        after_waking: HashMap::new(),
        idle_wakeups: Vec::new(),
        preempting_wakeups: Vec::new(),
    };
    // Wakees woken by anyone on a CPU running another task: when, where.
    let mut busy_woken: HashMap<i32, (Nanos, u32)> = HashMap::new();
    // Wakees woken by ours on an idle CPU: when, and on which CPU.
    let mut idle_woken: HashMap<i32, (Nanos, u32)> = HashMap::new();
    let mut running: HashMap<u32, (i32, Nanos)> = HashMap::new();
    // Per CPU, when the thread running there first woke another of ours.
    let mut woke_at: HashMap<u32, Nanos> = HashMap::new();
    let mut runnable_since: HashMap<i32, Nanos> = HashMap::new();
    let mut after_end: HashMap<i32, Nanos> = HashMap::new();
    // Per CPU, the other task running there and since when.
    let mut other_running: HashMap<u32, (i32, Nanos)> = HashMap::new();
    let overlap = |since: Nanos, until: Nanos| until.min(stop).saturating_sub(since.max(t0));
    let in_program = |tid: i32, since: Nanos, until: Nanos| {
        let from = begun.get(&tid).map_or(t0, |&b| b.max(t0));
        let to = ended.get(&tid).map_or(stop, |&e| e.min(stop));
        until.min(to).saturating_sub(since.max(from))
    };
    for ev in events {
        let inside = ev.ts >= t0 && ev.ts <= stop;
        match &ev.kind {
            SchedEventKind::Switch { prev_pid, prev_state, next_pid, .. } => {
                let (prev, next) = (*prev_pid as i32, *next_pid as i32);
                let next_ours = spec_of.contains_key(&next);
                if let Some(&spec) = spec_of.get(&prev) {
                    if let Some((tid, since)) = running.remove(&ev.cpu)
                        && tid == prev
                    {
                        *f.on_cpu.entry(tid).or_default() += in_program(tid, since, ev.ts);
                        if let Some(woke) = woke_at.remove(&ev.cpu)
                            && since >= t0
                            && ev.ts <= stop
                        {
                            let before = f.before_waking.entry(tid).or_default();
                            *before = (before.0 + (woke - since), before.1 + 1);
                            let after = f.after_waking.entry(tid).or_default();
                            *after = (after.0 + (ev.ts - woke), after.1 + 1);
                        }
                        if let Some(&end) = ended.get(&tid) {
                            *after_end.entry(tid).or_default() += ev.ts.saturating_sub(since.max(end));
                        }
                        if inside {
                            f.rps[spec as usize].record(ev.ts - since.max(t0));
                        }
                    }
                    if prev_state.starts_with('R') {
                        runnable_since.insert(prev, ev.ts);
                    } else if (prev_state.starts_with('X') || prev_state.starts_with('Z')) && ended.contains_key(&prev)
                    {
                        f.exit_cpu.insert(prev, after_end.get(&prev).copied().unwrap_or(0));
                    }
                    if inside {
                        f.switches += 1;
                        let e = f.per_tid.entry(prev).or_default();
                        if prev_state.starts_with('R') {
                            e.1 += 1;
                            if next != 0 && !next_ours {
                                f.preempted_by_others += 1;
                            }
                        } else {
                            e.0 += 1;
                        }
                    }
                }
                woke_at.remove(&ev.cpu);
                if let Some((tid, since)) = other_running.remove(&ev.cpu) {
                    f.other_run(tid, tid == controller, overlap(since, ev.ts));
                }
                if next_ours {
                    if let Some((woken, cpu)) = busy_woken.remove(&next)
                        && cpu == ev.cpu
                        && prev != 0
                        && prev_state.starts_with('R')
                        && ev.ts - woken < PREEMPT_WITHIN
                        && woken >= t0
                        && ev.ts <= stop
                    {
                        f.preempting_wakeups.push(ev.ts - woken);
                    }
                    if let Some((woken, cpu)) = idle_woken.remove(&next)
                        && cpu == ev.cpu
                        && woken >= t0
                        && ev.ts <= stop
                    {
                        f.idle_wakeups.push(ev.ts - woken);
                    }
                    running.insert(ev.cpu, (next, ev.ts));
                    if let Some(since) = runnable_since.remove(&next) {
                        *f.run_delay.entry(next).or_default() += overlap(since, ev.ts);
                    }
                } else {
                    running.remove(&ev.cpu);
                    if next != 0 {
                        other_running.insert(ev.cpu, (next, ev.ts));
                    }
                }
            }
            SchedEventKind::Migrate { pid, .. } if inside && spec_of.contains_key(&(*pid as i32)) => {
                f.per_tid.entry(*pid as i32).or_default().2 += 1;
            }
            SchedEventKind::Waking { pid, target_cpu, .. } if spec_of.contains_key(&(*pid as i32)) => {
                let wakee = *pid as i32;
                let target_busy = running.contains_key(target_cpu) || other_running.contains_key(target_cpu);
                // Sent by another of ours from its own CPU: its signal,
                // and (to an idle CPU) an IPI and an idle exit.
                if running.get(&ev.cpu).is_some_and(|&(t, _)| t != wakee) {
                    woke_at.entry(ev.cpu).or_insert(ev.ts);
                    if *target_cpu != ev.cpu && !target_busy {
                        idle_woken.insert(wakee, (ev.ts, *target_cpu));
                    } else {
                        idle_woken.remove(&wakee);
                    }
                }
                if target_busy {
                    busy_woken.insert(wakee, (ev.ts, *target_cpu));
                } else {
                    busy_woken.remove(&wakee);
                }
            }
            // A wakeup of a task already runnable (or running) changes
            // nothing: its wait began at the earlier one.
            SchedEventKind::Wakeup { pid, .. } if spec_of.contains_key(&(*pid as i32)) => {
                let tid = *pid as i32;
                if !running.values().any(|&(t, _)| t == tid) {
                    runnable_since.entry(tid).or_insert(ev.ts);
                }
            }
            _ => {}
        }
    }
    for (tid, since) in running.into_values() {
        *f.on_cpu.entry(tid).or_default() += in_program(tid, since, stop);
    }
    for (tid, since) in runnable_since {
        *f.run_delay.entry(tid).or_default() += overlap(since, stop);
    }
    for (tid, since) in other_running.into_values() {
        f.other_run(tid, tid == controller, overlap(since, stop));
    }
    f
}

impl TraceFigures {
    /// A run of a task outside the workload that spent `inside` of its time
    /// on a CPU inside the window: counted only then, so that a run begun
    /// before t0 (the controller's own start-up work) adds its part to the
    /// time and one run to the count, not time without a run.
    fn other_run(&mut self, tid: i32, is_controller: bool, inside: Nanos) {
        if inside == 0 {
            return;
        }
        self.other_runs += 1;
        self.other_on_cpu += inside;
        *self.other_runs_of.entry(tid).or_default() += 1;
        if is_controller {
            self.controller_runs.push(inside);
        }
    }
}

/// Other processes' share of the workload's CPUs above which a report
/// says that they competed with it.
pub(crate) const FOREIGN_LOAD_WARN_PCT: f64 = 5.0;

/// Per-CPU busy and idle time of the workload's CPUs over `duration`, and
/// the CPU time other processes took on them. As in a simulation, busy is
/// the workload's own threads' CPU time and busy + idle = duration on each
/// CPU; /proc/stat (machine-wide, in jiffies) only says how that time
/// spread over the CPUs, and what it counts beyond the workload's threads
/// is other processes'.
pub(crate) fn cpu_accounting(
    cpu_map: &[usize],
    results: &[ThreadResult],
    stat0: &[(u64, u64)],
    stat1: &[(u64, u64)],
    duration: Nanos,
    stat_count: u64,
) -> (Vec<CpuReport>, Nanos) {
    let jiffy_ns = 1_000_000_000 / sys::user_hz();
    let stat_busy: Vec<u64> = cpu_map
        .iter()
        .map(|&hc| {
            let (b0, _) = stat0.get(hc).copied().unwrap_or_default();
            let (b1, _) = stat1.get(hc).copied().unwrap_or_default();
            b1.saturating_sub(b0) * jiffy_ns / stat_count
        })
        .collect();
    let machine_busy: u64 = stat_busy.iter().sum();
    let own: u64 = results.iter().map(|r| r.cpu_time).sum();
    let own_busy = own.min(duration.saturating_mul(cpu_map.len() as u64));
    let per_cpu = stat_busy
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let share = if machine_busy == 0 { 1.0 / cpu_map.len() as f64 } else { b as f64 / machine_busy as f64 };
            let busy_ns = ((own_busy as f64 * share) as u64).min(duration);
            CpuReport { cpu: i as u32, busy_ns, idle_ns: duration - busy_ns, switch_overhead_ns: 0 }
        })
        .collect();
    (per_cpu, machine_busy.saturating_sub(own))
}

/// The extra figure of a host report that says whether the kernel got its
/// timer ticks: /proc/stat's busy time on the workload's busy CPUs per
/// second they were not idle, in percent (the least of those CPUs). The
/// kernel counts busy time one tick at a time and idle time from the
/// clock (NO_HZ), so a CPU that lost ticks (a virtual CPU its host did not
/// run for longer than a jiffy: the missed ticks are skipped, not
/// delivered late) counts less busy time than it was busy, and every slice
/// that ends at a tick ran longer.
pub const TICKS_DELIVERED: &str = "ticks_delivered_pct";

/// The extra figure of a host report that says how long the kernel had
/// been up at the run's start, in seconds (CLOCK_MONOTONIC at t0, which
/// counts from boot as sched_clock does): what `[machine] uptime` is to a
/// simulation.
pub const UPTIME_AT_START: &str = "uptime_at_start_s";

/// The extra figures of a report whose trace is the whole machine's (a
/// guest's): how often tasks outside the workload (kernel threads, the
/// runner's controller, daemons) ran in the window, per second, for how
/// long on average (us), and what share of the workload's CPUs they took
/// (%, the figure a simulation with background tasks reports too): the
/// machine's own work, which a simulation of the workload alone does not
/// have.
pub const OTHER_TASKS_RUNS_PER_S: &str = "other_tasks_runs_per_s";
pub const OTHER_TASKS_RUN_MEAN_US: &str = "other_tasks_run_mean_us";
/// Of those, the runner's controller's own runs per second and their mean
/// (us): a SCHED_FIFO thread woken by an hrtimer every 250 ms (WATCH_PERIOD_NS),
/// not by the tick as the kernel's threads mostly are.
pub const CONTROLLER_RUNS_PER_S: &str = "controller_runs_per_s";
pub const CONTROLLER_RUN_MEAN_US: &str = "controller_run_mean_us";
/// The controller's run at the median (us): its periodic watch, without
/// the start-up work a run at t0 may hold (3.5 ms in a cfs-6.1 fork-burst
/// boot, where its watches ran 135-168 us).
pub const CONTROLLER_RUN_P50_US: &str = "controller_run_p50_us";
/// Of those, the runs per second of tasks bound to one CPU (kworker/N:M,
/// ksoftirqd/N: they run where their CPU's work woke them), as against
/// unbound ones (rcu_sched, kworker/uN:M, the controller, daemons), which
/// the scheduler places: traced boots of 2026-12-07 put pds-6.12's unbound
/// rcu_sched on CPU 0 59 times of 62, best_mask_cpu's lowest-numbered.
pub const OTHER_TASKS_PINNED_RUNS_PER_S: &str = "other_tasks_pinned_runs_per_s";
pub use schedlab_sim::report::OTHER_TASKS_CPU_PCT;

/// The extra figure of a host report that says how much CPU time a task
/// thread released by the start gate used before t0, at the median (us):
/// the runner's own start-up work, which a simulation of the workload does
/// not have. Threads forked in the run are not counted (reports before
/// 2026-12-07 counted them, so fork-burst's gave its children's).
pub const CPU_BEFORE_START_P50: &str = "thread_cpu_before_start_p50_us";

/// The extra figure of a host report that says how much CPU time a task
/// thread forked in the run used before its work, at the median (us): its
/// thread start and attributes, which the simulation with the guest's
/// costs charges a forked task (`thread_start`).
pub const FORKED_CPU_BEFORE_START_P50: &str = "forked_thread_cpu_before_start_p50_us";

/// The extra figure of a host report that says how many times a task
/// thread released by the start gate went to sleep before t0, at the
/// median (its voluntary switches: the gate, the sleep to t0, and any wait
/// while it was created): Project C's BMQ boosts a task a level at each
/// (sched_task_deactivate), so a thread starts t0 as many levels up from
/// the boost_prio it inherited.
pub const SLEEPS_BEFORE_START_P50: &str = "thread_sleeps_before_start_p50";

/// The extra figure of a host report that says how much of that CPU time a
/// task thread had used when it arrived at the start gate (its creation
/// and attributes), at the median over the gated threads (us); the rest it
/// used after the gate opened.
pub const CPU_AT_GATE_P50: &str = "thread_cpu_at_gate_p50_us";

/// The extra figure of a host report that says how much time on a CPU a
/// task thread took from the end of its program to leaving its CPU for
/// good (its result kept, the thread library's exit, the kernel's
/// do_exit), at the median over the threads that ended in the run (us,
/// from the trace; time it waited runnable in between is not counted): a
/// finite workload's threads pay it inside the run, and a simulation
/// charges it as `thread_exit`.
pub const THREAD_EXIT_P50: &str = "thread_exit_p50_us";

/// The extra figure of a host report that says how much more CPU time, in
/// percent, the threads whose programs only run (hogs, spinners,
/// fork-burst's children) had on their CPU clocks than their run ops spun
/// for: time the kernel charged to them while they did not run their
/// loop, without a switch (interrupts longer than the spin's preemption
/// gap; in a guest, a vCPU its host did not run). A simulation charges it
/// as `run_stretch`. Under MuQSS, whose thread CPU clocks run fast
/// (niffies), the CPU time is the trace's. Absent where no such thread
/// ran.
pub const CPU_BEYOND_WORK_PCT: &str = "cpu_beyond_work_pct";

/// The extra figure of a host report that says how much CPU time a thread
/// that forks (and otherwise only runs) spent per fork, beyond its run
/// ops stretched as `cpu_beyond_work_pct` says (us, the median of such
/// threads): the runner's clone(), its new stack and books, and the
/// kernel's placement of the new thread, as a simulation's `fork` cost.
pub const FORK_CPU_US: &str = "fork_cpu_us";

/// The extra figure of a host report that says how much CPU time a thread
/// whose program only runs and sleeps (cyclictest's, a periodic task)
/// spent per timed sleep it woke from, beyond its run ops stretched as
/// `cpu_beyond_work_pct` says (us, the median of such threads): the
/// clock_nanosleep() call, the return from the timer's wakeup and the
/// switch to it, as a simulation's `timer_wakeup` cost. calibrate measures
/// it on an idle CPU; a wakeup that preempts a busy one costs more (jitter
/// in a TCG guest: 80 us against calibrate's 60).
pub const TIMER_WAKEUP_CPU_US: &str = "timer_wakeup_cpu_us";

/// The extra figures of a host report that say how much CPU time a thread
/// whose program only runs and yields (yield-hog's yielder) spent per
/// sched_yield, beyond its run ops stretched as `cpu_beyond_work_pct`
/// says (us, the median of such threads), and after how many of its
/// yields it left its CPU (%, its involuntary switches per yield, the
/// median): the call, and where it switched away, the switch back to it
/// and the return. A simulation charges a yield `syscall` and the switch
/// back `context_switch`; calibrate measures the first on a CPU with
/// nothing else to run (a TCG guest: 3-4 us), where a yield that switches
/// away cost the yielder 20-100 us more in the guests' runs.
pub const YIELD_CPU_US: &str = "yield_cpu_us";
pub const YIELD_SWITCHED_PCT: &str = "yield_switched_pct";

/// The extra figures of a host report that split a timed sleep (where the
/// trace has the sleepers' switches; us, the median of the run's sleeps
/// that slept): from the thread's clock before clock_nanosleep() to its
/// switch out asleep (the call), and from its switch back in after the
/// timer's wakeup to its clock after the return (the return, which the
/// thread's own latency holds and a switch does not: a simulation's
/// `timer_return`).
pub const TIMER_CALL_US: &str = "timer_call_us";
pub const TIMER_RETURN_US: &str = "timer_return_us";
/// Fewer split sleeps than this give no figure.
const SLEEP_SPLITS_MIN: usize = 50;

/// The extra figure of a host report that says how much CPU time a thread
/// whose program only runs, signals and waits on channels (lat-ctx's ping
/// and pong) spent per wakeup from a wait, beyond its run ops stretched as
/// `cpu_beyond_work_pct` says (us, the median of such threads): the
/// switch to it, the read's return and what its own signals cost (a pipe
/// write, the IPI to the reader's CPU). The split below says which part
/// comes before its signal and which after.
pub const WAIT_WAKEUP_CPU_US: &str = "wait_wakeup_cpu_us";

/// The extra figures of a host report that split a run of such a thread
/// at the wakeup it sends (sched_waking in its context): from its
/// switch-in to that wakeup beyond its work (the switch, the read's
/// return, the write up to the wakeup: a simulation's `context_switch` and
/// `wait_wakeup`) and from the wakeup to its switch-out (the write's IPI
/// and return, the next read until it blocks: `signal_return`); us, the
/// median of the threads' means, where the trace has sched_waking.
pub const WAIT_RUN_TO_SIGNAL_US: &str = "wait_run_to_signal_us";
/// The second part of that split: from the wakeup to the switch-out.
pub const WAIT_SIGNAL_TO_SWITCH_US: &str = "wait_signal_to_switch_us";

/// The extra figure of a host report that says how far apart the CPUs'
/// ticks of one jiffy came in the run (us, the median gap from another
/// CPU's tick to CPU 0's nearest, from the trace's hrtimer expiries): a
/// guest of 4 vCPUs on 2 host CPUs spreads them over hundreds of us where
/// one of 2 keeps them within 10-20 us, and which CPU ticks, balances and
/// dispatches first is the gap's (a simulation's `tick_spread`).
pub const TICK_GAP_P50_US: &str = "tick_gap_p50_us";

/// The extra figures of a host report that say how long a wakeup one of
/// the workload's threads sent another on an idle CPU took to run it
/// (sched_waking to its switch-in: the IPI and the idle exit; us, the
/// median and the mean), where the trace has sched_waking: a simulation's
/// `idle_exit`. A rate of such wakeups (lat-ctx's hops) follows the mean,
/// which an emulated CPU's occasional long exit lifts above the median.
pub const IDLE_WAKEUP_P50: &str = "idle_wakeup_p50_us";
pub const IDLE_WAKEUP_MEAN: &str = "idle_wakeup_mean_us";

/// The extra figure of a host report that says how long after a wakeup
/// of one of the workload's threads aimed at a CPU running another task
/// the woken thread was switched in there, where it preempted that task
/// within a millisecond (us, the median; where the trace has
/// sched_waking): the wakeup's interrupt (a timer's, an IPI) returning
/// into schedule(), which a simulation takes as immediate. A cfs-6.1 TCG
/// guest's wakeup-preemption: 63 us from a timer's expiry to the switch.
pub const PREEMPT_WAKEUP_P50: &str = "preempt_wakeup_p50_us";

/// The median of `of` (us) over the threads the start gate released
/// (`gated`), or over those forked in the run: the two kinds start apart,
/// and mixed, fork-burst's 200 children gave the median of its one gated
/// parent (tt-6.1: 86 us, where the parent's own clock read 4.4 ms).
fn start_p50(results: &[ThreadResult], gated: bool, of: impl Fn(&ThreadResult) -> Nanos) -> Option<f64> {
    let values: Vec<Nanos> = results.iter().filter(|r| r.gated == gated).map(of).collect();
    (!values.is_empty()).then(|| crate::calibrate::median(values) as f64 / 1e3)
}

/// The median over the threads whose programs only run, signal and wait of
/// their mean per run in `per_tid` (a sum and a count), less their run
/// ops' work per wakeup with `less_work`, in ns.
fn waiters_median(
    w: &Workload,
    results: &[ThreadResult],
    per_tid: &HashMap<i32, (Nanos, u64)>,
    less_work: bool,
) -> Option<Nanos> {
    let means: Vec<Nanos> = results
        .iter()
        .filter(|r| runs_and_waits(&w.tasks[r.spec as usize].program))
        .filter_map(|r| {
            let (sum, n) = per_tid.get(&r.tid).filter(|(_, n)| *n > 0)?;
            let work = if less_work { r.burnt / r.wakeups.max(1) } else { 0 };
            Some((sum / n).saturating_sub(work))
        })
        .collect();
    (!means.is_empty()).then(|| crate::calibrate::median(means))
}

/// The extra figures of a host report that give how late the sleeps'
/// timers fired on busy CPUs, at `tracing::SLEEP_PERCENTILES` (us, from
/// the trace): `sleep_timer_late_p50_us` and so on. A simulation draws its
/// `timer_latency` from them.
pub fn sleep_timer_late_name(percentile: f64) -> String {
    format!("sleep_timer_late_p{percentile}_us")
}

/// The extra figure of a host report that says how long those timers took
/// from their expiry to the sched_waking of their thread (us, the median;
/// from the trace): the expiry handler's time, which the lateness stops
/// short of and a simulation's wakeup, drawn from the lateness, follows.
pub const SLEEP_TIMER_TO_WAKING_US: &str = "sleep_timer_to_waking_us";

/// The extra figures of a host report on a MuQSS kernel that say how far
/// CPU `cpu`'s niffies stood ahead of the first CPU's when the workload
/// started (ms, negative behind): `niffies_ahead_cpu1_ms` and so on, read
/// from /proc by a thread moved between them (niffies.rs), absent where
/// the kernel is not MuQSS or the reading failed.
pub fn niffies_ahead_name(cpu: u32) -> String {
    format!("niffies_ahead_cpu{cpu}_ms")
}

/// Whether every op of a program runs (run ops in loops, an exit) or is
/// one `also` accepts: its thread's CPU clock is its work and those ops.
fn runs_and(program: &[Op], also: fn(&Op) -> bool) -> bool {
    program.iter().all(|op| matches!(op, Op::Run(_) | Op::LoopStart { .. } | Op::LoopEnd { .. } | Op::Exit) || also(op))
}

/// Whether a program only runs (and exits).
fn only_runs(program: &[Op]) -> bool {
    runs_and(program, |_| false)
}

/// Whether a program only runs and forks.
fn runs_and_forks(program: &[Op]) -> bool {
    runs_and(program, |op| matches!(op, Op::Fork(_)))
}

/// Whether a program only runs and sleeps (to a time or for a while), and
/// sleeps: its thread's CPU clock is its work and its timed wakeups.
fn runs_and_sleeps(program: &[Op]) -> bool {
    program.iter().any(crate::threads::timed_sleep) && runs_and(program, crate::threads::timed_sleep)
}

/// Whether a program only runs and yields, and yields: its thread's CPU
/// clock is its work and its sched_yield calls.
fn runs_and_yields(program: &[Op]) -> bool {
    program.iter().any(|op| matches!(op, Op::Yield)) && runs_and(program, |op| matches!(op, Op::Yield))
}

/// Whether a program only runs, signals channels and waits on them, and
/// waits: its thread's CPU clock is its work and its wakeups from a pipe
/// read.
fn runs_and_waits(program: &[Op]) -> bool {
    program.iter().any(|op| matches!(op, Op::Wait(_)))
        && runs_and(program, |op| matches!(op, Op::Signal(_) | Op::Wait(_)))
}

/// The call and the return of the timed sleeps `results` kept the clock
/// of, inside [t0, stop] (ns, the medians): each sleep's first switch of
/// its thread after the call must be out and asleep, and its next the
/// switch back in, before the return. A sleep whose thread was preempted
/// on its way in or out, or whose switch the trace lacks, is left out.
pub(crate) fn sleep_split(
    events: &[SchedEvent],
    results: &[ThreadResult],
    t0: Nanos,
    stop: Nanos,
) -> Option<(Nanos, Nanos)> {
    // Each sleeper's switches in order: (when, switched in, left asleep).
    let mut switches: HashMap<i32, Vec<(Nanos, bool, bool)>> =
        results.iter().filter(|r| !r.sleeps.is_empty()).map(|r| (r.tid, Vec::new())).collect();
    for ev in events {
        if let SchedEventKind::Switch { prev_pid, prev_state, next_pid, .. } = &ev.kind {
            if let Some(v) = switches.get_mut(&(*prev_pid as i32)) {
                v.push((ev.ts, false, !prev_state.starts_with('R')));
            }
            if let Some(v) = switches.get_mut(&(*next_pid as i32)) {
                v.push((ev.ts, true, false));
            }
        }
    }
    let (mut calls, mut returns) = (Vec::new(), Vec::new());
    for r in results {
        let Some(v) = switches.get(&r.tid) else { continue };
        for &(called, returned) in r.sleeps.iter().filter(|&&(c, ret)| c >= t0 && ret <= stop) {
            let i = v.partition_point(|&(ts, ..)| ts < called);
            if let [(out, false, true), (back, true, _), rest @ ..] = &v[i.min(v.len())..]
                && *back <= returned
                && rest.first().is_none_or(|&(ts, ..)| ts > returned)
            {
                calls.push(out - called);
                returns.push(returned - back);
            }
        }
    }
    (calls.len() >= SLEEP_SPLITS_MIN).then(|| (crate::calibrate::median(calls), crate::calibrate::median(returns)))
}

/// A thread's CPU per wakeup beyond its runs stretched by `beyond` (in
/// ns, the median of the threads whose programs `kind` accepts):
/// `TIMER_WAKEUP_CPU_US` or `WAIT_WAKEUP_CPU_US`.
fn cpu_per_wakeup(
    w: &Workload,
    results: &[ThreadResult],
    beyond: Option<f64>,
    kind: fn(&[Op]) -> bool,
) -> Option<Nanos> {
    cpu_per_event(w, results, beyond, kind, |r| r.wakeups)
}

/// A thread's CPU per event `count` counts, beyond its runs stretched by
/// `beyond` (in ns, the median of the threads whose programs `kind`
/// accepts and that had such events).
fn cpu_per_event(
    w: &Workload,
    results: &[ThreadResult],
    beyond: Option<f64>,
    kind: fn(&[Op]) -> bool,
    count: fn(&ThreadResult) -> u64,
) -> Option<Nanos> {
    let per_event: Vec<Nanos> = results
        .iter()
        .filter(|r| count(r) > 0 && kind(&w.tasks[r.spec as usize].program))
        .map(|r| {
            let runs = r.burnt as f64 * (1.0 + beyond.unwrap_or(0.0));
            ((r.cpu_time as f64 - runs).max(0.0) / count(r) as f64).round() as Nanos
        })
        .collect();
    (!per_event.is_empty()).then(|| crate::calibrate::median(per_event))
}

/// `YIELD_CPU_US` (ns) and `YIELD_SWITCHED_PCT` of a run's yielders.
fn yield_cost(w: &Workload, results: &[ThreadResult], beyond: Option<f64>) -> Option<(Nanos, f64)> {
    let per_yield = cpu_per_event(w, results, beyond, runs_and_yields, |r| r.yields)?;
    // Each yielder's involuntary switches per yield, in tenths of a
    // percent (a tick's preemption beside every yield's switch is still one
    // a yield), at the median as the report's other per-thread figures.
    let switched: Vec<u64> = results
        .iter()
        .filter(|r| r.yields > 0 && runs_and_yields(&w.tasks[r.spec as usize].program))
        .map(|r| (r.involuntary.min(r.yields) * 1000 + r.yields / 2) / r.yields)
        .collect();
    Some((per_yield, crate::calibrate::median(switched) as f64 / 10.0))
}

/// `CPU_BEYOND_WORK_PCT` (as a fraction) and `FORK_CPU_US` (in ns) of a
/// run's threads.
fn beyond_work(w: &Workload, results: &[ThreadResult]) -> (Option<f64>, Option<Nanos>) {
    let program = |r: &ThreadResult| &w.tasks[r.spec as usize].program[..];
    let runners: Vec<&ThreadResult> =
        results.iter().filter(|r| r.burnt > 0 && r.forks == 0 && only_runs(program(r))).collect();
    let burnt: Nanos = runners.iter().map(|r| r.burnt).sum();
    let beyond = (burnt > 0).then(|| runners.iter().map(|r| r.cpu_time).sum::<Nanos>() as f64 / burnt as f64 - 1.0);
    let per_fork: Vec<Nanos> = results
        .iter()
        .filter(|r| r.forks > 0 && runs_and_forks(program(r)))
        .map(|r| {
            let runs = r.burnt as f64 * (1.0 + beyond.unwrap_or(0.0));
            ((r.cpu_time as f64 - runs).max(0.0) / r.forks as f64) as Nanos
        })
        .collect();
    (beyond, (!per_fork.is_empty()).then(|| crate::calibrate::median(per_fork)))
}

/// The extra figures of a host report that say how much CPU time the
/// runner's controller had used when it began creating the task threads
/// (ms), and its priority as /proc gave it then (task_prio(): 20 + nice on
/// mainline, 32 + nice + boost_prio on Project C's BMQ). Threads inherit
/// what the scheduler made of the first from their creator.
pub const CONTROLLER_CPU_BEFORE_SPAWN: &str = "controller_cpu_before_spawn_ms";
pub const CONTROLLER_STAT_PRIORITY: &str = "controller_stat_priority";

/// The extra figure of a host report that says how much CPU time the
/// runner's controller spent per task thread it created (us, from its
/// first creation to its last): Project C and MuQSS halve a forker's slice
/// at each clone (sched_fork, wake_up_new_task), MuQSS net of the CPU the
/// forker spent since its last tick and Project C not (its sched_fork
/// halves the slice as the last update_curr left it), so this says how
/// far apart in a slice the threads' halves were taken. Read beside the
/// threads' first turns; no simulation takes it.
pub const CONTROLLER_CPU_PER_SPAWN: &str = "controller_cpu_per_spawn_us";

/// The extra figures of a host report that say how late the kernel's
/// hrtimers fired during the run (median and 90th percentile, us; see
/// `tracing::TimerLateness`): present where the run was traced and the
/// kernel has the timer events.
pub const TIMER_LATE_P50: &str = "timer_late_p50_us";
pub const TIMER_LATE_P90: &str = "timer_late_p90_us";

/// Above this 90th percentile of hrtimer lateness (us) a run measured its
/// machine more than its kernel. Quiet boots of the nine guest kernels
/// under TCG, with hogs, sleepers and both vCPUs busy: 55-210 us (this
/// machine, 2026-11-25). Two host processes at 10% duty (0.18 host CPUs,
/// under validate's limit for others) beside a pds-6.12 guest: 835 us, and
/// nice-hog made 223 switches/s where quiet boots make 231 (at 0.37 host
/// CPUs: 2,743 us and 205/s). On bare metal a few tens of microseconds.
pub const TIMER_LATE_P90_LIMIT_US: f64 = 400.0;

/// Below this TICKS_DELIVERED, the report says that ticks were lost
/// (/proc/stat counts in 10 ms units, 0.3% of a 3 s run), and validate and
/// the vm tests take the run to have measured its host.
pub const TICKS_DELIVERED_MIN_PCT: f64 = 97.0;

/// The TICKS_DELIVERED figure over CPUs busy (not idle) for at least 95%
/// of `window`; None where none was. Only there does a lost tick show: a
/// CPU that idles often stops and restarts its tick (NO_HZ), and its short
/// busy stretches are sampled by ticks unevenly (a cfs-6.1 guest passing a
/// token between two CPUs counted 45% of its busy time in ticks with no
/// tick lost). `stat_count` is how many times the kernel counts a
/// busy CPU's time (2 under MuQSS).
pub(crate) fn ticks_delivered_pct(
    cpu_map: &[usize],
    stat0: &[(u64, u64)],
    stat1: &[(u64, u64)],
    window: Nanos,
    stat_count: u64,
) -> Option<f64> {
    let unit = 1e9 / sys::user_hz() as f64;
    cpu_map
        .iter()
        .filter_map(|&hc| {
            let ((b0, i0), (b1, i1)) = (*stat0.get(hc)?, *stat1.get(hc)?);
            let busy = b1.saturating_sub(b0) as f64 * unit / stat_count as f64;
            let not_idle = window as f64 - i1.saturating_sub(i0) as f64 * unit;
            (not_idle >= window as f64 * 0.95).then(|| (busy * 100.0 / not_idle * 10.0).round() / 10.0)
        })
        .reduce(f64::min)
}

/// Each thread's row of the report, its spec's wakeup latencies, and the
/// switches and migrations in all: from the trace where there is one,
/// else from getrusage and /proc.
pub(crate) struct TaskRows {
    pub(crate) raw: Vec<TaskRaw>,
    pub(crate) spec_lat: Vec<Hist>,
    pub(crate) switches: u64,
    pub(crate) migrations: u64,
}

pub(crate) fn task_rows(w: &Workload, results: &[ThreadResult], figures: Option<&TraceFigures>) -> TaskRows {
    let mut spec_lat = vec![Hist::default(); w.tasks.len()];
    let mut migrations_total = 0;
    let mut switches_total = 0;
    let mut raw = Vec::new();
    for r in results {
        spec_lat[r.spec as usize].merge(&r.lat);
        let spec = &w.tasks[r.spec as usize];
        let (vol, invol, mig, delay) = match figures {
            Some(f) => {
                let e = f.per_tid.get(&r.tid).copied().unwrap_or_default();
                (e.0, e.1, e.2, f.run_delay.get(&r.tid).copied().unwrap_or(0))
            }
            None => (r.voluntary, r.involuntary, r.migrations.unwrap_or(0), r.run_delay.unwrap_or(0)),
        };
        switches_total += vol + invol;
        migrations_total += mig;
        raw.push(TaskRaw {
            name: if spec.count > 1 || spec.template { format!("{}-{}", spec.name, r.task) } else { spec.name.clone() },
            spec: r.spec,
            cpu_time: r.cpu_time,
            created: r.created,
            exited: r.exited,
            run_delay: delay,
            wakeups: r.wakeups,
            lat_sum: r.lat_sum,
            lat_max: r.lat_max,
            voluntary: vol,
            involuntary: invol,
            migrations: mig,
            work: r.work,
            runs: r.runs,
        });
    }
    TaskRows { raw, spec_lat, switches: switches_total, migrations: migrations_total }
}

/// What the sched trace says of the run, where it caught the workload's
/// threads: the figures (None when it missed them), the placement
/// decisions in `host`, and, under MuQSS, each thread's CPU time.
fn trace_figures(
    sh: &Shared,
    results: &mut [ThreadResult],
    trace: Option<&[SchedEvent]>,
    t0: Nanos,
    stop: Nanos,
    host: &mut HostInfo,
) -> Option<TraceFigures> {
    let w = &sh.w;
    let spec_of: HashMap<i32, u32> = results.iter().map(|r| (r.tid, r.spec)).collect();
    let begun: HashMap<i32, Nanos> = results.iter().map(|r| (r.tid, t0 + r.created)).collect();
    let ended: HashMap<i32, Nanos> = results.iter().filter_map(|r| Some((r.tid, t0 + r.exited?))).collect();
    let mut figures = trace.map(|ev| {
        analyse_trace(
            ev,
            &Ours {
                spec_of: &spec_of,
                nr_specs: w.tasks.len(),
                begun: &begun,
                ended: &ended,
                controller: sh.controller_tid,
            },
            t0,
            stop,
        )
    });
    if let Some(events) = trace {
        // The LLC of each host CPU the workload runs on.
        let mut llc = vec![None; sh.cpu_map.iter().max().map_or(0, |&c| c + 1)];
        for (i, &hc) in sh.cpu_map.iter().enumerate() {
            llc[hc] = Some(w.machine.topology.llc_of(i as u32));
        }
        let mut counter = schedlab_sim::report::decisions::DecisionCounter::new(llc, t0, stop);
        counter.feed_trace(events, |pid| spec_of.contains_key(&(pid as i32)));
        host.decisions = Some(counter.counts);
    }
    let rusage_switches: u64 = results.iter().map(|r| r.voluntary + r.involuntary).sum();
    if figures.as_ref().is_some_and(|f| f.switches == 0 && rusage_switches > 0) {
        // The trace missed our threads (a filter the kernel did not apply,
        // or a PID namespace: tracefs prints the initial namespace's PIDs):
        // trust getrusage rather than report no switches, and do not claim
        // a trace the figures did not come from.
        figures = None;
        host.decisions = None;
        host.tracing = format!(
            "none: the {} recorded no event of the run's threads (a PID namespace other than the kernel's, \
             whose PIDs tracefs prints); switches from getrusage",
            host.tracing
        );
    }
    let muqss = sys::is_muqss();
    if muqss && let Some(f) = &figures {
        // MuQSS counts a thread's CPU clock in its niffies, which run at
        // least 2^30 ns per second of jiffies: 7-15% over the time there
        // was. The trace's switches time the runs on the kernel's clock.
        for r in results.iter_mut() {
            r.cpu_time = f.on_cpu.get(&r.tid).copied().unwrap_or(0);
        }
        host.notes.push(
            "task CPU times come from the sched trace: MuQSS's thread CPU clocks count its niffies, which run 7-15% \
             fast"
                .to_string(),
        );
    }
    figures
}

/// The notes on how the kernel kept time during the run: ticks it lost,
/// timers that fired late (each lengthens the slices a timer ends).
fn timing_notes(host: &mut HostInfo, ticks_pct: Option<f64>, timers: Option<crate::tracing::TimerLateness>) {
    if let Some(pct) = ticks_pct.filter(|&p| p < TICKS_DELIVERED_MIN_PCT) {
        host.notes.push(format!(
            "the busy CPUs took {pct:.1}% of their timer ticks: the kernel lost ticks (a virtual CPU its host did \
             not run for over a jiffy), which lengthens every slice that ends at a tick"
        ));
    }
    if let Some(t) = timers.filter(|t| t.p90 as f64 / 1e3 > TIMER_LATE_P90_LIMIT_US) {
        host.notes.push(format!(
            "the kernel's timers fired {:.0} us late at the 90th percentile ({:.0} us at the median): its CPUs \
             were not run on time (a virtual machine's host busy elsewhere), and every slice a timer ends ran \
             longer",
            t.p90 as f64 / 1e3,
            t.median as f64 / 1e3
        ));
    }
}

/// The run's report, and the warning that other processes competed with
/// it when they took FOREIGN_LOAD_WARN_PCT or more (also among its notes).
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_report(
    sh: &Shared,
    mut results: Vec<ThreadResult>,
    trace: Option<&[SchedEvent]>,
    timers: Option<crate::tracing::TimerLateness>,
    t0: Nanos,
    stop: Nanos,
    stat0: &[(u64, u64)],
    stat1: &[(u64, u64)],
    mut host: HostInfo,
    tunables: Vec<(String, i64)>,
    whole_machine: bool,
) -> (Report, Option<String>) {
    let w = &sh.w;
    results.sort_by_key(|r| r.task);
    let figures = trace_figures(sh, &mut results, trace, t0, stop, &mut host);
    let muqss = sys::is_muqss();
    let mut absent = Vec::new();
    if figures.is_none() {
        absent.push("runtime_per_switch (needs tracefs)".to_string());
    }
    let to_others_pct = figures.as_ref().map(|f| {
        let invol: u64 = f.per_tid.values().map(|e| e.1).sum();
        f.preempted_by_others as f64 * 100.0 / invol.max(1) as f64
    });
    let TaskRows { raw, spec_lat, switches: switches_total, migrations: migrations_total } =
        task_rows(w, &results, figures.as_ref());
    if figures.is_none() && results.iter().any(|r| r.migrations.is_none()) {
        absent.push("migrations (needs tracefs or CONFIG_SCHED_DEBUG's /proc/PID/sched)".to_string());
    }
    if figures.is_none() && results.iter().any(|r| r.run_delay.is_none()) {
        absent.push("run_delay (needs CONFIG_SCHED_INFO's /proc/PID/schedstat)".to_string());
    }
    let finished = !results.is_empty() && results.iter().all(|r| r.exited.is_some());
    let duration = if finished { results.iter().filter_map(|r| r.exited).max().unwrap_or(0) } else { stop - t0 };
    let stat_count = if muqss {
        // pc_user_time()/pc_system_time() and account_process_tick() both
        // add a busy CPU's time to /proc/stat under MuQSS.
        host.notes.push("/proc/stat's busy time is halved: MuQSS counts a busy CPU's time there twice".to_string());
        2
    } else {
        1
    };
    let (per_cpu, other) = cpu_accounting(&sh.cpu_map, &results, stat0, stat1, duration, stat_count);
    let capacity = (stop - t0).max(1) as f64 * sh.cpu_map.len() as f64;
    let other_pct = other as f64 / capacity * 100.0;
    let others = figures.as_ref().filter(|_| whole_machine).map(|f| {
        let per_s = |runs: u64| runs as f64 * 1e9 / (stop - t0).max(1) as f64;
        let controller_runs = f.controller_runs.len() as u64;
        let controller_on_cpu: Nanos = f.controller_runs.iter().sum();
        [
            (OTHER_TASKS_RUNS_PER_S, per_s(f.other_runs)),
            (OTHER_TASKS_RUN_MEAN_US, f.other_on_cpu as f64 / f.other_runs.max(1) as f64 / 1e3),
            (OTHER_TASKS_CPU_PCT, f.other_on_cpu as f64 / capacity * 100.0),
            (CONTROLLER_RUNS_PER_S, per_s(controller_runs)),
            (CONTROLLER_RUN_MEAN_US, controller_on_cpu as f64 / controller_runs.max(1) as f64 / 1e3),
            (CONTROLLER_RUN_P50_US, crate::calibrate::median(f.controller_runs.clone()) as f64 / 1e3),
            (OTHER_TASKS_PINNED_RUNS_PER_S, per_s(pinned_runs(&f.other_runs_of, crate::sys::cpus_allowed_of))),
        ]
    });
    let foreign = (other_pct >= FOREIGN_LOAD_WARN_PCT).then(|| {
        format!(
            "other processes used {other_pct:.1}% of the workload's CPUs during the run: the figures include \
             their competition"
        )
    });
    host.notes.extend(foreign.clone());
    let ticks_pct = ticks_delivered_pct(&sh.cpu_map, stat0, stat1, stop - t0, stat_count);
    let exits: Vec<Nanos> = figures.as_ref().map_or_else(Vec::new, |f| f.exit_cpu.values().copied().collect());
    let exit_p50 = (!exits.is_empty()).then(|| crate::calibrate::median(exits));
    let (beyond, fork_cpu) = beyond_work(w, &results);
    let timer_wakeup = cpu_per_wakeup(w, &results, beyond, runs_and_sleeps);
    let timer_split = trace.filter(|_| figures.is_some()).and_then(|ev| sleep_split(ev, &results, t0, stop));
    let wait_wakeup = cpu_per_wakeup(w, &results, beyond, runs_and_waits);
    let yielded = yield_cost(w, &results, beyond);
    let signal_split = figures.as_ref().map(|f| {
        (waiters_median(w, &results, &f.before_waking, true), waiters_median(w, &results, &f.after_waking, false))
    });
    let (to_signal, after_signal) = signal_split.unwrap_or((None, None));
    let idle_wakeup = figures.as_ref().filter(|f| !f.idle_wakeups.is_empty()).map(|f| {
        let mean = f.idle_wakeups.iter().sum::<Nanos>() / f.idle_wakeups.len() as Nanos;
        (crate::calibrate::median(f.idle_wakeups.clone()), mean)
    });
    let preempt_wakeup = figures
        .as_ref()
        .filter(|f| !f.preempting_wakeups.is_empty())
        .map(|f| crate::calibrate::median(f.preempting_wakeups.clone()));
    let sleep_late: Vec<(String, f64)> = timers
        .and_then(|t| t.busy_sleeps)
        .into_iter()
        .flat_map(|q| {
            crate::tracing::SLEEP_PERCENTILES.iter().zip(q).map(|(&p, ns)| (sleep_timer_late_name(p), ns as f64 / 1e3))
        })
        .collect();
    timing_notes(&mut host, ticks_pct, timers);
    let counts = RunCounts {
        stop: duration,
        finished,
        context_switches: switches_total,
        migrations: migrations_total,
        events: 0,
    };
    let head =
        Report {
            source: "host".into(),
            scheduler: format!("linux {} (this machine)", host.kernel_release),
            workload: w.name.clone(),
            seed: w.seed,
            cpus: w.nr_cpus(),
            hz: host.hz.unwrap_or(0),
            tunables,
            per_cpu,
            extra: std::iter::once(("other_processes_cpu_pct", other_pct))
                .chain(to_others_pct.map(|p| ("involuntary_to_other_processes_pct", p)))
                .chain(others.into_iter().flatten())
                .chain(ticks_pct.map(|p| (TICKS_DELIVERED, p)))
                .chain(std::iter::once((UPTIME_AT_START, t0 as f64 / 1e9)))
                .chain(start_p50(&results, true, |r| r.cpu_before_start).map(|c| (CPU_BEFORE_START_P50, c)))
                .chain(start_p50(&results, false, |r| r.cpu_before_start).map(|c| (FORKED_CPU_BEFORE_START_P50, c)))
                .chain({
                    let sleeps: Vec<Nanos> = results.iter().filter_map(|r| r.sleeps_before_start).collect();
                    (!sleeps.is_empty()).then(|| (SLEEPS_BEFORE_START_P50, crate::calibrate::median(sleeps) as f64))
                })
                .chain(start_p50(&results, true, |r| r.cpu_at_gate).map(|c| (CPU_AT_GATE_P50, c)))
                .chain(exit_p50.map(|e| (THREAD_EXIT_P50, e as f64 / 1e3)))
                .chain(beyond.map(|b| (CPU_BEYOND_WORK_PCT, b * 100.0)))
                .chain(fork_cpu.map(|f| (FORK_CPU_US, f as f64 / 1e3)))
                .chain(timer_wakeup.map(|t| (TIMER_WAKEUP_CPU_US, t as f64 / 1e3)))
                .chain(
                    timer_split.into_iter().flat_map(|(call, ret)| {
                        [(TIMER_CALL_US, call as f64 / 1e3), (TIMER_RETURN_US, ret as f64 / 1e3)]
                    }),
                )
                .chain(
                    yielded
                        .into_iter()
                        .flat_map(|(cpu, switched)| [(YIELD_CPU_US, cpu as f64 / 1e3), (YIELD_SWITCHED_PCT, switched)]),
                )
                .chain(wait_wakeup.map(|t| (WAIT_WAKEUP_CPU_US, t as f64 / 1e3)))
                .chain(to_signal.map(|t| (WAIT_RUN_TO_SIGNAL_US, t as f64 / 1e3)))
                .chain(after_signal.map(|t| (WAIT_SIGNAL_TO_SWITCH_US, t as f64 / 1e3)))
                .chain(idle_wakeup.into_iter().flat_map(|(p50, mean)| {
                    [(IDLE_WAKEUP_P50, p50 as f64 / 1e3), (IDLE_WAKEUP_MEAN, mean as f64 / 1e3)]
                }))
                .chain(preempt_wakeup.map(|t| (PREEMPT_WAKEUP_P50, t as f64 / 1e3)))
                .chain(std::iter::once((CONTROLLER_CPU_BEFORE_SPAWN, sh.controller_cpu_before_spawn as f64 / 1e6)))
                .chain(sh.controller_stat_priority.map(|p| (CONTROLLER_STAT_PRIORITY, p as f64)))
                .chain(std::iter::once((
                    CONTROLLER_CPU_PER_SPAWN,
                    sh.controller_cpu_per_spawn.load(Ordering::SeqCst) as f64 / 1e3,
                )))
                .chain(
                    timers
                        .into_iter()
                        .flat_map(|t| [(TIMER_LATE_P50, t.median as f64 / 1e3), (TIMER_LATE_P90, t.p90 as f64 / 1e3)]),
                )
                .chain(timers.and_then(|t| t.tick_gap).map(|g| (TICK_GAP_P50_US, g as f64 / 1e3)))
                .chain(timers.and_then(|t| t.busy_sleep_to_waking).map(|d| (SLEEP_TIMER_TO_WAKING_US, d as f64 / 1e3)))
                .map(|(name, value)| (name.to_string(), value))
                .chain(sleep_late)
                .map(|(name, value)| (name, (value * 10.0).round() / 10.0))
                .collect(),
            absent,
            host: Some(host),
            ..Report::default()
        };
    let names: Vec<String> = w.tasks.iter().map(|t| t.name.clone()).collect();
    let spec_rps = figures.map(|f| f.rps).unwrap_or_else(|| vec![Hist::default(); w.tasks.len()]);
    (assemble(head, counts, raw, &names, &spec_lat, &spec_rps), foreign)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sched_switch line on `cpu`, as tracefs prints it.
    fn sw(cpu: u32, ts: &str, prev: u32, state: &str, next: u32) -> String {
        format!(
            " x-{prev} [00{cpu}] d.... {ts}: sched_switch: prev_comm=x prev_pid={prev} prev_prio=120 \
             prev_state={state} ==> next_comm=y next_pid={next} next_prio=120\n"
        )
    }

    /// A sched_waking line: `by`, running on `cpu`, wakes `pid` for `target`.
    fn waking(cpu: u32, ts: &str, by: u32, pid: u32, target: u32) -> String {
        format!(" x-{by} [00{cpu}] d.... {ts}: sched_waking: comm=x pid={pid} prio=120 target_cpu=00{target}\n")
    }

    #[test]
    fn a_pipe_hop_is_split_at_the_wakeup_its_reader_sends_and_an_idle_cpus_wakeup_timed() {
        // lat_ctx: ping (20) on CPU 0 and pong (21) on CPU 1 each run 90
        // us, waking the other 30 us in, whose idle CPU runs it 50 us
        // after the wakeup.
        let text = [
            sw(0, "1.000000", 0, "R", 20),
            waking(0, "1.000030", 20, 21, 1),
            sw(1, "1.000080", 0, "R", 21),
            sw(0, "1.000090", 20, "S", 0),
            waking(1, "1.000110", 21, 20, 0),
            sw(0, "1.000160", 0, "R", 20),
            sw(1, "1.000170", 21, "S", 0),
        ]
        .concat();
        let events = schedlab_sim::formats::ftrace::parse(&text).unwrap();
        let spec_of = HashMap::from([(20, 0), (21, 1)]);
        let none = HashMap::new();
        let f = analyse_trace(
            &events,
            &Ours { spec_of: &spec_of, nr_specs: 2, begun: &none, ended: &none, controller: 0 },
            1_000_000_000,
            1_010_000_000,
        );
        assert_eq!(f.before_waking.get(&20), Some(&(30_000, 1)));
        assert_eq!(f.after_waking.get(&20), Some(&(60_000, 1)));
        assert_eq!(f.before_waking.get(&21), Some(&(30_000, 1)));
        assert_eq!(f.after_waking.get(&21), Some(&(60_000, 1)));
        assert_eq!(f.idle_wakeups, vec![50_000, 50_000]);
    }

    #[test]
    fn the_controllers_runs_are_counted_apart_among_the_other_tasks() {
        // Our thread 20 on CPU 0; the controller (1) runs 50 us twice on
        // CPU 1 and a kernel thread (99) 100 us once; the last run is cut
        // by the window's end at 1.010 s. A run of the controller from
        // 0.9999 s on CPU 1 crosses t0 with 200 us inside, and one of the
        // kernel thread ends before it.
        let text = [
            sw(1, "0.999000", 0, "R", 99),
            sw(1, "0.999500", 99, "S", 1),
            sw(1, "1.000200", 1, "S", 0),
            sw(0, "1.000000", 0, "R", 20),
            sw(1, "1.001000", 0, "R", 1),
            sw(1, "1.001050", 1, "S", 99),
            sw(1, "1.001150", 99, "S", 0),
            sw(1, "1.009970", 0, "R", 1),
        ]
        .concat();
        let events = schedlab_sim::formats::ftrace::parse(&text).unwrap();
        let spec_of = HashMap::from([(20, 0)]);
        let none = HashMap::new();
        let read = |controller| {
            let ours = Ours { spec_of: &spec_of, nr_specs: 1, begun: &none, ended: &none, controller };
            analyse_trace(&events, &ours, 1_000_000_000, 1_010_000_000)
        };
        let f = read(1);
        assert_eq!((f.other_runs, f.other_on_cpu), (4, 380_000));
        // Three runs of 280 us in all.
        let mut times = f.controller_runs.clone();
        times.sort_unstable();
        assert_eq!(times, [30_000, 50_000, 200_000], "the median, 50 us, is the watch's");
        // The kernel thread bound to its CPU, the controller not.
        assert_eq!(f.other_runs_of, HashMap::from([(1, 3), (99, 1)]));
        assert_eq!(pinned_runs(&f.other_runs_of, |tid| Some(if tid == 99 { 1 } else { 2 })), 1);
        assert_eq!(pinned_runs(&f.other_runs_of, |_| None), 0, "tasks gone by the end count as unbound");
        // With no controller named (0, the idle task's), none is its.
        let f = read(0);
        assert_eq!((f.other_runs, f.controller_runs.len()), (4, 0));
    }

    #[test]
    fn a_timed_sleep_is_split_at_its_threads_switches_and_a_preempted_one_left_out() {
        // A sleeper (31) beside a hog (30) on CPU 0, 60 sleeps 1 ms apart:
        // 20 us from its clock before the call to its switch out, 40 us
        // from its switch back in to its clock after the return. Every
        // tenth is preempted on its way out (a switch in state R first),
        // and is left out.
        let ts = |ns: u64| format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1_000);
        let (mut text, mut sleeps) = (String::new(), Vec::new());
        for i in 0..60u64 {
            let called = 1_000_000_000 + i * 1_000_000;
            let out = called + 20_000;
            let back = called + 500_000;
            if i % 10 == 9 {
                text += &sw(0, &ts(called + 5_000), 31, "R", 30);
                text += &sw(0, &ts(called + 15_000), 30, "R", 31);
            }
            text += &sw(0, &ts(out), 31, "S", 30);
            text += &sw(0, &ts(back), 30, "R", 31);
            sleeps.push((called, back + 40_000));
        }
        let events = schedlab_sim::formats::ftrace::parse(&text).unwrap();
        let sleeper = ThreadResult { tid: 31, sleeps: sleeps.clone(), ..ThreadResult::default() };
        let (t0, stop) = (1_000_000_000, 2_000_000_000);
        assert_eq!(sleep_split(&events, std::slice::from_ref(&sleeper), t0, stop), Some((20_000, 40_000)));
        // Fewer than SLEEP_SPLITS_MIN sleeps inside the window: no figure.
        assert_eq!(sleep_split(&events, &[sleeper], t0, 1_040_000_000), None);
    }

    #[test]
    fn a_wakeup_that_preempts_a_busy_cpu_is_timed_to_its_switch_and_one_that_waits_is_not() {
        // A hog (30) runs on CPU 0; its timer's interrupt wakes a sleeper
        // (31) there, which preempts the hog 50 us later; the next wakeup
        // waits 3 ms for the hog's slice to end, a decision of the
        // scheduler's, not the interrupt's path.
        let text = [
            sw(0, "0.999000", 0, "R", 30),
            waking(0, "1.000000", 30, 31, 0),
            sw(0, "1.000050", 30, "R", 31),
            sw(0, "1.000100", 31, "S", 30),
            waking(0, "1.010000", 30, 31, 0),
            sw(0, "1.013000", 30, "R", 31),
            sw(0, "1.013050", 31, "S", 30),
        ]
        .concat();
        let events = schedlab_sim::formats::ftrace::parse(&text).unwrap();
        let spec_of = HashMap::from([(30, 0), (31, 1)]);
        let none = HashMap::new();
        let f = analyse_trace(
            &events,
            &Ours { spec_of: &spec_of, nr_specs: 2, begun: &none, ended: &none, controller: 0 },
            1_000_000_000 - 1,
            1_020_000_000,
        );
        assert_eq!(f.preempting_wakeups, vec![50_000]);
        assert!(f.idle_wakeups.is_empty(), "a CPU's own interrupt wakes no idle CPU");
    }

    #[test]
    fn the_trace_gives_each_threads_run_delay_and_exit() {
        // On one CPU: thread 10 runs; 11 is forked at 1.000 s and first
        // runs at 1.002 (2 ms of delay) when 10 is preempted, exits at
        // 1.003, and 10 runs again (1 ms); 10 sleeps at 1.004, is woken
        // at 1.005 (and again, which changes nothing) and runs at 1.006;
        // a wakeup while it runs adds nothing either.
        let wake = |ts: &str, pid: u32, new: &str| {
            format!(" x-1 [000] d.... {ts}: sched_wakeup{new}: comm=x pid={pid} prio=120 target_cpu=000\n")
        };
        let text = [
            sw(0, "0.999000", 0, "R", 10),
            wake("1.000000", 11, "_new"),
            sw(0, "1.002000", 10, "R", 11),
            sw(0, "1.003000", 11, "X", 10),
            sw(0, "1.004000", 10, "S", 0),
            wake("1.005000", 10, ""),
            wake("1.005500", 10, ""),
            sw(0, "1.006000", 0, "R", 10),
            wake("1.006500", 10, ""),
            sw(0, "1.007000", 10, "S", 0),
        ]
        .concat();
        let events = schedlab_sim::formats::ftrace::parse(&text).unwrap();
        let spec_of = HashMap::from([(10, 0), (11, 0)]);
        // 11's program ended at 1.0026 s: its exit took 0.4 ms of CPU.
        let ended = HashMap::from([(11, 1_002_600_000)]);
        let begun = HashMap::from([(11, 1_002_000_000)]);
        let f = analyse_trace(
            &events,
            &Ours { spec_of: &spec_of, nr_specs: 1, begun: &begun, ended: &ended, controller: 0 },
            1_000_000_000,
            1_010_000_000,
        );
        assert_eq!(f.run_delay.get(&11), Some(&2_000_000));
        assert_eq!(f.run_delay.get(&10), Some(&2_000_000));
        assert_eq!(f.exit_cpu.get(&11), Some(&400_000));
        assert_eq!(f.exit_cpu.get(&10), None);
        // 11 ran its program from 1.002 to 1.0026 s (its exit after is
        // left out); 10 ran 1 ms before the window, then 2 + 1 + 1 ms in it.
        assert_eq!(f.on_cpu.get(&11), Some(&600_000));
        assert_eq!(f.on_cpu.get(&10), Some(&4_000_000));
        // A window that starts inside a wait counts only its part.
        let f = analyse_trace(
            &events,
            &Ours { spec_of: &spec_of, nr_specs: 1, begun: &begun, ended: &ended, controller: 0 },
            1_001_500_000,
            1_010_000_000,
        );
        assert_eq!(f.run_delay.get(&11), Some(&500_000));
    }

    #[test]
    fn cpu_beyond_work_is_read_from_threads_that_only_run_and_forks_from_forkers() {
        let w = Workload::from_toml(
            r#"
[[task]]
name = "hog"
program = [ { loop = "forever", body = [ { run = "10ms" } ] } ]
[[task]]
name = "parent"
program = [ { loop = 200, body = [ { run = "50us" }, { fork = "child" } ] } ]
[[task]]
name = "child"
template = true
program = [ { run = "4ms" }, { exit = true } ]
[[task]]
name = "sleeper"
program = [ { loop = "forever", body = [ { run = "1ms" }, { sleep = "1ms" } ] } ]
"#,
            "t.toml",
            &Default::default(),
        )
        .unwrap();
        let ms = 1_000_000;
        let thread = |spec: u32, burnt: Nanos, cpu_time: Nanos, forks: u64| ThreadResult {
            spec,
            burnt,
            cpu_time,
            forks,
            ..ThreadResult::default()
        };
        // The hog and a child had 10% more on their clocks than they spun
        // for; the sleeper's clock also holds its sleeps' system calls,
        // and is left out; the parent spun 10 ms and spent 300 us a fork.
        let results = [
            thread(0, 100 * ms, 110 * ms, 0),
            thread(2, 4 * ms, 4_400_000, 0),
            thread(3, 50 * ms, 80 * ms, 0),
            thread(1, 10 * ms, 11 * ms + 200 * 300_000, 200),
        ];
        let (beyond, fork) = beyond_work(&w, &results);
        assert!((beyond.unwrap() - 0.10).abs() < 1e-9, "{beyond:?}");
        assert_eq!(fork, Some(300_000));
        // The sleeper woke 10,000 times: its 30 ms beyond its 50 ms of
        // runs, less their 5 ms of stretch, is 2.5 us a wakeup; the
        // others never slept and say nothing of it.
        let mut results = results;
        results[2].wakeups = 10_000;
        assert_eq!(cpu_per_wakeup(&w, &results, beyond, runs_and_sleeps), Some(2_500));
        assert_eq!(cpu_per_wakeup(&w, &results[..2], beyond, runs_and_sleeps), None);
        assert_eq!(cpu_per_wakeup(&w, &results, beyond, runs_and_waits), None, "nobody waits on a channel");
        // Without threads that only run, neither is known but the fork.
        let (beyond, fork) = beyond_work(&w, &results[2..]);
        assert_eq!(beyond, None);
        assert_eq!(fork, Some((11 * ms + 200 * 300_000 - 10 * ms) / 200));
    }

    #[test]
    fn a_yielders_cpu_per_yield_is_what_its_clock_holds_beyond_its_stretched_work() {
        let w = Workload::from_toml(
            r#"
[[task]]
name = "yielder"
program = [ { loop = "forever", body = [ { run = "100us" }, { yield = true } ] } ]
[[task]]
name = "hog"
program = [ { loop = "forever", body = [ { run = "10ms" } ] } ]
"#,
            "t.toml",
            &Default::default(),
        )
        .unwrap();
        let ms = 1_000_000;
        // The hog's clock holds 2% more than it spun: the yielder's 70 ms
        // of runs count 71.4 ms of it, and its 700 yields the other 28.6
        // ms (40.9 us each); it was switched out at 350 of them.
        let hog = ThreadResult { spec: 1, burnt: 2_000 * ms, cpu_time: 2_040 * ms, ..ThreadResult::default() };
        let yielder = ThreadResult {
            spec: 0,
            burnt: 70 * ms,
            cpu_time: 100 * ms,
            yields: 700,
            involuntary: 350,
            ..ThreadResult::default()
        };
        let results = [yielder, hog];
        let (beyond, _) = beyond_work(&w, &results);
        assert_eq!(yield_cost(&w, &results, beyond), Some((40_857, 50.0)));
        // A tick's preemption besides every yield's switch counts one
        // switch a yield, not more.
        let mut results = results;
        results[0].involuntary = 800;
        assert_eq!(yield_cost(&w, &results, beyond).map(|(_, s)| s), Some(100.0));
        // A thread that never yielded says nothing.
        results[0].yields = 0;
        assert_eq!(yield_cost(&w, &results, beyond), None);
    }

    #[test]
    fn lost_ticks_show_as_busy_time_not_counted() {
        let hz = sys::user_hz();
        // A 3 s window; CPU 0 busy throughout with 6% of its ticks lost,
        // CPU 1 busy with every tick, CPU 2 idle most of the time.
        let window = 3_000_000_000;
        let stat0 = [(0, 0), (0, 0), (0, 0)];
        let stat1 = [(3 * hz * 94 / 100, 0), (3 * hz, 0), (hz / 10, 3 * hz - hz / 10)];
        let pct = ticks_delivered_pct(&[0, 1, 2], &stat0, &stat1, window, 1).unwrap();
        assert!((pct - 94.0).abs() < 0.5, "{pct}");
        assert_eq!(ticks_delivered_pct(&[1, 2], &stat0, &stat1, window, 1), Some(100.0));
        // An idle CPU says nothing of ticks, nor does one that idles
        // often: passing a token, busy 60% by the clock and 27% by ticks.
        assert_eq!(ticks_delivered_pct(&[2], &stat0, &stat1, window, 1), None);
        let token = [(3 * hz * 27 / 100, 3 * hz * 40 / 100)];
        assert_eq!(ticks_delivered_pct(&[0], &stat0[..1], &token, window, 1), None);
        // MuQSS counts busy time twice.
        let doubled = [(6 * hz, 0)];
        assert_eq!(ticks_delivered_pct(&[0], &stat0[..1], &doubled, window, 2), Some(100.0));
    }

    #[test]
    fn a_per_cpu_kernel_thread_is_read_as_bound_to_one_cpu_and_this_process_not() {
        // ksoftirqd/0 exists on every Linux machine and may run on CPU 0
        // only; this test's process may run on every CPU it was given.
        let ksoftirqd = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .find(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "ksoftirqd/0"))
            .expect("ksoftirqd/0 in /proc");
        assert_eq!(crate::sys::cpus_allowed_of(ksoftirqd), Some(1));
        let mine = crate::sys::allowed_cpus().len();
        assert_eq!(crate::sys::cpus_allowed_of(std::process::id() as i32), Some(mine));
        assert_eq!(crate::sys::cpus_allowed_of(i32::MAX), None, "no such task");
    }
}
