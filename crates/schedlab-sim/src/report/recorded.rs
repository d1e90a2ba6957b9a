//! The report of a run that nobody simulated: a real program's schedule as
//! a kernel traced it (sched_switch, sched_wakeup(_new), sched_migrate_task,
//! sched_process_fork/exec/exit; tracefs text, with or without the
//! record-tgid column), turned into the same [`Report`] a simulation fills,
//! so a guest kernel running `stress-ng` gets a row beside the models.
//!
//! Whose figures: the program's tasks are the processes the runner started
//! (`roots`) and everything they forked, as sched_process_fork says; with
//! no roots, every task but the idle tasks. Everything else on the machine
//! (kernel threads, the runner) is "other processes": it makes CPUs busy
//! and its share is reported as `other_processes_cpu_pct`, as `schedlab
//! host` reports it.
//!
//! The figures, inside the window [from, to] of the trace's clock:
//! - CPU time: from each sched_switch onto a task to the one off it;
//!   run time per switch is each such stretch.
//! - A context switch is a switch away from one of the program's tasks;
//!   involuntary when prev_state is R or R+ (preempted), voluntary
//!   otherwise (a sleep, or the last switch of an exiting task, which the
//!   kernel counts in the dead task's nvcsw as well).
//! - Wakeup latency: from when the task was due to wake to its next switch
//!   onto a CPU, as the host runner and the simulator count it. A task
//!   woken by its own sleep's timer (hrtimer_wakeup, where the trace has
//!   timer:hrtimer_start and hrtimer_expire_entry) was due at the time it
//!   asked for (the timer's softexpires): that is cyclictest's latency, the
//!   timer's own lateness included, less the return to user space. Any
//!   other wakeup was due at its sched_waking (sched_wakeup in a trace
//!   without it), the waker's call. A wakeup of a task still on its CPU
//!   waits for nothing and is not counted, nor is a new task's first run.
//!   Time runnable and not running (after a wakeup, a fork or a
//!   preemption) is its run delay.
//! - Migrations: sched_migrate_task of the program's tasks.
//! - Per CPU, busy is the program's tasks' time on it and idle the rest,
//!   so busy + idle is the window on every CPU, as in a simulation.
//!
//! Tasks are named `comm-tid`, as ftrace heads its lines; each is counted
//! under its process's name (the comm of its thread group's leader, from
//! the record-tgid column; a task whose group was never seen is its own),
//! so the workers a program forks under one name are one entry of the
//! report, whatever their PIDs were in this run.

use crate::formats::ftrace::{self, SchedEvent, SchedEventKind};
use crate::report::{CpuReport, Hist, Report, RunCounts, TaskRaw, assemble};
use crate::time::Nanos;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What is known of a traced run besides its trace.
#[derive(Clone, Debug, Default)]
pub struct RecordedRun {
    /// The processes the runner started; empty for "every task".
    pub roots: Vec<u32>,
    /// The window on the trace's clock, in ns.
    pub from: Nanos,
    pub to: Nanos,
    /// CPUs of the machine that was traced.
    pub nr_cpus: u32,
}

/// One line of the trace that the report reads.
pub enum Item {
    Sched(SchedEvent),
    /// timer:hrtimer_start that may be a sleep's timer, armed by `pid` for
    /// `soft` (softexpires, the time asked for).
    SleepArmed {
        ts: Nanos,
        pid: u32,
        function: String,
        soft: Nanos,
    },
    /// timer:hrtimer_expire_entry that may be a sleep's timer, on `cpu`.
    SleepExpired {
        ts: Nanos,
        cpu: u32,
        function: String,
    },
}

impl Item {
    pub fn ts(&self) -> Nanos {
        match self {
            Item::Sched(e) => e.ts,
            Item::SleepArmed { ts, .. } | Item::SleepExpired { ts, .. } => *ts,
        }
    }
}

/// A trace's lines as events, with the thread group each line's own task
/// belongs to where the trace says.
pub struct Parsed {
    pub items: Vec<Item>,
    pub tgid: HashMap<u32, u32>,
}

