//! TT (Task Type), Hamad Al Marri's behaviour-classifying scheduler, as in
//! TT v6.1 (CachyOS, 25 Nov 2022; ../shared/kernels/patches/tt-6.1.patch,
//! banner "TT CPU scheduler v6.1", the tt-6.1 kernel), on top of
//! [`super::Fair`]'s CFS 6.1 with the default sched_tt_balancer_opt = 2
//! (TT_BL_CFS: the CFS load balancer). The model was first written from the
//! 6.3 patch; against 6.1 it was checked line by line: detect_type and its
//! constants, convert_to_vruntime, normalize_lifetime, the list pick
//! (__pick_first_entity keeps the entry nearest the head, the most recently
//! queued, on a tie, as the model's list order does), check_preempt_tick's
//! HRRN early return before CFS's vruntime test, the dequeue burst shift
//! (before update_curr), the yield mark, the dedicated CPU-bound task and
//! select_task_rq_fair under TT_BL_CFS are the same; check_preempt_wakeup
//! and place_entity are CFS 6.1's, unpatched.
//!
//! Every task is classified on each update_curr and enqueue (detect_type):
//! REALTIME when it has slept, lived 0.5 s, waits about as long as last time
//! (within 0.8 ms) and runs bursts about as long as last time (within 2 ms)
//! of at most 4 ms; else INTERACTIVE when (wait + run) / run >= 2 and its
//! waits are not that regular; else CPU_BOUND when run / (wait + run) >= 90%;
//! else BATCH when (wait + run) / run < 2; else NO_TYPE. A CPU_BOUND task
//! that sleeps turns BATCH; a REALTIME task keeps its type for 4 further
//! detections (rt_sticky). The type replaces the nice level in TT's own
//! vruntime: each update_curr adds delta + prio x 1 ms / (40 ms / tick)
//! (prio -20 realtime, -10 interactive, -15 CPU-bound, +19 batch, nice for
//! NO_TYPE), at least 1. That offset comes with every update_curr call,
//! not with time: TT's update_curr reads sched_clock(), so a call at an
//! instant already charged still has a delta and still adds it, and the
//! kernel calls it again in put_prev_entity for a task that stays queued
//! (after the tick's or the yield's call) and in check_preempt_wakeup
//! (after enqueue_entity's). The runqueue is a list; the pick and the tick
//! compare HRRN_PERCENT = TT vruntime x 1000 / life (lower runs first),
//! while CFS's weighted vruntime, sched_slice and wakeup granularity still
//! decide tick and wakeup preemption. The first CPU_BOUND task found on a
//! CPU becomes its dedicated task, which the balancer does not move.
//!
//! Left out: tt_lat_sens_enabled only keeps CPUs with latency-sensitive
//! tasks polling in idle (no idle states are modelled), and the TT_BL_NORM,
//! TT_BL_CAND and TT_BL_PWR balancers are not modelled (setting
//! sched_tt_balancer_opt to anything but 2 is refused). TT disables
//! CGROUP_SCHED and autogroup, so it has no group scheduling, and
//! pick_next_task_fair takes its `simple:` path: the running task goes
//! back to the head of the list before the pick, keeps the CPU on a tie in
//! HRRN, and set_next_entity renews its slice when it is picked again
//! (`Fair::pick_next`). check_preempt_tick's last test is the kernel's
//! unsigned comparison of a signed delta (`cfs`).

use super::super::common::{TunableSpec, apply_tunables, list_tunables, take_own, value_of};
use super::{Fair, Patch, Variant};
use schedlab_sim::{CpuId, Enqueue, Nanos, Sys, TaskId, TaskState, Tunable, Workload};
use std::collections::BTreeMap;

const YIELD_MARK: u64 = 1 << 63;
const INTERACTIVE_HRRN: u64 = 2;
const RT_WAIT_DELTA: u64 = 800_000;
const RT_BURST_DELTA: u64 = 2_000_000;
const RT_BURST_MAX: u64 = 4_000_000;
const RACE_TIME: u64 = 40_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TaskType {
    Realtime = 0,
    Interactive = 1,
    NoType = 2,
    CpuBound = 3,
    Batch = 4,
}

impl TaskType {
    pub fn name(self) -> &'static str {
        match self {
            TaskType::Realtime => "realtime",
            TaskType::Interactive => "interactive",
            TaskType::NoType => "no_type",
            TaskType::CpuBound => "cpu_bound",
            TaskType::Batch => "batch",
        }
    }
}

