//! Project C v6.12-r1 (Alfred Chen's linux-prjc for Linux 6.12, as
//! patches/prjc-6.12.patch applies it to 6.12.117: kernel/sched/alt_core.c
//! with bmq.h / pds.h), in its two flavours:
//!
//! - `bmq`, BitMap Queue: one bitmap-indexed FIFO queue per CPU. A normal
//!   task sits at level MIN_SCHED_NORMAL_PRIO + (nice + 20 + boost_prio) / 2
//!   (task_sched_prio). boost_prio moves within +/- MAX_PRIORITY_ADJ (12):
//!   it falls by one (priority rises) every time the task goes to sleep
//!   (sched_task_deactivate) and rises by one each time a slice is used up
//!   (sched_task_renew). v6.12-r1's wakeup boost computes its delta as
//!   `clock_task > last_ran`, a comparison (0 or 1) shifted right by 22, so
//!   it never boosts; the model follows the code, not the intent. A forked
//!   task starts with its parent's boost_prio (the task_struct is copied).
//!   SCHED_BATCH is never boosted below 0, SCHED_IDLE never boosted.
//! - `pds`, Priority and Deadline based Skiplist: a virtual deadline per
//!   task in units of 2^23 ns (time_edge = clock >> 23, two 4 ms slices per
//!   unit), renewed as time_edge + SCHED_EDGE_DELTA + (nice + 20) / 2 (two
//!   nice levels per unit) when a slice is used up, at fork and at yield;
//!   a sleeping task keeps its deadline, clamped to time_edge + 31 when it
//!   is queued. The queue is ordered by max(deadline, time_edge): a
//!   deadline in the past waits at the current edge, FIFO.
//!
//! Both: the running task stays in its queue; the slice is
//! sysctl_sched_base_slice = 4 << 20 ns (debugfs base_slice_ns) and ends
//! at the hrtick (an hrtimer: as late as the machine's timers fire, 41 us
//! at the median in a pds-6.12 TCG guest, none by default); a slice with
//! less than RESCHED_NS = 100 << 10 ns left counts as used up. __schedule
//! runs check_curr on the task it switches away from, sleeping or not, so
//! a task that goes to sleep with its slice used up gets a new slice (and
//! BMQ's deboost, PDS's new deadline) then.
//! A fork halves the parent's remaining slice and gives the other half to
//! the child (a full slice, and a resched of the parent, when that half is
//! below RESCHED_NS); the slice halved is the one update_curr left at the
//! parent's last tick or switch, as sched_fork does not update it. A waking task preempts when it is now the first in
//! the queue. select_task_rq prefers an idle core whose SMT siblings are all
//! idle, then any idle CPU, then a CPU in the preemption mask of the task's
//! level, then any allowed CPU, each through
//! best_mask_cpu: the lowest-numbered candidate of the first of the task's
//! CPU's topology levels that holds one. v6.12-r1's levels
//! (sched_init_topology_cpumask) are the CPU's SMT core, its LLC, its
//! package and every CPU, each the whole mask: there is no level of the CPU
//! alone (v6.1's ITSELF_LEVEL is gone), so a waking task whose CPU is idle
//! goes to the lowest-numbered idle CPU of its core (of its LLC without
//! SMT), and one that finds nothing idle or lower to preempt goes to the
//! lowest-numbered CPU of its core or LLC, not back where it ran.
//! The preemption mask is v6.12-r1's cached one: kept only for the last
//! level a placement asked about (sched_prio_record), a CPU's bit set when
//! its best level rises to that level or past it and cleared when it falls
//! below (update_sched_preempt_mask), so a CPU whose best task is at the
//! waking task's level counts as preemptible if it rose there; asking for
//! another level flushes it from the recorded one, strictly, changing only
//! the bits that could be wrong in that direction; and PDS's levels fall as
//! time edges pass without the bits changing. The guests place so: in a
//! pds-6.12 fork-burst boot 53 of 200 children started on the parent's own
//! CPU beside a child at their level on the other (a strict comparison
//! sends every one to CPU 0), and in its hackbench recording a wakee was
//! put on a CPU whose task was at its level 58 times while the other
//! CPU's was strictly worse (the deadlines read from the hrtick armed at
//! each switch).
//! There is no periodic load balancer: a CPU that is about to go idle
//! looks at the nearest runqueues with tasks waiting and takes every other
//! queued task behind the running one, at most half of the queue and
//! sched_nr_migrate = 32 (migrate_pending_tasks).
//! sched_yield() with yield_type = 1 and another task queued sets
//! boost_prio to the maximum (BMQ) or renews slice and deadline (PDS) and
//! requeues the task.
//!
//! Left out: the SMT group balancer (sg_balance), the P-/E-core balance
//! functions, cpufreq hooks.

