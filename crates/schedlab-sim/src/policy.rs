//! The interface between the engine and a scheduling policy: the hooks the
//! kernel's `struct sched_class` answers, and [`Sys`], the part of the
//! engine's state a policy may read (tasks' attributes, CPUs, the clock)
//! and the requests it may make (reschedule a CPU, move a task, arm a timer).
//!
//! The engine owns task states and accounting; a policy owns its queues and
//! per-task state. The running task stays "queued" from the policy's point
//! of view until `put_prev`, as in the kernel.

use crate::time::Nanos;
use crate::topology::{CpuId, CpuSet, Topology};
use crate::workload::{GroupId, GroupSpec, SchedPolicy, TaskSpecId};

pub type TaskId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Created but not started yet (start time in the future).
    New,
    Runnable,
    Running,
    Sleeping,
    Exited,
}

/// What the engine knows of a task and shows every policy.
#[derive(Clone, Debug)]
pub struct TaskInfo {
    pub spec: TaskSpecId,
    pub nice: i32,
    pub policy: SchedPolicy,
    /// None means every CPU.
    pub affinity: Option<CpuSet>,
    pub group: GroupId,
    /// sched_attr.sched_runtime, if the task asked for a custom slice.
    pub slice: Option<Nanos>,
    pub parent: Option<TaskId>,
    pub state: TaskState,
    /// The CPU whose runqueue holds the task, or last held it.
    pub cpu: CpuId,
    /// Total CPU time received.
    pub sum_exec: Nanos,
    /// When the task last started or stopped running (for cache hotness).
    pub last_ran: Nanos,
    /// When the task last went to sleep, and for how long it slept last.
    pub slept_at: Nanos,
    pub last_sleep_len: Nanos,
    /// The task sleeps (or last slept) on a condition or a barrier, which
    /// real programs and the host runner do in a futex; false for a channel
    /// `wait` (a pipe read in the host runner, as make's jobserver and
    /// lat_ctx are), a timed sleep or a timer. A futex wake is not WF_SYNC,
    /// and BORE places a woken futex waiter differently.
    pub futex_wait: bool,
}

#[derive(Clone, Debug, Default)]
pub struct CpuInfo {
    /// The task running now, if any (fair or real-time).
    pub curr: Option<TaskId>,
    /// Runnable tasks assigned to this CPU, including the running one.
    pub nr_running: u32,
    /// Real-time tasks among them.
    pub nr_rt: u32,
}

/// Why a task is being placed on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeKind {
    /// A new task (fork or start of the run).
    New,
    /// A sleeping task woken, by `waker` running on `waker_cpu` (None for a
    /// timer). `sync` is WF_SYNC: set when another task woke it through a
    /// channel (a pipe write), not through a futex (a condition or
    /// barrier) or a timer.
    Wakeup { waker: Option<TaskId>, waker_cpu: Option<CpuId>, sync: bool },
}

/// Flags of an enqueue, as ENQUEUE_* in the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enqueue {
    New,
    Wakeup,
    /// Moved by load balancing or affinity.
    Migrate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dequeue {
    Sleep,
    Exit,
}

/// The engine state policies see, and the requests they make of it.
pub struct Sys {
    pub now: Nanos,
    pub topology: Topology,
    pub nr_cpus: u32,
    pub tick_ns: Nanos,
    /// The kernel's jiffies: the jiffy boundaries (one every `tick_ns`)
    /// passed as of its last update, which only the timekeeping CPU's tick
    /// (tick_do_timer_cpu) and a CPU leaving NO_HZ idle make
    /// (tick_do_update_jiffies64): another CPU's tick that comes before the
    /// timekeeper's in the same jiffy still reads the jiffy before.
    pub jiffies: u64,
    pub tasks: Vec<TaskInfo>,
    pub cpus: Vec<CpuInfo>,
    pub groups: Vec<GroupSpec>,
    pub(crate) resched: Vec<CpuId>,
    pub(crate) resched_mask: Vec<bool>,
    /// Timers the policy armed: when, its token, and whether it is a
    /// kernel hrtimer (late by the machine's timer latency).
    pub(crate) timers: Vec<(Nanos, u64, bool)>,
    pub(crate) migrations: u64,
    /// Queued tasks the policy moved (task, from, to), for the observer.
    pub(crate) moved: Vec<(TaskId, CpuId, CpuId)>,
    /// The first rule of this interface the policy broke, if it did: the
    /// engine ends the run with it (see `Engine::run`).
    pub(crate) broken: Option<String>,
    /// Idle CPUs per LLC, busy threads per core and fully idle cores per
    /// LLC, kept with nr_running so that idle searches can skip a busy LLC
    /// in O(1) (the answer is the same as scanning it).
    idle_in_llc: Vec<u32>,
    busy_in_core: Vec<u32>,
    idle_cores_in_llc: Vec<u32>,
    /// CPUs per LLC with two or more runnable tasks: the kernel's
    /// rd->overloaded, per LLC, so a newly idle CPU skips the pull scan
    /// of a domain where nothing waits.
    waiting_in_llc: Vec<u32>,
}