fn table() -> Vec<TunableSpec> {
    vec![
        TunableSpec {
            name: "sched_tt_balancer_opt",
            value: 2,
            min: 2,
            max: 2,
            help: "2: the CFS balancer (default; the normal, candidate and power-save balancers are not modelled)",
        },
        TunableSpec {
            name: "sched_tt_max_lifetime",
            value: 22000,
            min: 1,
            max: 1 << 23,
            help: "life (in 2^20 ns units) after which life is halved and TT vruntime rescaled",
        },
        TunableSpec {
            name: "sched_tt_rt_prio",
            value: -20,
            min: -20,
            max: 19,
            help: "nice level a REALTIME task's TT vruntime advances at",
        },
        TunableSpec {
            name: "sched_tt_interactive_prio",
            value: -10,
            min: -20,
            max: 19,
            help: "nice level an INTERACTIVE task's TT vruntime advances at",
        },
        TunableSpec {
            name: "sched_tt_cpu_bound_prio",
            value: -15,
            min: -20,
            max: 19,
            help: "nice level a CPU_BOUND task's TT vruntime advances at",
        },
        TunableSpec {
            name: "sched_tt_batch_prio",
            value: 19,
            min: -20,
            max: 19,
            help: "nice level a BATCH task's TT vruntime advances at",
        },
        TunableSpec {
            name: "sched_tt_lat_sens_enabled",
            value: 1,
            min: 0,
            max: 1,
            help: "keep CPUs with latency-sensitive tasks polling in idle (no effect: idle states are not modelled)",
        },
        TunableSpec {
            name: "sched_tt_dedicated_cpu_bound_enabled",
            value: 1,
            min: 0,
            max: 1,
            help: "1: the first CPU_BOUND task on a CPU is not moved by the balancer",
        },
    ]
}

#[derive(Clone, Debug)]
pub struct TtTunables {
    table: Vec<TunableSpec>,
    pub max_lifetime_ms: u64,
    pub rt_prio: i64,
    pub interactive_prio: i64,
    pub cpu_bound_prio: i64,
    pub batch_prio: i64,
    pub dedicated_cpu_bound: bool,
    /// FACTOR = RACE_TIME / HZ_PERIOD.
    pub factor: i64,
}

impl TtTunables {
    /// Takes TT's names out of `set`, leaving CFS's.
    pub fn take(set: &mut BTreeMap<String, i64>, tick_ns: Nanos) -> Result<TtTunables, String> {
        let mut table = table();
        let mine = take_own(&table, set);
        if let Some(&v) = mine.get("sched_tt_balancer_opt")
            && v != 2
        {
            return Err(format!(
                "sched_tt_balancer_opt = {v} is not modelled: only 2 (TT_BL_CFS, the default CFS balancer) is; \
                 drop the setting"
            ));
        }
        apply_tunables("tt", &mut table, &mine)?;
        Ok(TtTunables {
            max_lifetime_ms: value_of(&table, "sched_tt_max_lifetime") as u64,
            rt_prio: value_of(&table, "sched_tt_rt_prio"),
            interactive_prio: value_of(&table, "sched_tt_interactive_prio"),
            cpu_bound_prio: value_of(&table, "sched_tt_cpu_bound_prio"),
            batch_prio: value_of(&table, "sched_tt_batch_prio"),
            dedicated_cpu_bound: value_of(&table, "sched_tt_dedicated_cpu_bound_enabled") != 0,
            factor: (RACE_TIME / tick_ns.max(1)).max(1) as i64,
            table,
        })
    }

    pub fn list(&self) -> Vec<Tunable> {
        list_tunables(&self.table)
    }
}

/// a >= b, a <= b, a < b as TT compares u64s: by their signed difference.
fn geq(a: u64, b: u64) -> bool {
    a.wrapping_sub(b) as i64 >= 0
}
fn leq(a: u64, b: u64) -> bool {
    a.wrapping_sub(b) as i64 <= 0
}
fn eq_d(a: u64, b: u64, d: u64) -> bool {
    leq(a, b.wrapping_add(d)) && geq(a, b.wrapping_sub(d))
}

