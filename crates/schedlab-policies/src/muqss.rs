//! MuQSS, the Multiple Queue Skiplist Scheduler, as in Con Kolivas's v0.205
//! (Linux 5.12, kernel/sched/MuQSS.c): BFS's virtual deadlines on one
//! skiplist runqueue per CPU.
//!
//! - Deadlines, slices and nice ratios are BFS's ([`crate::bfs`]):
//!   niffies + prio_ratios[nice] x rr_interval, slices of rr_interval.
//! - earliest_deadline_task: a CPU looks at every runqueue in cache-locality
//!   order (its own first) and takes the task with the lowest key; a remote
//!   queue must be strictly better to win. With `interactive` off it only
//!   takes from a queue holding more tasks than the best seen so far.
//! - Slices end exactly with hrexpiry (a high-resolution timer), not at
//!   the tick.
//! - select_best_rq on wakeup: an idle CPU nearest the task's cache, else the
//!   least loaded runqueue in locality order; try_preempt then walks CPUs in
//!   locality order from there and preempts the first one whose running
//!   task has a later deadline (or lower priority class).
//!
//! Left out: SCHED_ISO, SMT_NICE, the skiplist's level randomisation (a
//! BTreeSet gives the same order), runqueue sharing (rqshare) options.

use crate::bfs::{RESCHED_NS, deadline_diff, prio_ratios, timeslice_ns};
use crate::common::{self, SliceTimers, TunableSpec};
use schedlab_sim::workload::SchedPolicy;
use schedlab_sim::{CpuId, Dequeue, Enqueue, Nanos, Policy, Sys, TaskId, TaskState, Tunable, WakeKind, Workload};
use std::collections::BTreeSet;

const IDLEPRIO_KEY: u64 = 0xF000_0000_0000_0000;

#[derive(Clone, Debug, Default)]
struct Task {
    deadline: u64,
    time_slice: i64,
    key: u64,
    seq: u64,
    rq: Option<CpuId>,
}

pub struct Muqss {
    tun: Vec<TunableSpec>,
    rr_interval: u64,
    interactive: bool,
    ratios: [u64; 40],
    tasks: Vec<Task>,
    rqs: Vec<BTreeSet<(u64, u64, TaskId)>>,
    seq: u64,
    curr: Vec<Option<TaskId>>,
    timers: SliceTimers,
    /// cpu_order of every CPU, computed once.
    order: Vec<Vec<CpuId>>,
}

impl Muqss {
    pub fn new(w: &Workload) -> Result<Muqss, String> {
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
                help: "1: the earliest deadline of all runqueues; 0: only from busier runqueues",
            },
        ];
        common::apply_tunables("muqss", &mut tun, &w.tunables)?;
        let n = w.nr_cpus() as usize;
        Ok(Muqss {
            rr_interval: common::value_of(&tun, "rr_interval") as u64,
            interactive: common::value_of(&tun, "interactive") != 0,
            tun,
            ratios: prio_ratios(),
            tasks: Vec::new(),
            rqs: vec![BTreeSet::new(); n],
            seq: 0,
            curr: vec![None; n],
            timers: SliceTimers::new(n as u32, 1 << 56),
            order: Vec::new(),
        })
    }

    fn is_idleprio(sys: &Sys, t: TaskId) -> bool {
        sys.task(t).policy == SchedPolicy::Idle
    }

    fn time_slice_expired(&mut self, sys: &Sys, t: TaskId) {
        let d = deadline_diff(&self.ratios, sys.task(t).nice, self.rr_interval);
        let s = &mut self.tasks[t as usize];
        s.time_slice = timeslice_ns(self.rr_interval) as i64;
        s.deadline = sys.now + d;
    }

    fn check_deadline(&mut self, sys: &Sys, t: TaskId) {
        if self.tasks[t as usize].time_slice < RESCHED_NS as i64 || sys.task(t).policy == SchedPolicy::Batch {
            self.time_slice_expired(sys, t);
        }
    }

    fn enqueue_task(&mut self, sys: &Sys, cpu: CpuId, t: TaskId) {
        let mut key = self.tasks[t as usize].deadline;
        if Self::is_idleprio(sys, t) {
            key |= IDLEPRIO_KEY;
        }
        self.seq += 1;
        let s = &mut self.tasks[t as usize];
        s.key = key;
        s.seq = self.seq;
        s.rq = Some(cpu);
        self.rqs[cpu as usize].insert((key, self.seq, t));
    }

    fn dequeue_task(&mut self, t: TaskId) {
        let s = &mut self.tasks[t as usize];
        if let Some(rq) = s.rq.take() {
            self.rqs[rq as usize].remove(&(s.key, s.seq, t));
        }
    }

    fn rq_load(&self, cpu: CpuId) -> usize {
        self.rqs[cpu as usize].len() + self.curr[cpu as usize].is_some() as usize
    }

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
        sys.task(p).policy != SchedPolicy::Batch && self.tasks[p as usize].deadline < rq.1
    }

    fn best_idle(&self, sys: &Sys, t: TaskId) -> Option<CpuId> {
        let from = sys.task(t).cpu;
        common::nearest(sys, from, (0..sys.nr_cpus).filter(|&c| sys.allowed(t, c) && common::truly_idle(sys, c)))
    }

    fn ensure_order(&mut self, sys: &Sys) {
        if self.order.is_empty() {
            self.order = (0..sys.nr_cpus).map(|c| common::cpu_order(sys, c)).collect();
        }
    }

    fn earliest_deadline_task(&self, sys: &Sys, cpu: CpuId) -> Option<TaskId> {
        let (mut best, mut best_key, mut best_entries) = (None, u64::MAX, 0usize);
        for &other in &self.order[cpu as usize] {
            let rq = &self.rqs[other as usize];
            let entries = rq.len();
            if entries == 0 || (!self.interactive && entries <= best_entries) {
                continue;
            }
            if let Some(&(key, _, t)) = rq.iter().find(|&&(_, _, t)| sys.allowed(t, cpu))
                && key < best_key
            {
                best = Some(t);
                best_key = key;
                best_entries = entries;
            }
        }
        best
    }
}