impl Sys {
    pub(crate) fn new(topology: Topology, tick_ns: Nanos, groups: Vec<GroupSpec>) -> Sys {
        let nr_cpus = topology.nr_cpus();
        Sys {
            now: 0,
            nr_cpus,
            tick_ns,
            jiffies: 0,
            tasks: Vec::new(),
            cpus: vec![CpuInfo::default(); nr_cpus as usize],
            groups,
            resched: Vec::new(),
            resched_mask: vec![false; nr_cpus as usize],
            timers: Vec::new(),
            migrations: 0,
            moved: Vec::new(),
            broken: None,
            idle_in_llc: vec![topology.threads_per_core * topology.cores_per_llc; topology.llcs as usize],
            busy_in_core: vec![0; (topology.llcs * topology.cores_per_llc) as usize],
            idle_cores_in_llc: vec![topology.cores_per_llc; topology.llcs as usize],
            waiting_in_llc: vec![0; topology.llcs as usize],
            topology,
        }
    }

    /// The engine's state for a workload's machine, outside any run and
    /// with no tasks: for calling a policy's hooks directly in its unit
    /// tests. Push the tasks a test needs onto `tasks` (in the state they
    /// are in) and count the runnable ones with [`Sys::add_runnable`].
    pub fn detached(w: &crate::Workload) -> Sys {
        Sys::new(w.machine.topology.clone(), w.machine.tick_ns(), w.groups.clone())
    }

    /// Counts a runnable task pushed onto `tasks` of a [`Sys::detached`]
    /// on its CPU's runqueue, as the engine does when it wakes one.
    pub fn add_runnable(&mut self, cpu: CpuId) {
        self.inc_running(cpu);
    }

    /// nr_running += 1, keeping the idle counts.
    pub(crate) fn inc_running(&mut self, cpu: CpuId) {
        let c = &mut self.cpus[cpu as usize];
        c.nr_running += 1;
        if c.nr_running == 2 {
            self.waiting_in_llc[self.topology.llc_of(cpu) as usize] += 1;
        }
        if c.nr_running == 1 {
            let (llc, core) = (self.topology.llc_of(cpu) as usize, self.topology.core_of(cpu) as usize);
            self.idle_in_llc[llc] -= 1;
            self.busy_in_core[core] += 1;
            if self.busy_in_core[core] == 1 {
                self.idle_cores_in_llc[llc] -= 1;
            }
        }
    }

    /// nr_running -= 1, keeping the idle counts.
    pub(crate) fn dec_running(&mut self, cpu: CpuId) {
        let c = &mut self.cpus[cpu as usize];
        c.nr_running -= 1;
        if c.nr_running == 1 {
            self.waiting_in_llc[self.topology.llc_of(cpu) as usize] -= 1;
        }
        if c.nr_running == 0 {
            let (llc, core) = (self.topology.llc_of(cpu) as usize, self.topology.core_of(cpu) as usize);
            self.idle_in_llc[llc] += 1;
            self.busy_in_core[core] -= 1;
            if self.busy_in_core[core] == 0 {
                self.idle_cores_in_llc[llc] += 1;
            }
        }
    }

    pub(crate) fn check_idle_counts(&self) -> Result<(), String> {
        let per_llc = (self.topology.threads_per_core * self.topology.cores_per_llc) as usize;
        for cpu in (0..self.nr_cpus).step_by(per_llc) {
            let llc = self.topology.llc_cpus(cpu);
            let idle = llc.clone().filter(|&c| self.idle(c)).count() as u32;
            let idle_cores = llc
                .clone()
                .step_by(self.topology.threads_per_core as usize)
                .filter(|&c| self.topology.siblings(c).all(|s| self.idle(s)))
                .count() as u32;
            let l = self.topology.llc_of(cpu) as usize;
            let waiting = llc.clone().filter(|&c| self.cpus[c as usize].nr_running >= 2).count() as u32;
            if waiting != self.waiting_in_llc[l] {
                return Err(format!("LLC {l}: {waiting} CPUs with waiting tasks, counted {}", self.waiting_in_llc[l]));
            }
            if idle != self.idle_in_llc[l] || idle_cores != self.idle_cores_in_llc[l] {
                return Err(format!(
                    "LLC {l}: {idle} idle CPUs and {idle_cores} idle cores, counted {} and {}",
                    self.idle_in_llc[l], self.idle_cores_in_llc[l]
                ));
            }
        }
        Ok(())
    }

