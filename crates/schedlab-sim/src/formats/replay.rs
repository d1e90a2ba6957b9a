//! A recorded schedule turned back into a workload: each task's CPU bursts,
//! sleeps and who woke it, from sched_switch and sched_waking/sched_wakeup
//! events (tracefs's `trace` text, `trace-cmd report`, or `perf script`).
//!
//! A burst is the CPU time a task used from a wakeup until it blocked
//! (preemptions, prev_state R, do not end it). A wakeup by another traced
//! task becomes a signal on the wakee's channel, sent at the point of the
//! waker's burst where it woke the other, and the wakee's sleep a wait on
//! it; a wakeup from interrupt or idle context, or by an untraced task,
//! becomes a timed sleep of the recorded length.
//!
//! One channel per wakee, not per waker and wakee: a reader of a pipe that
//! five writers feed sleeps until any of them writes, and a replay that
//! made it wait for the one that happened to wake it in the recording
//! would let the others' wakeups pile up (hackbench -p in the guests:
//! 35-64% of its tasks' switches were lost that way). A wakeup that finds
//! its task still on its CPU, on its way to sleep (the waker's
//! try_to_wake_up waits for the switch and finishes after it), came before
//! the sleep: as a wait it would not block in a replay, so it is the short
//! sleep it was, from the switch to that sched_wakeup.
//!
//! A task forked (sched_process_fork) by a task seen running is forked by
//! its parent's replayed program at that point, so the start of a child is
//! the simulated scheduler's fork path, as it was the kernel's: where it is
//! placed and what it inherits (Project C's halved slice and a deadline
//! from the fork, CFS's and EEVDF's placement of a new entity). Started
//! at the time it was first seen instead, each of pds-6.12's hackbench
//! workers began with a full 4 ms slice where the kernel gave 0.26-2.1 ms.
//!
//! Kernel priorities give the policy (below 100: FIFO at 99 - prio;
//! 100-139: nice prio - 120); per-CPU kernel threads ("name/N",
//! "kworker/N:M") are pinned to their CPU. The simulated scheduler then
//! decides everything else: placement, order, preemption.

use crate::formats::ftrace::{self, SchedEvent, SchedEventKind};
use crate::time::Nanos;
use crate::topology::{CpuSet, Topology};
use crate::workload::dist::Dist;
use crate::workload::{
    Channel, GroupSpec, Imported, Machine, Named, Op, Overrides, SchedPolicy, TaskSpec, Workload, WorkloadError,
};
use std::collections::BTreeMap;

/// The largest machine a replay builds: the simulator's own limit.
const MAX_REPLAY_CPUS: u32 = 4096;

/// What the trace itself says each task got, to set beside a replay.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// Task name (as in the replayed workload) and CPU time in the trace.
    pub cpu_time: Vec<(String, Nanos)>,
    pub events: usize,
    /// The first sched event's time on the trace's clock: the replay's 0.
    pub start: Nanos,
    pub duration: Nanos,
    pub cpus: u32,
}

enum Step {
    Run(Nanos),
    Sleep(Nanos),
    Signal(u32),
    Wait(u32),
    /// Forks the task of this pid.
    Fork(u32),
    Exit,
}

struct Task {
    comm: String,
    prio: i32,
    first_seen: Nanos,
    running_since: Option<Nanos>,
    burst: Nanos,
    cpu_time: Nanos,
    blocked_since: Option<Nanos>,
    /// When its latest wakeup was traced.
    woken_at: Option<Nanos>,
    /// Whether a sched_waking found it still on its CPU, until that
    /// wakeup's sched_wakeup.
    woken_on_its_cpu: bool,
    /// Whether a traced task forked it while running (its parent's program
    /// starts it).
    forked: bool,
    steps: Vec<Step>,
}

