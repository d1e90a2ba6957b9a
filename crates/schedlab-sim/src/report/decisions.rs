//! Placement decisions counted from a schedule: where each wakeup, each new
//! task and each balancing move put a task, judged by the state of the
//! CPUs at that moment. They are counted the same way from a simulated run
//! (the engine's events) and from a real one (its sched trace), and they
//! do not depend on how fast the machine is: a guest whose vCPUs share
//! host CPUs (a 4-vCPU guest on 2 cores) runs slower, but each placement
//! is still taken from the guest's own state, which is what is counted.
//!
//! A CPU is *idle* when the last switch on it went to the idle task and no
//! wakeup has been placed on it since (the kernel's available_idle_cpu
//! looks at nr_running and ttwu_pending the same way). A real trace
//! filtered to the workload's threads shows another process only where it
//! takes a CPU from one of them or hands one to them: a CPU it takes from
//! the idle task counts as idle, one it leaves idle as busy, until one of
//! the workload's threads runs there again. A trace of the whole machine
//! (a guest's) also shows where other tasks were woken and ran: a CPU
//! with such a wakeup pending is not idle either, though that placement
//! is not counted. A wakeup of a task that has
//! not switched out since it last ran places nothing (the kernel finds it
//! still queued) and is not counted.

use crate::engine::{Observer, TraceEvent};
use crate::formats::ftrace::{SchedEvent, SchedEventKind};
use crate::policy::{Sys, TaskState};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Counts of placement decisions in a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Decisions {
    /// Wakeups of sleeping tasks.
    pub wakeups: u64,
    /// Wakeups placed on a busy CPU while another CPU of the same LLC was
    /// idle (what SIS_UTIL's scan limit allows on a loaded LLC).
    pub wakeups_stacked: u64,
    /// Wakeups placed on another CPU than the task last ran on.
    pub wakeups_moved: u64,
    /// New tasks (fork, clone) placed.
    pub forks: u64,
    /// New tasks placed on an idle CPU.
    pub forks_to_idle: u64,
    /// Moves of a runnable task between CPUs (load balancing), and how
    /// many of them went to a CPU that had nothing else to run: an idle
    /// CPU's pull, or a new-idle pull by a CPU whose task had just blocked
    /// (judged at the switch that follows on that CPU).
    pub balance_moves: u64,
    pub balance_to_idle: u64,
}

impl Decisions {
    /// The figures as percentages, by the name validate shows them with:
    /// (key, label, percent, out of how many).
    pub fn percentages(&self) -> Vec<(&'static str, &'static str, f64, u64)> {
        let pct = |n: u64, of: u64| if of == 0 { f64::NAN } else { n as f64 * 100.0 / of as f64 };
        vec![
            (
                "stacked",
                "wakeups on a busy CPU beside an idle one %",
                pct(self.wakeups_stacked, self.wakeups),
                self.wakeups,
            ),
            ("moved", "wakeups that moved CPU %", pct(self.wakeups_moved, self.wakeups), self.wakeups),
            ("forks_idle", "new tasks placed on an idle CPU %", pct(self.forks_to_idle, self.forks), self.forks),
            (
                "balance_idle",
                "balancing moves to an idle CPU %",
                pct(self.balance_to_idle, self.balance_moves),
                self.balance_moves,
            ),
        ]
    }
}

/// Feeds events in time order; counts those inside `[from, to]`.
pub struct DecisionCounter {
    /// LLC of each CPU the workload uses (None: not the workload's).
    llc: Vec<Option<u32>>,
    /// What runs on each CPU: 0 the idle task; every CPU starts idle.
    running: Vec<u32>,
    /// Balancing moves to each CPU not yet judged: the switch on that CPU
    /// that follows says whether it had anything left to run.
    pulled: Vec<u64>,
    /// A wakeup was placed on the CPU and nothing has been switched in.
    pending: Vec<bool>,
    /// Each task's last CPU, and whether it is asleep.
    last_cpu: HashMap<u32, u32>,
    asleep: HashMap<u32, bool>,
    from: Nanos,
    to: Nanos,
    /// Per task spec of a simulated run, whether it is the machine's own
    /// work (`TaskSpec::background`): counted as another process is in a
    /// trace of the whole machine.
    background: Vec<bool>,
    pub counts: Decisions,
}

