//! BFS, the Brain Fuck Scheduler, as in Con Kolivas's v0.512 (Linux 4.8,
//! kernel/sched/bfs.c): one global runqueue shared by every CPU, ordered by
//! virtual deadline.
//!
//! - A task's deadline is set when its time slice is refilled: niffies (a
//!   global nanosecond clock) + prio_ratios[nice] x rr_interval x
//!   (MS_TO_NS(1) / 128), with prio_ratios[0] = 128 growing by 11/10 per
//!   nice level. Every slice is rr_interval long (MS_TO_US(6) = 6144 us);
//!   nice acts only through the deadline. A waking task keeps its deadline.
//! - earliest_deadline_task walks the queue in key order and takes the first
//!   task allowed on this CPU. With `interactive` off, a task that last ran on
//!   another CPU is compared with its deadline shifted left by the cache
//!   distance (locality_diff), BFS's soft affinity.
//! - A slice ends at the tick when less than RESCHED_US (100 us) is left, or
//!   at once if the task was scheduled in the first half of the previous tick
//!   and less than half a jiffy is left ("dither"). SCHED_BATCH gets a new
//!   deadline at every deschedule.
//! - try_preempt on wakeup: an idle allowed CPU (ranked by cache distance
//!   from the task's last CPU) first; else the CPU running the lowest
//!   priority, latest deadline task, preempted when the woken task's deadline
//!   is earlier. A preempted task that stays runnable kicks an idle CPU.
//! - SCHED_IDLE tasks run as SCHED_IDLEPRIO: after every normal task.
//!
//! Left out: SCHED_ISO (the workload format has no ISO policy; schedlab's
//! rt class serves FIFO/RR), SMT_NICE, CPU frequency scaling ("sticky"/
//! scaling_rq), the skiplist's O(log n) cost model (a BTreeSet gives the
//! same order).

use crate::common::{self, TunableSpec};
use schedlab_sim::workload::SchedPolicy;
use schedlab_sim::{CpuId, Dequeue, Enqueue, Nanos, Policy, Sys, TaskId, TaskState, Tunable, WakeKind, Workload};
use std::collections::BTreeSet;

pub const RESCHED_NS: Nanos = 100 * 1024;
const IDLEPRIO_KEY: u64 = 0x00FF_0000_0000_0000;

/// prio_ratios[0..40] from sched_init: 128, then x 11/10 per nice level.
pub fn prio_ratios() -> [u64; 40] {
    let mut r = [0u64; 40];
    r[0] = 128;
    for i in 1..40 {
        r[i] = r[i - 1] * 11 / 10;
    }
    r
}

/// prio_deadline_diff: the deadline offset of a nice level, in ns.
pub fn deadline_diff(ratios: &[u64; 40], nice: i32, rr_interval_ms: u64) -> u64 {
    ratios[(nice + 20).clamp(0, 39) as usize] * rr_interval_ms * ((1u64 << 20) / 128)
}

/// timeslice(): MS_TO_US(rr_interval) microseconds, in ns.
pub fn timeslice_ns(rr_interval_ms: u64) -> u64 {
    (rr_interval_ms << 10) * 1000
}

#[derive(Clone, Debug, Default)]
struct Task {
    deadline: u64,
    time_slice: i64,
    key: u64,
    seq: u64,
    queued: bool,
}

pub struct Bfs {
    tun: Vec<TunableSpec>,
    rr_interval: u64,
    interactive: bool,
    ratios: [u64; 40],
    hz: u64,
    tasks: Vec<Task>,
    queue: BTreeSet<(u64, u64, TaskId)>,
    seq: u64,
    curr: Vec<Option<TaskId>>,
    last_tick: Vec<Nanos>,
    dither: Vec<bool>,
}

impl Bfs {
    pub fn new(w: &Workload) -> Result<Bfs, String> {
        let mut tun = vec![
            TunableSpec {
                name: "rr_interval",
                value: 6,
                min: 1,
                max: 1000,
                help: "ms every task runs before its deadline is renewed (/proc/sys/kernel/rr_interval)",
            },
            TunableSpec {
                name: "interactive",
                value: 1,
                min: 0,
                max: 1,
                help: "1: pure deadline order; 0: bias against tasks whose cache is on another CPU",
            },
        ];
        common::apply_tunables("bfs", &mut tun, &w.tunables)?;
        let n = w.nr_cpus() as usize;
        Ok(Bfs {
            rr_interval: common::value_of(&tun, "rr_interval") as u64,
            interactive: common::value_of(&tun, "interactive") != 0,
            tun,
            ratios: prio_ratios(),
            hz: w.machine.hz as u64,
            tasks: Vec::new(),
            queue: BTreeSet::new(),
            seq: 0,
            curr: vec![None; n],
            last_tick: vec![0; n],
            dither: vec![false; n],
        })
    }