impl Task {
    fn new(comm: &str, prio: i32, at: Nanos) -> Task {
        Task {
            comm: comm.to_string(),
            prio,
            first_seen: at,
            running_since: None,
            burst: 0,
            cpu_time: 0,
            blocked_since: None,
            woken_at: None,
            woken_on_its_cpu: false,
            forked: false,
            steps: Vec::new(),
        }
    }

    /// Counts the time it ran from `since` to `until` in its burst.
    fn ran(&mut self, since: Nanos, until: Nanos) {
        self.burst += until.saturating_sub(since);
        self.cpu_time += until.saturating_sub(since);
    }

    /// Ends the CPU burst so far at `now` (the task keeps running).
    fn cut_burst(&mut self, now: Nanos) {
        if let Some(since) = self.running_since.replace(now) {
            self.ran(since, now);
        }
        if self.burst > 0 {
            self.steps.push(Step::Run(std::mem::take(&mut self.burst)));
        }
    }
}

/// The waker of a sched_waking line: the task in whose context it was
/// printed ("comm-pid [cpu]" for tracefs, "comm pid [cpu]" for perf).
fn context_pid(line: &str) -> Option<u32> {
    ftrace::line_context(line).map(|(pid, _)| pid)
}

/// The CPU a per-CPU kernel thread is bound to, from its name.
fn percpu_kthread(comm: &str) -> Option<u32> {
    let (_, tail) = comm.rsplit_once('/')?;
    tail.split(':').next()?.parse().ok()
}

pub fn workload_from_trace(text: &str, origin: &str, ov: &Overrides) -> Result<(Workload, Recorded), WorkloadError> {
    let err = |line: usize, message: String| WorkloadError { origin: origin.to_string(), line, message };
    let events = read_events(text).map_err(|(line, m)| err(line, m))?;
    let t0 = events[0].0.ts;
    let end = events.last().expect("not empty").0.ts;
    let max_cpu = events.iter().map(|(e, _)| e.cpu).max().unwrap_or(0);
    let mut schedule = Schedule::new(t0, max_cpu);
    let has_waking = events.iter().any(|(e, _)| matches!(e.kind, SchedEventKind::Waking { .. }));
    for (ev, waker) in &events {
        schedule.event(ev, *waker, has_waking);
    }
    let Schedule { tasks, channels, .. } = schedule.close(end);
    if tasks.is_empty() {
        return Err(err(0, "the trace shows no task running: nothing to replay".into()));
    }

    let topology = Topology::flat(ov.cpus.unwrap_or(max_cpu + 1)).map_err(|m| err(0, m))?;
    let nr_cpus = topology.nr_cpus();
    let index_of: BTreeMap<u32, usize> = tasks.iter().enumerate().map(|(i, (pid, _))| (*pid, i)).collect();
    let specs: Vec<TaskSpec> = tasks.iter().map(|(pid, t)| t.spec(*pid, t0, nr_cpus, &index_of)).collect();
    let recorded = tasks.iter().zip(&specs).map(|((_, t), spec)| (spec.name.clone(), t.cpu_time)).collect();
    let channels = channels
        .items
        .iter()
        .map(|&to| Channel { name: format!("wakeups of {}", specs[index_of[&to]].name), initial: 0 })
        .collect();
    let w = Workload::imported(
        origin,
        ov,
        Imported {
            description: format!("replay of {origin}"),
            duration: ov.duration.unwrap_or((end - t0).max(1)),
            machine: Machine::with_defaults(topology, ov)?,
            tunables: ov.tunables.clone(),
            groups: vec![GroupSpec::root()],
            tasks: specs,
            channels,
            conds: Vec::new(),
            barriers: Vec::new(),
        },
    )
    .map_err(|m| err(0, m))?;
    Ok((w, Recorded { cpu_time: recorded, events: events.len(), start: t0, duration: end - t0, cpus: max_cpu + 1 }))
}

/// A line of the trace (0: the whole trace) and what is wrong there.
type TraceError = (usize, String);

