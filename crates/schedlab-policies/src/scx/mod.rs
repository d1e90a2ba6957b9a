//! sched_ext in the simulator: a policy written in the shape of a BPF
//! scheduler (`struct sched_ext_ops`: select_cpu, enqueue, dispatch,
//! runnable, running, stopping, quiescent, ...) runs on [`ScxCore`], which
//! does what Linux 6.12's kernel/sched/ext.c does around those callbacks:
//! the dispatch queues (each CPU's local DSQ, the global DSQ, DSQs the
//! scheduler creates, FIFO or ordered by dsq_vtime), slices charged as the
//! task runs and ended at the tick, direct dispatch from select_cpu and
//! enqueue, the balance/dispatch loop, a runnable task kept on its CPU
//! while its slice lasts, and no wakeup preemption. A BPF scheduler's
//! logic is written once here, in Rust ([`ScxOps`]) or Python
//! (`schedlab.ScxPolicy`), and compared with the real one in `schedlab vm
//! --kernel scx-6.12.bzImage --scx NAME`. `bpfland` is written on it.
//!
//! Followed: Linux 6.12.117 kernel/sched/ext.c (select_task_rq_scx,
//! enqueue_task_scx and do_enqueue_task, dequeue_task_scx, balance_one,
//! pick_task_scx, put_prev_task_scx, set_next_task_scx, task_tick_scx,
//! yield_task_scx, local_dsq_post_enq, consume_dispatch_q,
//! scx_select_cpu_dfl, scx_bpf_kick_cpu), and the kfuncs' names as
//! scx 1.1.4's compat headers give them for 6.12 (scx_bpf_dsq_insert for
//! 6.12's scx_bpf_dispatch, scx_bpf_dsq_move_to_local for scx_bpf_consume).
//!
//! What differs from the kernel, on purpose:
//! - The idle mask is the engine's: a CPU is idle while nothing runs or
//!   waits on it, so the CPU a wakeup was placed on stops being idle at
//!   once (the kernel's scx_bpf_test_and_clear_cpu_idle claims it the same
//!   way); nothing is claimed without a task.
//! - A task the scheduler keeps in its own custody (enqueue inserted it
//!   nowhere) waits on the CPU it was enqueued on: the engine lets that CPU
//!   idle; the kernel's watchdog (30 s) is not modelled.
//! - Not offered: ops.yield (a yield ends the slice, as without it),
//!   ops.cpu_acquire/release, ops.set_weight/set_cpumask, core
//!   scheduling, cgroup callbacks, SCX_OPS_ENQ_LAST and the other ops
//!   flags, BPF timers (use [`Scx::arm_timer`] and [`ScxOps::timer`]).

mod core;
pub mod simple;

pub use self::core::ScxCore;

use schedlab_sim::{CpuId, Nanos, Sys, TaskId, TaskInfo, TaskState, Tunable};

/// SCX_SLICE_DFL: the slice the core gives when the scheduler gives none.
pub const SLICE_DFL: u64 = 20_000_000;

/// Wake flags passed to select_cpu (WF_* of kernel/sched/sched.h).
pub const WAKE_FORK: u64 = 0x04;
pub const WAKE_TTWU: u64 = 0x08;
pub const WAKE_SYNC: u64 = 0x10;

/// Enqueue flags (SCX_ENQ_*).
pub const ENQ_WAKEUP: u64 = 0x01;
pub const ENQ_HEAD: u64 = 0x10;
pub const ENQ_PREEMPT: u64 = 1 << 32;

/// Dequeue flags (SCX_DEQ_*).
pub const DEQ_SLEEP: u64 = 0x01;

/// scx_bpf_kick_cpu flags (SCX_KICK_*).
pub const KICK_IDLE: u64 = 1 << 0;
pub const KICK_PREEMPT: u64 = 1 << 1;