/// A tt_node, plus the task's fork time (task_struct start_time) and the
/// entity's exec_start, which TT reads as "when it last ran".
#[derive(Clone, Copy, Debug)]
pub struct Node {
    pub task_type: TaskType,
    pub vruntime: u64,
    pub start_time: Nanos,
    pub prev_wait_time: u64,
    pub wait_time: u64,
    pub prev_burst: u64,
    pub curr_burst: u64,
    pub burst: u64,
    pub rt_sticky: u32,
    pub born: Nanos,
    pub exec_start: Nanos,
}

/// A type change detect_type made, for the caller's dedicated-CPU-bound
/// bookkeeping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeChange {
    pub old: TaskType,
    pub new: TaskType,
}

impl Node {
    /// task_fork_fair and wake_up_new_task.
    pub fn new(now: Nanos) -> Node {
        Node {
            task_type: TaskType::NoType,
            vruntime: 1,
            start_time: now,
            prev_wait_time: 0,
            wait_time: 0,
            prev_burst: 0,
            curr_burst: 0,
            burst: 0,
            rt_sticky: 0,
            born: now,
            exec_start: now,
        }
    }

    /// HRRN_PERCENT: TT vruntime per mille of life; lower runs first.
    pub fn hrrn_percent(&self, now: Nanos) -> u64 {
        self.vruntime.wrapping_mul(1000) / (now.wrapping_sub(self.start_time) | 1)
    }

    /// entity_before(a, b): a's HRRN_PERCENT is below b's.
    pub fn before(a: &Node, b: &Node, now: Nanos) -> bool {
        (a.hrrn_percent(now).wrapping_sub(b.hrrn_percent(now)) as i64) < 0
    }

    fn is_realtime(&self, now: Nanos, migrated: bool) -> bool {
        if self.wait_time == 0 {
            return false;
        }
        if (now.wrapping_sub(self.born) as i64) < 500_000_000 {
            return false;
        }
        if !migrated {
            let wait = now.wrapping_sub(self.exec_start);
            if wait != 0 && !eq_d(wait, self.prev_wait_time, RT_WAIT_DELTA) {
                return false;
            }
        }
        if !eq_d(self.burst, self.prev_burst, RT_BURST_DELTA) {
            return false;
        }
        leq(self.burst, RT_BURST_MAX) && leq(self.curr_burst, RT_BURST_MAX)
    }

    fn is_interactive(&self, now: Nanos, hrrn: u64) -> bool {
        if (hrrn.wrapping_sub(INTERACTIVE_HRRN) as i64) < 0 {
            return false;
        }
        let wait = now.wrapping_sub(self.exec_start);
        !(wait != 0 && eq_d(wait, self.prev_wait_time, RT_WAIT_DELTA))
    }

    fn is_cpu_bound(&self) -> bool {
        let pct = self.vruntime.wrapping_mul(100) / self.wait_time.wrapping_add(self.vruntime).max(1);
        geq(pct, 90)
    }

    /// detect_type; returns the change when the type changed.
    pub fn detect_type(&mut self, now: Nanos, migrated: bool) -> Option<TypeChange> {
        if self.vruntime == 1 {
            self.task_type = TaskType::NoType;
            return None;
        }
        let hrrn = self.wait_time.wrapping_add(self.vruntime) / self.vruntime;
        let new = if self.is_realtime(now, migrated) {
            TaskType::Realtime
        } else if self.is_interactive(now, hrrn) {
            TaskType::Interactive
        } else if self.is_cpu_bound() {
            TaskType::CpuBound
        } else if (hrrn.wrapping_sub(2) as i64) < 0 {
            TaskType::Batch
        } else {
            TaskType::NoType
        };
        if new == TaskType::Realtime {
            self.rt_sticky = 4;
        } else if self.task_type == TaskType::Realtime && self.rt_sticky > 0 {
            self.rt_sticky -= 1;
            return None;
        }
        let old = self.task_type;
        self.task_type = new;
        (new != old).then_some(TypeChange { old, new })
    }

    /// convert_to_vruntime: the type's prio (nice for NO_TYPE) as an
    /// additive offset per update.
    pub fn convert_to_vruntime(&self, delta: u64, nice: i64, t: &TtTunables) -> u64 {
        let prio = match self.task_type {
            TaskType::Realtime => t.rt_prio,
            TaskType::Interactive => t.interactive_prio,
            TaskType::CpuBound => t.cpu_bound_prio,
            TaskType::Batch => t.batch_prio,
            TaskType::NoType => nice,
        };
        if prio == 0 {
            return delta;
        }
        let prio_diff = prio * 1_000_000 / t.factor;
        let v = delta as i64 + prio_diff;
        if v < 0 { 1 } else { v as u64 }
    }