use crate::common::{self, KeyedQueues, SliceTimers, TunableSpec};
use schedlab_sim::workload::SchedPolicy;
use schedlab_sim::{CpuId, Dequeue, Enqueue, Nanos, Policy, Sys, TaskId, TaskState, Tunable, WakeKind, Workload};

/// bmq.h: MAX_PRIORITY_ADJ, the boost range (the `max_priority_adj`
/// tunable; Project C has changed it between releases).
const MAX_PRIORITY_ADJ: i64 = 12;
/// Keeps BMQ levels positive; only their order matters.
const MIN_SCHED_NORMAL_PRIO: i64 = 32;
const RESCHED_NS: i64 = 100 << 10;
/// pds.h: sched_timeslice_shift, "2 time slice slots" of 4 ms per unit
/// (the `deadline_shift` tunable).
const PDS_TIMESLICE_SHIFT: u32 = 23;
/// pds.h: SCHED_NORMAL_PRIO_NUM - NICE_WIDTH / 2.
const SCHED_EDGE_DELTA: u64 = 32 - 20;
const SCHED_NR_MIGRATE: usize = 32;
/// alt_sched.h: SCHED_LEVELS - 1, the level of an empty queue (its idle
/// task), and SCHED_QUEUE_BITS - 1, the level whose preemption mask is
/// sched_idle_mask itself.
const IDLE_TASK_SCHED_PRIO: i64 = 64;
const IDLE_MASK_PRIO: i64 = 63;

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
    /// BMQ's boost range, PDS's deadline unit (2^shift ns).
    max_priority_adj: i64,
    deadline_shift: u32,
    tasks: Vec<Task>,
    /// One queue per CPU; the running task stays in its queue.
    rqs: KeyedQueues,
    curr: Vec<Option<TaskId>>,
    /// Per CPU, the CPU time charged to its running task since the kernel
    /// last ran update_curr for it (the tick, __schedule): sched_fork
    /// halves time_slice as update_curr left it, without this.
    since_update: Vec<i64>,
    timers: SliceTimers,
    order: Vec<Vec<CpuId>>,
    preempt: PreemptMask,
    pub boosts: u64,
    pub deboosts: u64,
}

/// alt_core.c's sched_preempt_mask as v6.12-r1 keeps it: one mask per
/// level, of which only the one for the last level a placement asked about
/// (sched_prio_record) is kept up to date, bit by bit, as the CPUs' best
/// levels change.
struct PreemptMask {
    record: i64,
    bit: Vec<bool>,
    /// Per CPU, rq->prio as last set and (PDS) the time edge it was set at.
    rq_prio: Vec<i64>,
    rq_edge: Vec<u64>,
}

impl PreemptMask {
    /// Every CPU idle, each preemptible at the record's level (RT's 0).
    fn new(n: usize) -> PreemptMask {
        PreemptMask { record: 0, bit: vec![true; n], rq_prio: vec![IDLE_TASK_SCHED_PRIO; n], rq_edge: vec![0; n] }
    }
}