/// Whether an hrtimer event's function may be a sleep's: hrtimer_wakeup,
/// or an address (a kernel without kallsyms prints `function=0xffff...`;
/// such a timer counts only when the wakeup of its task follows its
/// expiry at once, see `report`).
fn maybe_sleep(fields: &str) -> bool {
    fields.contains("function=hrtimer_wakeup") || fields.contains("function=0x")
}

impl Parsed {
    /// The first and last sched event's times: the span a replay of the
    /// trace covers.
    pub fn sched_span(&self) -> Option<(Nanos, Nanos)> {
        let mut sched = self.items.iter().filter(|i| matches!(i, Item::Sched(_))).map(Item::ts);
        let from = sched.next()?;
        Some((from, sched.next_back().unwrap_or(from)))
    }
}

/// The hrtimer events of a sleep's timer, where `line` is one. Timers
/// are told apart by their function, not their pointer: a kernel whose
/// pointer hashing is not seeded yet prints every one as
/// `(____ptrval____)` (the 6.1 guests early after boot).
fn sleep_timer(line: &str) -> Option<Item> {
    let value = |fields: &str, key: &str| -> Option<String> {
        fields.split_whitespace().find_map(|f| f.strip_prefix(key)?.strip_prefix('=').map(str::to_string))
    };
    let ts_of = |head: &str| -> Option<Nanos> {
        let ts = head.trim_end().trim_end_matches(':').split_whitespace().last()?;
        let (secs, frac) = ts.split_once('.')?;
        let frac_ns = frac.parse::<u64>().ok()? * 10u64.checked_pow(9u32.checked_sub(frac.len() as u32)?)?;
        secs.parse::<u64>().ok()?.checked_mul(1_000_000_000)?.checked_add(frac_ns)
    };
    let function =
        |fields: &str| value(fields, "function").map(|f| f.split('/').next().unwrap_or_default().to_string());
    if let Some((head, fields)) = line.split_once(" hrtimer_start: ") {
        if !maybe_sleep(fields) {
            return None;
        }
        let (pid, _) = ftrace::line_context(line)?;
        let soft = value(fields, "softexpires").or_else(|| value(fields, "expires"))?.parse().ok()?;
        return Some(Item::SleepArmed { ts: ts_of(head)?, pid, function: function(fields)?, soft });
    }
    let (head, fields) = line.split_once(" hrtimer_expire_entry: ")?;
    if !maybe_sleep(fields) {
        return None;
    }
    let open = head.rfind('[')?;
    let cpu = head[open + 1..].split(']').next()?.trim().parse().ok()?;
    Some(Item::SleepExpired { ts: ts_of(head)?, cpu, function: function(fields)? })
}

/// Parses tracefs text (record-tgid or not); an error names the line.
pub fn parse(text: &str) -> Result<Parsed, String> {
    let mut items = Vec::new();
    let mut tgid = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        match ftrace::parse_line(line) {
            Ok(Some(ev)) => {
                if let Some((pid, Some(group))) = ftrace::line_context(line)
                    && pid != 0
                {
                    tgid.insert(pid, group);
                }
                items.push(Item::Sched(ev));
            }
            Ok(None) => items.extend(sleep_timer(line)),
            Err(e) => return Err(format!("line {}: {e}: {}", i + 1, line.trim())),
        }
    }
    // tracefs merges its per-CPU buffers in time order; perf and trace-cmd
    // too. A stable sort keeps equal stamps in the order printed.
    items.sort_by_key(Item::ts);
    Ok(Parsed { items, tgid })
}

/// How soon after a timer's expiry the wakeup of the task that armed it
/// must come to be that timer's.
const SLEEP_WAKE_WITHIN: Nanos = 200_000;

#[derive(Default)]
struct Task {
    comm: String,
    created: Option<Nanos>,
    /// The counts the report is built from (its times on the trace's
    /// clock until the report's window is applied).
    raw: TaskRaw,
    /// When it became runnable without running (a wakeup, fork or preemption).
    runnable_since: Option<Nanos>,
    /// When its latest wakeup (not a fork) was due, until it runs.
    woken_at: Option<Nanos>,
    rps: Hist,
    lat: Hist,
    first_seen: usize,
}