/// The trace's sched events in time order, each wakeup with the pid of the
/// task that woke it; or the line and what is wrong with the trace.
fn read_events(text: &str) -> Result<Vec<(SchedEvent, Option<u32>)>, TraceError> {
    let head = text.trim_start();
    if head.starts_with('{') && head.contains("\"traceEvents\"") {
        return Err((
            0,
            "this is a Chrome/Perfetto JSON trace (as `schedlab trace -o FILE.json` writes), which holds the \
             schedule but not the wakeups a replay needs: replay takes tracefs text, `trace-cmd report` or \
             `perf script` output of sched events (`schedlab record -o trace.txt -- COMMAND`, or `schedlab trace` in \
             its default ftrace format)"
                .into(),
        ));
    }
    let mut events: Vec<(SchedEvent, Option<u32>)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match ftrace::parse_line(line) {
            Ok(Some(ev)) => {
                let waker = matches!(ev.kind, SchedEventKind::Waking { .. } | SchedEventKind::Wakeup { .. })
                    .then(|| context_pid(line))
                    .flatten();
                events.push((ev, waker));
            }
            Ok(None) => {}
            Err(e) => return Err((i + 1, format!("{e}: {}", line.trim()))),
        }
    }
    if !events.iter().any(|(e, _)| matches!(e.kind, SchedEventKind::Switch { .. })) {
        return Err((
            0,
            "no sched_switch events: record with the sched_switch and sched_waking events enabled \
             (schedlab record -- COMMAND does)"
                .into(),
        ));
    }
    events.sort_by_key(|(e, _)| e.ts);
    let t0 = events[0].0.ts;
    let end = events.last().expect("not empty").0.ts;
    // The replayed tasks' runs and sleeps are the trace's own gaps: a trace
    // longer than the engine's horizon cannot be replayed (and one of many
    // hours of a few events would run for days before it got there).
    if end - t0 > crate::engine::queue::MAX_TIME {
        return Err((
            0,
            format!(
                "the trace spans {} (its events run from {} to {}), beyond the simulator's 78 hours: cut it to \
                 the stretch to replay (only the lines between two timestamps)",
                crate::time::format_duration(end - t0),
                crate::time::format_duration(t0),
                crate::time::format_duration(end),
            ),
        ));
    }
    let max_cpu = events.iter().map(|(e, _)| e.cpu).max().unwrap_or(0);
    // Checked before the per-CPU tables of the schedule are sized by it.
    if max_cpu >= MAX_REPLAY_CPUS {
        let line = events.iter().find(|(e, _)| e.cpu == max_cpu).map_or(0, |(e, _)| e.ts);
        return Err((
            0,
            format!(
                "the trace names CPU {max_cpu} (at {}): schedlab replays machines of up to {MAX_REPLAY_CPUS} CPUs",
                crate::time::format_duration(line)
            ),
        ));
    }
    Ok(events)
}

/// The tasks' steps as the events go by.
struct Schedule {
    t0: Nanos,
    tasks: BTreeMap<u32, Task>,
    /// One per wakee, by its pid.
    channels: Named<u32, u32>,
    /// When each CPU last switched: a task switched out that was never seen
    /// switched in (6.18 does not always trace the switch out of idle) ran
    /// from then, or from its wakeup if that came later.
    cpu_last: Vec<Nanos>,
    cpu_curr: Vec<u32>,
}

impl Schedule {
    fn new(t0: Nanos, max_cpu: u32) -> Schedule {
        Schedule {
            t0,
            tasks: BTreeMap::new(),
            channels: Named::default(),
            cpu_last: vec![t0; max_cpu as usize + 1],
            cpu_curr: vec![0; max_cpu as usize + 1],
        }
    }

