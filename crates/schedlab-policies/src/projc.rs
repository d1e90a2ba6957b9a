//! Project C (Alfred Chen's linux-prjc, the 6.x "alt" scheduler core,
//! kernel/sched/alt_core.c with bmq.h / pds.h), in its two flavours:
//!
//! - `bmq`, BitMap Queue: one bitmap-indexed FIFO queue per CPU. A normal
//!   task sits at level MIN_SCHED_NORMAL_PRIO + (nice + 20 + boost_prio) / 2
//!   (task_sched_prio). boost_prio moves within +/- MAX_PRIORITY_ADJ (12):
//!   it falls by one (priority rises) when a task wakes after sleeping longer
//!   than a base slice, or goes to sleep having run less than
//!   boost_threshold = base_slice >> ((20 - boost_prio) / 2) since it was
//!   switched in; it rises by one each time a slice is used up
//!   (sched_task_renew). A forked task starts with its parent's boost, a
//!   first-generation task at 0. SCHED_BATCH is never boosted below 0,
//!   SCHED_IDLE never boosted.
//! - `pds`, Priority and Deadline based Skiplist: a virtual deadline per
//!   task, in units of 2^22 ns (time_edge = clock >> 22), renewed as
//!   time_edge + nice + 20 when a slice is used up or a task is forked; a
//!   sleeping task keeps its deadline. The queue is ordered by deadline,
//!   FIFO within one unit.
//!
//! Both: the running task stays in its queue; sched_timeslice is 4 ms and
//! ends exactly (hrtick); a waking task preempts when it is now the first in
//! the queue. select_task_rq prefers an idle core whose SMT siblings are all
//! idle, then any idle CPU, then a CPU whose highest queued priority
//! (watermark) is below the task's, each nearest the task's last CPU in
//! cache order; otherwise the task stays where it ran. There is no
//! periodic load balancer: a CPU that is about to go idle pulls up to half
//! of the queued tasks (at most sched_nr_migrate = 32) of the nearest
//! runqueue with tasks waiting (take_other_rq_tasks).
//!
//! Left out: the SMT group balancer (sg_balance), yield_type 2 (skip),
//! cpufreq hooks.

use crate::common::{self, KeyedQueues, SliceTimers, TunableSpec};
use schedlab_sim::workload::SchedPolicy;
use schedlab_sim::{CpuId, Dequeue, Enqueue, Nanos, Policy, Sys, TaskId, TaskState, Tunable, WakeKind, Workload};

const MAX_PRIORITY_ADJ: i64 = 12;
/// Keeps BMQ levels positive; only their order matters.
const MIN_SCHED_NORMAL_PRIO: i64 = 32;
const RESCHED_NS: i64 = 100_000;
const PDS_TIMESLICE_SHIFT: u32 = 22;
const SCHED_NR_MIGRATE: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    Bmq,
    Pds,
}

#[derive(Clone, Debug, Default)]
struct Task {
    boost_prio: i64,
    deadline: u64,
    time_slice: i64,
}

pub struct ProjectC {
    flavour: Flavour,
    tun: Vec<TunableSpec>,
    timeslice: i64,
    yield_type: i64,
    tasks: Vec<Task>,
    /// One queue per CPU; the running task stays in its queue.
    rqs: KeyedQueues,
    curr: Vec<Option<TaskId>>,
    last_ts_switch: Vec<Nanos>,
    timers: SliceTimers,
    order: Vec<Vec<CpuId>>,
    pub boosts: u64,
    pub deboosts: u64,
}