    /// update_curr's TT part (before normalize_lifetime).
    pub fn charge(&mut self, now: Nanos, delta: u64, nice: i64, t: &TtTunables) -> Option<TypeChange> {
        self.curr_burst += delta;
        self.vruntime = self.vruntime.wrapping_add(self.convert_to_vruntime(delta, nice, t));
        self.exec_start = now;
        let change = self.detect_type(now, false);
        self.normalize_lifetime(now, t);
        change
    }

    /// enqueue_entity's TT part.
    pub fn enqueue(&mut self, now: Nanos, wakeup: bool, migrated: bool) -> Option<TypeChange> {
        if wakeup {
            let wait = now.wrapping_sub(self.exec_start);
            self.wait_time = self.wait_time.wrapping_add(wait);
            let change = self.detect_type(now, migrated);
            self.prev_wait_time = wait;
            change
        } else {
            self.detect_type(now, migrated)
        }
    }

    /// dequeue_entity's TT part on sleep: the bursts shift, CPU_BOUND
    /// becomes BATCH. `tail` is the run time the dequeue's own update_curr
    /// charged: TT shifts before that update, so the tail opens the next
    /// burst.
    pub fn sleep(&mut self, tail: u64) {
        self.prev_burst = self.burst;
        self.burst = self.curr_burst - tail.min(self.curr_burst);
        self.curr_burst = tail.min(self.curr_burst);
        if self.task_type == TaskType::CpuBound {
            self.task_type = TaskType::Batch;
        }
    }

    fn normalize_lifetime(&mut self, now: Nanos, t: &TtTunables) {
        // TT keeps the rescaled vruntime odd (never 0).
        if super::cacule::normalize_lifetime(now, &mut self.start_time, &mut self.vruntime, t.max_lifetime_ms, true) {
            self.vruntime |= 1;
        }
    }

    pub fn mark_yield(&mut self) {
        self.vruntime |= YIELD_MARK;
    }

    /// yield_task_fair: the mark, then update_curr's detect_type and
    /// normalize_lifetime (its run time is charged by the caller).
    pub fn yield_now(&mut self, now: Nanos, t: &TtTunables) -> Option<TypeChange> {
        self.mark_yield();
        let change = self.detect_type(now, false);
        self.normalize_lifetime(now, t);
        change
    }

    pub fn unmark_yield(&mut self) {
        self.vruntime &= !YIELD_MARK;
    }
}

/// TT's part of the fair class: its constructor, its hooks (see
/// `patches`), the HRRN scan of its list, the extra update_curr calls and
/// the dedicated CPU-bound task.
impl Fair {
    /// TT: CFS with task types and HRRN order, without group scheduling.
    pub fn new_tt(w: &Workload) -> Result<Fair, String> {
        let mut set = w.tunables.clone();
        let t = TtTunables::take(&mut set, w.machine.tick_ns())?;
        Self::refuse_unknown("tt", w, &t.list(), |_| false)?;
        let mut flat = w.clone();
        flat.groups.truncate(1);
        let mut f = Self::with_tunables(Variant::Cfs, &flat, &set)?;
        f.flat = true;
        f.dedicated = vec![None; f.nr_cpus as usize];
        f.patch = Patch::Tt(t);
        f.tnodes.reserve_exact(w.initial_tasks() as usize);
        Ok(f)
    }

    /// TT has no group entities: one node per entity, in order.
    pub(super) fn tt_fork(&mut self, sys: &Sys, t: TaskId) {
        self.tnodes.push(Node::new(sys.now));
        if self.last_charge.len() <= t as usize {
            self.last_charge.resize(t as usize + 1, (0, 0));
        }
    }

    /// enqueue_entity's TT block, and migrate_task_rq_fair's unmark.
    pub(super) fn tt_enqueue(&mut self, sys: &Sys, cpu: CpuId, t: TaskId, how: Enqueue, migrated: bool) {
        let se = self.per_task[t as usize].se as usize;
        let node = &mut self.tnodes[se];
        if how == Enqueue::New {
            // task_struct start_time is the fork: a task whose workload
            // start lies later is born then, not when the engine made it.
            node.start_time = sys.now;
        }
        if migrated {
            node.unmark_yield();
        }
        let change = node.enqueue(sys.now, how == Enqueue::Wakeup, migrated);
        self.tt_type_changed(cpu, t, change);
    }

