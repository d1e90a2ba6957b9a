//! scx_bpfland 1.1.4 (Andrea Righi's sched_ext scheduler, sched-ext/scx
//! scheds/rust/scx_bpfland: src/bpf/main.bpf.c and main.rs's defaults) as
//! it runs on Linux 6.12's sched_ext core (kernel/sched/ext.c of 6.12: the
//! scx-6.12 guest kernel of ../shared/kernels), where its compat paths
//! take the 6.12 branches. This file holds bpfland's callbacks
//! ([`ScxOps`]); what the core does around them (local DSQs, slices
//! charged and ended at the tick, direct dispatch, the dispatch loop) is
//! [`crate::scx`]'s, shared with any scheduler written in that shape.
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

use crate::common::{self, TunableSpec};
use crate::scx::{Dsq, Scx, ScxCore, ScxOps};
use schedlab_sim::{CpuId, Nanos, Sys, TaskId, TaskState, Tunable};

const NSEC_PER_MSEC: u64 = 1_000_000;
/// STARVATION_MS (the sched_ext watchdog's timeout, 5 s).
const STARVATION_MS: u64 = 5_000;
/// MAX_WAKEUP_FREQ: wakeups per 100 ms.
const MAX_WAKEUP_FREQ: u64 = 64;

/// bpfland's task context (its task_ctx map); the deadline and vruntime
/// are the task's dsq_vtime, kept by sched_ext.
#[derive(Clone, Default)]
struct Task {
    awake_vtime: u64,
    last_run_at: u64,
    wakeup_freq: u64,
    last_woke_at: u64,
    avg_runtime: u64,
}

pub struct Bpfland {
    tun: Vec<TunableSpec>,
    slice_max: u64,
    slice_min: u64,
    slice_lag: u64,
    tasks: Vec<Task>,
    nr_cpus: u32,
    vtime_now: u64,
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
    /// The model: bpfland's callbacks on the sched_ext core.
    pub fn policy(w: &schedlab_sim::Workload) -> Result<ScxCore<Bpfland>, String> {
        Ok(ScxCore::new(w, Bpfland::new(w)?))
    }

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
        Ok(Bpfland {
            slice_max: us("slice_us"),
            slice_min: us("slice_min_us"),
            slice_lag: us("slice_us_lag"),
            tun,
            tasks: Vec::with_capacity(w.initial_tasks() as usize),
            nr_cpus: w.nr_cpus(),
            vtime_now: 0,
        })
    }

    /// The per-CPU DSQ of `cpu`.
    fn cpu_dsq(cpu: CpuId) -> Dsq {
        Dsq::User(cpu as u64)
    }

    /// The per-node DSQ (one node).
    fn node_dsq(&self) -> Dsq {
        Dsq::User(self.nr_cpus as u64)
    }

    fn nr_queued(&self, scx: &Scx, cpu: CpuId) -> u64 {
        (scx.dsq_nr_queued(Self::cpu_dsq(cpu)) + scx.dsq_nr_queued(self.node_dsq())) as u64
    }

    /// task_slice.
    fn task_slice(&self, scx: &Scx, t: TaskId, cpu: CpuId) -> u64 {
        let nr_wait = self.nr_queued(scx, cpu).max(1);
        let slice = self.slice_max * scx.weight(t) / 100 / nr_wait;
        slice.max(self.slice_min)
    }

    /// task_dl: clamps the vruntime and the awake vruntime, returns the
    /// deadline.
    fn task_dl(&mut self, scx: &mut Scx, t: TaskId, cpu: CpuId) -> u64 {
        let starvation_thresh = STARVATION_MS * NSEC_PER_MSEC / 10;
        let q_thresh = (starvation_thresh / self.slice_max).max(1);
        let nr_queued = self.nr_queued(scx, cpu);
        let task = &mut self.tasks[t as usize];
        let w = scx.weight(t).max(1);
        let mut lag_scale = task.wakeup_freq.max(1);
        let awake_max = self.slice_lag * 100 / w;
        if nr_queued * self.slice_max >= starvation_thresh {
            lag_scale = 1;
        } else {
            lag_scale = (lag_scale * q_thresh / (q_thresh + nr_queued)).max(1);
        }
        let vtime_min = self.vtime_now.wrapping_sub(self.slice_lag * lag_scale * w / 100);
        if before(scx.dsq_vtime(t), vtime_min) {
            scx.set_dsq_vtime(t, vtime_min);
        }
        if before(awake_max, task.awake_vtime) {
            task.awake_vtime = awake_max;
        }
        scx.dsq_vtime(t).wrapping_add(task.awake_vtime)
    }

    /// keep_running: a queued task keeps its CPU unless SMT contention
    /// asks it to leave.
    fn keep_running(scx: &Scx, t: TaskId, cpu: CpuId) -> bool {
        if scx.task(t).state != TaskState::Runnable {
            return false;
        }
        if scx.nr_cpus_allowed(t) == 1 {
            return true;
        }
        !Self::smt_contended(scx, cpu)
    }

    /// is_smt_contended: the sibling is busy while some CPU is idle.
    fn smt_contended(scx: &Scx, cpu: CpuId) -> bool {
        let sys = scx.sys();
        if sys.topology.threads_per_core == 1 {
            return false;
        }
        let sibling = sys.topology.siblings(cpu).start;
        !scx.cpu_idle(sibling) && (0..sys.nr_cpus).any(|c| scx.cpu_idle(c))
    }
}

