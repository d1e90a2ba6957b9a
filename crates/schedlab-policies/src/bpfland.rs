//! scx_bpfland 1.1.4 (Andrea Righi's sched_ext scheduler, sched-ext/scx
//! scheds/rust/scx_bpfland: src/bpf/main.bpf.c and main.rs's defaults) as
//! it runs on Linux 6.12's sched_ext core (kernel/sched/ext.c of 6.12: the
//! scx-6.12 guest kernel of ../shared/kernels), where its compat paths
//! take the 6.12 branches.
//!
//! - Queues: a DSQ per CPU and one per NUMA node (6.12 has no per-node
//!   kfuncs: one node), both ordered by a deadline (dsq_vtime), and each
//!   CPU's local DSQ (FIFO) of the sched_ext core.
//! - Deadline (task_dl): the task's vruntime, pulled up to at most
//!   `slice_lag x lag_scale` behind the global vtime_now (lag_scale is its
//!   wakeup frequency, scaled down by queue pressure: q_thresh over
//!   q_thresh plus the tasks queued, q_thresh = 500 ms / slice_max), plus
//!   the vruntime it used
//!   since it last woke (awake_vtime, capped at slice_lag). Inserting the
//!   task stores that deadline as its dsq_vtime (scx_bpf_dsq_insert_vtime);
//!   ops.stopping adds the time used, scaled by 100 / weight (the cgroup
//!   form of its nice weight), to both.
//! - Slice (task_slice): slice_max (1 ms) x weight / 100, divided by the
//!   tasks waiting in this CPU's and the node's DSQ. sched_ext charges it
//!   in update_curr and ends it at the tick (no hrtick): at HZ=250 a slice
//!   lasts to the next tick at least.
//! - Wakeup (ops.select_cpu): 6.12 lacks scx_bpf_select_cpu_and, so the
//!   core's scx_select_cpu_dfl picks: the waker's CPU for a WF_SYNC wakeup
//!   while some CPU is idle and the waker's local DSQ is empty; a pinned
//!   task's CPU if idle; with SMT a wholly idle core (prev's first); prev
//!   if idle; any idle CPU (cpumask_any_and_distribute, rotating). A CPU
//!   found goes with a direct dispatch into that CPU's DSQ; otherwise the
//!   task is enqueued on prev.
//! - ops.enqueue: on 6.12 __COMPAT_is_enq_cpu_selected() is always true, so
//!   no enqueue looks for an idle CPU or kicks one: a pinned task goes to
//!   its CPU's DSQ, every other one to the node DSQ. Nothing wakes an idle
//!   CPU for a task queued in the node DSQ; it waits for a CPU's dispatch.
//! - ops.dispatch: the earlier deadline of the heads of this CPU's DSQ and
//!   the node DSQ is consumed (the first task of that DSQ that may run
//!   here, migrated); with nothing to consume, a task whose slice ended
//!   gets a new one and keeps its CPU. A task preempted with slice left
//!   (a real-time task took the CPU) waits at the head of the local DSQ.
//!   A task kept on its CPU is not stopped and restarted, so its vruntime
//!   is charged when it finally leaves (6.12's put_prev_set_next_task
//!   skips prev == next). No wakeup preempts a running task.
//! - Defaults of scx_bpfland 1.1.4's command line: --slice-us 1000,
//!   --slice-min-us 0, --slice-us-lag 40000, no --local-pcpu,
//!   --local-kthreads, --sticky-tasks or --no-wake-sync, primary domain
//!   "auto" = every CPU on a machine of equal cores, equal capacities.
//!
//! Left out: CPU throttling and cpufreq (off by default), the preferred
//! idle scan (off), kthread handling (the workload has none), cgroups
//! (bpfland has no group weights).

use crate::common::{self, KeyedQueues, TunableSpec};
use crate::weights::nice_to_weight;
use schedlab_sim::{CpuId, Dequeue, Enqueue, Nanos, Policy, Sys, TaskId, TaskState, Tunable, WakeKind};
use std::collections::VecDeque;