impl ProjectC {
    pub fn new(flavour: Flavour, w: &Workload) -> Result<ProjectC, String> {
        let name = if flavour == Flavour::Bmq { "bmq" } else { "pds" };
        let mut tun = vec![
            TunableSpec {
                name: "sched_timeslice",
                value: 4,
                min: 2,
                max: 4,
                help: "time slice in ms (boot parameter sched_timeslice=, 2 or 4)",
            },
            TunableSpec {
                name: "yield_type",
                value: 1,
                min: 0,
                max: 1,
                help: "sched_yield(): 0 does nothing, 1 deboosts (bmq) or renews the deadline (pds)",
            },
        ];
        common::apply_tunables(name, &mut tun, &w.tunables)?;
        if common::value_of(&tun, "sched_timeslice") == 3 {
            return Err("sched_timeslice = 3: Project C accepts 2 or 4 (ms)".into());
        }
        let n = w.nr_cpus() as usize;
        Ok(ProjectC {
            flavour,
            timeslice: common::value_of(&tun, "sched_timeslice") * 1_000_000,
            yield_type: common::value_of(&tun, "yield_type"),
            tun,
            tasks: Vec::new(),
            rqs: KeyedQueues::new(n),
            curr: vec![None; n],
            last_ts_switch: vec![0; n],
            timers: SliceTimers::new(n as u32, 2 << 56),
            order: Vec::new(),
            boosts: 0,
            deboosts: 0,
        })
    }

    fn time_edge(&self, now: Nanos) -> u64 {
        let shift = if self.timeslice == 2_000_000 { PDS_TIMESLICE_SHIFT - 1 } else { PDS_TIMESLICE_SHIFT };
        now >> shift
    }

    /// The queue key: BMQ's level, or PDS's deadline.
    fn key(&self, sys: &Sys, t: TaskId) -> u64 {
        let s = &self.tasks[t as usize];
        match self.flavour {
            Flavour::Bmq => {
                // C division truncates toward zero, as Rust's does.
                let level = (sys.task(t).nice as i64 + 20 + s.boost_prio) / 2;
                (MIN_SCHED_NORMAL_PRIO + level) as u64
            }
            Flavour::Pds => s.deadline,
        }
    }

    /// BMQ's level of a task, for tests and reports.
    pub fn bmq_level(&self, sys: &Sys, t: TaskId) -> u64 {
        self.key(sys, t)
    }

    pub fn boost_prio(&self, t: TaskId) -> i64 {
        self.tasks[t as usize].boost_prio
    }

    fn boost(&mut self, sys: &Sys, t: TaskId) {
        let limit = match sys.task(t).policy {
            SchedPolicy::Normal | SchedPolicy::Iso => -MAX_PRIORITY_ADJ,
            SchedPolicy::Batch => 0,
            _ => return,
        };
        let s = &mut self.tasks[t as usize];
        if s.boost_prio > limit {
            s.boost_prio -= 1;
            self.boosts += 1;
        }
    }

    fn deboost(&mut self, t: TaskId) {
        let s = &mut self.tasks[t as usize];
        if s.boost_prio < MAX_PRIORITY_ADJ {
            s.boost_prio += 1;
            self.deboosts += 1;
        }
    }

    fn renew_deadline(&mut self, sys: &Sys, t: TaskId) {
        let d = self.time_edge(sys.now) + (sys.task(t).nice + 20) as u64;
        self.tasks[t as usize].deadline = d;
    }

    fn time_slice_expired(&mut self, sys: &Sys, t: TaskId) {
        self.tasks[t as usize].time_slice = self.timeslice;
        match self.flavour {
            Flavour::Bmq => self.deboost(t),
            Flavour::Pds => self.renew_deadline(sys, t),
        }
    }

    fn enqueue_task(&mut self, sys: &Sys, cpu: CpuId, t: TaskId) {
        if self.flavour == Flavour::Pds {
            // sched_task_sanity_check
            let max = self.time_edge(sys.now) + 39;
            let s = &mut self.tasks[t as usize];
            s.deadline = s.deadline.min(max);
        }
        self.rqs.insert(cpu, t, self.key(sys, t));
    }

    /// To the tail of its (possibly new) level on the same CPU.
    fn requeue(&mut self, sys: &Sys, t: TaskId) {
        let cpu = self.rqs.queue_of(t).expect("requeue of a queued task");
        self.enqueue_task(sys, cpu, t);
    }