impl ProjectC {
    pub fn new(flavour: Flavour, w: &Workload) -> Result<ProjectC, String> {
        let name = if flavour == Flavour::Bmq { "bmq" } else { "pds" };
        let mut tun = vec![
            TunableSpec {
                name: "base_slice_ns",
                value: 4 << 20,
                min: RESCHED_NS,
                max: 1_000_000_000,
                help: "time slice of every task (debugfs sched/base_slice_ns, sysctl_sched_base_slice)",
            },
            TunableSpec {
                name: "yield_type",
                value: 1,
                min: 0,
                max: 1,
                help: "sched_yield(): 0 does nothing, 1 deboosts (bmq) or renews the deadline (pds)",
            },
        ];
        tun.push(match flavour {
            Flavour::Bmq => TunableSpec {
                name: "max_priority_adj",
                value: MAX_PRIORITY_ADJ,
                min: 0,
                max: 20,
                help: "boost_prio moves within +/- this (bmq.h MAX_PRIORITY_ADJ; 12 in v6.12-r1)",
            },
            Flavour::Pds => TunableSpec {
                name: "deadline_shift",
                value: PDS_TIMESLICE_SHIFT as i64,
                min: 20,
                max: 26,
                help: "a virtual deadline unit is 2^this ns (pds.h sched_timeslice_shift; 23: 8.4 ms)",
            },
        });
        common::apply_tunables(name, &mut tun, &w.tunables)?;
        let n = w.nr_cpus() as usize;
        let flavoured = |name, default| tun.iter().find(|t| t.name == name).map_or(default, |t| t.value);
        Ok(ProjectC {
            flavour,
            timeslice: common::value_of(&tun, "base_slice_ns"),
            yield_type: common::value_of(&tun, "yield_type"),
            max_priority_adj: flavoured("max_priority_adj", MAX_PRIORITY_ADJ),
            deadline_shift: flavoured("deadline_shift", PDS_TIMESLICE_SHIFT as i64) as u32,
            tun,
            tasks: Vec::with_capacity(w.initial_tasks() as usize),
            rqs: KeyedQueues::new(n),
            curr: vec![None; n],
            since_update: vec![0; n],
            timers: SliceTimers::new(n as u32, 2 << 56),
            order: Vec::new(),
            preempt: PreemptMask::new(n),
            boosts: 0,
            deboosts: 0,
        })
    }

    fn time_edge(&self, now: Nanos) -> u64 {
        now >> self.deadline_shift
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
            // TASK_SCHED_PRIO_IDX: max(deadline, time_edge).
            Flavour::Pds => s.deadline.max(self.time_edge(sys.now)),
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
            SchedPolicy::Normal | SchedPolicy::Iso => -self.max_priority_adj,
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
        if s.boost_prio < self.max_priority_adj {
            s.boost_prio += 1;
            self.deboosts += 1;
        }
    }

    fn renew_deadline(&mut self, sys: &Sys, t: TaskId) {
        let d = self.time_edge(sys.now) + SCHED_EDGE_DELTA + (sys.task(t).nice + 20) as u64 / 2;
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
        self.queue_task(sys, cpu, t);
        self.update_preempt_mask(sys, cpu);
    }

    /// __SCHED_ENQUEUE_TASK without the mask's update (migrate_pending_tasks
    /// updates the destination once, after all its moves).
    fn queue_task(&mut self, sys: &Sys, cpu: CpuId, t: TaskId) {
        if self.flavour == Flavour::Pds {
            // sched_task_sanity_check
            let max = self.time_edge(sys.now) + SCHED_EDGE_DELTA + 20 - 1;
            let s = &mut self.tasks[t as usize];
            s.deadline = s.deadline.min(max);
        }
        self.rqs.insert(cpu, t, self.key(sys, t));
    }

    /// A queue key as the level the kernel indexes it by: BMQ's level, PDS's
    /// MIN_SCHED_NORMAL_PRIO plus the deadline's distance from the time edge
    /// (TASK_SCHED_PRIO_IDX). Every runqueue's time_edge is taken as the
    /// clock's: a busy CPU moves its own at its tick.
    fn sched_prio(&self, sys: &Sys, key: u64) -> i64 {
        match self.flavour {
            Flavour::Bmq => key as i64,
            Flavour::Pds => {
                let edge = self.time_edge(sys.now);
                MIN_SCHED_NORMAL_PRIO + (key.max(edge) - edge) as i64
            }
        }
    }

    /// rq->prio as the kernel holds it now: what update_sched_preempt_mask
    /// last set, which PDS's sched_update_rq_clock moves down by the time
    /// edges passed since (to MIN_SCHED_NORMAL_PRIO at most) without
    /// touching the preemption mask.
    fn rq_prio(&self, sys: &Sys, cpu: CpuId) -> i64 {
        let (prio, edge) = (self.preempt.rq_prio[cpu as usize], self.preempt.rq_edge[cpu as usize]);
        if self.flavour == Flavour::Bmq || !(MIN_SCHED_NORMAL_PRIO..IDLE_TASK_SCHED_PRIO).contains(&prio) {
            return prio;
        }
        let passed = self.time_edge(sys.now).saturating_sub(edge).min(IDLE_TASK_SCHED_PRIO as u64) as i64;
        (prio - passed).max(MIN_SCHED_NORMAL_PRIO)
    }