    fn is_idleprio(sys: &Sys, t: TaskId) -> bool {
        sys.task(t).policy == SchedPolicy::Idle
    }

    /// time_slice_expired: a full slice and a new deadline from now.
    fn time_slice_expired(&mut self, sys: &Sys, t: TaskId) {
        let d = deadline_diff(&self.ratios, sys.task(t).nice, self.rr_interval);
        let s = &mut self.tasks[t as usize];
        s.time_slice = timeslice_ns(self.rr_interval) as i64;
        s.deadline = sys.now + d;
    }

    /// check_deadline at every deschedule.
    fn check_deadline(&mut self, sys: &Sys, t: TaskId) {
        if self.tasks[t as usize].time_slice < RESCHED_NS as i64 || sys.task(t).policy == SchedPolicy::Batch {
            self.time_slice_expired(sys, t);
        }
    }

    fn enqueue_task(&mut self, sys: &Sys, t: TaskId) {
        let mut key = self.tasks[t as usize].deadline;
        if Self::is_idleprio(sys, t) {
            key |= IDLEPRIO_KEY;
        }
        self.seq += 1;
        let s = &mut self.tasks[t as usize];
        s.key = key;
        s.seq = self.seq;
        s.queued = true;
        self.queue.insert((key, self.seq, t));
    }

    fn dequeue_task(&mut self, t: TaskId) {
        let s = &mut self.tasks[t as usize];
        if s.queued {
            self.queue.remove(&(s.key, s.seq, t));
            s.queued = false;
        }
    }

    /// The priority class a CPU runs at, lower is better: normal 0,
    /// idleprio 1, an idle CPU 2 (PRIO_LIMIT).
    fn rq_prio(&self, sys: &Sys, cpu: CpuId) -> (u8, u64) {
        match self.curr[cpu as usize] {
            None => (2, u64::MAX),
            Some(c) => (Self::is_idleprio(sys, c) as u8, self.tasks[c as usize].deadline),
        }
    }

    fn can_preempt(&self, sys: &Sys, p: TaskId, rq: (u8, u64)) -> bool {
        let prio = Self::is_idleprio(sys, p) as u8;
        if prio != rq.0 {
            return prio < rq.0;
        }
        if sys.task(p).policy == SchedPolicy::Batch {
            return false;
        }
        self.tasks[p as usize].deadline < rq.1
    }

    /// resched_best_idle: the allowed idle CPU nearest the task's cache.
    fn best_idle(&self, sys: &Sys, t: TaskId) -> Option<CpuId> {
        let from = sys.task(t).cpu;
        common::nearest(sys, from, (0..sys.nr_cpus).filter(|&c| sys.allowed(t, c) && common::truly_idle(sys, c)))
    }

    fn earliest_deadline_task(&self, sys: &Sys, cpu: CpuId) -> Option<TaskId> {
        let mut best: Option<(u64, TaskId)> = None;
        for &(key, _, t) in &self.queue {
            if !sys.allowed(t, cpu) {
                continue;
            }
            if !self.interactive {
                let tcpu = sys.task(t).cpu;
                if tcpu != cpu {
                    let dl = key.checked_shl(common::locality(sys, tcpu, cpu)).unwrap_or(u64::MAX);
                    if best.is_none_or(|(b, _)| dl < b) {
                        best = Some((dl, t));
                    }
                    // The locality offset means a later entry may still win.
                    continue;
                }
            }
            return Some(best.map_or(t, |(b, bt)| if b < key { bt } else { t }));
        }
        best.map(|(_, t)| t)
    }
}