    /// Whether some CPU in `span` may have a task waiting: false means none
    /// has two runnable tasks (the answer of a scan, from the per-LLC
    /// counts of the LLCs `span` overlaps).
    pub fn may_have_waiting(&self, span: std::ops::Range<CpuId>) -> bool {
        if span.is_empty() {
            return false;
        }
        let (first, last) = (self.topology.llc_of(span.start), self.topology.llc_of(span.end - 1));
        self.waiting_in_llc[first as usize..=last as usize].iter().any(|&n| n > 0)
    }

    /// Whether the LLC of `cpu` has an idle CPU.
    pub fn llc_has_idle_cpu(&self, cpu: CpuId) -> bool {
        self.idle_in_llc[self.topology.llc_of(cpu) as usize] > 0
    }

    /// Whether the LLC of `cpu` has a core whose every thread is idle.
    pub fn llc_has_idle_core(&self, cpu: CpuId) -> bool {
        self.idle_cores_in_llc[self.topology.llc_of(cpu) as usize] > 0
    }

    pub fn task(&self, t: TaskId) -> &TaskInfo {
        &self.tasks[t as usize]
    }

    pub fn allowed(&self, t: TaskId, cpu: CpuId) -> bool {
        self.tasks[t as usize].affinity.as_ref().is_none_or(|a| a.contains(cpu))
    }

    /// No task runs on the CPU and none waits for it (available_idle_cpu).
    pub fn idle(&self, cpu: CpuId) -> bool {
        self.cpus[cpu as usize].nr_running == 0
    }

    /// Ask the engine to run the policy's pick on this CPU as soon as it can:
    /// now when the CPU runs a task, after the idle-exit delay when idle.
    pub fn resched(&mut self, cpu: CpuId) {
        if !self.resched_mask[cpu as usize] {
            self.resched_mask[cpu as usize] = true;
            self.resched.push(cpu);
        }
    }

    /// Record that a queued (not running) task moved to another CPU's
    /// runqueue. The policy moves it in its own queues.
    pub fn migrate(&mut self, t: TaskId, to: CpuId) {
        if (t as usize) >= self.tasks.len() || to >= self.nr_cpus {
            self.broke(format!(
                "moved task {t} to CPU {to}: the run has {} tasks and {} CPUs",
                self.tasks.len(),
                self.nr_cpus
            ));
            return;
        }
        let from = self.tasks[t as usize].cpu;
        if !self.allowed(t, to) {
            self.broke(format!("moved task {t} to CPU {to}, outside its affinity"));
            return;
        }
        if self.tasks[t as usize].state == TaskState::Running {
            self.broke(format!("moved task {t} to CPU {to} while it runs on CPU {from}: only queued tasks move"));
            return;
        }
        if from == to {
            return;
        }
        if matches!(self.tasks[t as usize].state, TaskState::Runnable) {
            self.dec_running(from);
            self.inc_running(to);
        }
        self.tasks[t as usize].cpu = to;
        self.migrations += 1;
        self.moved.push((t, from, to));
    }

    /// Records that the policy broke a rule of this interface (the first
    /// one is reported).
    pub(crate) fn broke(&mut self, what: String) {
        self.broken.get_or_insert(what);
    }

    /// Ends the run with an error: the policy cannot go on (a hook written
    /// in another language raised, say). The engine stops after the event
    /// that is being handled and reports `what` with the policy's name and
    /// the time.
    pub fn fail(&mut self, what: String) {
        self.broke(what);
    }

    /// Call `Policy::timer(token)` at time `at`.
    pub fn arm_timer(&mut self, at: Nanos, token: u64) {
        self.timers.push((at.max(self.now), token, false));
    }

    /// Call `Policy::timer(token)` when an hrtimer the kernel arms for `at`
    /// fires (a slice's end: Project C's hrtick, MuQSS's hrexpiry): late by
    /// the machine's timer latency, as a task's timer is (none by default;
    /// a TCG guest's hrtick fires tens of microseconds late).
    pub fn arm_hrtimer(&mut self, at: Nanos, token: u64) {
        self.timers.push((at.max(self.now), token, true));
    }
}

/// The default placement of [`Policy::select_cpu`]: `prev` when it is
/// idle, else the first idle CPU after it that `t` may use, else `prev`
/// (or the first CPU `t` may use).
pub fn idle_first(sys: &Sys, t: TaskId, prev: CpuId) -> CpuId {
    let n = sys.nr_cpus;
    let allowed_prev = if prev < n && sys.allowed(t, prev) { Some(prev) } else { None };
    (0..n)
        .map(|i| (prev + i) % n)
        .find(|&c| sys.idle(c) && sys.allowed(t, c))
        .or(allowed_prev)
        .or_else(|| (0..n).find(|&c| sys.allowed(t, c)))
        .unwrap_or(prev)
}