impl DecisionCounter {
    /// `llc[cpu]` is the LLC of each CPU of the workload, None for a CPU it
    /// does not use.
    pub fn new(llc: Vec<Option<u32>>, from: Nanos, to: Nanos) -> DecisionCounter {
        let n = llc.len();
        DecisionCounter {
            llc,
            running: vec![0; n],
            pulled: vec![0; n],
            pending: vec![false; n],
            last_cpu: HashMap::new(),
            asleep: HashMap::new(),
            from,
            to,
            background: Vec::new(),
            counts: Decisions::default(),
        }
    }

    /// A counter for a simulated run of `w`, whose background tasks are
    /// not the workload's.
    pub fn for_workload(llc: Vec<Option<u32>>, from: Nanos, to: Nanos, w: &crate::Workload) -> DecisionCounter {
        DecisionCounter { background: w.tasks.iter().map(|t| t.background).collect(), ..Self::new(llc, from, to) }
    }

    fn idle(&self, cpu: usize) -> bool {
        self.running[cpu] == 0 && !self.pending[cpu]
    }

    fn other_idle_in_llc(&self, cpu: usize) -> bool {
        let Some(Some(llc)) = self.llc.get(cpu) else { return false };
        (0..self.llc.len()).any(|c| c != cpu && self.llc[c] == Some(*llc) && self.idle(c))
    }

    /// A switch on `cpu` from `prev` (0 for idle; `prev_runnable` when it
    /// was preempted rather than blocked) to `next`.
    pub fn switch(&mut self, cpu: u32, prev: u32, prev_runnable: bool, next: u32) {
        let c = cpu as usize;
        if c >= self.running.len() {
            return;
        }
        if prev != 0 {
            self.asleep.insert(prev, !prev_runnable);
            self.last_cpu.insert(prev, cpu);
        }
        if next != 0 {
            self.last_cpu.insert(next, cpu);
            self.asleep.insert(next, false);
        }
        // A pull by a CPU whose task had just blocked (new-idle balance,
        // which runs before the switch away from it) or that was idle.
        if self.pulled[c] > 0 && (prev == 0 || !prev_runnable) {
            self.counts.balance_to_idle += self.pulled[c];
        }
        self.pulled[c] = 0;
        self.running[c] = next;
        self.pending[c] = false;
    }

    pub fn wakeup(&mut self, ts: Nanos, pid: u32, cpu: u32, new: bool) {
        let c = cpu as usize;
        if c >= self.running.len() {
            return;
        }
        // A task woken before it got off its CPU (it had set itself to
        // sleep but not yet switched out) is found still on its runqueue:
        // the kernel makes no placement (ttwu_runnable), though the trace
        // shows a wakeup. Under TCG that race is common; a simulated task
        // blocks at once and never has it.
        let never_slept = !new && self.asleep.get(&pid) == Some(&false);
        if ts >= self.from && ts <= self.to && !never_slept {
            let idle = self.idle(c);
            if new {
                self.counts.forks += 1;
                self.counts.forks_to_idle += u64::from(idle);
            } else {
                self.counts.wakeups += 1;
                if !idle && self.other_idle_in_llc(c) {
                    self.counts.wakeups_stacked += 1;
                }
                if self.last_cpu.get(&pid).is_some_and(|&l| l != cpu) {
                    self.counts.wakeups_moved += 1;
                }
            }
        }
        self.asleep.insert(pid, false);
        self.pending[c] = true;
    }

    /// A task outside the workload was woken onto `cpu`: it is not idle
    /// until its next switch, whatever that placement was.
    pub fn other_wakeup(&mut self, cpu: u32) {
        if let Some(p) = self.pending.get_mut(cpu as usize) {
            *p = true;
        }
    }