impl Policy for Bfs {
    fn name(&self) -> &'static str {
        "bfs"
    }

    fn tunables(&self) -> Vec<Tunable> {
        common::list_tunables(&self.tun)
    }

    fn task_new(&mut self, sys: &mut Sys, t: TaskId, _parent: Option<TaskId>) {
        if self.tasks.len() <= t as usize {
            self.tasks.resize(t as usize + 1, Task::default());
        }
        self.time_slice_expired(sys, t);
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, _kind: WakeKind) -> CpuId {
        // try_preempt: an idle CPU first, else the CPU running the worst
        // (lowest priority, latest deadline) task.
        if let Some(c) = self.best_idle(sys, t) {
            return c;
        }
        let mut best: Option<(CpuId, (u8, u64))> = None;
        for c in common::cpu_order(sys, prev) {
            if !sys.allowed(t, c) {
                continue;
            }
            let p = self.rq_prio(sys, c);
            if best.is_none_or(|(_, b)| p > b) {
                best = Some((c, p));
            }
        }
        best.map_or(prev, |(c, _)| c)
    }

    fn enqueue(&mut self, sys: &mut Sys, _cpu: CpuId, t: TaskId, _how: Enqueue) {
        self.enqueue_task(sys, t);
    }

    fn dequeue(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId, _why: Dequeue) {
        self.dequeue_task(t);
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        let prev = self.curr[cpu as usize].take();
        let mut requeued = None;
        if let Some(p) = prev {
            self.check_deadline(sys, p);
            if sys.task(p).state == TaskState::Runnable {
                self.enqueue_task(sys, p);
                requeued = Some(p);
            }
        }
        self.dither[cpu as usize] = sys.now.saturating_sub(self.last_tick[cpu as usize]) <= 500_000_000 / self.hz;
        let next = self.earliest_deadline_task(sys, cpu);
        if let Some(n) = next {
            self.dequeue_task(n);
            if sys.task(n).cpu != cpu {
                sys.migrate(n, cpu);
            }
            self.curr[cpu as usize] = Some(n);
        }
        // resched_suitable_idle: the preempted task may run elsewhere now.
        if let Some(p) = requeued.filter(|&p| Some(p) != next)
            && let Some(c) = self.best_idle(sys, p)
        {
            sys.resched(c);
        }
        next
    }

    fn put_prev(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, runnable: bool) {
        self.curr[cpu as usize] = None;
        self.check_deadline(sys, t);
        if runnable {
            self.enqueue_task(sys, t);
            if let Some(c) = self.best_idle(sys, t) {
                sys.resched(c);
            }
        }
    }

    fn account(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId, delta: Nanos) {
        self.tasks[t as usize].time_slice -= delta as i64;
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        // task_running_tick, then rq->last_tick = now.
        let half_jiffy = (500_000_000 / self.hz) as i64;
        let s = &mut self.tasks[curr as usize];
        let expire = if self.dither[cpu as usize] {
            if s.time_slice > half_jiffy {
                false
            } else {
                s.time_slice = 0;
                true
            }
        } else {
            s.time_slice < RESCHED_NS as i64
        };
        if expire {
            sys.resched(cpu);
        }
        self.last_tick[cpu as usize] = sys.now;
    }

    fn wakeup_preempt(&mut self, sys: &mut Sys, cpu: CpuId, _curr: TaskId, woken: TaskId) -> bool {
        // IDLEPRIO tasks never preempt anything but idle.
        !Self::is_idleprio(sys, woken) && self.can_preempt(sys, woken, self.rq_prio(sys, cpu))
    }

    fn yield_task(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        // sched_yield: give up the rest of the slice.
        self.tasks[t as usize].time_slice = 0;
        sys.resched(cpu);
    }

    fn balance(&mut self, _sys: &mut Sys, _cpu: CpuId, _idle: bool) {}

    fn newidle_balance(&mut self, _sys: &mut Sys, _cpu: CpuId) {}

    fn unsupported(&self, sys: &Sys) -> Vec<String> {
        common::no_groups("bfs", sys)
    }

    fn check_invariants(&self, sys: &Sys) -> Result<(), String> {
        for &(_, _, t) in &self.queue {
            if sys.task(t).state != TaskState::Runnable {
                return Err(format!("bfs: queued task {t} is {:?}", sys.task(t).state));
            }
        }
        for (cpu, c) in self.curr.iter().enumerate() {
            if let Some(t) = c
                && self.tasks[*t as usize].queued
            {
                return Err(format!("bfs: task {t} runs on CPU {cpu} and is queued"));
            }
        }
        Ok(())
    }
}