/// The kernel's encoding of the built-in DSQ ids (SCX_DSQ_*), for
/// schedulers that pass ids as numbers (the Python binding).
pub const DSQ_FLAG_BUILTIN: u64 = 1 << 63;
pub const DSQ_FLAG_LOCAL_ON: u64 = 1 << 62;
pub const DSQ_GLOBAL: u64 = DSQ_FLAG_BUILTIN | 1;
pub const DSQ_LOCAL: u64 = DSQ_FLAG_BUILTIN | 2;

/// A dispatch queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dsq {
    /// SCX_DSQ_LOCAL: the local DSQ of the CPU the callback is about (the
    /// one select_cpu returns, the one enqueueing, the one dispatching).
    Local,
    /// SCX_DSQ_LOCAL_ON | cpu: that CPU's local DSQ; the task moves there.
    LocalOn(CpuId),
    /// SCX_DSQ_GLOBAL: FIFO, consumed by any CPU before ops.dispatch.
    Global,
    /// A DSQ the scheduler created with [`Scx::create_dsq`] (ids below 2^63).
    User(u64),
}

impl Dsq {
    /// The DSQ a kernel-encoded id names.
    pub fn from_id(id: u64) -> Result<Dsq, String> {
        if id & DSQ_FLAG_BUILTIN == 0 {
            Ok(Dsq::User(id))
        } else if id & DSQ_FLAG_LOCAL_ON != 0 {
            Ok(Dsq::LocalOn((id & 0xffff_ffff) as CpuId))
        } else if id == DSQ_GLOBAL {
            Ok(Dsq::Global)
        } else if id == DSQ_LOCAL {
            Ok(Dsq::Local)
        } else {
            Err(format!(
                "DSQ id {id:#x} is no DSQ: give a user DSQ's id (below 2^63), DSQ_GLOBAL, DSQ_LOCAL or DSQ_LOCAL_ON | cpu"
            ))
        }
    }
}

/// A BPF scheduler's callbacks (`struct sched_ext_ops`). Each gets the
/// kfuncs as [`Scx`]. Callbacks left out do what the kernel does without
/// them.
pub trait ScxOps {
    /// The name `--sched` selects it by (ops.name).
    fn name(&self) -> &'static str;

    /// The tunables in force (a BPF scheduler's command-line options).
    fn tunables(&self) -> Vec<Tunable> {
        Vec::new()
    }

    /// ops.init: create the DSQs, arm timers.
    fn init(&mut self, _scx: &mut Scx) {}

    /// ops.init_task + ops.enable: a task joins (fork, or the start of the
    /// run). The core has set its slice (SCX_SLICE_DFL), dsq_vtime (0) and
    /// weight.
    fn enable(&mut self, _scx: &mut Scx, _p: TaskId) {}

    /// ops.select_cpu: the CPU a waking or new task goes to (a task that
    /// may run on one CPU only goes there without asking). Inserting the
    /// task here is a direct dispatch: ops.enqueue is then skipped. Without
    /// it: scx_select_cpu_dfl, and an idle CPU found gets the task in its
    /// local DSQ with SCX_SLICE_DFL.
    fn select_cpu(&mut self, scx: &mut Scx, p: TaskId, prev_cpu: CpuId, wake_flags: u64) -> CpuId {
        let (cpu, idle) = scx.select_cpu_dfl(p, prev_cpu, wake_flags);
        if idle {
            scx.dsq_insert(p, Dsq::Local, SLICE_DFL, 0);
        }
        cpu
    }

    /// ops.enqueue: the task is runnable and was not dispatched directly.
    /// Insert it into a DSQ, or keep it (insert it later from dispatch).
    /// Without it: the global DSQ, SCX_SLICE_DFL.
    fn enqueue(&mut self, scx: &mut Scx, p: TaskId, enq_flags: u64) {
        scx.dsq_insert(p, Dsq::Global, SLICE_DFL, enq_flags);
    }

    /// ops.dequeue: a task in the scheduler's custody (enqueued, inserted
    /// nowhere) leaves: it slept, exited or is about to run.
    fn dequeue(&mut self, _scx: &mut Scx, _p: TaskId, _deq_flags: u64) {}