    /// The key of the best task on a CPU (its watermark); idle CPUs have none.
    fn watermark(&self, cpu: CpuId) -> Option<u64> {
        self.rqs.first(cpu).map(|(k, _)| k)
    }

    fn ensure_order(&mut self, sys: &Sys) {
        if self.order.is_empty() {
            self.order = (0..sys.nr_cpus).map(|c| common::cpu_order(sys, c)).collect();
        }
    }

    /// take_other_rq_tasks / migrate_pending_tasks.
    fn take_other_rq_tasks(&mut self, sys: &mut Sys, cpu: CpuId) -> bool {
        for i in 1..self.order[cpu as usize].len() {
            let src = self.order[cpu as usize][i];
            let nr = self.rqs.len(src);
            if nr < 2 {
                continue;
            }
            let skip = self.curr[src as usize];
            let tries = (nr / 2).min(SCHED_NR_MIGRATE);
            let candidates: Vec<TaskId> =
                self.rqs.iter(src).map(|(_, t)| t).filter(|&t| Some(t) != skip).take(tries).collect();
            let mut moved = 0;
            for t in candidates {
                if sys.allowed(t, cpu) {
                    sys.migrate(t, cpu);
                    self.enqueue_task(sys, cpu, t);
                    moved += 1;
                }
            }
            if moved > 0 {
                return true;
            }
        }
        false
    }
}

