//! SCHED_FIFO and SCHED_RR, run by the engine above every policy the way
//! kernel/sched/rt.c sits above fair.c: per-CPU priority-ordered FIFO lists,
//! a higher rt_priority always preempts, RR tasks rotate within their level
//! every `sched_rr_timeslice_ms` (100 ms, RR_TIMESLICE), and a waking RT task
//! goes to the CPU running the lowest-priority work (find_lowest_rq), with
//! pulls from overloaded CPUs when a CPU has no RT work left.
//! RT throttling (sched_rt_runtime_us) is not modelled.

use crate::policy::{Sys, TaskId};
use crate::time::{NSEC_PER_MSEC, Nanos};
use crate::topology::CpuId;
use crate::workload::SchedPolicy;
use std::collections::BTreeSet;

pub const RR_TIMESLICE: Nanos = 100 * NSEC_PER_MSEC;

pub(crate) struct RtClass {
    /// Per CPU: (100 - rt_priority, arrival sequence, task); the running RT
    /// task stays in its list, at the head, as in the kernel.
    queues: Vec<BTreeSet<(u8, u64, TaskId)>>,
    key: Vec<(u8, u64)>,
    rr_left: Vec<Nanos>,
    seq: u64,
    /// CPUs with a waiting RT task (two or more queued): the kernel's
    /// rto_count, which lets a CPU skip the pull scan when nothing waits.
    overloaded: u32,
}

pub(crate) fn rt_prio(p: SchedPolicy) -> Option<u8> {
    match p {
        SchedPolicy::Fifo(p) | SchedPolicy::Rr(p) => Some(p),
        _ => None,
    }
}

impl RtClass {
    pub fn new(nr_cpus: u32) -> RtClass {
        RtClass {
            queues: vec![BTreeSet::new(); nr_cpus as usize],
            key: Vec::new(),
            rr_left: Vec::new(),
            seq: 0,
            overloaded: 0,
        }
    }

    fn slot(&mut self, t: TaskId) {
        let need = t as usize + 1;
        if self.key.len() < need {
            self.key.resize(need, (0, 0));
            self.rr_left.resize(need, RR_TIMESLICE);
        }
    }

    pub fn enqueue(&mut self, cpu: CpuId, t: TaskId, prio: u8) {
        self.slot(t);
        self.seq += 1;
        let key = (100 - prio, self.seq);
        self.key[t as usize] = key;
        let queue = &mut self.queues[cpu as usize];
        queue.insert((key.0, key.1, t));
        if queue.len() == 2 {
            self.overloaded += 1;
        }
    }

    pub fn dequeue(&mut self, cpu: CpuId, t: TaskId) {
        let (p, s) = self.key[t as usize];
        let queue = &mut self.queues[cpu as usize];
        let removed = queue.remove(&(p, s, t));
        debug_assert!(removed, "rt task {t} was not queued on cpu {cpu}");
        if queue.len() == 1 {
            self.overloaded -= 1;
        }
    }

    /// For the engine's invariant check: each CPU's list holds as many
    /// tasks as the CPU counts RT tasks, and the overload count agrees
    /// with the lists.
    pub fn check(&self, nr_rt: impl Fn(CpuId) -> u32) -> Result<(), String> {
        for (cpu, queue) in self.queues.iter().enumerate() {
            if queue.len() as u32 != nr_rt(cpu as CpuId) {
                return Err(format!(
                    "CPU {cpu} counts {} RT tasks but its RT list holds {}",
                    nr_rt(cpu as CpuId),
                    queue.len()
                ));
            }
        }
        let overloaded = self.queues.iter().filter(|q| q.len() >= 2).count() as u32;
        if overloaded != self.overloaded {
            return Err(format!("{overloaded} CPUs have waiting RT tasks but rto_count is {}", self.overloaded));
        }
        Ok(())
    }

    pub fn pick(&self, cpu: CpuId) -> Option<TaskId> {
        self.queues[cpu as usize].first().map(|e| e.2)
    }

    pub fn is_empty(&self, cpu: CpuId) -> bool {
        self.queues[cpu as usize].is_empty()
    }

    /// Move to the tail of its priority level (RR expiry, sched_yield).
    pub fn requeue_tail(&mut self, cpu: CpuId, t: TaskId) {
        let prio = 100 - self.key[t as usize].0;
        self.dequeue(cpu, t);
        self.enqueue(cpu, t, prio);
    }

    /// task_tick_rt: RR tasks lose their slice; returns true to reschedule.
    pub fn tick(&mut self, cpu: CpuId, t: TaskId, policy: SchedPolicy, tick_ns: Nanos) -> bool {
        if !matches!(policy, SchedPolicy::Rr(_)) {
            return false;
        }
        let left = &mut self.rr_left[t as usize];
        *left = left.saturating_sub(tick_ns);
        if *left > 0 {
            return false;
        }
        *left = RR_TIMESLICE;
        let level = self.key[t as usize].0;
        let others = self.queues[cpu as usize].iter().filter(|e| e.0 == level).count() > 1;
        if others {
            self.requeue_tail(cpu, t);
        }
        others
    }

    /// Priority of what a CPU runs, for find_lowest_rq: -1 idle, 0 a
    /// normal task, else the rt priority.
    fn cpu_level(&self, sys: &Sys, cpu: CpuId) -> i32 {
        match self.pick(cpu) {
            Some(t) => rt_prio(sys.task(t).policy).map_or(0, i32::from),
            None if sys.idle(cpu) => -1,
            None => 0,
        }
    }

    /// select_task_rq_rt: stay on the previous CPU unless it runs RT work
    /// of equal or higher priority; then the CPU with the lowest level.
    pub fn select_cpu(&self, sys: &Sys, t: TaskId, prev: CpuId, prio: u8) -> CpuId {
        let prio = prio as i32;
        if sys.allowed(t, prev) && self.cpu_level(sys, prev) < prio {
            return prev;
        }
        let mut best = (i32::MAX, prev);
        for cpu in 0..sys.nr_cpus {
            if !sys.allowed(t, cpu) {
                continue;
            }
            let level = self.cpu_level(sys, cpu);
            let dist = sys.topology.distance(cpu, prev) as i32;
            let key = (level * 8 + dist, cpu);
            if key.0 < best.0 {
                best = (key.0, cpu);
            }
        }
        if sys.allowed(t, best.1) {
            best.1
        } else {
            sys.task(t).affinity.as_ref().and_then(|a| a.first()).unwrap_or(prev)
        }
    }

    /// pull_rt_task: a CPU without RT work takes the best queued-but-waiting
    /// RT task from another CPU. Returns the task and where it was.
    pub fn find_pull(&self, sys: &Sys, cpu: CpuId) -> Option<(TaskId, CpuId)> {
        if self.overloaded == 0 {
            return None;
        }
        let mut best: Option<((u8, u64), TaskId, CpuId)> = None;
        for other in 0..sys.nr_cpus {
            if other == cpu || self.queues[other as usize].len() < 2 {
                continue;
            }
            let running = sys.cpus[other as usize].curr;
            for &(p, s, t) in self.queues[other as usize].iter() {
                if Some(t) == running || !sys.allowed(t, cpu) {
                    continue;
                }
                if best.is_none_or(|b| (p, s) < b.0) {
                    best = Some(((p, s), t, other));
                }
                break;
            }
        }
        best.map(|(_, t, from)| (t, from))
    }
}