    /// ops.dispatch: `cpu` has nothing in its local DSQ (nor the global
    /// DSQ): move tasks to it (dsq_move_to_local) or insert tasks held in
    /// custody. `prev` is the task that ran there, runnable or not.
    fn dispatch(&mut self, _scx: &mut Scx, _cpu: CpuId, _prev: Option<TaskId>) {}

    /// ops.tick: the tick on a CPU running `p`, after its slice was charged.
    fn tick(&mut self, _scx: &mut Scx, _p: TaskId) {}

    /// ops.runnable: the task became runnable (woken or new).
    fn runnable(&mut self, _scx: &mut Scx, _p: TaskId, _enq_flags: u64) {}

    /// ops.running: the task starts running on its CPU.
    fn running(&mut self, _scx: &mut Scx, _p: TaskId) {}

    /// ops.stopping: the task stops running; `runnable` false when it is
    /// going to sleep or exit.
    fn stopping(&mut self, _scx: &mut Scx, _p: TaskId, _runnable: bool) {}

    /// ops.quiescent: the task is no longer runnable (slept or exited).
    fn quiescent(&mut self, _scx: &mut Scx, _p: TaskId, _deq_flags: u64) {}

    /// A timer armed with [`Scx::arm_timer`] fired.
    fn timer(&mut self, _scx: &mut Scx, _token: u64) {}

    /// Features of the workload the scheduler cannot honour, for `absent`.
    fn unsupported(&self, _sys: &Sys) -> Vec<String> {
        Vec::new()
    }
}

/// The kfuncs and task fields a callback may use, as sched_ext gives them
/// to a BPF scheduler (plus the engine's view of the machine, [`Scx::sys`]).
pub struct Scx<'a> {
    sys: &'a mut Sys,
    st: &'a mut core::State,
    /// The CPU the callback runs on (bpf_get_smp_processor_id()).
    this_cpu: CpuId,
    /// The CPU SCX_DSQ_LOCAL names in this callback.
    local_of: CpuId,
    ctx: Ctx,
}

/// Which callback is running: what dsq_insert means there.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ctx {
    SelectCpu,
    Enqueue,
    Dispatch,
    Other,
}