    fn event(&mut self, ev: &SchedEvent, waker: Option<u32>, has_waking: bool) {
        let now = ev.ts;
        match &ev.kind {
            SchedEventKind::Switch { prev_comm, prev_pid, prev_prio, prev_state, next_comm, next_pid, next_prio } => {
                self.switch_out(ev.cpu as usize, now, prev_comm, *prev_pid, *prev_prio, prev_state);
                self.switch_in(ev.cpu as usize, now, next_comm, *next_pid, *next_prio);
            }
            SchedEventKind::Waking { comm, pid, prio, .. }
            | SchedEventKind::Wakeup { comm, pid, prio, new: false, .. } => {
                let is_waking = matches!(ev.kind, SchedEventKind::Waking { .. });
                if has_waking && !is_waking {
                    // The end of a wakeup whose waking found the task
                    // still on its CPU: it switched out since, and slept
                    // until now. The wakeup came before the sleep, so a
                    // wait for the waker would not block in a replay;
                    // the switch it made is kept as the short sleep it was.
                    if let Some(t) = self.tasks.get_mut(pid)
                        && std::mem::take(&mut t.woken_on_its_cpu)
                        && let Some(b) = t.blocked_since.take()
                    {
                        t.steps.push(Step::Sleep(now.saturating_sub(b)));
                        t.woken_at = Some(now);
                    }
                    return;
                }
                self.wakeup(now, comm, *pid, *prio, waker);
            }
            SchedEventKind::Wakeup { comm, pid, prio, new: true, .. } => {
                self.tasks.entry(*pid).or_insert_with(|| Task::new(comm, *prio, now));
            }
            SchedEventKind::Fork { parent_pid, child_comm, child_pid } => {
                self.fork(now, *parent_pid, child_comm, *child_pid)
            }
            SchedEventKind::Migrate { .. } | SchedEventKind::Exit { .. } => {}
            SchedEventKind::Exec { pid, filename } => {
                if let Some(t) = self.tasks.get_mut(pid) {
                    t.comm = SchedEventKind::comm_after_exec(filename);
                }
            }
        }
    }

    fn switch_out(&mut self, cpu: usize, now: Nanos, comm: &str, pid: u32, prio: i32, state: &str) {
        let (t0, cpu_last) = (self.t0, self.cpu_last[cpu]);
        let gap_end = self.tasks.get(&pid).and_then(|t| t.woken_at).unwrap_or(cpu_last).max(cpu_last);
        let believed = self.cpu_curr[cpu];
        if believed != 0
            && believed != pid
            && let Some(q) = self.tasks.get_mut(&believed)
            && let Some(since) = q.running_since.take()
        {
            // The switch away from the task we thought was running
            // here was not traced: it ran until the next one began.
            q.ran(since, gap_end);
            self.cpu_last[cpu] = gap_end;
        }
        if pid != 0 {
            let cpu_last = self.cpu_last[cpu];
            let t = self.tasks.entry(pid).or_insert_with(|| Task::new(comm, prio, t0));
            // The latest comm names the task: `sh` that became
            // `gzip` by exec is gzip (prctl(PR_SET_NAME) too).
            t.comm = comm.to_string();
            t.prio = prio;
            let since = t.running_since.take().unwrap_or_else(|| cpu_last.max(t.woken_at.unwrap_or(t0)));
            t.ran(since, now);
            t.woken_at = None;
            if !state.starts_with('R') {
                if t.burst > 0 {
                    t.steps.push(Step::Run(std::mem::take(&mut t.burst)));
                }
                if state.starts_with('X') || state.starts_with('Z') {
                    t.steps.push(Step::Exit);
                } else {
                    t.blocked_since = Some(now);
                }
            }
        }
    }