impl ScxOps for Bpfland {
    fn name(&self) -> &'static str {
        "bpfland"
    }

    fn tunables(&self) -> Vec<Tunable> {
        common::list_tunables(&self.tun)
    }

    /// bpfland_init: a DSQ per CPU and per node, ordered by deadline.
    fn init(&mut self, scx: &mut Scx) {
        for cpu in 0..self.nr_cpus {
            scx.create_dsq(cpu as u64);
        }
        scx.create_dsq(self.nr_cpus as u64);
    }

    fn enable(&mut self, scx: &mut Scx, t: TaskId) {
        if self.tasks.len() <= t as usize {
            self.tasks.resize(t as usize + 1, Task::default());
        }
        self.tasks[t as usize] = Task::default();
        scx.set_dsq_vtime(t, self.vtime_now);
    }

    /// bpfland_select_cpu on 6.12 (no scx_bpf_select_cpu_and): the core's
    /// choice; an idle CPU found gets the task in its DSQ at once.
    fn select_cpu(&mut self, scx: &mut Scx, t: TaskId, prev: CpuId, wake_flags: u64) -> CpuId {
        let (cpu, idle) = scx.select_cpu_dfl(t, prev, wake_flags);
        if idle {
            let slice = self.task_slice(scx, t, cpu);
            let deadline = self.task_dl(scx, t, cpu);
            scx.dsq_insert_vtime(t, Self::cpu_dsq(cpu), slice, deadline, 0);
        }
        cpu
    }

    /// bpfland_enqueue on 6.12: __COMPAT_is_enq_cpu_selected() is always
    /// true, so no idle CPU is looked for or kicked: a pinned task to its
    /// CPU's DSQ, any other to the node DSQ.
    fn enqueue(&mut self, scx: &mut Scx, t: TaskId, enq_flags: u64) {
        let cpu = scx.task_cpu(t);
        let slice = self.task_slice(scx, t, cpu);
        let deadline = self.task_dl(scx, t, cpu);
        let dsq = if scx.nr_cpus_allowed(t) == 1 { Self::cpu_dsq(cpu) } else { self.node_dsq() };
        scx.dsq_insert_vtime(t, dsq, slice, deadline, enq_flags);
    }

    /// bpfland_dispatch: the earlier deadline of the two DSQ heads, else a
    /// new slice for prev.
    fn dispatch(&mut self, scx: &mut Scx, cpu: CpuId, prev: Option<TaskId>) {
        let (own, node) = (Self::cpu_dsq(cpu), self.node_dsq());
        let p = scx.dsq_first(own);
        let q = scx.dsq_first(node);
        // is_deadline_min(q, p): q's deadline is the earlier one.
        let node_first = match (q, p) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some((_, qk)), Some((_, pk))) => qk < pk,
        };
        let order = if node_first { [(node, q), (own, p)] } else { [(own, p), (node, q)] };
        for (dsq, head) in order {
            if head.is_some() && scx.dsq_move_to_local(dsq) {
                return;
            }
        }
        if let Some(p) = prev
            && Self::keep_running(scx, p, cpu)
        {
            let slice = self.task_slice(scx, p, cpu);
            scx.set_slice(p, slice);
        }
    }

    /// bpfland_runnable.
    fn runnable(&mut self, scx: &mut Scx, t: TaskId, _enq_flags: u64) {
        let now = scx.now();
        let task = &mut self.tasks[t as usize];
        task.awake_vtime = 0;
        let delta = if now > task.last_woke_at { now - task.last_woke_at } else { 1 };
        task.wakeup_freq = calc_avg(task.wakeup_freq, 100 * NSEC_PER_MSEC / delta).min(MAX_WAKEUP_FREQ);
        task.last_woke_at = now;
    }

    /// bpfland_running.
    fn running(&mut self, scx: &mut Scx, t: TaskId) {
        self.tasks[t as usize].last_run_at = scx.now();
        if before(self.vtime_now, scx.dsq_vtime(t)) {
            self.vtime_now = scx.dsq_vtime(t);
        }
    }

    /// bpfland_stopping: the time used, scaled by 100 / weight, charged to
    /// the vruntime and the awake vruntime.
    fn stopping(&mut self, scx: &mut Scx, t: TaskId, _runnable: bool) {
        let now: Nanos = scx.now();
        let task = &mut self.tasks[t as usize];
        let used = now.saturating_sub(task.last_run_at);
        task.avg_runtime = calc_avg(task.avg_runtime, used);
        let delta = used * 100 / scx.weight(t).max(1);
        scx.set_dsq_vtime(t, scx.dsq_vtime(t).wrapping_add(delta));
        task.awake_vtime += delta;
    }

    fn unsupported(&self, sys: &Sys) -> Vec<String> {
        let mut out = common::no_groups("bpfland", sys);
        out.extend(common::no_iso("bpfland", sys));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_sim::{Enqueue, Policy};

    /// The model on 2 CPUs with `nices.len()` tasks on CPU 0, asleep.
    fn model(nices: &[i32]) -> (ScxCore<Bpfland>, Sys) {
        let (w, mut sys) = crate::common::two_cpus();
        let mut core = Bpfland::policy(&w).unwrap();
        core.init(&mut sys);
        for (t, &nice) in nices.iter().enumerate() {
            sys.tasks.push(crate::common::sleeping_task(nice));
            core.task_new(&mut sys, t as TaskId, None);
        }
        (core, sys)
    }

    #[test]
    fn the_deadline_pulls_a_long_sleeper_up_to_its_lag_and_charges_what_it_ran() {
        let (mut core, mut sys) = model(&[0, 0, -5]);
        core.call_ops(&mut sys, 0, |b, scx| {
            b.vtime_now = 1_000_000_000;
            // A task far behind (vtime 0) that woke often: lag_scale 10 x
            // 500 / (500 + 0 queued) = 10, so it may stay 400 ms behind.
            b.tasks[0].wakeup_freq = 10;
            assert_eq!(b.task_dl(scx, 0, 0), 1_000_000_000 - 10 * 40_000_000);
            // Its awake vruntime adds to the deadline, capped at slice_lag.
            scx.set_dsq_vtime(1, 990_000_000);
            b.tasks[1].awake_vtime = 90_000_000;
            assert_eq!(b.task_dl(scx, 1, 0), 990_000_000 + 40_000_000);
        });
        // ops.stopping: 3 ms used at nice 0 is 3 ms of vruntime; a nice -5
        // task (cgroup weight 305) is charged 100/305 of it.
        sys.now = 3_000_000;
        core.call_ops(&mut sys, 0, |b, scx| {
            b.tasks[1].last_run_at = 0;
            b.stopping(scx, 1, true);
            assert_eq!(scx.dsq_vtime(1), 990_000_000 + 3_000_000);
        });
        sys.now = 3_050_000;
        core.call_ops(&mut sys, 0, |b, scx| {
            assert_eq!(scx.weight(2), 305);
            scx.set_dsq_vtime(2, 0);
            b.tasks[2].last_run_at = 0;
            b.stopping(scx, 2, true);
            assert_eq!(scx.dsq_vtime(2), 1_000_000);
        });
    }

    #[test]
    fn the_slice_is_divided_among_the_waiting_tasks() {
        let (mut core, mut sys) = model(&[0; 5]);
        assert_eq!(core.call_ops(&mut sys, 0, |b, scx| b.task_slice(scx, 0, 0)), 1_000_000);
        // Four tasks woken on a busy CPU 0 go to the node DSQ.
        sys.cpus[0].curr = Some(0);
        for t in 1..5 {
            sys.tasks[t as usize].state = TaskState::Runnable;
            sys.add_runnable(0);
            core.enqueue(&mut sys, 0, t, Enqueue::Wakeup);
        }
        let node = core.call_ops(&mut sys, 0, |b, scx| scx.dsq_nr_queued(b.node_dsq()));
        assert_eq!(node, 4);
        assert_eq!(core.call_ops(&mut sys, 0, |b, scx| b.task_slice(scx, 0, 0)), 250_000, "1 ms over the 4 waiting");
    }
}