impl Policy for Muqss {
    fn name(&self) -> &'static str {
        "muqss"
    }

    fn tunables(&self) -> Vec<Tunable> {
        common::list_tunables(&self.tun)
    }

    fn task_new(&mut self, sys: &mut Sys, t: TaskId, _parent: Option<TaskId>) {
        self.ensure_order(sys);
        if self.tasks.len() <= t as usize {
            self.tasks.resize(t as usize + 1, Task::default());
        }
        self.time_slice_expired(sys, t);
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, _kind: WakeKind) -> CpuId {
        if let Some(c) = self.best_idle(sys, t) {
            return c;
        }
        let mut best = (prev, usize::MAX);
        for &c in &self.order[prev as usize] {
            if sys.allowed(t, c) && self.rq_load(c) < best.1 {
                best = (c, self.rq_load(c));
            }
        }
        best.0
    }

    fn enqueue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, _how: Enqueue) {
        self.enqueue_task(sys, cpu, t);
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
                self.enqueue_task(sys, cpu, p);
                requeued = Some(p);
            }
        }
        let next = self.earliest_deadline_task(sys, cpu);
        match next {
            Some(n) => {
                self.dequeue_task(n);
                if sys.task(n).cpu != cpu {
                    sys.migrate(n, cpu);
                }
                self.curr[cpu as usize] = Some(n);
                // hrexpiry: the slice ends exactly.
                let left = self.tasks[n as usize].time_slice.max(0) as Nanos;
                self.timers.arm(sys, cpu, sys.now + left);
            }
            None => self.timers.cancel(cpu),
        }
        if let Some(p) = requeued.filter(|&p| Some(p) != next)
            && let Some(c) = self.best_idle(sys, p)
        {
            sys.resched(c);
        }
        next
    }

    fn put_prev(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, runnable: bool) {
        self.curr[cpu as usize] = None;
        self.timers.cancel(cpu);
        self.check_deadline(sys, t);
        if runnable {
            self.enqueue_task(sys, cpu, t);
        }
    }

    fn account(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId, delta: Nanos) {
        self.tasks[t as usize].time_slice -= delta as i64;
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        if self.tasks[curr as usize].time_slice < RESCHED_NS as i64 {
            sys.resched(cpu);
        }
    }

    fn wakeup_preempt(&mut self, sys: &mut Sys, cpu: CpuId, _curr: TaskId, woken: TaskId) -> bool {
        if Self::is_idleprio(sys, woken) {
            return false;
        }
        // try_preempt: the first CPU in locality order that p can preempt.
        for i in 0..self.order[cpu as usize].len() {
            let c = self.order[cpu as usize][i];
            if sys.allowed(woken, c) && self.can_preempt(sys, woken, self.rq_prio(sys, c)) {
                if c == cpu {
                    return true;
                }
                sys.resched(c);
                return false;
            }
        }
        false
    }

    fn yield_task(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        self.tasks[t as usize].time_slice = 0;
        sys.resched(cpu);
    }

    fn balance(&mut self, _sys: &mut Sys, _cpu: CpuId, _idle: bool) {}

    fn newidle_balance(&mut self, _sys: &mut Sys, _cpu: CpuId) {}

    fn timer(&mut self, sys: &mut Sys, token: u64) {
        if let Some(cpu) = self.timers.fired(token)
            && let Some(c) = self.curr[cpu as usize]
        {
            self.tasks[c as usize].time_slice = 0;
            sys.resched(cpu);
        }
    }

    fn unsupported(&self, sys: &Sys) -> Vec<String> {
        common::no_groups("muqss", sys)
    }

    fn check_invariants(&self, sys: &Sys) -> Result<(), String> {
        for (cpu, rq) in self.rqs.iter().enumerate() {
            for &(_, _, t) in rq {
                if sys.task(t).state != TaskState::Runnable {
                    return Err(format!("muqss: task {t} queued on CPU {cpu} is {:?}", sys.task(t).state));
                }
            }
        }
        Ok(())
    }
}