impl Scx<'_> {
    /// The engine's state: tasks' attributes, CPUs, topology, the clock.
    pub fn sys(&self) -> &Sys {
        self.sys
    }

    /// bpf_ktime_get_ns / scx_bpf_now: the simulated time.
    pub fn now(&self) -> Nanos {
        self.sys.now
    }

    pub fn nr_cpus(&self) -> u32 {
        self.sys.nr_cpus
    }

    /// bpf_get_smp_processor_id(): the CPU this callback runs on.
    pub fn this_cpu(&self) -> CpuId {
        self.this_cpu
    }

    pub fn task(&self, p: TaskId) -> &TaskInfo {
        self.sys.task(p)
    }

    /// The CPU the task is on, or was last on (scx_bpf_task_cpu).
    pub fn task_cpu(&self, p: TaskId) -> CpuId {
        self.sys.task(p).cpu
    }

    /// Whether `p` may run on `cpu` (p->cpus_ptr).
    pub fn allowed(&self, p: TaskId, cpu: CpuId) -> bool {
        self.sys.allowed(p, cpu)
    }

    /// p->nr_cpus_allowed.
    pub fn nr_cpus_allowed(&self, p: TaskId) -> u32 {
        self.sys.task(p).affinity.as_ref().map_or(self.sys.nr_cpus, |a| a.count())
    }

    /// Whether the task is runnable (queued: SCX_TASK_QUEUED), running or not.
    pub fn queued(&self, p: TaskId) -> bool {
        matches!(self.sys.task(p).state, TaskState::Runnable | TaskState::Running)
    }

    /// p->scx.slice: what is left of its slice, ns.
    pub fn slice(&self, p: TaskId) -> u64 {
        self.st.tasks[p as usize].slice
    }

    pub fn set_slice(&mut self, p: TaskId, slice: u64) {
        self.st.tasks[p as usize].slice = slice;
    }

    /// p->scx.dsq_vtime.
    pub fn dsq_vtime(&self, p: TaskId) -> u64 {
        self.st.tasks[p as usize].dsq_vtime
    }

    pub fn set_dsq_vtime(&mut self, p: TaskId, vtime: u64) {
        self.st.tasks[p as usize].dsq_vtime = vtime;
    }

    /// p->scx.weight: the nice weight in cgroup units (nice 0 = 100).
    pub fn weight(&self, p: TaskId) -> u64 {
        self.st.tasks[p as usize].weight
    }

    /// scx_bpf_create_dsq: a DSQ of the scheduler's own, FIFO or ordered
    /// by dsq_vtime as its first insert decides.
    pub fn create_dsq(&mut self, id: u64) {
        if id & DSQ_FLAG_BUILTIN != 0 {
            self.fail(format!("scx_bpf_create_dsq({id:#x}): ids from 2^63 up are the built-in DSQs'"));
        } else if let std::collections::btree_map::Entry::Vacant(e) = self.st.user.entry(id) {
            e.insert(core::Queue::default());
        } else {
            self.fail(format!("scx_bpf_create_dsq({id}): the DSQ exists (-EEXIST)"));
        }
    }

    /// scx_bpf_dsq_insert (6.12's scx_bpf_dispatch): `p` into `dsq` with
    /// `slice` (0 keeps the slice it has). From select_cpu or enqueue, a
    /// direct dispatch of the task being placed; from dispatch, of a task
    /// in the scheduler's custody (others are ignored, as the kernel
    /// drops a dispatch that lost its race), done when dispatch returns.
    pub fn dsq_insert(&mut self, p: TaskId, dsq: Dsq, slice: u64, enq_flags: u64) {
        self.insert(p, dsq, slice, None, enq_flags);
    }

    /// scx_bpf_dsq_insert_vtime: as [`Scx::dsq_insert`], into a user DSQ
    /// ordered by `vtime` (set as the task's dsq_vtime).
    pub fn dsq_insert_vtime(&mut self, p: TaskId, dsq: Dsq, slice: u64, vtime: u64, enq_flags: u64) {
        if !matches!(dsq, Dsq::User(_)) {
            self.fail(format!(
                "scx_bpf_dsq_insert_vtime into {dsq:?}: built-in DSQs are FIFO (use a DSQ of one's own)"
            ));
            return;
        }
        self.insert(p, dsq, slice, Some(vtime), enq_flags);
    }

    fn insert(&mut self, p: TaskId, dsq: Dsq, slice: u64, vtime: Option<u64>, flags: u64) {
        if p as usize >= self.st.tasks.len() {
            self.fail(format!("dsq_insert of task {p}: the run has {} tasks", self.st.tasks.len()));
            return;
        }
        let ins = core::Insert { dsq, slice, vtime, flags };
        match self.ctx {
            Ctx::SelectCpu | Ctx::Enqueue if self.st.placing == Some(p) => {
                if self.st.tasks[p as usize].ddsp.replace(ins).is_some() {
                    self.fail(format!("task {p} was dispatched twice in one {:?} (the kernel refuses that)", self.ctx));
                }
            }
            Ctx::Dispatch => {
                self.st.dispatch_buf.push((p, ins));
            }
            ctx => self.fail(format!(
                "dsq_insert of task {p} from {ctx:?}: insert the task being placed from select_cpu or enqueue, or a task \
                 in custody from dispatch"
            )),
        }
    }

    /// scx_bpf_dsq_move_to_local (6.12's scx_bpf_consume), from dispatch:
    /// the first task of `dsq` that may run on this CPU moves to its local
    /// DSQ. False when there is none.
    pub fn dsq_move_to_local(&mut self, dsq: Dsq) -> bool {
        if self.ctx != Ctx::Dispatch {
            self.fail(format!("dsq_move_to_local({dsq:?}) outside dispatch"));
            return false;
        }
        let cpu = self.this_cpu;
        core::move_to_local(self.sys, self.st, dsq, cpu)
    }

    /// scx_bpf_dsq_nr_queued.
    pub fn dsq_nr_queued(&self, dsq: Dsq) -> u32 {
        match self.st.queue(dsq, self.local_of) {
            Some(q) => q.len() as u32,
            None => 0,
        }
    }

    /// The tasks of a DSQ in the order they would be consumed, with their
    /// dsq_vtime for a vtime-ordered DSQ (bpf_for_each(scx_dsq, ...)).
    pub fn dsq_tasks(&self, dsq: Dsq) -> Vec<(TaskId, Option<u64>)> {
        self.st.queue(dsq, self.local_of).map(|q| q.iter().collect()).unwrap_or_default()
    }

    /// The first task of a DSQ, with its dsq_vtime where the DSQ is
    /// ordered by it (a peek: bpf_for_each(scx_dsq, ...) broken at once).
    pub fn dsq_first(&self, dsq: Dsq) -> Option<(TaskId, Option<u64>)> {
        self.st.queue(dsq, self.local_of).and_then(|q| q.iter().next())
    }

    /// scx_bpf_kick_cpu: make `cpu` schedule. KICK_IDLE: only if it is
    /// idle; KICK_PREEMPT: its running task's slice ends.
    pub fn kick_cpu(&mut self, cpu: CpuId, flags: u64) {
        if cpu >= self.sys.nr_cpus {
            self.fail(format!("scx_bpf_kick_cpu({cpu}): the machine has {} CPUs", self.sys.nr_cpus));
            return;
        }
        if flags & KICK_IDLE != 0 && !self.cpu_idle(cpu) {
            return;
        }
        if flags & KICK_PREEMPT != 0
            && let Some(curr) = self.st.curr[cpu as usize]
        {
            self.st.tasks[curr as usize].slice = 0;
        }
        self.sys.resched(cpu);
    }

    /// Whether `cpu` is in sched_ext's idle mask: nothing runs or waits there.
    pub fn cpu_idle(&self, cpu: CpuId) -> bool {
        core::idle(self.sys, cpu)
    }

    /// scx_bpf_pick_idle_cpu: an idle CPU `p` may use, after the last one
    /// picked (cpumask_any_and_distribute); with SMT a wholly idle core
    /// first, and only such a core when `whole_core` (SCX_PICK_IDLE_CORE).
    pub fn pick_idle_cpu(&mut self, p: TaskId, whole_core: bool) -> Option<CpuId> {
        core::pick_idle(self.sys, self.st, p, whole_core)
    }

    /// scx_bpf_select_cpu_dfl: the core's own choice and whether that CPU
    /// was idle: the waker's CPU for a WF_SYNC wakeup while some CPU is
    /// idle and the waker's local DSQ is empty; with SMT a wholly idle core
    /// (prev's first); prev if idle; any idle CPU; else prev, not idle.
    pub fn select_cpu_dfl(&mut self, p: TaskId, prev_cpu: CpuId, wake_flags: u64) -> (CpuId, bool) {
        let this = self.this_cpu;
        match core::select_cpu_dfl(self.sys, self.st, p, prev_cpu, this, wake_flags & WAKE_SYNC != 0) {
            Some(cpu) => (cpu, true),
            None => (prev_cpu, false),
        }
    }

    /// Call [`ScxOps::timer`] with `token` at time `at`.
    pub fn arm_timer(&mut self, at: Nanos, token: u64) {
        self.sys.arm_timer(at, token);
    }

    /// scx_bpf_error: the scheduler is ejected; the run ends with `what`.
    pub fn fail(&mut self, what: String) {
        self.sys.fail(what);
    }
}