const NSEC_PER_MSEC: u64 = 1_000_000;
/// STARVATION_MS (the sched_ext watchdog's timeout, 5 s).
const STARVATION_MS: u64 = 5_000;
/// MAX_WAKEUP_FREQ: wakeups per 100 ms.
const MAX_WAKEUP_FREQ: u64 = 64;
/// SCX_SLICE_DFL: a new task's slice, and the core's refill.
const SCX_SLICE_DFL: u64 = 20 * NSEC_PER_MSEC;

#[derive(Clone, Default)]
struct Task {
    /// p->scx.dsq_vtime: the vruntime, and the deadline once inserted.
    vtime: u64,
    awake_vtime: u64,
    last_run_at: u64,
    wakeup_freq: u64,
    last_woke_at: u64,
    avg_runtime: u64,
    /// p->scx.slice, charged as the task runs.
    slice: u64,
    /// p->scx.weight: the nice weight in cgroup units (nice 0 = 100).
    weight: u64,
    /// A direct dispatch decided in select_cpu: (cpu, slice, deadline).
    direct: Option<(CpuId, u64, u64)>,
}

pub struct Bpfland {
    tun: Vec<TunableSpec>,
    slice_max: u64,
    slice_min: u64,
    slice_lag: u64,
    tasks: Vec<Task>,
    /// The per-CPU DSQs (0..nr_cpus) and the node DSQ (nr_cpus).
    dsqs: KeyedQueues,
    local: Vec<VecDeque<TaskId>>,
    curr: Vec<Option<TaskId>>,
    vtime_now: u64,
    /// cpumask_any_and_distribute's memory of its last pick.
    last_pick: CpuId,
    smt: bool,
}

/// time_before(a, b) on u64 clocks that may wrap.
fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// calc_avg: new = old * 3/4 + val / 4.
fn calc_avg(old: u64, val: u64) -> u64 {
    (old - (old >> 2)) + (val >> 2)
}

impl Bpfland {
    pub fn new(w: &schedlab_sim::Workload) -> Result<Bpfland, String> {
        let mut tun = vec![
            TunableSpec {
                name: "slice_us",
                value: 1000,
                min: 1,
                max: 10_000_000,
                help: "--slice-us: the maximum slice, us (divided by the tasks waiting)",
            },
            TunableSpec {
                name: "slice_min_us",
                value: 0,
                min: 0,
                max: 10_000_000,
                help: "--slice-min-us: the minimum slice, us (0: none)",
            },
            TunableSpec {
                name: "slice_us_lag",
                value: 40_000,
                min: 0,
                max: 10_000_000,
                help: "--slice-us-lag: how far behind vtime_now a sleeper's vruntime may stay, us",
            },
        ];
        common::apply_tunables("bpfland", &mut tun, &w.tunables)?;
        let us = |name| common::value_of(&tun, name) as u64 * 1000;
        let n = w.nr_cpus() as usize;
        Ok(Bpfland {
            slice_max: us("slice_us"),
            slice_min: us("slice_min_us"),
            slice_lag: us("slice_us_lag"),
            tun,
            tasks: Vec::with_capacity(w.initial_tasks() as usize),
            dsqs: KeyedQueues::new(n + 1),
            local: vec![VecDeque::new(); n],
            curr: vec![None; n],
            vtime_now: 0,
            last_pick: 0,
            smt: w.machine.topology.threads_per_core > 1,
        })
    }

    fn node_dsq(&self) -> u32 {
        self.local.len() as u32
    }

    fn nr_queued(&self, cpu: CpuId) -> u64 {
        (self.dsqs.len(cpu) + self.dsqs.len(self.node_dsq())) as u64
    }

    /// An idle CPU for sched_ext's idle mask: nothing runs or waits there.
    fn idle(sys: &Sys, cpu: CpuId) -> bool {
        sys.idle(cpu) && sys.cpus[cpu as usize].curr.is_none()
    }