    /// update_sched_preempt_mask: when the CPU's best level changes, its
    /// bit in the one mask kept up to date (that of sched_prio_record) is
    /// cleared when the level falls past the record and set when it rises
    /// to it. So a CPU whose best task sits at the recorded level itself
    /// counts as one a task of that level may preempt when it rose there,
    /// and not when it fell there; and PDS's levels fall as time edges pass
    /// while the bit stays.
    fn update_preempt_mask(&mut self, sys: &Sys, cpu: CpuId) {
        let prio = self.rqs.first(cpu).map_or(IDLE_TASK_SCHED_PRIO, |(k, _)| self.sched_prio(sys, k));
        let last = self.rq_prio(sys, cpu);
        if prio == last {
            return;
        }
        let edge = self.time_edge(sys.now);
        let m = &mut self.preempt;
        m.rq_prio[cpu as usize] = prio;
        m.rq_edge[cpu as usize] = edge;
        let pr = m.record;
        if prio < last {
            let last = if last == IDLE_TASK_SCHED_PRIO { last - 2 } else { last };
            if prio < pr && pr <= last {
                m.bit[cpu as usize] = false;
            }
        } else {
            let prio = if prio == IDLE_TASK_SCHED_PRIO { prio - 2 } else { prio };
            if last < pr && pr <= prio {
                m.bit[cpu as usize] = true;
            }
        }
    }

    /// preempt_mask_check: brings the mask to the level `prio` a placement
    /// asks about, after which `preempt.bit` holds the CPUs a task of that
    /// level may preempt. A level other than the recorded one flushes the
    /// mask from the recorded one's (sched_preempt_mask_flush): only the
    /// bits that can be wrong in the direction of the change are looked at
    /// again, strictly (a CPU whose best level is `prio` is not
    /// preemptible), the others are kept. The level SCHED_QUEUE_BITS - 1
    /// (PDS's nice 19 at its furthest deadline) reads the idle mask
    /// instead, and flushes nothing.
    fn preempt_mask_check(&mut self, sys: &Sys, prio: i64) {
        let record = self.preempt.record;
        if prio == record || prio == IDLE_MASK_PRIO {
            return;
        }
        for c in 0..self.preempt.bit.len() {
            let rq_prio = self.rq_prio(sys, c as CpuId);
            let bit = &mut self.preempt.bit[c];
            if prio < record {
                *bit |= prio < rq_prio;
            } else if *bit && rq_prio != IDLE_TASK_SCHED_PRIO && prio >= rq_prio {
                *bit = false;
            }
        }
        self.preempt.record = prio;
    }

    /// Whether a task of level `prio` may preempt `cpu` once
    /// [`Self::preempt_mask_check`] has run for that level.
    fn preemptible(&self, prio: i64, cpu: CpuId) -> bool {
        if prio == IDLE_MASK_PRIO {
            self.preempt.rq_prio[cpu as usize] == IDLE_TASK_SCHED_PRIO
        } else {
            self.preempt.bit[cpu as usize]
        }
    }

    /// To the tail of its (possibly new) level on the same CPU.
    fn requeue(&mut self, sys: &Sys, t: TaskId) {
        let cpu = self.rqs.queue_of(t).expect("requeue of a queued task");
        self.enqueue_task(sys, cpu, t);
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
            // migrate_pending_tasks: from the task behind rq->curr, every
            // other one, nr_running / 2 tries at most. A task queued ahead of
            // curr would just have preempted it; the engine switches such a
            // CPU before another CPU's pick at the same instant, as the
            // reschedule IPI does on a machine.
            let Some(running) = self.curr[src as usize] else { continue };
            let tries = (nr / 2).min(SCHED_NR_MIGRATE);
            let candidates: Vec<TaskId> = self
                .rqs
                .iter(src)
                .map(|(_, t)| t)
                .skip_while(|&t| t != running)
                .skip(1)
                .step_by(2)
                .take(tries)
                .collect();
            let mut moved = 0;
            for t in candidates {
                if sys.allowed(t, cpu) {
                    sys.migrate(t, cpu);
                    self.queue_task(sys, cpu, t);
                    moved += 1;
                }
            }
            // take_other_rq_tasks updates the destination's mask once;
            // the source's is not looked at (its running task, ahead of
            // every task taken, keeps its level).
            if moved > 0 {
                self.update_preempt_mask(sys, cpu);
                return true;
            }
        }
        false
    }
}