impl Policy for ProjectC {
    fn name(&self) -> &'static str {
        match self.flavour {
            Flavour::Bmq => "bmq",
            Flavour::Pds => "pds",
        }
    }

    fn tunables(&self) -> Vec<Tunable> {
        common::list_tunables(&self.tun)
    }

    fn task_new(&mut self, sys: &mut Sys, t: TaskId, parent: Option<TaskId>) {
        self.ensure_order(sys);
        if self.tasks.len() <= t as usize {
            self.tasks.resize(t as usize + 1, Task::default());
        }
        self.tasks[t as usize].time_slice = self.timeslice;
        match self.flavour {
            Flavour::Bmq => self.tasks[t as usize].boost_prio = parent.map_or(0, |p| self.tasks[p as usize].boost_prio),
            Flavour::Pds => self.renew_deadline(sys, t),
        }
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, kind: WakeKind) -> CpuId {
        if self.flavour == Flavour::Bmq
            && matches!(kind, WakeKind::Wakeup { .. })
            && sys.now.saturating_sub(sys.task(t).last_ran) > self.timeslice as u64
        {
            // sched_task_ttwu: slept longer than a slice.
            self.boost(sys, t);
        }
        let from = sys.task(t).cpu;
        let allowed = |c: &CpuId| sys.allowed(t, *c);
        if sys.topology.threads_per_core > 1
            && let Some(c) = common::nearest(
                sys,
                from,
                (0..sys.nr_cpus).filter(allowed).filter(|&c| sys.topology.siblings(c).all(|s| sys.idle(s))),
            )
        {
            return c;
        }
        if let Some(c) = common::nearest(sys, from, (0..sys.nr_cpus).filter(allowed).filter(|&c| sys.idle(c))) {
            return c;
        }
        let key = self.key(sys, t);
        if let Some(c) = common::nearest(
            sys,
            from,
            (0..sys.nr_cpus).filter(allowed).filter(|&c| self.watermark(c).is_some_and(|w| w > key)),
        ) {
            return c;
        }
        if sys.allowed(t, prev) { prev } else { (0..sys.nr_cpus).find(|c| sys.allowed(t, *c)).unwrap_or(prev) }
    }

    fn enqueue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, _how: Enqueue) {
        self.enqueue_task(sys, cpu, t);
    }

    fn dequeue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, why: Dequeue) {
        if self.flavour == Flavour::Bmq && why == Dequeue::Sleep && self.curr[cpu as usize] == Some(t) {
            // sched_task_deactivate: a short run before sleeping.
            let threshold = self.timeslice >> ((20 - self.tasks[t as usize].boost_prio) / 2);
            if ((sys.now - self.last_ts_switch[cpu as usize]) as i64) < threshold {
                self.boost(sys, t);
            }
        }
        self.rqs.remove(t);
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        let prev = self.curr[cpu as usize].take();
        if let Some(p) = prev
            && sys.task(p).state == TaskState::Runnable
            && self.tasks[p as usize].time_slice < RESCHED_NS
        {
            self.time_slice_expired(sys, p);
            self.requeue(sys, p);
        }
        let next = self.rqs.first(cpu).map(|(_, t)| t);
        match next {
            Some(n) => {
                self.curr[cpu as usize] = Some(n);
                if prev != Some(n) {
                    self.last_ts_switch[cpu as usize] = sys.now;
                }
                let left = self.tasks[n as usize].time_slice.max(0) as Nanos;
                self.timers.arm(sys, cpu, sys.now + left);
            }
            None => self.timers.cancel(cpu),
        }
        next
    }

    fn put_prev(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, runnable: bool) {
        self.curr[cpu as usize] = None;
        self.timers.cancel(cpu);
        if runnable && self.tasks[t as usize].time_slice < RESCHED_NS {
            self.time_slice_expired(sys, t);
            self.requeue(sys, t);
        }
    }

    fn account(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId, delta: Nanos) {
        self.tasks[t as usize].time_slice -= delta as i64;
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        if self.tasks[curr as usize].time_slice < RESCHED_NS {
            sys.resched(cpu);
        }
    }

    fn wakeup_preempt(&mut self, _sys: &mut Sys, cpu: CpuId, curr: TaskId, _woken: TaskId) -> bool {
        self.rqs.first(cpu).is_some_and(|(_, t)| t != curr)
    }

    fn yield_task(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        if self.yield_type == 0 {
            return;
        }
        match self.flavour {
            Flavour::Bmq => self.tasks[t as usize].boost_prio = MAX_PRIORITY_ADJ,
            Flavour::Pds => {
                self.tasks[t as usize].time_slice = self.timeslice;
                self.renew_deadline(sys, t);
            }
        }
        self.requeue(sys, t);
        sys.resched(cpu);
    }

    fn balance(&mut self, _sys: &mut Sys, _cpu: CpuId, _idle: bool) {}

    fn newidle_balance(&mut self, sys: &mut Sys, cpu: CpuId) {
        self.take_other_rq_tasks(sys, cpu);
    }

    fn timer(&mut self, sys: &mut Sys, token: u64) {
        if let Some(cpu) = self.timers.fired(token)
            && let Some(c) = self.curr[cpu as usize]
        {
            self.tasks[c as usize].time_slice = 0;
            sys.resched(cpu);
        }
    }

    fn extra_metrics(&self, _sys: &Sys) -> Vec<(String, f64)> {
        match self.flavour {
            Flavour::Bmq => vec![("boosts".into(), self.boosts as f64), ("deboosts".into(), self.deboosts as f64)],
            Flavour::Pds => Vec::new(),
        }
    }

    fn unsupported(&self, sys: &Sys) -> Vec<String> {
        let mut out = common::no_groups(self.name(), sys);
        out.extend(common::no_iso(self.name(), sys));
        out
    }

    fn check_invariants(&self, sys: &Sys) -> Result<(), String> {
        for cpu in 0..self.rqs.nr_queues() as CpuId {
            for (_, t) in self.rqs.iter(cpu) {
                let st = sys.task(t).state;
                if !matches!(st, TaskState::Runnable | TaskState::Running) || sys.task(t).cpu != cpu as CpuId {
                    return Err(format!(
                        "{}: task {t} in CPU {cpu}'s queue is {st:?} on CPU {}",
                        self.name(),
                        sys.task(t).cpu
                    ));
                }
            }
        }
        Ok(())
    }
}