    fn core_idle(sys: &Sys, cpu: CpuId) -> bool {
        sys.topology.siblings(cpu).all(|c| Self::idle(sys, c))
    }

    /// task_slice.
    fn task_slice(&self, t: TaskId, cpu: CpuId) -> u64 {
        let nr_wait = self.nr_queued(cpu).max(1);
        let slice = self.slice_max * self.tasks[t as usize].weight / 100 / nr_wait;
        slice.max(self.slice_min)
    }

    /// task_dl: clamps the vruntime and the awake vruntime, returns the
    /// deadline.
    fn task_dl(&mut self, t: TaskId, cpu: CpuId) -> u64 {
        let starvation_thresh = STARVATION_MS * NSEC_PER_MSEC / 10;
        let q_thresh = (starvation_thresh / self.slice_max).max(1);
        let nr_queued = self.nr_queued(cpu);
        let task = &self.tasks[t as usize];
        let w = task.weight.max(1);
        let mut lag_scale = task.wakeup_freq.max(1);
        let awake_max = self.slice_lag * 100 / w;
        if nr_queued * self.slice_max >= starvation_thresh {
            lag_scale = 1;
        } else {
            lag_scale = (lag_scale * q_thresh / (q_thresh + nr_queued)).max(1);
        }
        let vtime_min = self.vtime_now.wrapping_sub(self.slice_lag * lag_scale * w / 100);
        let task = &mut self.tasks[t as usize];
        if before(task.vtime, vtime_min) {
            task.vtime = vtime_min;
        }
        if before(awake_max, task.awake_vtime) {
            task.awake_vtime = awake_max;
        }
        task.vtime.wrapping_add(task.awake_vtime)
    }

    /// scx_bpf_dsq_insert_vtime: the slice (0 keeps the old one, or 1 ns)
    /// and the deadline as dsq_vtime.
    fn insert(&mut self, dsq: u32, t: TaskId, slice: u64, deadline: u64) {
        let task = &mut self.tasks[t as usize];
        task.slice = if slice > 0 { slice } else { task.slice.max(1) };
        task.vtime = deadline;
        self.dsqs.insert(dsq, t, deadline);
    }

    /// ops.enqueue on 6.12: a pinned task to its CPU's DSQ, any other to
    /// the node DSQ.
    fn bpfland_enqueue(&mut self, sys: &Sys, cpu: CpuId, t: TaskId) {
        let slice = self.task_slice(t, cpu);
        let deadline = self.task_dl(t, cpu);
        let dsq = if Self::nr_allowed(sys, t) == 1 { cpu } else { self.node_dsq() };
        self.insert(dsq, t, slice, deadline);
    }

    fn nr_allowed(sys: &Sys, t: TaskId) -> u32 {
        sys.task(t).affinity.as_ref().map_or(sys.nr_cpus, |a| a.count())
    }

    /// ops.runnable.
    fn runnable(&mut self, now: Nanos, t: TaskId) {
        let task = &mut self.tasks[t as usize];
        task.awake_vtime = 0;
        let delta = if now > task.last_woke_at { now - task.last_woke_at } else { 1 };
        task.wakeup_freq = calc_avg(task.wakeup_freq, 100 * NSEC_PER_MSEC / delta).min(MAX_WAKEUP_FREQ);
        task.last_woke_at = now;
    }

    /// ops.running.
    fn running(&mut self, now: Nanos, t: TaskId) {
        let task = &mut self.tasks[t as usize];
        task.last_run_at = now;
        if before(self.vtime_now, task.vtime) {
            self.vtime_now = task.vtime;
        }
    }

    /// ops.stopping.
    fn stopping(&mut self, now: Nanos, t: TaskId) {
        let task = &mut self.tasks[t as usize];
        let used = now.saturating_sub(task.last_run_at);
        task.avg_runtime = calc_avg(task.avg_runtime, used);
        let delta = used * 100 / task.weight.max(1);
        task.vtime = task.vtime.wrapping_add(delta);
        task.awake_vtime += delta;
    }

