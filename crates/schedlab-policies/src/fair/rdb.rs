//! RDB, the Response Driven Balancer of CacULE-cachy for Linux 6.1
//! (CONFIG_CACULE_RDB, ../shared/kernels/patches/cacule-6.1.patch), which
//! replaces CFS's whole load balancer under `cacule`: no sched domains'
//! load statistics, no NO_HZ idle balancing, only pulls and pushes of one
//! task, chosen by interactivity score.
//!
//! Each CPU keeps the waiting (not running) fair task with the lowest
//! interactivity score, rq->to_migrate_task, and that score,
//! rq->max_IS_score (all ones when there is none): update_IS recomputes
//! them at every enqueue, dequeue, pick and tick of the CPU, and clears them
//! when it goes idle.
//!
//! - trigger_load_balance, from the tick of a busy CPU at most every
//!   CONFIG_RDB_INTERVAL ms (19, which is 5 jiffies at HZ=250): with fewer
//!   than two tasks, pull the to_migrate_task of the CPU whose score is the
//!   lowest (and below this CPU's); with two or more, push this CPU's own
//!   to a CPU running at least two fewer, then pull from a CPU whose best
//!   candidate scores lower than this CPU's.
//! - sched_balance_newidle: a CPU about to go idle pulls the first
//!   to_migrate_task it can from a CPU running two or more.
//!
//! Every search visits the CPUs sharing this CPU's LLC first, then all, in
//! CPU order. A task can be moved when it is not running, its affinity
//! allows the target, and it has run since it was last migrated (exec_start
//! is not 0). The moved task is checked for preemption against the target's
//! running task (check_preempt_curr), not rescheduled unconditionally.
//! Idle CPUs do not balance from their tick: under NO_HZ idle they have
//! none, and RDB has no NO_HZ kick.
//!
//! The order of rq->cfs_tasks, which decides a tie of scores in update_IS,
//! is not kept (the model's per-CPU task list is unordered): a tie of two
//! waiting tasks' integer scores picks either.

use super::Fair;
use schedlab_sim::{CpuId, Nanos, Policy, Sys, TaskId, Workload};

/// RDB's per-CPU state.
pub(super) struct Rdb {
    to_migrate: Vec<Option<TaskId>>,
    max_is: Vec<u32>,
    /// rq->next_balance, in jiffies.
    next_balance: Vec<u64>,
    interval_jiffies: u64,
    tick_ns: Nanos,
    /// Per CPU, the CPUs every search visits from it: those sharing its LLC,
    /// then the others, in CPU order (for_each_online_cpu twice, the
    /// cores_round first).
    order: Vec<Vec<CpuId>>,
    /// Tasks moved, for the report.
    pub moves: u64,
}

impl Rdb {
    pub fn new(w: &Workload, interval_ms: u64) -> Rdb {
        let n = w.nr_cpus() as usize;
        let hz = w.machine.hz as u64;
        let llc = |c: CpuId| w.machine.topology.llc_of(c);
        let order = (0..n as CpuId)
            .map(|this| {
                let others = (0..n as CpuId).filter(|&c| c != this);
                others.clone().filter(|&c| llc(c) == llc(this)).chain(others.filter(|&c| llc(c) != llc(this))).collect()
            })
            .collect();
        Rdb {
            to_migrate: vec![None; n],
            max_is: vec![u32::MAX; n],
            next_balance: vec![0; n],
            // msecs_to_jiffies rounds up.
            interval_jiffies: (interval_ms * hz).div_ceil(1000),
            tick_ns: w.machine.tick_ns(),
            order,
            moves: 0,
        }
    }

    fn nr_cpus(&self) -> CpuId {
        self.order.len() as CpuId
    }

    /// The `i`th CPU a search from `this` visits, if any.
    fn nth(&self, this: CpuId, i: usize) -> Option<CpuId> {
        self.order[this as usize].get(i).copied()
    }
}

impl Fair {
    fn rdb(&self) -> &Rdb {
        self.rdb.as_ref().expect("rdb under cacule")
    }

    fn rdb_mut(&mut self) -> &mut Rdb {
        self.rdb.as_mut().expect("rdb under cacule")
    }

    /// update_IS: the waiting task with the lowest interactivity score.
    pub(super) fn rdb_update_is(&mut self, sys: &Sys, cpu: CpuId) {
        let running = sys.cpus[cpu as usize].curr;
        let mut best: Option<(TaskId, u32)> = None;
        for &t in &self.cpu_tasks[cpu as usize] {
            if Some(t) == running {
                continue;
            }
            let score = self.cacule_score(self.per_task[t as usize].se, sys.now) as u32;
            if score < best.map_or(u32::MAX, |b| b.1) {
                best = Some((t, score));
            }
        }
        let rdb = self.rdb_mut();
        rdb.to_migrate[cpu as usize] = best.map(|b| b.0);
        rdb.max_is[cpu as usize] = best.map_or(u32::MAX, |b| b.1);
    }

    /// pick_next_task_fair: update_stats_curr_start down the picked chain,
    /// then update_IS (or, going idle, nothing left to give).
    pub(super) fn rdb_set_next(&mut self, sys: &Sys, cpu: CpuId, next: Option<TaskId>) {
        let mut se = next.map_or(super::NONE, |n| self.per_task[n as usize].se);
        while se != super::NONE {
            self.cnodes[se as usize].start_run(sys.now);
            se = self.rqs[self.ents[se as usize].rq as usize].se;
        }
        match next {
            Some(_) => self.rdb_update_is(sys, cpu),
            None => self.rdb_clear(cpu),
        }
    }