    fn switch_in(&mut self, cpu: usize, now: Nanos, comm: &str, pid: u32, prio: i32) {
        self.cpu_last[cpu] = now;
        self.cpu_curr[cpu] = pid;
        if pid != 0 {
            let t = self.tasks.entry(pid).or_insert_with(|| Task::new(comm, prio, now));
            t.comm = comm.to_string();
            t.running_since = Some(now);
            t.woken_at = None;
            if let Some(b) = t.blocked_since.take() {
                // Woken without a wakeup event in the trace (lost or
                // filtered): a timed sleep is all that is known.
                t.steps.push(Step::Sleep(now.saturating_sub(b)));
            }
        }
    }

    /// A fork by a task seen running: the child is started by its parent's
    /// program at that point, so the simulated scheduler's fork path
    /// (placement, the slice or vruntime a child inherits) decides its
    /// start. A child of an untraced parent starts when it was first seen.
    fn fork(&mut self, now: Nanos, parent: u32, comm: &str, child: u32) {
        if self.tasks.contains_key(&child) || parent == child {
            return;
        }
        let Some(p) = self.tasks.get_mut(&parent).filter(|p| p.running_since.is_some()) else { return };
        p.cut_burst(now);
        p.steps.push(Step::Fork(child));
        let prio = p.prio;
        let mut t = Task::new(comm, prio, now);
        t.forked = true;
        self.tasks.insert(child, t);
    }

    fn wakeup(&mut self, now: Nanos, comm: &str, pid: u32, prio: i32, waker: Option<u32>) {
        let known_waker =
            waker.filter(|w| *w != 0 && *w != pid && self.tasks.get(w).is_some_and(|t| t.running_since.is_some()));
        let first_time = !self.tasks.contains_key(&pid);
        let t0 = self.t0;
        let t = self.tasks.entry(pid).or_insert_with(|| Task::new(comm, prio, t0));
        t.woken_at = Some(now);
        if t.running_since.is_some() {
            // Woken on its way to sleep, before it switched out: the
            // waker's try_to_wake_up waits for the switch and finishes the
            // wakeup after it (sched_wakeup).
            t.woken_on_its_cpu = true;
            return;
        }
        // A task seen first at its wakeup slept since the trace began.
        let Some(b) = t.blocked_since.take().or(first_time.then_some(t0)) else { return };
        match known_waker {
            Some(w) => {
                let c = self.channels.id(pid, || pid);
                t.steps.push(Step::Wait(c));
                let waker_task = self.tasks.get_mut(&w).expect("checked above");
                waker_task.cut_burst(now);
                waker_task.steps.push(Step::Signal(c));
            }
            None => t.steps.push(Step::Sleep(now.saturating_sub(b))),
        }
    }

    /// Closes what is still open at the end of the trace and drops the
    /// tasks that did nothing.
    fn close(mut self, end: Nanos) -> Schedule {
        for t in self.tasks.values_mut() {
            if let Some(since) = t.running_since.take() {
                t.ran(since, end);
            }
            if t.burst > 0 {
                t.steps.push(Step::Run(std::mem::take(&mut t.burst)));
            }
            if let Some(b) = t.blocked_since.take() {
                // Still asleep: sleep past the end rather than exit, so a replay
                // does not report a makespan the recording never had.
                t.steps.push(Step::Sleep(end.saturating_sub(b) + 1));
            }
        }
        self.tasks.retain(|_, t| !t.steps.is_empty());
        self
    }
}