    /// scx_pick_idle_cpu: an idle CPU the task may use after the last one
    /// picked (cpumask_any_and_distribute), a wholly idle core first with
    /// SMT (only one with `core`).
    fn pick_idle(&mut self, sys: &Sys, t: TaskId, core: bool) -> Option<CpuId> {
        let n = sys.nr_cpus;
        let order = (1..=n).map(|i| (self.last_pick + i) % n);
        let mut found = None;
        if self.smt {
            found = order.clone().find(|&c| sys.allowed(t, c) && Self::core_idle(sys, c));
            if found.is_none() && core {
                return None;
            }
        }
        let found = found.or_else(|| order.clone().find(|&c| sys.allowed(t, c) && Self::idle(sys, c)));
        if let Some(c) = found {
            self.last_pick = c;
        }
        found
    }

    /// scx_select_cpu_dfl: the CPU and whether it was found idle (or the
    /// waker's, for a synchronous wakeup).
    fn select_cpu_dfl(&mut self, sys: &Sys, t: TaskId, prev: CpuId, this: CpuId, sync: bool) -> Option<CpuId> {
        let any_idle = (0..sys.nr_cpus).any(|c| Self::idle(sys, c));
        if sync
            && Self::nr_allowed(sys, t) > 1
            && any_idle
            && self.local[this as usize].is_empty()
            && sys.allowed(t, this)
        {
            return Some(this);
        }
        if Self::nr_allowed(sys, t) == 1 {
            return Self::idle(sys, prev).then_some(prev);
        }
        if self.smt {
            if Self::core_idle(sys, prev) {
                return Some(prev);
            }
            if let Some(c) = self.pick_idle(sys, t, true) {
                return Some(c);
            }
        }
        if Self::idle(sys, prev) {
            return Some(prev);
        }
        self.pick_idle(sys, t, false)
    }

    /// ops.dispatch's consume: the first task of `dsq` that may run on
    /// `cpu`, moved there.
    fn consume(&mut self, sys: &mut Sys, dsq: u32, cpu: CpuId) -> Option<TaskId> {
        let t = self.dsqs.iter(dsq).map(|(_, t)| t).find(|&t| sys.allowed(t, cpu))?;
        self.dsqs.remove(t);
        if sys.task(t).cpu != cpu {
            sys.migrate(t, cpu);
        }
        Some(t)
    }

    /// keep_running: a queued task keeps its CPU unless SMT contention
    /// asks it to leave.
    fn keep_running(&self, sys: &Sys, t: TaskId, cpu: CpuId) -> bool {
        if sys.task(t).state != TaskState::Runnable {
            return false;
        }
        if Self::nr_allowed(sys, t) == 1 {
            return true;
        }
        !self.smt_contended(sys, cpu)
    }

    /// is_smt_contended: the sibling is busy while some CPU is idle.
    fn smt_contended(&self, sys: &Sys, cpu: CpuId) -> bool {
        if !self.smt {
            return false;
        }
        let sibling = sys.topology.siblings(cpu).start;
        !Self::idle(sys, sibling) && (0..sys.nr_cpus).any(|c| Self::idle(sys, c))
    }

    /// ops.dispatch: the earlier deadline of the two DSQ heads, else a new
    /// slice for prev. Returns the task consumed.
    fn dispatch(&mut self, sys: &mut Sys, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        let node = self.node_dsq();
        let p = self.dsqs.first(cpu);
        let q = self.dsqs.first(node);
        // is_deadline_min(q, p): q's deadline is the earlier one.
        let node_first = match (q, p) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some((qk, _)), Some((pk, _))) => qk < pk,
        };
        let order = if node_first { [(node, q), (cpu, p)] } else { [(cpu, p), (node, q)] };
        for (dsq, head) in order {
            if head.is_some()
                && let Some(t) = self.consume(sys, dsq, cpu)
            {
                return Some(t);
            }
        }
        if let Some(p) = prev
            && self.keep_running(sys, p, cpu)
        {
            self.tasks[p as usize].slice = self.task_slice(p, cpu).max(1);
        }
        None
    }
}

