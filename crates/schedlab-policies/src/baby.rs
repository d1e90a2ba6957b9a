//! Baby, Hamad Al Marri's minimal teaching scheduler, in its deadline
//! version (hamadmarri/Baby-CPU-Scheduler, baby-dl-5.14.patch,
//! kernel/sched/bs.c for Linux 5.14).
//!
//! - One unsorted list per CPU; the pick scans it for the earliest deadline
//!   (O(n) in the queued tasks).
//! - The running task's deadline is renewed at every accounting: now +
//!   DEADLINE_NS (2 x sched_granularity = 1.18 ms) + prio_factor\[nice\]
//!   (-0.67 ms at nice -20 to +0.63 ms at nice 19). A task woken on the CPU
//!   it last ran on keeps its old deadline; a new or migrated one gets a
//!   fresh one. So every task that waits has an earlier deadline than the
//!   one running, which loses the CPU at the next tick (HRTICK is off by
//!   default): round robin of one tick per turn.
//! - A waking SCHED_NORMAL task of equal or higher priority preempts when
//!   its deadline is earlier.
//! - select_task_rq: the CPU with the fewest tasks, if it has fewer than the
//!   previous CPU. A CPU going idle pulls one task (the most recently
//!   queued) from the busiest CPU with two or more; and CPU 0's tick moves
//!   one task from the busiest to the least busy CPU when they differ by two
//!   or more.
//! - sched_yield marks the deadline as the latest possible, but
//!   update_curr overwrites it at once for SCHED_NORMAL tasks; only
//!   SCHED_BATCH tasks keep the mark until they are put back.
//!
//! The original needs HZ_PERIODIC and ignores affinity when it picks a CPU;
//! here CPU 0 balances only while it is busy (idle CPUs have no tick under
//! NO_HZ), and affinity is respected.
//!
//! Audited line by line against bs.c and bs.h of baby-dl-5.14.patch
//! (hamadmarri/Baby-CPU-Scheduler): calc_deadline, prio_factor, update_curr,
//! enqueue_entity's renormalisation, the list and its pick (ties to the head),
//! check_preempt_tick (resched unless the running task is strictly first),
//! check_preempt_wakeup (after update_curr renews the running task's
//! deadline), yield, select_task_rq_fair, newidle_balance, move_task and
//! trigger_load_balance. The hrtick path (HRTICK off by default) is not
//! modelled.

use crate::common::{self, TunableSpec};
use schedlab_sim::workload::SchedPolicy;
use schedlab_sim::{CpuId, Dequeue, Enqueue, Nanos, Policy, Sys, TaskId, TaskState, Tunable, WakeKind, Workload};

const PRIO_FACTOR: [i64; 40] = [
    -666666, -633333, -600000, -566666, -533333, -500000, -466666, -433333, -400000, -366666, -333333, -300000,
    -266666, -233333, -200000, -166666, -133333, -100000, -66666, -33333, 0, 33333, 66666, 100000, 133333, 166666,
    200000, 233333, 266666, 300000, 333333, 366666, 400000, 433333, 466666, 500000, 533333, 566666, 600000, 633333,
];
const YIELD_MARK: u64 = 1 << 63;

#[derive(Clone, Debug, Default)]
struct Task {
    deadline: u64,
    queued_on: Option<CpuId>,
    last_cpu: Option<CpuId>,
}

pub struct Baby {
    tun: Vec<TunableSpec>,
    granularity: u64,
    tasks: Vec<Task>,
    /// Queued (not running) tasks per CPU, head (most recent) last.
    lists: Vec<Vec<TaskId>>,
    curr: Vec<Option<TaskId>>,
}