    /// A task moved from `from` to `to`: at a wakeup (it was asleep) that
    /// is part of the wakeup's placement; otherwise a balancing move.
    pub fn migrate(&mut self, ts: Nanos, pid: u32, to: u32) {
        let c = to as usize;
        if c >= self.running.len() {
            return;
        }
        let waking = self.asleep.get(&pid).copied().unwrap_or(false);
        if !waking && ts >= self.from && ts <= self.to {
            self.counts.balance_moves += 1;
            self.pulled[c] += 1;
        }
    }

    /// Counts a parsed sched trace, of which only the tasks `ours` accepts
    /// are the workload's.
    pub fn feed_trace(&mut self, events: &[SchedEvent], ours: impl Fn(u32) -> bool) {
        for ev in events {
            match &ev.kind {
                SchedEventKind::Switch { prev_pid, prev_state, next_pid, .. } => {
                    // Another process is not idle: it makes the CPU busy,
                    // and its own placement is not counted.
                    let prev = if *prev_pid == 0 || ours(*prev_pid) { *prev_pid } else { 0 };
                    let next = if *next_pid == 0 || ours(*next_pid) { *next_pid } else { u32::MAX };
                    self.switch(ev.cpu, prev, prev_state.starts_with('R'), next);
                }
                SchedEventKind::Wakeup { pid, target_cpu, new, .. } if ours(*pid) => {
                    self.wakeup(ev.ts, *pid, *target_cpu, *new)
                }
                SchedEventKind::Wakeup { target_cpu, .. } => self.other_wakeup(*target_cpu),
                SchedEventKind::Migrate { pid, dest_cpu, .. } if ours(*pid) => self.migrate(ev.ts, *pid, *dest_cpu),
                _ => {}
            }
        }
    }
}