    /// dequeue_entity's TT block runs before its update_curr: the run
    /// charged at this very moment opens the next burst.
    pub(super) fn tt_dequeue(&mut self, sys: &Sys, t: TaskId) {
        let se = self.per_task[t as usize].se as usize;
        let (at, delta) = self.last_charge[t as usize];
        self.tnodes[se].sleep(if at == sys.now { delta } else { 0 });
    }

    /// yield_task_fair (with others queued) marks, then its update_curr
    /// runs detect_type on the marked vruntime: (wait + run) / run is 1
    /// and the run share wraps to 0, so the yielder turns BATCH (+19) until
    /// it next runs, which is what keeps a yield-looping task's TT vruntime
    /// growing. The run itself was charged just before.
    pub(super) fn tt_yield(&mut self, sys: &Sys, cpu: CpuId, t: TaskId) {
        if sys.cpus[cpu as usize].nr_running <= 1 {
            return;
        }
        let Patch::Tt(tun) = &self.patch else { unreachable!("a TT hook outside tt") };
        let se = self.per_task[t as usize].se as usize;
        let change = self.tnodes[se].yield_now(sys.now, tun);
        self.tt_type_changed(cpu, t, change);
    }

    /// How TT classified the tasks, as of the end of the run.
    pub(super) fn tt_metrics(&self, sys: &Sys, out: &mut Vec<(String, f64)>) {
        for ty in [TaskType::Realtime, TaskType::Interactive, TaskType::NoType, TaskType::CpuBound, TaskType::Batch] {
            let n = (0..sys.tasks.len() as TaskId)
                .filter(|&t| !sys.task(t).policy.is_rt() && sys.task(t).state != TaskState::Exited)
                .filter(|&t| self.tnodes[self.per_task[t as usize].se as usize].task_type == ty)
                .count();
            out.push((format!("tt_tasks_{}", ty.name()), n as f64));
        }
    }

    /// TT's __pick_first_entity / __pick_next_entity: the list entry with
    /// the lowest HRRN_PERCENT (head-most on a tie), `skip` left out.
    pub(super) fn tt_first(&self, rq: u32, now: Nanos, skip: Option<u32>) -> Option<u32> {
        let mut best: Option<(u32, u64)> = None;
        self.rqs[rq as usize].tree.for_each(&self.ents, |s| {
            if Some(s) == skip {
                return;
            }
            let h = self.tnodes[s as usize].hrrn_percent(now);
            if best.is_none_or(|(_, b)| (h.wrapping_sub(b) as i64) < 0) {
                best = Some((s, h));
            }
        });
        best.map(|(s, _)| s)
    }

    /// TT's part of update_curr for `t` on `cpu`, `delta` being the run the
    /// engine charged (0 where the kernel calls update_curr again at an
    /// instant already charged). Its clock is sched_clock(), so the kernel's
    /// delta is then the few hundred ns between the calls, never zero, and
    /// convert_to_vruntime adds the type's offset all the same (BATCH +1.9
    /// ms at HZ=250, a nice 5 NO_TYPE task +0.5 ms, CPU_BOUND 1 ns). That is
    /// how a yield-looping task, charged at the yield and again when
    /// schedule() puts it back, loses the HRRN order to a hog twice as fast
    /// as one update a yield would make it.
    pub(super) fn tt_update_curr(&mut self, sys: &Sys, cpu: CpuId, t: TaskId, delta: Nanos) {
        let Patch::Tt(tun) = &self.patch else {
            return;
        };
        let se = self.per_task[t as usize].se;
        let nice = sys.task(t).nice as i64;
        let change = self.tnodes[se as usize].charge(sys.now, delta, nice, tun);
        self.tt_type_changed(cpu, t, change);
    }