    /// pick_next_task_fair's idle path: nothing to give away.
    fn rdb_clear(&mut self, cpu: CpuId) {
        let rdb = self.rdb_mut();
        rdb.to_migrate[cpu as usize] = None;
        rdb.max_is[cpu as usize] = u32::MAX;
    }

    /// RDB's can_migrate_task.
    fn rdb_can_migrate(&self, sys: &Sys, t: TaskId, dst: CpuId, src: CpuId) -> bool {
        sys.cpus[src as usize].curr != Some(t)
            && sys.allowed(t, dst)
            && self.cnodes[self.per_task[t as usize].se as usize].exec_start != 0
    }

    /// The CPU's to_migrate_task, when it runs two or more tasks.
    fn rdb_candidate(&self, sys: &Sys, cpu: CpuId) -> Option<TaskId> {
        if sys.cpus[cpu as usize].nr_running < 2 {
            return None;
        }
        self.rdb().to_migrate[cpu as usize]
    }

    /// pull_from_unlock / push_to_unlock: deactivate, set_task_cpu,
    /// activate, check_preempt_curr; both CPUs' update_IS follow from the
    /// dequeue and the enqueue.
    /// A new-idle pull reschedules the target outright: it is about to pick
    /// again (pick_next_task_fair's `again`).
    fn rdb_move(&mut self, sys: &mut Sys, t: TaskId, src: CpuId, dst: CpuId, newidle: bool) {
        self.move_queued(sys, t, src, dst);
        match sys.cpus[dst as usize].curr {
            _ if newidle => sys.resched(dst),
            None => sys.resched(dst),
            Some(curr) if !sys.task(curr).policy.is_rt() => {
                if Policy::wakeup_preempt(self, sys, dst, curr, t) {
                    sys.resched(dst);
                }
            }
            Some(_) => {}
        }
        self.rdb_update_is(sys, src);
        self.rdb_update_is(sys, dst);
        self.rdb_mut().moves += 1;
    }

    /// trigger_load_balance from a busy CPU's tick.
    pub(super) fn rdb_tick(&mut self, sys: &mut Sys, cpu: CpuId) {
        let rdb = self.rdb();
        let jiffies = sys.now / rdb.tick_ns.max(1);
        if jiffies < rdb.next_balance[cpu as usize] {
            return;
        }
        if sys.cpus[cpu as usize].nr_running < 2 {
            self.rdb_pull_higher_is(sys, cpu);
        } else {
            self.rdb_push_any(sys, cpu);
            self.rdb_pull_any(sys, cpu);
        }
        let rdb = self.rdb_mut();
        rdb.next_balance[cpu as usize] = jiffies + rdb.interval_jiffies;
    }

    /// try_pull_higher_IS: from the CPU whose candidate scores lowest.
    fn rdb_pull_higher_is(&mut self, sys: &mut Sys, this: CpuId) {
        let mut best = (None, self.rdb().max_is[this as usize]);
        for src in 0..self.rdb().nr_cpus() {
            if src == this || self.rdb_candidate(sys, src).is_none() {
                continue;
            }
            let score = self.rdb().max_is[src as usize];
            if score < best.1 {
                best = (Some(src), score);
            }
        }
        if let Some(src) = best.0
            && let Some(t) = self.rdb_candidate(sys, src)
            && self.rdb_can_migrate(sys, t, this, src)
        {
            self.rdb_move(sys, t, src, this, false);
        }
    }

    /// try_push_any: this CPU's candidate to a CPU running two fewer.
    fn rdb_push_any(&mut self, sys: &mut Sys, this: CpuId) {
        for i in 0.. {
            let Some(dst) = self.rdb().nth(this, i) else { return };
            if sys.cpus[dst as usize].nr_running + 1 >= sys.cpus[this as usize].nr_running {
                continue;
            }
            let Some(t) = self.rdb().to_migrate[this as usize] else { return };
            if self.rdb_can_migrate(sys, t, dst, this) {
                self.rdb_move(sys, t, this, dst, false);
                return;
            }
        }
    }

    /// try_pull_any: from a CPU whose candidate scores below this CPU's.
    fn rdb_pull_any(&mut self, sys: &mut Sys, this: CpuId) {
        let this_max = self.rdb().max_is[this as usize];
        for i in 0.. {
            let Some(src) = self.rdb().nth(this, i) else { return };
            let Some(t) = self.rdb_candidate(sys, src) else { continue };
            if self.rdb().max_is[src as usize] >= this_max {
                continue;
            }
            if self.rdb_can_migrate(sys, t, this, src) {
                self.rdb_move(sys, t, src, this, false);
                return;
            }
        }
    }

    /// sched_balance_newidle under RDB: the first candidate that can move.
    pub(super) fn rdb_newidle(&mut self, sys: &mut Sys, this: CpuId) {
        for i in 0.. {
            let Some(src) = self.rdb().nth(this, i) else { return };
            let Some(t) = self.rdb_candidate(sys, src) else { continue };
            if self.rdb_can_migrate(sys, t, this, src) {
                self.rdb_move(sys, t, src, this, true);
                return;
            }
            if sys.cpus[this as usize].nr_running > 0 {
                return;
            }
        }
    }
}