impl Baby {
    pub fn new(w: &Workload) -> Result<Baby, String> {
        let mut tun = vec![TunableSpec {
            name: "sched_granularity",
            value: 590_000,
            min: 1,
            max: 1_000_000_000,
            help: "ns; a new deadline is now + 2 x this + prio_factor[nice]",
        }];
        common::apply_tunables("baby", &mut tun, &w.tunables)?;
        let n = w.nr_cpus() as usize;
        Ok(Baby {
            granularity: common::value_of(&tun, "sched_granularity") as u64,
            tun,
            tasks: Vec::with_capacity(w.initial_tasks() as usize),
            lists: vec![Vec::new(); n],
            curr: vec![None; n],
        })
    }

    fn calc_deadline(&self, sys: &Sys, t: TaskId) -> u64 {
        let f = PRIO_FACTOR[(sys.task(t).nice + 20).clamp(0, 39) as usize];
        (sys.now as i64 + 2 * self.granularity as i64 + f).max(0) as u64
    }

    fn push(&mut self, cpu: CpuId, t: TaskId) {
        self.lists[cpu as usize].push(t);
        self.tasks[t as usize].queued_on = Some(cpu);
    }

    fn remove(&mut self, t: TaskId) {
        if let Some(cpu) = self.tasks[t as usize].queued_on.take() {
            let l = &mut self.lists[cpu as usize];
            if let Some(i) = l.iter().rposition(|&x| x == t) {
                l.remove(i);
            }
        }
    }

    /// pick_next_entity's scan: from the head (the most recently queued,
    /// last here), replaced only by a strictly earlier deadline, so a tie
    /// goes to the task queued last.
    fn earliest(&self, cpu: CpuId) -> Option<TaskId> {
        self.lists[cpu as usize].iter().rev().copied().min_by_key(|&t| self.tasks[t as usize].deadline)
    }

    /// move_task: the first movable task from the list head (newest first).
    fn move_one(&mut self, sys: &mut Sys, from: CpuId, to: CpuId) -> bool {
        let Some(&t) = self.lists[from as usize].iter().rev().find(|&&t| sys.allowed(t, to)) else {
            return false;
        };
        self.remove(t);
        sys.migrate(t, to);
        // ENQUEUE_MIGRATED renormalises the deadline.
        self.tasks[t as usize].deadline = self.calc_deadline(sys, t);
        self.tasks[t as usize].last_cpu = Some(to);
        self.push(to, t);
        // pull_from's check_preempt_curr.
        match self.curr[to as usize] {
            None => sys.resched(to),
            Some(c) => {
                if self.wakeup_preempt(sys, to, c, t) {
                    sys.resched(to);
                }
            }
        }
        true
    }

    fn nr_running(sys: &Sys, cpu: CpuId) -> u32 {
        sys.cpus[cpu as usize].nr_running
    }
}