/// Builds the report of `run` from its parsed trace. `head` carries what
/// the caller knows of the run (source, scheduler, workload, hz, the host);
/// the figures, tasks and per-CPU time are the trace's.
pub fn report(parsed: &Parsed, run: &RecordedRun, head: Report) -> Report {
    let (from, to) = (run.from, run.to.max(run.from));
    let overlap = |since: Nanos, until: Nanos| until.min(to).saturating_sub(since.max(from));
    let inside = |ts: Nanos| ts >= from && ts <= to;
    let all = run.roots.is_empty();
    let mut ours: BTreeSet<u32> = run.roots.iter().copied().collect();
    let mut tasks: BTreeMap<u32, Task> = BTreeMap::new();
    let mut order = 0usize;
    let mut task = |tasks: &mut BTreeMap<u32, Task>, pid: u32, comm: &str| {
        let t = tasks.entry(pid).or_insert_with(|| {
            order += 1;
            Task { first_seen: order, ..Task::default() }
        });
        if !comm.is_empty() {
            t.comm = comm.to_string();
        }
    };
    let nr_cpus = run.nr_cpus.max(1) as usize;
    let mut on_cpu: Vec<Option<(u32, Nanos)>> = vec![None; nr_cpus];
    let mut seen = vec![false; nr_cpus];
    let mut busy = vec![0 as Nanos; nr_cpus];
    let mut others = 0 as Nanos;
    let (mut switches, mut migrations) = (0u64, 0u64);
    let is_ours = |ours: &BTreeSet<u32>, pid: u32| pid != 0 && (all || ours.contains(&pid));
    let has_waking =
        parsed.items.iter().any(|i| matches!(i, Item::Sched(SchedEvent { kind: SchedEventKind::Waking { .. }, .. })));
    // The sleep timers each task armed (by function, for when), and the
    // latest timer expiry on each CPU: a task woken from a CPU's timer
    // interrupt just after a timer of the function it armed expired there
    // was woken by that timer. (The hrtick is armed in its task's context
    // too, but with another function.)
    let mut armed: HashMap<u32, HashMap<&str, Nanos>> = HashMap::new();
    let mut last_expiry: HashMap<u32, (Nanos, &str)> = HashMap::new();
    for item in parsed.items.iter().take_while(|i| i.ts() <= to) {
        let ev = match item {
            Item::Sched(ev) => ev,
            Item::SleepArmed { pid, function, soft, .. } => {
                armed.entry(*pid).or_default().insert(function, *soft);
                continue;
            }
            Item::SleepExpired { ts, cpu, function } => {
                last_expiry.insert(*cpu, (*ts, function));
                continue;
            }
        };
        let cpu = ev.cpu as usize;
        if cpu >= on_cpu.len() {
            on_cpu.resize(cpu + 1, None);
            seen.resize(cpu + 1, false);
            busy.resize(cpu + 1, 0);
        }
        match &ev.kind {
            SchedEventKind::Switch { prev_comm, prev_pid, prev_state, next_comm, next_pid, .. } => {
                // The time since this CPU's last switch was prev's, whoever
                // the trace last saw switched in; before the CPU's first
                // switch, prev's since the trace began.
                let first = !std::mem::replace(&mut seen[cpu], true);
                let mut current = on_cpu[cpu].take().or((first && *prev_pid != 0).then_some((*prev_pid, from)));
                // A task leaving a CPU the trace last saw idle was switched
                // in without a sched_switch: this machine's 6.18 kernel
                // leaves out some idle-to-task switches (cyclictest's main
                // thread, woken by its timer on an idle CPU: 9 of 54
                // switch-ins traced). It ran from its wakeup, since the
                // CPU had nothing else; how long it waited is not known.
                if let Some((0, idle_since)) = current
                    && *prev_pid != 0
                {
                    let woken = tasks.get_mut(prev_pid).and_then(|t| {
                        t.woken_at = None;
                        t.runnable_since.take()
                    });
                    current = Some((*prev_pid, woken.map_or(idle_since, |w| w.max(idle_since))));
                }
                if let Some((pid, since)) = current {
                    let ran = overlap(since, ev.ts);
                    if is_ours(&ours, pid) {
                        busy[cpu] += ran;
                        // A task first seen leaving its CPU.
                        task(&mut tasks, pid, if pid == *prev_pid { prev_comm } else { "" });
                        if let Some(t) = tasks.get_mut(&pid) {
                            t.raw.cpu_time += ran;
                            if pid == *prev_pid && inside(ev.ts) {
                                t.rps.record(ev.ts - since.max(from));
                            }
                        }
                    } else if pid != 0 {
                        others += ran;
                    }
                }
                if is_ours(&ours, *prev_pid) {
                    task(&mut tasks, *prev_pid, prev_comm);
                    let t = tasks.get_mut(prev_pid).expect("just made");
                    let exiting = prev_state.starts_with('X') || prev_state.starts_with('Z');
                    if prev_state.starts_with('R') {
                        t.runnable_since = Some(ev.ts);
                    } else if exiting {
                        // It ran from sched_process_exit to here: its life
                        // ends at its last switch, or its share of the time
                        // it lived would pass 100%.
                        t.raw.exited = Some(ev.ts);
                    }
                    if inside(ev.ts) {
                        switches += 1;
                        if prev_state.starts_with('R') {
                            t.raw.involuntary += 1;
                        } else {
                            t.raw.voluntary += 1;
                        }
                    }
                }
                if is_ours(&ours, *next_pid) {
                    task(&mut tasks, *next_pid, next_comm);
                    let t = tasks.get_mut(next_pid).expect("just made");
                    if let Some(since) = t.runnable_since.take() {
                        t.raw.run_delay += overlap(since, ev.ts);
                    }
                    if let Some(woken) = t.woken_at.take()
                        && inside(ev.ts)
                        && woken >= from
                        && woken <= ev.ts
                    {
                        let lat = ev.ts - woken;
                        t.raw.wakeups += 1;
                        t.raw.lat_sum += lat;
                        t.raw.lat_max = t.raw.lat_max.max(lat);
                        t.lat.record(lat);
                    }
                }
                on_cpu[cpu] = Some((*next_pid, ev.ts));
            }
            SchedEventKind::Wakeup { comm, pid, new: true, .. } if is_ours(&ours, *pid) => {
                task(&mut tasks, *pid, comm);
                let t = tasks.get_mut(pid).expect("just made");
                t.created = t.created.or(Some(ev.ts));
                t.runnable_since = Some(ev.ts);
            }
            SchedEventKind::Waking { comm, pid, .. } | SchedEventKind::Wakeup { comm, pid, new: false, .. }
                if is_ours(&ours, *pid) && has_waking == matches!(ev.kind, SchedEventKind::Waking { .. }) =>
            {
                let running = on_cpu.iter().flatten().any(|(p, _)| p == pid);
                // The wakeup of a sleep's timer comes from its expiry
                // handler, within microseconds (tens under TCG).
                let due = last_expiry
                    .get(&ev.cpu)
                    .filter(|(fired, _)| ev.ts.saturating_sub(*fired) <= SLEEP_WAKE_WITHIN)
                    .and_then(|(_, f)| armed.get_mut(pid)?.remove(f))
                    .filter(|&soft| soft <= ev.ts);
                task(&mut tasks, *pid, comm);
                let t = tasks.get_mut(pid).expect("just made");
                if !running && t.woken_at.is_none() {
                    // A wakeup of a task still on its CPU (woken before it
                    // switched out) makes it wait for nothing.
                    t.woken_at = Some(due.unwrap_or(ev.ts));
                    t.runnable_since = t.runnable_since.or(Some(ev.ts));
                }
            }
            SchedEventKind::Migrate { comm, pid, .. } if is_ours(&ours, *pid) => {
                task(&mut tasks, *pid, comm);
                if inside(ev.ts) {
                    migrations += 1;
                    tasks.get_mut(pid).expect("just made").raw.migrations += 1;
                }
            }
            SchedEventKind::Fork { parent_pid, child_comm, child_pid } if is_ours(&ours, *parent_pid) => {
                ours.insert(*child_pid);
                task(&mut tasks, *child_pid, child_comm);
                let t = tasks.get_mut(child_pid).expect("just made");
                t.created = t.created.or(Some(ev.ts));
            }
            SchedEventKind::Exec { pid, filename } if is_ours(&ours, *pid) => {
                task(&mut tasks, *pid, &SchedEventKind::comm_after_exec(filename));
            }
            SchedEventKind::Exit { pid } if is_ours(&ours, *pid) => {
                task(&mut tasks, *pid, "");
                let t = tasks.get_mut(pid).expect("just made");
                t.raw.exited = t.raw.exited.or(Some(ev.ts));
            }
            _ => {}
        }
    }
    for (cpu, running) in on_cpu.iter().enumerate() {
        if let Some((pid, since)) = *running {
            let ran = overlap(since, to);
            if is_ours(&ours, pid) {
                busy[cpu] += ran;
                if let Some(t) = tasks.get_mut(&pid) {
                    t.raw.cpu_time += ran;
                }
            } else if pid != 0 {
                others += ran;
            }
        }
    }

    // Each task under its process's name, entries in order of appearance.
    let group_of = |pid: u32| parsed.tgid.get(&pid).copied().unwrap_or(pid);
    let process_name = |pid: u32| {
        let leader = group_of(pid);
        tasks.get(&leader).filter(|t| !t.comm.is_empty()).or(tasks.get(&pid)).map_or(String::new(), |t| t.comm.clone())
    };
    let mut listed: Vec<(&u32, &Task)> = tasks.iter().filter(|(_, t)| t.raw.exited.is_none_or(|e| e >= from)).collect();
    listed.sort_by_key(|(pid, t)| (t.first_seen, **pid));
    let mut spec_names: Vec<String> = Vec::new();
    let (mut spec_lat, mut spec_rps): (Vec<Hist>, Vec<Hist>) = (Vec::new(), Vec::new());
    let mut raw = Vec::with_capacity(listed.len());
    let window = to - from;
    for (&pid, t) in listed {
        let name = process_name(pid);
        let spec = match spec_names.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                spec_names.push(name);
                spec_lat.push(Hist::default());
                spec_rps.push(Hist::default());
                spec_names.len() - 1
            }
        };
        spec_lat[spec].merge(&t.lat);
        spec_rps[spec].merge(&t.rps);
        raw.push(TaskRaw {
            name: format!("{}-{pid}", t.comm),
            spec: spec as u32,
            created: t.created.map_or(0, |c| c.saturating_sub(from)).min(window),
            exited: t.raw.exited.filter(|&e| e <= to).map(|e| e - from),
            ..t.raw.clone()
        });
    }
    let finished = !raw.is_empty() && raw.iter().all(|t| t.exited.is_some());
    let per_cpu: Vec<CpuReport> = busy
        .iter()
        .enumerate()
        .map(|(cpu, &b)| CpuReport {
            cpu: cpu as u32,
            busy_ns: b,
            idle_ns: window - b.min(window),
            switch_overhead_ns: 0,
        })
        .collect();
    let cpus = per_cpu.len() as u32;
    let other_pct = others as f64 * 100.0 / (window.max(1) as f64 * cpus as f64);
    let mut extra = head.extra.clone();
    extra.push(("other_processes_cpu_pct".into(), (other_pct * 100.0).round() / 100.0));
    let head = Report { cpus, per_cpu, extra, ..head };
    let counts = RunCounts { stop: window, finished, context_switches: switches, migrations, events: 0 };
    assemble(head, counts, raw, &spec_names, &spec_lat, &spec_rps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A two-CPU trace: process 10 ("app") with thread 11, a forked
    /// worker 12 that execs "work", a kernel thread 7 outside the program.
    fn trace() -> String {
        let l = |ts: &str, cpu: u32, ctx: &str, tgid: &str, body: &str| {
            format!("  {ctx} ({tgid:>7}) [{cpu:03}] d..2. {ts}: {body}\n")
        };
        let sw = |ts: &str, cpu: u32, ctx: (&str, &str), prev: (&str, u32, &str), next: (&str, u32)| {
            let body = format!(
                "sched_switch: prev_comm={} prev_pid={} prev_prio=120 prev_state={} ==> next_comm={} next_pid={} \
                 next_prio=120",
                prev.0, prev.1, prev.2, next.0, next.1
            );
            l(ts, cpu, ctx.0, ctx.1, &body)
        };
        let mut t = String::from("# tracer: nop\n");
        t += &l("1.000000", 0, "runner-5", "5", "sched_process_fork: comm=runner pid=5 child_comm=runner child_pid=10");
        t += &l("1.000000", 0, "runner-5", "5", "sched_wakeup_new: comm=runner pid=10 prio=120 target_cpu=000");
        t += &sw("1.000100", 0, ("runner-5", "5"), ("runner", 5, "S"), ("runner", 10));
        t += &l("1.000200", 0, "app-10", "10", "sched_process_exec: filename=/usr/bin/app pid=10 old_pid=10");
        t += &l("1.001000", 0, "app-10", "10", "sched_process_fork: comm=app pid=10 child_comm=app child_pid=11");
        t += &l("1.001000", 0, "app-10", "10", "sched_wakeup_new: comm=app pid=11 prio=120 target_cpu=001");
        t += &sw("1.001500", 1, ("<idle>-0", "-------"), ("swapper/1", 0, "R"), ("app", 11));
        t += &l("1.002000", 0, "app-10", "10", "sched_process_fork: comm=app pid=10 child_comm=app child_pid=12");
        t += &l("1.002000", 0, "app-10", "10", "sched_wakeup_new: comm=app pid=12 prio=120 target_cpu=000");
        // 10 sleeps; worker 12 runs on CPU 0.
        t += &sw("1.003000", 0, ("app-10", "10"), ("app", 10, "S"), ("app", 12));
        t += &l("1.003100", 0, "work-12", "12", "sched_process_exec: filename=/bin/work pid=12 old_pid=12");
        // Kernel thread 7 preempts 11 on CPU 1 for 1 ms.
        t += &l("1.004000", 1, "app-11", "10", "sched_wakeup: comm=kworker/1:0 pid=7 prio=120 target_cpu=001");
        t += &sw("1.004000", 1, ("app-11", "10"), ("app", 11, "R+"), ("kworker/1:0", 7));
        t += &sw("1.005000", 1, ("kworker/1:0-7", "7"), ("kworker/1:0", 7, "I"), ("app", 11));
        // 12 wakes 10 (its CPU 1 busy with 11: it waits 0.5 ms on CPU 0
        // after 12 exits), then exits.
        t += &l("1.006000", 0, "work-12", "12", "sched_wakeup: comm=app pid=10 prio=120 target_cpu=000");
        t += &l("1.006400", 0, "work-12", "12", "sched_process_exit: comm=work pid=12 prio=120");
        t += &sw("1.006500", 0, ("work-12", "12"), ("work", 12, "X"), ("app", 10));
        t += &l("1.007000", 1, "app-11", "10", "sched_migrate_task: comm=app pid=11 prio=120 orig_cpu=1 dest_cpu=0");
        t
    }

    #[test]
    fn a_traced_program_gives_its_tasks_switches_latencies_and_time() {
        let parsed = parse(&trace()).unwrap();
        let run = RecordedRun { roots: vec![10], from: 1_000_000_000, to: 1_010_000_000, nr_cpus: 2 };
        let r = report(&parsed, &run, Report { source: "vm".into(), ..Report::default() });
        let names: Vec<&str> = r.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["app-10", "app-11", "work-12"], "the runner and the kworker are not the program's");
        // Threads 10 and 11 are one process; the forked worker is its own.
        assert_eq!(r.specs.iter().map(|s| (s.name.as_str(), s.tasks)).collect::<Vec<_>>(), [("app", 2), ("work", 1)]);
        let t = |n: &str| r.tasks.iter().find(|t| t.name == n).unwrap();
        // 10 ran 1.0001-1.003 and 1.0065-1.010 on CPU 0.
        assert_eq!(t("app-10").cpu_time_ns, 2_900_000 + 3_500_000);
        assert_eq!((t("app-10").wakeups, t("app-10").wakeup_latency_max_ns), (1, Some(500_000)));
        assert_eq!(t("app-10").voluntary_switches, 1);
        // 11 ran 1.0015-1.004 and 1.005-1.010, preempted once, moved once.
        assert_eq!(t("app-11").cpu_time_ns, 2_500_000 + 5_000_000);
        assert_eq!((t("app-11").involuntary_switches, t("app-11").migrations), (1, 1));
        assert_eq!(t("app-11").run_delay_ns, 1_000_000 + 500_000);
        assert_eq!((t("work-12").cpu_time_ns, t("work-12").exited_at_ns), (3_500_000, Some(6_500_000)));
        assert!(r.tasks.iter().all(|t| t.cpu_share_pct <= 100.0), "{:?}", r.tasks);
        assert_eq!((r.totals.context_switches, r.totals.migrations), (3, 1));
        assert_eq!(r.totals.makespan_ns, None, "10 and 11 still run at the window's end");
        // Conservation: busy is the program's time, busy + idle the window
        // on each CPU; the kworker's 1 ms and the runner's 0.1 ms before
        // CPU 0's first switch are other processes' (of 20 ms).
        let tasks: Nanos = r.tasks.iter().map(|t| t.cpu_time_ns).sum();
        assert_eq!(r.totals.busy_ns, tasks);
        assert!(r.per_cpu.iter().all(|c| c.busy_ns + c.idle_ns == 10_000_000));
        assert_eq!(r.extra_figure("other_processes_cpu_pct"), Some(5.5));
        assert_eq!(r.wakeup_latency.count, 1);
        assert_eq!(
            r.runtime_per_switch.count, 3,
            "10, 11 and 12 switched out once each; the runner is not the program"
        );
    }

    /// A sched_switch line in prev's context, as tracefs prints it.
    fn sw(ts: &str, cpu: u32, prev: (&str, u32, &str), next: (&str, u32)) -> String {
        format!(
            "  {}-{} [{cpu:03}] d..2. {ts}: sched_switch: prev_comm={} prev_pid={} prev_prio=120 prev_state={} ==> \
             next_comm={} next_pid={} next_prio=120\n",
            prev.0, prev.1, prev.0, prev.1, prev.2, next.0, next.1
        )
    }

    #[test]
    fn a_sleep_is_late_from_the_time_it_asked_for_and_a_wakeup_from_its_waking() {
        let mut t = String::from("# tracer: nop\n");
        t += &sw("2.000000", 0, ("swapper/0", 0, "R"), ("cyclic", 20));
        // A kernel without kallsyms, its pointers not hashed yet: the
        // sleep's timer and the hrtick (armed in the same task's context)
        // are told apart by their functions' addresses.
        t += "  cyclic-20 [000] d..1. 2.000001: hrtimer_start: hrtimer=(____ptrval____) function=0xffffffff8109d741 \
              expires=2001000000 softexpires=2001000000 mode=ABS\n";
        t += "  cyclic-20 [000] d..1. 2.000002: hrtimer_start: hrtimer=(____ptrval____) function=0xffffffff810ac831 \
              expires=2000500000 softexpires=2000500000 mode=ABS|PINNED|HARD\n";
        t += &sw("2.000002", 0, ("cyclic", 20, "S"), ("swapper/0", 0));
        // The timer fires 50 us late; the task runs 100 us after it asked.
        t += "  <idle>-0 [000] d.h1. 2.001050: hrtimer_expire_entry: hrtimer=(____ptrval____) now=2001050000 \
              function=0xffffffff8109d741\n";
        t += "  <idle>-0 [000] d.h2. 2.001052: sched_waking: comm=cyclic pid=20 prio=120 target_cpu=000\n";
        t += "  <idle>-0 [000] d.h3. 2.001060: sched_wakeup: comm=cyclic pid=20 prio=120 target_cpu=000\n";
        t += &sw("2.001100", 0, ("swapper/0", 0, "R"), ("cyclic", 20));
        // Then woken by another task: due at the waking, not the wakeup.
        t += &sw("2.002000", 0, ("cyclic", 20, "S"), ("swapper/0", 0));
        t += "  other-30 [001] d..2. 2.003000: sched_waking: comm=cyclic pid=20 prio=120 target_cpu=000\n";
        t += "  other-30 [001] d..2. 2.003020: sched_wakeup: comm=cyclic pid=20 prio=120 target_cpu=000\n";
        t += &sw("2.003030", 0, ("swapper/0", 0, "R"), ("cyclic", 20));
        let parsed = parse(&t).unwrap();
        let run = RecordedRun { roots: vec![20], from: 2_000_000_000, to: 2_004_000_000, nr_cpus: 2 };
        let r = report(&parsed, &run, Report::default());
        let c = &r.tasks[0];
        assert_eq!((c.wakeups, c.wakeup_latency_max_ns), (2, Some(100_000)));
        assert_eq!(c.wakeup_latency_avg_ns, Some((100_000 + 30_000) / 2));
        assert_eq!(c.run_delay_ns, 48_000 + 30_000, "runnable from the waking on");
    }

    #[test]
    fn a_switch_in_the_trace_left_out_costs_neither_the_time_nor_later_wakeups() {
        // As this machine's 6.18 kernel traced cyclictest's main thread:
        // woken by its timer on an idle CPU, switched in without a
        // sched_switch, seen again only leaving the CPU.
        let mut t = String::from("# tracer: nop\n");
        // Everything happens on CPU 1.
        let on1 = |ts: &str, prev: (&str, u32, &str), next: (&str, u32)| sw(ts, 1, prev, next);
        let wake =
            |ts: &str| format!("  <idle>-0 [001] d.h3. {ts}: sched_waking: comm=main pid=20 prio=120 target_cpu=001\n");
        t += &on1("1.000000", ("swapper/1", 0, "R"), ("main", 20));
        t += &on1("1.000100", ("main", 20, "S"), ("swapper/1", 0));
        t += &wake("1.010000");
        // The switch-in at about 1.010010 is missing.
        t += &on1("1.010040", ("main", 20, "S"), ("swapper/1", 0));
        t += &wake("1.020000");
        t += &on1("1.020010", ("swapper/1", 0, "R"), ("main", 20));
        t += &on1("1.020040", ("main", 20, "S"), ("swapper/1", 0));
        let parsed = parse(&t).unwrap();
        let run = RecordedRun { roots: vec![20], from: 1_000_000_000, to: 1_030_000_000, nr_cpus: 2 };
        let r = report(&parsed, &run, Report::default());
        let m = &r.tasks[0];
        assert_eq!(m.cpu_time_ns, 100_000 + 40_000 + 30_000, "from the wakeup whose switch-in is missing");
        // The later wakeup is measured; the one without its switch-in is
        // not guessed.
        assert_eq!((m.wakeups, m.wakeup_latency_max_ns), (1, Some(10_000)));
        assert_eq!(m.voluntary_switches, 3);
    }

    #[test]
    fn without_roots_every_task_is_counted_and_a_window_cuts_runs() {
        let parsed = parse(&trace()).unwrap();
        let run = RecordedRun { roots: Vec::new(), from: 1_002_000_000, to: 1_004_500_000, nr_cpus: 2 };
        let r = report(&parsed, &run, Report::default());
        let t = |n: &str| r.tasks.iter().find(|t| t.name == n).map(|t| t.cpu_time_ns);
        assert_eq!(t("kworker/1:0-7"), Some(500_000));
        assert_eq!(t("app-11"), Some(2_000_000));
        assert_eq!(t("runner-5"), Some(0), "it slept through the window");
        let tasks: Nanos = r.tasks.iter().map(|t| t.cpu_time_ns).sum();
        assert_eq!(r.totals.busy_ns, tasks);
        assert!(r.per_cpu.iter().all(|c| c.busy_ns + c.idle_ns == 2_500_000));
    }
}