impl Task {
    /// The task as the replayed workload runs it; `index_of` gives each
    /// replayed pid's spec (a child that never ran is not forked).
    fn spec(&self, pid: u32, t0: Nanos, nr_cpus: u32, index_of: &BTreeMap<u32, usize>) -> TaskSpec {
        let policy =
            if self.prio < 100 { SchedPolicy::Fifo((99 - self.prio.max(0)) as u8) } else { SchedPolicy::Normal };
        let nice = if self.prio >= 100 { (self.prio - 120).clamp(-20, 19) } else { 0 };
        let affinity = percpu_kthread(&self.comm).filter(|&c| c < nr_cpus).map(|c| {
            let mut s = CpuSet::empty(nr_cpus);
            s.insert(c);
            s
        });
        let mut program = Vec::new();
        for step in &self.steps {
            match *step {
                Step::Run(d) => match program.last_mut() {
                    Some(Op::Run(Dist::Const(prev))) => *prev += d,
                    _ => program.push(Op::Run(Dist::Const(d))),
                },
                Step::Sleep(d) => program.push(Op::Sleep(Dist::Const(d))),
                Step::Signal(c) => program.push(Op::Signal(c)),
                Step::Wait(c) => program.push(Op::Wait(c)),
                Step::Fork(child) => {
                    if let Some(&i) = index_of.get(&child) {
                        program.push(Op::Fork(i as u32));
                    }
                }
                Step::Exit => program.push(Op::Exit),
            }
        }
        TaskSpec {
            name: format!("{}-{pid}", self.comm),
            count: 1,
            nice,
            policy,
            affinity,
            per_cpu: false,
            group: 0,
            slice: None,
            start: Dist::Const(self.first_seen.saturating_sub(t0)),
            template: self.forked,
            forked_once: self.forked,
            background: false,
            program,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_chrome_json_trace_is_named_with_what_replay_takes() {
        let text = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n{\"name\":\"x\"}]}";
        let e = super::workload_from_trace(text, "t.json", &crate::Overrides::default()).unwrap_err();
        assert!(e.message.starts_with("this is a Chrome/Perfetto JSON trace"), "{e}");
        assert!(e.message.contains("`schedlab record -o trace.txt -- COMMAND`"), "{e}");
    }

    #[test]
    fn a_trace_beyond_the_horizon_is_refused_with_its_span() {
        let line = |ts: &str, a: &str, b: &str| {
            format!(
                "  x-5 [000] d..2. {ts}: sched_switch: prev_comm={a} prev_pid={} prev_prio=120 prev_state=S ==> \
                 next_comm={b} next_pid={} next_prio=120\n",
                if a == "swapper/0" { 0 } else { 5 },
                if b == "swapper/0" { 0 } else { 5 }
            )
        };
        let text = line("0.000001", "swapper/0", "a") + &line("18446744073.709551", "a", "swapper/0");
        let e = super::workload_from_trace(&text, "t.txt", &crate::Overrides::default()).unwrap_err();
        assert!(e.message.contains("beyond the simulator's"), "{e}");
        assert!(e.message.contains("the trace spans"), "{e}");
    }

    use super::*;

    const TRACE: &str = "\
# tracer: nop
           <idle>-0     [000] d..2.   100.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=10 next_prio=120
                a-10    [000] d..2.   100.002000: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=R+ ==> next_comm=b next_pid=11 next_prio=120
                b-11    [000] d..3.   100.003000: sched_waking: comm=c pid=12 prio=120 target_cpu=001
                b-11    [000] d..2.   100.004000: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=a next_pid=10 next_prio=120
           <idle>-0     [001] d..2.   100.004000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=c next_pid=12 next_prio=120
                a-10    [000] d..2.   100.005000: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
           <idle>-0     [000] d.s3.   100.008000: sched_waking: comm=a pid=10 prio=120 target_cpu=000
           <idle>-0     [000] d..2.   100.008000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=10 next_prio=120
                c-12    [001] d..2.   100.009000: sched_switch: prev_comm=c prev_pid=12 prev_prio=120 prev_state=X ==> next_comm=swapper/1 next_pid=0 next_prio=120
                a-10    [000] d..2.   100.010000: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";

    #[test]
    fn bursts_sleeps_and_wakers_are_reconstructed() {
        let (w, rec) = workload_from_trace(TRACE, "t.trace", &Overrides::default()).unwrap();
        assert_eq!(w.nr_cpus(), 2);
        assert_eq!(w.duration, 10_000_000);
        let prog = |name: &str| &w.tasks.iter().find(|t| t.name == name).unwrap().program;
        // a: 2 ms, preempted (same burst), 1 ms more, then a timer-like
        // sleep of 3 ms (woken from softirq), 2 ms, asleep to the end.
        assert_eq!(
            prog("a-10"),
            &vec![
                Op::Run(Dist::Const(3_000_000)),
                Op::Sleep(Dist::Const(3_000_000)),
                Op::Run(Dist::Const(2_000_000)),
                Op::Sleep(Dist::Const(1)),
            ]
        );
        // b woke c 1 ms into its burst: run 1 ms, signal, run 1 ms.
        let ch = w.channels.iter().position(|c| c.name == "wakeups of c-12").unwrap() as u32;
        assert_eq!(
            prog("b-11"),
            &vec![
                Op::Run(Dist::Const(1_000_000)),
                Op::Signal(ch),
                Op::Run(Dist::Const(1_000_000)),
                Op::Sleep(Dist::Const(6_000_001))
            ]
        );
        // c slept from the start until b's wakeup, then ran 5 ms and exited.
        assert_eq!(prog("c-12"), &vec![Op::Wait(ch), Op::Run(Dist::Const(5_000_000)), Op::Exit]);
        let cpu: BTreeMap<_, _> = rec.cpu_time.into_iter().collect();
        assert_eq!(cpu["a-10"], 5_000_000);
        assert_eq!(cpu["b-11"], 2_000_000);
        assert_eq!(cpu["c-12"], 5_000_000);
    }

    #[test]
    fn perf_script_lines_read_like_tracefs_ones() {
        let perf = "   yes  4242 [001]  5.000000: sched:sched_switch: prev_comm=yes prev_pid=4242 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n   swapper     0 [001]  4.000000: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=yes next_pid=4242 next_prio=120\n";
        let (w, rec) = workload_from_trace(perf, "p.txt", &Overrides::default()).unwrap();
        assert_eq!(w.tasks.len(), 1);
        assert_eq!(rec.cpu_time, vec![("yes-4242".to_string(), 1_000_000_000)]);
    }

    #[test]
    fn per_cpu_kernel_threads_stay_on_their_cpu() {
        assert_eq!(percpu_kthread("ksoftirqd/3"), Some(3));
        assert_eq!(percpu_kthread("kworker/1:2"), Some(1));
        assert_eq!(percpu_kthread("kworker/u8:0"), None);
        assert_eq!(percpu_kthread("bash"), None);
    }

    #[test]
    fn wakeups_of_one_reader_share_its_channel_and_one_on_its_way_to_sleep_is_a_short_sleep() {
        let sw = |ts: &str, cpu: u32, prev: (&str, u32, &str), next: (&str, u32)| {
            format!(
                "  {}-{} [{cpu:03}] d..2. {ts}: sched_switch: prev_comm={} prev_pid={} prev_prio=120 prev_state={} ==> \
                 next_comm={} next_pid={} next_prio=120\n",
                prev.0, prev.1, prev.0, prev.1, prev.2, next.0, next.1
            )
        };
        let wake = |ts: &str, cpu: u32, by: (&str, u32), ev: &str| {
            format!("  {}-{} [{cpu:03}] d..2. {ts}: {ev}: comm=r pid=5 prio=120 target_cpu=000\n", by.0, by.1)
        };
        let mut t = String::new();
        t += &sw("1.000", 0, ("swapper/0", 0, "R"), ("r", 5));
        t += &sw("1.000", 1, ("swapper/1", 0, "R"), ("w", 6));
        t += &sw("1.001", 0, ("r", 5, "S"), ("swapper/0", 0));
        // Writer 6 wakes the reader, then writer 7.
        t += &wake("1.002", 1, ("w", 6), "sched_waking");
        t += &sw("1.002", 0, ("swapper/0", 0, "R"), ("r", 5));
        t += &sw("1.002", 1, ("w", 6, "S"), ("v", 7));
        t += &sw("1.003", 0, ("r", 5, "S"), ("swapper/0", 0));
        t += &wake("1.004", 1, ("v", 7), "sched_waking");
        t += &sw("1.004", 0, ("swapper/0", 0, "R"), ("r", 5));
        // Writer 7 wakes it again while it still runs; it switches out
        // and the wakeup ends 100 us later; it runs again at 1.007.
        t += &wake("1.005000", 1, ("v", 7), "sched_waking");
        t += &sw("1.005010", 0, ("r", 5, "S"), ("swapper/0", 0));
        t += &wake("1.005110", 1, ("v", 7), "sched_wakeup");
        t += &sw("1.007", 0, ("swapper/0", 0, "R"), ("r", 5));
        t += &sw("1.008", 0, ("r", 5, "S"), ("swapper/0", 0));
        t += &sw("1.009", 1, ("v", 7, "S"), ("swapper/1", 0));
        let (w, _) = workload_from_trace(&t, "t.trace", &Overrides::default()).unwrap();
        assert_eq!(w.channels.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["wakeups of r-5"]);
        let reader = &w.tasks.iter().find(|t| t.name == "r-5").unwrap().program;
        assert_eq!(
            reader[..6],
            [
                Op::Run(Dist::Const(1_000_000)),
                Op::Wait(0),
                Op::Run(Dist::Const(1_000_000)),
                Op::Wait(0),
                Op::Run(Dist::Const(1_010_000)),
                Op::Sleep(Dist::Const(100_000)),
            ]
        );
    }
    #[test]
    fn a_child_is_forked_where_its_running_parent_forked_it_and_keeps_its_name() {
        let text = "\
          <idle>-0     [000] d..2.   5.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=p next_pid=20 next_prio=120
               p-20    [000] .....   5.001000: sched_process_fork: comm=p pid=20 child_comm=p child_pid=21
               p-20    [000] d..2.   5.001010: sched_wakeup_new: comm=p pid=21 prio=120 target_cpu=001
          <idle>-0     [001] d..2.   5.001100: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=p next_pid=21 next_prio=120
               p-21    [001] d..2.   5.003100: sched_switch: prev_comm=p prev_pid=21 prev_prio=120 prev_state=X ==> next_comm=swapper/1 next_pid=0 next_prio=120
               p-20    [000] .....   5.003000: sched_process_fork: comm=p pid=20 child_comm=p child_pid=22
               p-20    [000] d..2.   5.004000: sched_switch: prev_comm=p prev_pid=20 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0     [001] d..2.   5.005000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=q next_pid=30 next_prio=120
               q-30    [001] d..2.   5.006000: sched_switch: prev_comm=q prev_pid=30 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
        let (w, _) = workload_from_trace(text, "t.trace", &Overrides::default()).unwrap();
        let spec = |name: &str| w.tasks.iter().position(|t| t.name == name).unwrap();
        // The parent ran 1 ms, forked 21, and ran 3 ms more: 22 never ran,
        // so its fork is left out and the runs around it are one.
        assert_eq!(
            w.tasks[spec("p-20")].program,
            [
                Op::Run(Dist::Const(1_000_000)),
                Op::Fork(spec("p-21") as u32),
                Op::Run(Dist::Const(3_000_000)),
                Op::Sleep(Dist::Const(2_000_001))
            ]
        );
        let child = &w.tasks[spec("p-21")];
        assert!(child.template && child.forked_once, "the child is started by its parent's fork only");
        assert_eq!(child.program, [Op::Run(Dist::Const(2_000_000)), Op::Exit]);
        assert_eq!(child.task_name(7), "p-21", "a replayed child is named as in the trace");
        // A task with no traced fork starts when it was first seen.
        assert!(!w.tasks[spec("q-30")].template);
        assert!(w.tasks.iter().all(|t| t.name != "p-22"));
    }
}