/// Tunable a policy exposes: the kernel's name, its value in force and a
/// line of help.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Tunable {
    pub name: &'static str,
    pub value: i64,
    pub help: &'static str,
}

/// A scheduling policy behind the engine: the hooks of `struct sched_class`
/// for the normal (fair) classes. Real-time tasks (SCHED_FIFO/RR) are run by
/// the engine's own rt class above every policy, as rt.c sits above fair.c.
pub trait Policy {
    /// The name `--sched` selects it by.
    fn name(&self) -> &'static str;

    /// The tunables in force, under the kernel's names.
    fn tunables(&self) -> Vec<Tunable> {
        Vec::new()
    }

    /// Once, before the first event: arm timers the policy keeps running.
    fn init(&mut self, _sys: &mut Sys) {}

    /// A task was created (sched_fork); set up its state. `parent` is the
    /// forking task, if any.
    fn task_new(&mut self, _sys: &mut Sys, _t: TaskId, _parent: Option<TaskId>) {}

    /// select_task_rq: which CPU a waking or new task goes to. By default
    /// `prev` when it is idle, else the first idle CPU after it that the
    /// task may use, else `prev` (or the first CPU it may use).
    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, _kind: WakeKind) -> CpuId {
        idle_first(sys, t, prev)
    }

    fn enqueue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, how: Enqueue);

    /// The task leaves the runqueue. It may be the running task (it is
    /// going to sleep); `put_prev` follows then.
    fn dequeue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, why: Dequeue);

    /// Choose the next task for this CPU and make it current, or None. The
    /// task that was running (if it was this policy's) is still current for
    /// the policy while it chooses; the policy puts it back itself
    /// (put_prev_set_next_task). Its engine state is already Runnable when it
    /// was preempted, Sleeping or Exited when it was dequeued.
    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId>;

    /// The current task stops running without a pick by this policy (a
    /// real-time task takes the CPU); `runnable` is false when it was
    /// dequeued (sleep or exit) before.
    fn put_prev(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, runnable: bool);

    /// update_curr: the running task ran `delta` more nanoseconds.
    fn account(&mut self, _sys: &mut Sys, _cpu: CpuId, _t: TaskId, _delta: Nanos) {}

    /// The periodic tick on a CPU running a task; may call `sys.resched`.
    fn tick(&mut self, _sys: &mut Sys, _cpu: CpuId, _curr: TaskId) {}

    /// wakeup_preempt: should `woken`, just enqueued on this CPU, preempt
    /// the running `curr`? By default it does not.
    fn wakeup_preempt(&mut self, _sys: &mut Sys, _cpu: CpuId, _curr: TaskId, _woken: TaskId) -> bool {
        false
    }

    /// sched_yield() by the running task; the engine picks after it (the
    /// task stays current for `pick_next`). By default nothing changes.
    fn yield_task(&mut self, _sys: &mut Sys, _cpu: CpuId, _t: TaskId) {}

    /// Periodic load balancing, called from the tick of every busy CPU (idle
    /// CPUs have no tick under NO_HZ: the policy balances for them from a
    /// busy CPU, as the kernel's NO_HZ idle balancer does).
    fn balance(&mut self, _sys: &mut Sys, _cpu: CpuId, _idle: bool) {}

    /// The CPU is about to go idle: pull work if the policy does.
    fn newidle_balance(&mut self, _sys: &mut Sys, _cpu: CpuId) {}

    /// Runnable tasks on `cpu` the policy holds back on purpose (those of
    /// a throttled group, as cpu.max does): the engine lets the CPU go idle
    /// while no more than these wait on it, and calls a policy that idles
    /// with more waiting broken.
    fn held_back(&self, _sys: &Sys, _cpu: CpuId) -> u32 {
        0
    }

    /// A timer armed with `Sys::arm_timer` fired.
    fn timer(&mut self, _sys: &mut Sys, _token: u64) {}

    /// Policy-specific numbers for the report (e.g. throttled time).
    fn extra_metrics(&self, _sys: &Sys) -> Vec<(String, f64)> {
        Vec::new()
    }

    /// Features of the workload this policy cannot honour (a scheduler
    /// without group scheduling ignores cgroups), reported under `absent`.
    fn unsupported(&self, _sys: &Sys) -> Vec<String> {
        Vec::new()
    }

    /// Runqueue invariants, checked by tests after every event when enabled.
    fn check_invariants(&self, _sys: &Sys) -> Result<(), String> {
        Ok(())
    }
}