/// A simulated run's decisions: task t is pid t + 1, so that 0 stays the
/// idle task.
impl Observer for DecisionCounter {
    fn event(&mut self, now: Nanos, sys: &Sys, ev: TraceEvent) {
        let outside = |t: u32| self.background.get(sys.tasks[t as usize].spec as usize).copied().unwrap_or(false);
        // As feed_trace takes another process: busy where it runs, not idle
        // where it was woken, its own placements not counted.
        let (prev_other, next_other, task_other) = match ev {
            TraceEvent::Switch { prev, next, .. } => (prev.is_some_and(outside), next.is_some_and(outside), false),
            TraceEvent::Wakeup { task, .. } | TraceEvent::Migrate { task, .. } => (false, false, outside(task)),
        };
        let pid = |t: Option<u32>| t.map_or(0, |t| t + 1);
        match ev {
            TraceEvent::Switch { cpu, prev, prev_state, next } => {
                let prev = if prev_other { 0 } else { pid(prev) };
                let next = if next_other { u32::MAX } else { pid(next) };
                self.switch(cpu, prev, prev_state == TaskState::Runnable, next)
            }
            TraceEvent::Wakeup { cpu, .. } if task_other => self.other_wakeup(cpu),
            TraceEvent::Wakeup { task, cpu, new } => self.wakeup(now, task + 1, cpu, new),
            TraceEvent::Migrate { .. } if task_other => {}
            TraceEvent::Migrate { task, to, .. } => self.migrate(now, task + 1, to),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wakeup_beside_an_idle_cpu_is_stacked_and_moves_are_told_apart() {
        // Four CPUs, one LLC; CPU 0 runs task 10, the others idle.
        let mut d = DecisionCounter::new(vec![Some(0); 4], 0, 100);
        d.switch(0, 0, false, 10);
        // Task 11 last ran on CPU 1 and sleeps.
        d.switch(1, 0, false, 11);
        d.switch(1, 11, false, 0);
        // Woken onto busy CPU 0 while 1-3 idle: stacked and moved.
        d.wakeup(10, 11, 0, false);
        // Woken task 12 onto idle CPU 2: neither.
        d.wakeup(11, 12, 2, false);
        // CPU 2 now has a wakeup pending: not idle for a fork.
        d.wakeup(12, 13, 2, true);
        d.wakeup(13, 14, 3, true);
        // Task 11, runnable on CPU 0, pulled to idle CPU 1: a balance move,
        // to an idle CPU as the switch there from the idle task shows.
        d.migrate(14, 11, 1);
        d.switch(1, 0, false, 11);
        // Task 12 pulled to CPU 0 by a periodic balance: 10 goes on running
        // there, preempted by 12 later.
        d.migrate(15, 12, 0);
        d.switch(0, 10, true, 12);
        // Outside the window: not counted.
        d.wakeup(200, 12, 0, false);
        let c = &d.counts;
        assert_eq!((c.wakeups, c.wakeups_stacked, c.wakeups_moved), (2, 1, 1));
        assert_eq!((c.forks, c.forks_to_idle), (2, 1));
        assert_eq!((c.balance_moves, c.balance_to_idle), (2, 1));
    }

    #[test]
    fn another_task_woken_onto_a_cpu_makes_it_busy_in_a_whole_machine_trace() {
        // CPU 0 runs the workload's task 10, CPU 1 is idle. A kworker (not
        // the workload's) is woken onto CPU 1, then task 11 onto CPU 0:
        // CPU 1 had a wakeup pending, so 11 was not stacked beside an idle
        // CPU. A filtered trace, which lacks the kworker's wakeup, says it
        // was.
        let text = "\
 sl-a-10 [000] d..2. 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sl-a next_pid=10 next_prio=120
 sl-b-11 [001] d..2. 1.000100: sched_switch: prev_comm=sl-b prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 <idle>-0 [000] dNh2. 1.000200: sched_wakeup: comm=kworker/1:1 pid=40 prio=120 target_cpu=001
 sl-a-10 [000] d..2. 1.000300: sched_wakeup: comm=sl-b pid=11 prio=120 target_cpu=000
";
        let events = crate::formats::ftrace::parse(text).unwrap();
        let stacked = |trace: &[SchedEvent]| {
            let mut d = DecisionCounter::new(vec![Some(0); 2], 0, 2_000_000_000);
            d.feed_trace(trace, |pid| pid == 10 || pid == 11);
            (d.counts.wakeups, d.counts.wakeups_stacked)
        };
        assert_eq!(stacked(&events), (1, 0));
        let filtered: Vec<SchedEvent> =
            events.iter().filter(|e| !matches!(e.kind, SchedEventKind::Wakeup { pid: 40, .. })).cloned().collect();
        assert_eq!(stacked(&filtered), (1, 1));
    }

    #[test]
    fn a_new_idle_pull_counts_as_to_an_idle_cpu() {
        // CPU 1 runs 5, which blocks; before the switch its new-idle
        // balance pulls 6 from CPU 0.
        let mut d = DecisionCounter::new(vec![Some(0); 2], 0, 100);
        d.switch(0, 0, false, 6);
        d.switch(1, 0, false, 5);
        d.migrate(3, 6, 1);
        d.switch(1, 5, false, 6);
        assert_eq!((d.counts.balance_moves, d.counts.balance_to_idle), (1, 1));
    }

    #[test]
    fn a_wakeup_of_a_task_still_on_its_cpu_places_nothing() {
        // Task 8 runs on CPU 0 and is woken before it switched out (it had
        // set itself to sleep): the kernel finds it on its runqueue. CPU 1
        // is idle, yet nothing was stacked or moved.
        let mut d = DecisionCounter::new(vec![Some(0); 2], 0, 100);
        d.switch(0, 0, false, 8);
        d.wakeup(5, 8, 0, false);
        assert_eq!((d.counts.wakeups, d.counts.wakeups_stacked), (0, 0));
        // Once it has slept, its wakeup is a placement again.
        d.switch(0, 8, false, 0);
        d.wakeup(9, 8, 0, false);
        assert_eq!(d.counts.wakeups, 1);
    }

    #[test]
    fn a_migration_while_asleep_is_the_wakeups_placement() {
        let mut d = DecisionCounter::new(vec![Some(0); 2], 0, 100);
        d.switch(0, 0, false, 7);
        d.switch(0, 7, false, 0);
        d.migrate(5, 7, 1);
        d.wakeup(5, 7, 1, false);
        assert_eq!(d.counts.balance_moves, 0);
        assert_eq!(d.counts.wakeups_moved, 1);
    }
}