impl Policy for Bpfland {
    fn name(&self) -> &'static str {
        "bpfland"
    }

    fn tunables(&self) -> Vec<Tunable> {
        common::list_tunables(&self.tun)
    }

    fn task_new(&mut self, sys: &mut Sys, t: TaskId, _parent: Option<TaskId>) {
        if self.tasks.len() <= t as usize {
            self.tasks.resize(t as usize + 1, Task::default());
        }
        // init_scx_entity's slice, ops.enable's vtime, the cgroup weight of
        // the nice level (sched_weight_to_cgroup, rounded).
        let weight = (nice_to_weight(sys.task(t).nice) * 100 + 512) / 1024;
        self.tasks[t as usize] =
            Task { vtime: self.vtime_now, slice: SCX_SLICE_DFL, weight: weight.max(1), ..Task::default() };
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, kind: WakeKind) -> CpuId {
        // select_task_rq calls ops.select_cpu only for a task that may run
        // on more than one CPU.
        if Self::nr_allowed(sys, t) == 1 {
            return (0..sys.nr_cpus).find(|&c| sys.allowed(t, c)).unwrap_or(prev);
        }
        let (this, sync) = match kind {
            WakeKind::Wakeup { waker_cpu, sync, .. } => (waker_cpu.unwrap_or(prev), sync),
            WakeKind::New => (sys.task(t).parent.map_or(prev, |p| sys.task(p).cpu), false),
        };
        let prev = if sys.allowed(t, prev) {
            prev
        } else if sys.allowed(t, this) {
            this
        } else {
            (0..sys.nr_cpus).find(|&c| sys.allowed(t, c)).unwrap_or(prev)
        };
        match self.select_cpu_dfl(sys, t, prev, this, sync) {
            Some(cpu) => {
                let slice = self.task_slice(t, cpu);
                let deadline = self.task_dl(t, cpu);
                self.tasks[t as usize].direct = Some((cpu, slice, deadline));
                cpu
            }
            None => prev,
        }
    }

    fn enqueue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, how: Enqueue) {
        if how != Enqueue::Migrate {
            self.runnable(sys.now, t);
        }
        match self.tasks[t as usize].direct.take() {
            Some((c, slice, deadline)) if c == cpu => self.insert(cpu, t, slice, deadline),
            _ => self.bpfland_enqueue(sys, cpu, t),
        }
    }

    fn dequeue(&mut self, _sys: &mut Sys, cpu: CpuId, t: TaskId, _why: Dequeue) {
        self.dsqs.remove(t);
        self.local[cpu as usize].retain(|&x| x != t);
        self.tasks[t as usize].direct = None;
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        let prev = self.curr[cpu as usize].take();
        let queued = prev.filter(|&p| sys.task(p).state == TaskState::Runnable);
        // balance_scx: a runnable prev with slice left keeps the CPU.
        if let Some(p) = queued
            && self.tasks[p as usize].slice > 0
        {
            self.curr[cpu as usize] = Some(p);
            return Some(p);
        }
        let next = match self.local[cpu as usize].pop_front() {
            Some(t) => Some(t),
            None => self.dispatch(sys, cpu, queued),
        };
        let now = sys.now;
        match next {
            Some(n) => {
                if let Some(p) = prev {
                    self.stopping(now, p);
                    // put_prev_task_scx: a queued prev whose slice ended
                    // goes back through ops.enqueue.
                    if queued.is_some() {
                        self.bpfland_enqueue(sys, cpu, p);
                    }
                }
                self.running(now, n);
                self.curr[cpu as usize] = Some(n);
                Some(n)
            }
            None => match queued {
                // Nothing else: prev keeps the CPU (its slice refilled by
                // dispatch, or SCX_SLICE_DFL: no SCX_OPS_ENQ_LAST).
                Some(p) => {
                    let task = &mut self.tasks[p as usize];
                    if task.slice == 0 {
                        task.slice = SCX_SLICE_DFL;
                    }
                    self.curr[cpu as usize] = Some(p);
                    Some(p)
                }
                None => {
                    if let Some(p) = prev {
                        self.stopping(now, p);
                    }
                    None
                }
            },
        }
    }

    fn put_prev(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, runnable: bool) {
        self.curr[cpu as usize] = None;
        self.stopping(sys.now, t);
        if runnable {
            // A higher class took the CPU: with slice left the task waits
            // at the head of the local DSQ, else it is enqueued again.
            if self.tasks[t as usize].slice > 0 {
                self.local[cpu as usize].push_front(t);
            } else {
                self.bpfland_enqueue(sys, cpu, t);
            }
        }
    }

    fn account(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId, delta: Nanos) {
        let task = &mut self.tasks[t as usize];
        task.slice = task.slice.saturating_sub(delta);
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        if self.tasks[curr as usize].slice == 0 {
            sys.resched(cpu);
        }
    }

    fn yield_task(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId) {
        // yield_task_scx without ops.yield: the slice ends.
        self.tasks[t as usize].slice = 0;
    }

    fn unsupported(&self, sys: &Sys) -> Vec<String> {
        let mut out = common::no_groups("bpfland", sys);
        out.extend(common::no_iso("bpfland", sys));
        out
    }

    fn check_invariants(&self, sys: &Sys) -> Result<(), String> {
        for (cpu, c) in self.curr.iter().enumerate() {
            if let Some(t) = c
                && sys.cpus[cpu].curr == Some(*t)
                && self.dsqs.queue_of(*t).is_some()
            {
                return Err(format!("bpfland: task {t} runs on CPU {cpu} while queued in a DSQ"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model on 2 CPUs, its state set by each test.
    fn model() -> Bpfland {
        let text = "name = \"x\"\nduration = \"1s\"\n[machine]\ncpus = 2\n[[task]]\nname = \"a\"\nprogram = [ { run = \"1ms\" } ]\n";
        Bpfland::new(&schedlab_sim::Workload::from_toml(text, "x", &Default::default()).unwrap()).unwrap()
    }

    #[test]
    fn the_deadline_pulls_a_long_sleeper_up_to_its_lag_and_charges_what_it_ran() {
        let mut b = model();
        b.tasks = vec![Task { weight: 100, ..Task::default() }; 2];
        b.vtime_now = 1_000_000_000;
        // A task far behind (vtime 0) that woke often: lag_scale 10 x
        // 500 / (500 + 0 queued) = 10, so it may stay 400 ms behind.
        b.tasks[0].wakeup_freq = 10;
        let dl = b.task_dl(0, 0);
        assert_eq!(dl, 1_000_000_000 - 10 * 40_000_000);
        // Its awake vruntime adds to the deadline, capped at slice_lag.
        b.tasks[1].vtime = 990_000_000;
        b.tasks[1].awake_vtime = 90_000_000;
        assert_eq!(b.task_dl(1, 0), 990_000_000 + 40_000_000);
        // ops.stopping: 3 ms used at nice 0 is 3 ms of vruntime; a nice -5
        // task (weight 335) is charged 100/335 of it.
        b.tasks[1].last_run_at = 0;
        b.stopping(3_000_000, 1);
        assert_eq!(b.tasks[1].vtime, 990_000_000 + 3_000_000);
        b.tasks[1].weight = 335;
        b.tasks[1].last_run_at = 0;
        b.stopping(3_350_000, 1);
        assert_eq!(b.tasks[1].vtime, 993_000_000 + 1_000_000);
    }

    #[test]
    fn the_slice_is_divided_among_the_waiting_tasks() {
        let mut b = model();
        b.tasks = vec![Task { weight: 100, ..Task::default() }; 5];
        assert_eq!(b.task_slice(0, 0), 1_000_000);
        for t in 1..5 {
            b.dsqs.insert(b.node_dsq(), t, t as u64);
        }
        assert_eq!(b.task_slice(0, 0), 250_000, "1 ms over the 4 waiting");
    }
}