    /// detect_type's dedicated-CPU-bound bookkeeping for the task's CPU.
    pub(super) fn tt_type_changed(&mut self, cpu: CpuId, t: TaskId, change: Option<TypeChange>) {
        let Some(c) = change else {
            return;
        };
        if !self.tt().expect("a TT hook outside tt").dedicated_cpu_bound {
            return;
        }
        let d = &mut self.dedicated[cpu as usize];
        if d.is_none() && c.new == TaskType::CpuBound {
            *d = Some(t);
        } else if *d == Some(t) && c.old == TaskType::CpuBound {
            *d = None;
        }
    }

    /// check_dedicated_cpu_bound: forget a dedicated task that is neither
    /// running nor queued here any more.
    pub(super) fn tt_check_dedicated(&mut self, cpu: CpuId) {
        if let Some(d) = self.dedicated[cpu as usize] {
            let e = &self.ents[self.per_task[d as usize].se as usize];
            if !(e.on_rq && e.rq == self.root(cpu)) {
                self.dedicated[cpu as usize] = None;
            }
        }
    }

    /// The TT task type of `t` (tests, reports).
    pub fn tt_type(&self, t: TaskId) -> Option<TaskType> {
        self.tt().map(|_| self.tnodes[self.per_task[t as usize].se as usize].task_type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tun() -> TtTunables {
        TtTunables::take(&mut BTreeMap::new(), 4_000_000).unwrap()
    }

    #[test]
    fn a_spinner_is_cpu_bound_and_turns_batch_when_it_sleeps() {
        let t = tun();
        let mut n = Node::new(0);
        let mut now = 0;
        for _ in 0..10 {
            now += 4_000_000;
            n.charge(now, 4_000_000, 0, &t);
        }
        assert_eq!(n.task_type, TaskType::CpuBound);
        // -15 at HZ=250: 4 ms - 1.5 ms per tick.
        assert!(n.vruntime < 10 * 4_000_000);
        n.sleep(0);
        assert_eq!(n.task_type, TaskType::Batch);
    }

    #[test]
    fn regular_short_bursts_after_half_a_second_are_realtime() {
        let t = tun();
        let mut n = Node::new(0);
        let mut now = 0;
        let mut types = Vec::new();
        for _ in 0..100 {
            now += 10_000_000; // sleeps 10 ms
            types.push(n.enqueue(now, true, false).map(|c| c.new).unwrap_or(n.task_type));
            now += 100_000; // runs 0.1 ms
            n.charge(now, 100_000, 0, &t);
            n.sleep(100_000);
        }
        assert_eq!(*types.last().unwrap(), TaskType::Realtime);
        assert!(types[..40].iter().all(|&x| x != TaskType::Realtime), "{types:?}");
    }

    #[test]
    fn sleepers_with_irregular_bursts_are_interactive() {
        // Regular bursts make a task REALTIME even while it runs (update_curr
        // skips the wait test); bursts that differ by more than 2 ms do not.
        // Regular sleeps make it NO_TYPE at wakeup; these vary.
        let t = tun();
        let mut n = Node::new(0);
        let mut now = 0;
        for i in 0..100u64 {
            now += 20_000_000 + (i % 3) * 5_000_000;
            n.enqueue(now, true, false);
            let burst = if i % 2 == 0 { 500_000 } else { 5_000_000 };
            now += burst;
            n.charge(now, burst, 0, &t);
            assert_ne!(n.task_type, TaskType::Realtime, "run {i}");
            n.sleep(burst);
        }
        now += 27_000_000;
        n.enqueue(now, true, false);
        assert_eq!(n.task_type, TaskType::Interactive);
    }

    #[test]
    fn prio_offsets_scale_with_the_tick() {
        let t = tun();
        let n = Node { task_type: TaskType::Interactive, ..Node::new(0) };
        assert_eq!(n.convert_to_vruntime(4_000_000, 0, &t), 3_000_000);
        assert_eq!(n.convert_to_vruntime(500_000, 0, &t), 1);
        let batch = Node { task_type: TaskType::Batch, ..Node::new(0) };
        assert_eq!(batch.convert_to_vruntime(1_000_000, 0, &t), 2_900_000);
        let plain = Node::new(0);
        assert_eq!(plain.convert_to_vruntime(1_000_000, 5, &t), 1_500_000);
    }

    #[test]
    fn other_balancers_are_refused() {
        let mut set = BTreeMap::from([("sched_tt_balancer_opt".to_string(), 1)]);
        assert!(TtTunables::take(&mut set, 4_000_000).unwrap_err().contains("not modelled"));
    }
}