/// best_mask_cpu: the lowest-numbered candidate of the nearest topology
/// level (cpumask_any_and of sched_cpu_topo_masks, level by level). `from`
/// itself has no level of its own: it belongs to the first level that has
/// other CPUs (TOPOLOGY_CPUMASK keeps a level only when it adds some).
fn best_mask_cpu(sys: &Sys, from: CpuId, candidates: impl Iterator<Item = CpuId>) -> Option<CpuId> {
    let own_level = if sys.topology.threads_per_core > 1 {
        1
    } else if sys.topology.cores_per_llc > 1 {
        2
    } else {
        3
    };
    let level = |c: CpuId| if c == from { own_level } else { common::locality(sys, from, c) };
    candidates.min_by_key(|&c| (level(c), c))
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
        // sched_fork: the parent's slice is shared with the child, as
        // update_curr last left it (sched_fork does not call it: the CPU
        // the parent spent since its last tick or switch comes off its
        // half at the next one). A forker that clones many times within a
        // tick halves 4, 2, 1, 0.5 ms... whatever it spends in between
        // (the runner's controller: 200 us a clone in a TCG guest, where
        // its threads' first turns are exact halves of a slice).
        if let Some(p) = parent
            && let cpu = sys.task(p).cpu
            && self.curr[cpu as usize] == Some(p)
        {
            let unaccounted = self.since_update[cpu as usize];
            let half = (self.tasks[p as usize].time_slice + unaccounted) / 2;
            self.tasks[p as usize].time_slice = half - unaccounted;
            self.timers.arm(sys, cpu, sys.now + half.max(0) as Nanos);
            if half < RESCHED_NS {
                sys.resched(cpu);
            } else {
                self.tasks[t as usize].time_slice = half;
            }
        }
        match self.flavour {
            Flavour::Bmq => self.tasks[t as usize].boost_prio = parent.map_or(0, |p| self.tasks[p as usize].boost_prio),
            Flavour::Pds => self.renew_deadline(sys, t),
        }
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, _kind: WakeKind) -> CpuId {
        // sched_task_ttwu boosts by (clock_task > last_ran) >> 22, always 0.
        let from = sys.task(t).cpu;
        let allowed = |c: &CpuId| sys.allowed(t, *c);
        if sys.topology.threads_per_core > 1
            && let Some(c) = best_mask_cpu(
                sys,
                from,
                (0..sys.nr_cpus).filter(allowed).filter(|&c| sys.topology.siblings(c).all(|s| sys.idle(s))),
            )
        {
            return c;
        }
        if let Some(c) = best_mask_cpu(sys, from, (0..sys.nr_cpus).filter(allowed).filter(|&c| sys.idle(c))) {
            return c;
        }
        let prio = self.sched_prio(sys, self.key(sys, t));
        self.preempt_mask_check(sys, prio);
        if let Some(c) =
            best_mask_cpu(sys, from, (0..sys.nr_cpus).filter(allowed).filter(|&c| self.preemptible(prio, c)))
        {
            return c;
        }
        best_mask_cpu(sys, from, (0..sys.nr_cpus).filter(allowed)).unwrap_or(prev)
    }

    fn enqueue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, _how: Enqueue) {
        self.enqueue_task(sys, cpu, t);
    }

    fn dequeue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, why: Dequeue) {
        if why == Dequeue::Sleep && self.curr[cpu as usize] == Some(t) {
            // __schedule: sched_task_deactivate, then check_curr(prev).
            if self.flavour == Flavour::Bmq {
                self.boost(sys, t);
            }
            if self.tasks[t as usize].time_slice < RESCHED_NS {
                self.time_slice_expired(sys, t);
            }
        }
        self.rqs.remove(t);
        self.update_preempt_mask(sys, cpu);
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        // __schedule: check_curr's update_curr for prev; next starts from
        // its last_ran = now.
        self.since_update[cpu as usize] = 0;
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

    fn account(&mut self, _sys: &mut Sys, cpu: CpuId, t: TaskId, delta: Nanos) {
        self.tasks[t as usize].time_slice -= delta as i64;
        self.since_update[cpu as usize] += delta as i64;
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        // scheduler_task_tick's update_curr.
        self.since_update[cpu as usize] = 0;
        if self.tasks[curr as usize].time_slice < RESCHED_NS {
            sys.resched(cpu);
        }
    }

    fn wakeup_preempt(&mut self, _sys: &mut Sys, cpu: CpuId, curr: TaskId, _woken: TaskId) -> bool {
        self.rqs.first(cpu).is_some_and(|(_, t)| t != curr)
    }

    fn yield_task(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        if self.yield_type == 0 || self.rqs.len(cpu) < 2 {
            return;
        }
        match self.flavour {
            Flavour::Bmq => self.tasks[t as usize].boost_prio = self.max_priority_adj,
            Flavour::Pds => {
                self.tasks[t as usize].time_slice = self.timeslice;
                self.renew_deadline(sys, t);
            }
        }
        self.requeue(sys, t);
        sys.resched(cpu);
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    /// BMQ on 2 CPUs with tasks of these nice values, none queued yet.
    fn bmq(nices: &[i32]) -> (ProjectC, Sys) {
        let (w, mut sys) = common::two_cpus();
        let mut p = ProjectC::new(Flavour::Bmq, &w).unwrap();
        for (t, &nice) in nices.iter().enumerate() {
            sys.tasks.push(common::sleeping_task(nice));
            p.task_new(&mut sys, t as TaskId, None);
        }
        (p, sys)
    }

    fn queue(p: &mut ProjectC, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        sys.tasks[t as usize].state = TaskState::Runnable;
        sys.tasks[t as usize].cpu = cpu;
        sys.add_runnable(cpu);
        p.enqueue_task(sys, cpu, t);
    }

    #[test]
    fn a_cpu_that_rose_to_the_recorded_level_stays_preemptible_at_it() {
        // Hogs h0 (CPU 0) and h1 (CPU 1) at nice 0's level, b at nice -2's
        // one level better ahead of h1, and w, asleep, at h0's and h1's.
        let (h0, h1, b, w) = (0, 1, 2, 3);
        let (mut p, mut sys) = bmq(&[0, 0, -2, 0]);
        queue(&mut p, &mut sys, 0, h0);
        queue(&mut p, &mut sys, 1, h1);
        queue(&mut p, &mut sys, 1, b);
        let level = p.sched_prio(&sys, p.key(&sys, w));
        assert_eq!(p.sched_prio(&sys, p.key(&sys, b)), level - 1);
        // w's level is not the recorded one (RT's 0 at boot): the flush
        // compares strictly, and neither CPU runs anything worse than w.
        let mask = |p: &mut ProjectC, sys: &Sys, prio: i64| {
            p.preempt_mask_check(sys, prio);
            [p.preemptible(prio, 0), p.preemptible(prio, 1)]
        };
        assert_eq!(mask(&mut p, &sys, level), [false, false]);
        // b sleeps: CPU 1's best level rises from below w's to w's, and
        // its bit in the recorded level's mask is set.
        p.rqs.remove(b);
        p.update_preempt_mask(&sys, 1);
        assert_eq!(mask(&mut p, &sys, level), [false, true], "CPU 1 rose to the recorded level");
        // So w, with both CPUs busy at its level, is placed on CPU 1 where
        // a strict comparison would find nothing to preempt and take the
        // lowest-numbered CPU, 0.
        let wakeup = WakeKind::Wakeup { waker: Some(h0), waker_cpu: Some(0), sync: true };
        assert_eq!(p.select_cpu(&mut sys, w, 0, wakeup), 1);
        // Asking for a better level flushes strictly from the record: CPU 0
        // joins (worse than level - 1), CPU 1 keeps its bit; back at w's
        // level the flush clears every CPU at or below it.
        assert_eq!(mask(&mut p, &sys, level - 1), [true, true]);
        assert_eq!(mask(&mut p, &sys, level), [false, false]);
    }
}