impl Policy for Baby {
    fn name(&self) -> &'static str {
        "baby"
    }

    fn tunables(&self) -> Vec<Tunable> {
        common::list_tunables(&self.tun)
    }

    fn task_new(&mut self, sys: &mut Sys, t: TaskId, _parent: Option<TaskId>) {
        if self.tasks.len() <= t as usize {
            self.tasks.resize(t as usize + 1, Task::default());
        }
        self.tasks[t as usize].deadline = self.calc_deadline(sys, t);
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, _kind: WakeKind) -> CpuId {
        let prev =
            if sys.allowed(t, prev) { prev } else { (0..sys.nr_cpus).find(|&c| sys.allowed(t, c)).unwrap_or(prev) };
        let min_this = Self::nr_running(sys, prev);
        let mut best = (prev, min_this);
        for c in 0..sys.nr_cpus {
            if sys.allowed(t, c) && Self::nr_running(sys, c) < best.1 {
                best = (c, Self::nr_running(sys, c));
            }
        }
        best.0
    }

    fn enqueue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, how: Enqueue) {
        let migrated = self.tasks[t as usize].last_cpu.is_some_and(|c| c != cpu);
        if how != Enqueue::Wakeup || migrated {
            self.tasks[t as usize].deadline = self.calc_deadline(sys, t);
        }
        self.tasks[t as usize].last_cpu = Some(cpu);
        self.push(cpu, t);
    }

    fn dequeue(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId, _why: Dequeue) {
        self.remove(t);
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        let prev = self.curr[cpu as usize].take();
        if let Some(p) = prev
            && sys.task(p).state == TaskState::Runnable
        {
            self.push(cpu, p);
        }
        let next = self.earliest(cpu);
        if let Some(n) = next {
            self.remove(n);
            self.curr[cpu as usize] = Some(n);
        }
        if let Some(p) = prev {
            self.tasks[p as usize].deadline &= !YIELD_MARK;
        }
        next
    }

    fn put_prev(&mut self, _sys: &mut Sys, cpu: CpuId, t: TaskId, runnable: bool) {
        self.curr[cpu as usize] = None;
        if runnable {
            self.push(cpu, t);
        }
    }

    fn account(&mut self, sys: &mut Sys, _cpu: CpuId, t: TaskId, _delta: Nanos) {
        self.tasks[t as usize].deadline = self.calc_deadline(sys, t);
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        // check_preempt_tick: the running task stays only when its deadline
        // is strictly the earliest.
        if let Some(e) = self.earliest(cpu)
            && self.tasks[e as usize].deadline <= self.tasks[curr as usize].deadline
        {
            sys.resched(cpu);
        }
    }

    fn wakeup_preempt(&mut self, sys: &mut Sys, _cpu: CpuId, curr: TaskId, woken: TaskId) -> bool {
        let (cp, wp) = (sys.task(curr).policy, sys.task(woken).policy);
        if cp == SchedPolicy::Idle && wp != SchedPolicy::Idle {
            return true;
        }
        if !matches!(wp, SchedPolicy::Normal | SchedPolicy::Iso) || sys.task(woken).nice > sys.task(curr).nice {
            return false;
        }
        // update_curr renews the running task's deadline before the test.
        self.tasks[curr as usize].deadline = self.calc_deadline(sys, curr);
        self.tasks[woken as usize].deadline < self.tasks[curr as usize].deadline
    }

    fn yield_task(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        self.tasks[t as usize].deadline |= YIELD_MARK;
        if sys.cpus[cpu as usize].nr_running > 1 && sys.task(t).policy != SchedPolicy::Batch {
            self.tasks[t as usize].deadline = self.calc_deadline(sys, t);
        }
        sys.resched(cpu);
    }

    fn balance(&mut self, sys: &mut Sys, cpu: CpuId, _idle: bool) {
        // trigger_load_balance: CPU 0 only, at every tick.
        if cpu != 0 {
            return;
        }
        let (mut max, mut min) = ((cpu, Self::nr_running(sys, cpu)), (cpu, Self::nr_running(sys, cpu)));
        for c in 0..sys.nr_cpus {
            let n = Self::nr_running(sys, c);
            if n < min.1 {
                min = (c, n);
            }
            if n > max.1 {
                max = (c, n);
            }
        }
        if max.0 != min.0 && max.1 - min.1 >= 2 {
            self.move_one(sys, max.0, min.0);
        }
    }

    fn newidle_balance(&mut self, sys: &mut Sys, cpu: CpuId) {
        let mut src = None;
        let mut max = 0;
        for c in 0..sys.nr_cpus {
            let n = Self::nr_running(sys, c);
            if c != cpu && n >= 2 && n > max {
                max = n;
                src = Some(c);
            }
        }
        if let Some(s) = src {
            self.move_one(sys, s, cpu);
        }
    }

    fn unsupported(&self, sys: &Sys) -> Vec<String> {
        let mut out = common::no_groups("baby", sys);
        out.extend(common::no_iso("baby", sys));
        out
    }

    fn check_invariants(&self, sys: &Sys) -> Result<(), String> {
        for (cpu, l) in self.lists.iter().enumerate() {
            for &t in l {
                if sys.task(t).state != TaskState::Runnable || sys.task(t).cpu != cpu as CpuId {
                    return Err(format!("baby: task {t} listed on CPU {cpu} is {:?}", sys.task(t).state));
                }
            }
        }
        Ok(())
    }
}
