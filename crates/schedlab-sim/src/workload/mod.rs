//! The workload model: the machine, the scheduler tunables, cgroups and
//! task programs, checked into a [`Workload`] the engine runs. Every input
//! format builds one (`toml_file` here for schedlab's own file, `crate::formats`
//! for the others); errors name the line of the file they come from and
//! what to write instead.

pub mod dist;
mod toml_file;

use crate::time::{NSEC_PER_SEC, NSEC_PER_USEC, Nanos};
use crate::topology::{CpuSet, Topology};
use dist::Dist;
use std::collections::BTreeMap;

/// A workload that cannot be run: where (file and line, or the command
/// line option, whose line is 0) and what to write instead.
#[derive(Debug, thiserror::Error)]
#[error("{origin}{}: {message}", if *line > 0 { format!(":{line}") } else { String::new() })]
pub struct WorkloadError {
    pub origin: String,
    pub line: usize,
    pub message: String,
}

pub type TaskSpecId = u32;
pub type GroupId = u32;
pub type ChanId = u32;
pub type CondId = u32;
pub type BarrierId = u32;

/// A channel: a counting semaphore of tokens with a FIFO of waiters. A
/// mutex is a channel holding one token.
#[derive(Clone, Debug, PartialEq)]
pub struct Channel {
    pub name: String,
    /// Tokens at the start (1 for a mutex).
    pub initial: u64,
}

/// A barrier: every arrival waits until `users` tasks have arrived, then
/// all go on (rt-app's barrier event).
#[derive(Clone, Debug, PartialEq)]
pub struct Barrier {
    pub name: String,
    pub users: u32,
}

/// How a periodic timer computes its next expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerMode {
    /// cyclictest's: the first expiry is a period after the first timer op;
    /// missed expiries are skipped to the next one ahead.
    Periodic,
    /// rt-app's: the first expiry is a period after the task started; when
    /// an expiry has already passed the task does not sleep, and a relative
    /// timer then restarts its period from now while an absolute one keeps
    /// its schedule (and catches up).
    RtApp { relative: bool },
    /// Once, at `period` after the run's start (clock_nanosleep TIMER_ABSTIME
    /// to a fixed time): how `schedlab host` starts its threads together at
    /// its t0, which `schedlab validate` simulates (no file format has it).
    /// Past that time the task goes on at once.
    At,
}

impl TimerMode {
    /// The next expiry of a timer whose last one was `last` (None before
    /// its first use), for a task started at `started` in a run started at
    /// `origin`, at time `now`: Ok(expiry) to sleep until, or Err(new last)
    /// when rt-app would not sleep because the expiry has already passed.
    pub fn next_expiry(
        self,
        last: Option<Nanos>,
        period: Nanos,
        started: Nanos,
        origin: Nanos,
        now: Nanos,
    ) -> Result<Nanos, Nanos> {
        match self {
            TimerMode::At => {
                let at = origin + period;
                if at > now { Ok(at) } else { Err(now) }
            }
            TimerMode::Periodic => {
                let mut next = last.map_or(now + period, |n| n + period);
                if next <= now {
                    // Overrun: skip to the next period ahead, as a periodic
                    // timer with missed expiries would.
                    next += (now - next) / period * period + period;
                }
                Ok(next)
            }
            TimerMode::RtApp { relative } => {
                let next = last.unwrap_or(started) + period;
                if next > now { Ok(next) } else { Err(if relative { now } else { next }) }
            }
        }
    }
}

/// Scheduling policy of a task, as sched_setscheduler(2) names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedPolicy {
    Normal,
    Batch,
    Idle,
    /// SCHED_ISO (BFS and MuQSS): soft real-time for unprivileged users,
    /// limited to sched_iso_cpu of the CPU; SCHED_NORMAL elsewhere.
    Iso,
    /// SCHED_FIFO with its rt priority 1..99.
    Fifo(u8),
    /// SCHED_RR with its rt priority 1..99.
    Rr(u8),
}

impl SchedPolicy {
    pub fn is_rt(self) -> bool {
        matches!(self, SchedPolicy::Fifo(_) | SchedPolicy::Rr(_))
    }
}

/// One step of a task program, flattened so loops are jumps.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Burn CPU for this long.
    Run(Dist),
    /// Block for this long.
    Sleep(Dist),
    /// Block until the timer's next expiry (clock_nanosleep TIMER_ABSTIME).
    /// A task has timers numbered by `slot`, each with its own schedule.
    Timer {
        period: Nanos,
        slot: u32,
        mode: TimerMode,
    },
    /// Take a token from a channel, blocking until one is there.
    Wait(ChanId),
    /// Put a token in a channel, waking its first waiter.
    Signal(ChanId),
    /// pthread_cond_wait: release the mutex (if any) and block until a
    /// signal or broadcast on the condition; the mutex is taken back by the
    /// Wait op that follows.
    CondWait {
        cond: CondId,
        mutex: Option<ChanId>,
    },
    /// pthread_cond_signal: wake the first waiter, if any (no waiter, no
    /// effect: a condition keeps no tokens).
    CondSignal(CondId),
    /// pthread_cond_broadcast: wake every waiter.
    CondBroadcast(CondId),
    /// Wait at a barrier until all its users have arrived.
    Barrier(BarrierId),
    /// sched_yield().
    Yield,
    /// Start a new task from a template.
    Fork(TaskSpecId),
    Exit,
    /// Start of a loop body; `count` None repeats forever; `end` is the
    /// index of the matching LoopEnd.
    LoopStart {
        count: Option<u64>,
        end: u32,
    },
    LoopEnd {
        start: u32,
    },
}

#[derive(Clone, Debug)]
pub struct TaskSpec {
    pub name: String,
    pub count: u32,
    pub nice: i32,
    pub policy: SchedPolicy,
    pub affinity: Option<CpuSet>,
    /// `affinity = "per-cpu"`: instance k runs only on CPU k mod ncpus, as
    /// `cyclictest -a -t` pins one thread per CPU.
    pub per_cpu: bool,
    pub group: GroupId,
    /// sched_attr.sched_runtime: a custom slice request (EEVDF honours it).
    pub slice: Option<Nanos>,
    pub start: Dist,
    /// Templates are only started by `fork`.
    pub template: bool,
    /// A template the workload forks exactly once (a replayed trace's
    /// child, forked where its parent forked it): its task keeps the
    /// template's name rather than being numbered.
    pub forked_once: bool,
    /// Work of the machine itself rather than the workload's (a guest
    /// kernel's own threads, which validate simulates beside the workload):
    /// its tasks take CPUs as any other, but the report leaves them out
    /// (their rows, switches, migrations, latencies and runs per switch),
    /// and the run has finished once every other task has exited.
    pub background: bool,
    pub program: Vec<Op>,
}

impl TaskSpec {
    /// The name reports give task `id` made from this spec: the spec's name,
    /// numbered by task id when the spec makes several tasks.
    pub fn task_name(&self, id: u32) -> String {
        if self.count > 1 || (self.template && !self.forked_once) {
            format!("{}-{id}", self.name)
        } else {
            self.name.clone()
        }
    }
}

/// The speed benchmarks' scaling workload (`schedlab bench` and the
/// criterion suite): `tasks` tasks on 256 CPUs, each running exp(100us)
/// bursts between sleeps of exp(tasks x 4us), about 25 CPUs' worth of
/// demand whatever the count, so the event mix stays the same while the
/// queues grow.
pub fn scaling_workload(tasks: u32, duration: Nanos) -> Result<Workload, WorkloadError> {
    let text = format!(
        r#"
name = "scaling-{tasks}"
duration = "{duration}ns"
[machine]
topology = "4x32x2"
[[task]]
name = "t"
count = {tasks}
program = [ {{ loop = "forever", body = [ {{ run = "exp(100us)" }}, {{ sleep = "exp({}us)" }} ] }} ]
"#,
        tasks as u64 * 4
    );
    Workload::from_toml(&text, "bench-scaling.toml", &Overrides::default())
}

/// Items named by a key (channels, conditions, waker->wakee pairs),
/// numbered in first-seen order: how names become ids. A lookup is a hash,
/// so a file with 100,000 names reads in linear time.
pub(crate) struct Named<K, T> {
    pub items: Vec<T>,
    ids: std::collections::HashMap<K, u32>,
}

impl<K: std::hash::Hash + Eq, T> Default for Named<K, T> {
    fn default() -> Self {
        Named { items: Vec::new(), ids: std::collections::HashMap::new() }
    }
}

impl<K: std::hash::Hash + Eq, T> Named<K, T> {
    /// The id of `key`, with `new()` pushed for a key not seen before.
    pub fn id(&mut self, key: K, new: impl FnOnce() -> T) -> u32 {
        let items = &mut self.items;
        *self.ids.entry(key).or_insert_with(|| {
            items.push(new());
            items.len() as u32 - 1
        })
    }
}

/// A workload's name when its file gives none: the file name's stem.
pub(crate) fn name_from_origin(origin: &str) -> String {
    std::path::Path::new(origin).file_stem().map_or_else(|| origin.to_string(), |s| s.to_string_lossy().into_owned())
}

/// CONFIG_HZ when the workload does not say.
pub const DEFAULT_HZ: u32 = 250;

/// A machine's uptime when nothing says otherwise: an hour, a machine in
/// use rather than one just booted.
pub const DEFAULT_UPTIME: Nanos = 3600 * NSEC_PER_SEC;

#[derive(Clone, Debug)]
pub struct GroupSpec {
    pub name: String,
    pub parent: Option<GroupId>,
    /// cgroup v2 cpu.weight, 1..10000, default 100.
    pub cpu_weight: u32,
    /// cgroup v2 cpu.max as (quota, period) in ns; None is "max".
    pub cpu_max: Option<(Nanos, Nanos)>,
}

#[derive(Clone, Debug)]
pub struct Costs {
    /// CPU time spent switching from one task to another, charged to the
    /// task switched in as the kernel charges it (its exec_start is
    /// stamped before context_switch()): part of its CPU time and of what
    /// its policy accounts. A task woken by its timer has it in
    /// `timer_wakeup` already, and there it is the CPU's overhead.
    pub context_switch: Nanos,
    /// Extra CPU time a task needs after it moves to another CPU (cold
    /// caches); doubled across LLCs.
    pub migration: Nanos,
    /// Delay between a wakeup aimed at an idle CPU and that CPU running the
    /// task (IPI and idle exit).
    pub idle_exit: Nanos,
    /// Delay between a wakeup that reaches a busy CPU by interrupt (a
    /// timer's, another CPU's IPI) and preempts its running task, and the
    /// switch: the rest of the interrupt and its return into schedule(),
    /// during which the preempted task keeps the CPU and is charged for
    /// it (a TCG guest: 51-92 us from sched_waking to the switch, where
    /// bare metal takes a few). A wakeup sent by a task on the same CPU
    /// preempts at once.
    pub wake_preempt: Nanos,
    /// CPU time the waking task spends on a wakeup it sends to another,
    /// idle CPU (the IPI's sending side), paid right after the wakeup.
    pub wake_remote: Nanos,
    /// Cost of a system call that does not block (sched_yield).
    pub syscall: Nanos,
    /// CPU time the forking task spends in clone() before the child is
    /// runnable (wake_up_new_task is clone's last step).
    pub fork: Nanos,
    /// CPU time a new task spends before the first step of its program
    /// (the thread library's start-up, the first touch of its stack).
    pub thread_start: Nanos,
    /// CPU time a task spends after the last step of its program before it
    /// leaves its CPU for good (the thread library's exit, the kernel's
    /// do_exit): paid on the task's CPU before it exits.
    pub thread_exit: Nanos,
    /// CPU time a run op takes beyond its work, per millisecond of it: what
    /// a machine charges a running task without a switch (interrupts; in a
    /// virtual machine, a vCPU its host did not run), which its CPU clock
    /// and its scheduler count as its run time.
    pub run_stretch: Nanos,
    /// CPU time charged to a task for each timed sleep it wakes from: the
    /// clock_nanosleep() call and the return from the timer's wakeup.
    pub timer_wakeup: Nanos,
    /// Of `timer_wakeup`, what comes after the switch to the woken task
    /// and before its program reads the time (the wakeup's return to user
    /// space): its latency is recorded there, where a thread's own clock
    /// (cyclictest's, the runner's) sees it. 0 where `timer_latency`
    /// already holds it, as calibrate's does (a thread's own lateness on
    /// an idle CPU); a run's trace gives it apart, from the switch-in to
    /// the sleep's return (`timer_return_us`).
    pub timer_return: Nanos,
    /// CPU time charged to a task for each wakeup from a channel `wait` (a
    /// pipe read that blocked) beyond the context switch to it: the read's
    /// return, which a virtual CPU switched in from idle after an IPI
    /// takes far longer over than calibrate's switch between two tasks
    /// (lat-ctx in a TCG guest: 80 us of CPU a hop against a 12 us switch).
    pub wait_wakeup: Nanos,
    /// CPU time charged to a task for each `signal` on a channel that woke
    /// a waiter, before its program goes on: the pipe write's return and
    /// the next read until it blocks, wherever the reader runs (lat-ctx in
    /// a TCG guest: 28-30 us with both tasks on one CPU under bpfland). A
    /// wakeup sent to another, idle CPU pays `wake_remote` besides.
    pub signal_return: Nanos,
    /// How late a timer wakes its task past the time it was set for (the
    /// timer interrupt's delivery), before any idle exit: drawn for each
    /// timer from the task's seeded generator. One duration, or the
    /// quantiles a machine's trace gave (an emulated timer is now and
    /// then milliseconds late, which a median does not carry).
    pub timer_latency: Dist,
    /// Each tick arrives up to this much after its jiffy boundary (uniform,
    /// seeded per CPU and jiffy): interrupts of one jiffy reach the CPUs in
    /// no fixed order, and an emulated timer is more irregular still.
    pub tick_jitter: Nanos,
    /// Where set, the CPUs' ticks of one jiffy come late together, by one
    /// draw up to `tick_jitter`, and each CPU's by up to this much more
    /// (uniform, seeded per CPU and jiffy): a TCG guest's ticks are 60-90
    /// us late at the median but within 10-20 us of one another, which one
    /// jitter per CPU cannot give. Unset, each CPU draws its own lateness.
    pub tick_spread: Option<Nanos>,
}

/// The cost names `[machine] costs` and `--cost` take, in the order
/// messages list them.
pub const COST_NAMES: &[&str] = &[
    "context_switch",
    "migration",
    "idle_exit",
    "wake_preempt",
    "wake_remote",
    "syscall",
    "fork",
    "thread_start",
    "thread_exit",
    "run_stretch",
    "timer_wakeup",
    "timer_return",
    "wait_wakeup",
    "signal_return",
    "timer_latency",
    "tick_jitter",
    "tick_spread",
];

impl Costs {
    /// Replace one cost by the name `[machine] costs` gives it.
    pub fn set(&mut self, name: &str, value: Nanos) -> Result<(), String> {
        self.set_dist(name, Dist::Const(value))
    }

    /// Replace one cost by its name (`--cost`): one duration, or for
    /// timer_latency a distribution.
    pub fn set_dist(&mut self, name: &str, value: Dist) -> Result<(), String> {
        // A cost is paid per event: nanoseconds to milliseconds. Hours would
        // only push events past the engine's horizon.
        if value.mean() > crate::time::NSEC_PER_SEC as f64 {
            return Err(format!(
                "cost {name} = {value} is more than a second: a cost is paid at every event, e.g. {name} = \"8us\""
            ));
        }
        if name == "timer_latency" {
            self.timer_latency = value;
            return Ok(());
        }
        if name == "tick_spread" {
            let Dist::Const(v) = value else {
                return Err(format!("cost tick_spread takes one duration, not {value}"));
            };
            self.tick_spread = Some(v);
            return Ok(());
        }
        let slot = match name {
            "context_switch" => &mut self.context_switch,
            "migration" => &mut self.migration,
            "idle_exit" => &mut self.idle_exit,
            "wake_preempt" => &mut self.wake_preempt,
            "wake_remote" => &mut self.wake_remote,
            "syscall" => &mut self.syscall,
            "fork" => &mut self.fork,
            "thread_start" => &mut self.thread_start,
            "thread_exit" => &mut self.thread_exit,
            "run_stretch" => &mut self.run_stretch,
            "timer_wakeup" => &mut self.timer_wakeup,
            "timer_return" => &mut self.timer_return,
            "wait_wakeup" => &mut self.wait_wakeup,
            "signal_return" => &mut self.signal_return,
            "tick_jitter" => &mut self.tick_jitter,
            _ => return Err(format!("unknown cost '{name}': use one of {}", COST_NAMES.join(", "))),
        };
        let Dist::Const(value) = value else {
            return Err(format!(
                "cost {name} takes one duration, not {value}: only timer_latency takes a distribution, \
                 e.g. timer_latency=quantiles(p0=30us,p50=50us,p99=2ms,p100=5ms)"
            ));
        };
        *slot = value;
        Ok(())
    }

    /// What `run_stretch` adds to a run op of `burst`: that much per
    /// millisecond of it (capped far above any run, so that the engine's
    /// sums cannot overflow).
    pub fn stretch(&self, burst: Nanos) -> Nanos {
        let ms = u128::from(crate::time::NSEC_PER_MSEC);
        (u128::from(burst) * u128::from(self.run_stretch) / ms).min(u128::from(Nanos::MAX / 4)) as Nanos
    }

    /// The run op that takes `measured` of CPU time once `run_stretch` is
    /// added to it (the inverse of [`Costs::stretch`]): for a CPU time read
    /// on a clock that already holds what the machine took from the run (a
    /// real thread's CPU clock, a trace).
    pub fn unstretched(&self, measured: Nanos) -> Nanos {
        let ms = u128::from(crate::time::NSEC_PER_MSEC);
        (u128::from(measured) * ms / (ms + u128::from(self.run_stretch))) as Nanos
    }

    /// The command line's costs over these.
    pub(crate) fn overridden(mut self, ov: &Overrides) -> Result<Costs, WorkloadError> {
        for (name, value) in &ov.costs {
            self.set_dist(name, value.clone()).map_err(|message| WorkloadError {
                origin: "--cost".into(),
                line: 0,
                message,
            })?;
        }
        Ok(self)
    }
}

impl Default for Costs {
    fn default() -> Costs {
        Costs {
            context_switch: 2 * NSEC_PER_USEC,
            migration: 10 * NSEC_PER_USEC,
            idle_exit: 5 * NSEC_PER_USEC,
            // Taken as immediate unless measured: on bare metal the
            // interrupt's return is a microsecond or two.
            wake_preempt: 0,
            // Bare metal's IPI send is a register write: not charged
            // unless measured.
            wake_remote: 0,
            syscall: 300,
            // What a fork, a thread's start and a timer cost on bare metal
            // is small beside the bursts of the built-in scenarios and is
            // not charged unless measured (`schedlab calibrate`).
            fork: 0,
            thread_start: 0,
            thread_exit: 0,
            run_stretch: 0,
            timer_wakeup: 0,
            timer_return: 0,
            wait_wakeup: 0,
            signal_return: 0,
            timer_latency: Dist::Const(0),
            tick_jitter: 4 * NSEC_PER_USEC,
            tick_spread: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Machine {
    pub topology: Topology,
    pub hz: u32,
    pub costs: Costs,
    /// How long the kernel has been up when the workload starts:
    /// sched_clock at the simulation's time 0. What the kernel made at
    /// boot is that old at the start, and a patch may read its age
    /// (CacULE scores a task group's entity by its life since boot).
    pub uptime: Nanos,
    /// How far each CPU's deadline clock stands ahead of CPU 0's when the
    /// workload starts (ns, CPU 0's first; none listed: together): what a
    /// MuQSS kernel's per-CPU niffies had drifted to by then, which
    /// `schedlab validate` takes from the runs (the runner reads them).
    pub niffies_ahead: Vec<i64>,
}

impl GroupSpec {
    /// The root cgroup, groups\[0\] of every workload.
    pub fn root() -> GroupSpec {
        GroupSpec { name: "/".into(), parent: None, cpu_weight: 100, cpu_max: None }
    }
}

impl Machine {
    /// A machine with the default HZ and costs, the command line's costs
    /// over them (for inputs that describe no machine: rt-app, traces).
    pub fn with_defaults(topology: Topology, ov: &Overrides) -> Result<Machine, WorkloadError> {
        Ok(Machine {
            topology,
            hz: DEFAULT_HZ,
            costs: Costs::default().overridden(ov)?,
            uptime: ov.uptime.unwrap_or(DEFAULT_UPTIME),
            niffies_ahead: Vec::new(),
        })
    }

    pub fn tick_ns(&self) -> Nanos {
        NSEC_PER_SEC / self.hz as Nanos
    }
}

/// A checked workload, ready to simulate.
#[derive(Clone, Debug)]
pub struct Workload {
    pub name: String,
    pub description: String,
    /// The file's \[params\] with the values in force (overrides applied).
    pub params: BTreeMap<String, i64>,
    /// The \[params\] that some \[\[task\]\] uses as its `count`.
    pub count_params: Vec<String>,
    pub duration: Nanos,
    pub seed: u64,
    pub machine: Machine,
    pub tunables: BTreeMap<String, i64>,
    /// groups\[0\] is the root group.
    pub groups: Vec<GroupSpec>,
    pub tasks: Vec<TaskSpec>,
    pub channels: Vec<Channel>,
    /// Condition variables (rt-app's signal/wait/broad, suspend/resume).
    pub conds: Vec<String>,
    pub barriers: Vec<Barrier>,
    /// The report counts from this time on (0: the whole run); what comes
    /// before is start-up, as a real runner's threads are created before
    /// its t0. No file format sets it: `schedlab validate` does, to
    /// simulate the runner's start; `schedlab host` refuses it.
    pub measure_from: Nanos,
}

/// What an input format other than schedlab's own file gives a workload
/// (rt-app, a replayed trace): its tasks and what they share. Such inputs
/// have no [params], and the command line's seed applies as is.
pub(crate) struct Imported {
    pub description: String,
    pub duration: Nanos,
    pub machine: Machine,
    pub tunables: BTreeMap<String, i64>,
    pub groups: Vec<GroupSpec>,
    pub tasks: Vec<TaskSpec>,
    pub channels: Vec<Channel>,
    pub conds: Vec<String>,
    pub barriers: Vec<Barrier>,
}

impl Workload {
    /// An imported workload named after its file, checked against the
    /// simulator's bounds (the error is the caller's to place in its file).
    pub(crate) fn imported(origin: &str, ov: &Overrides, parts: Imported) -> Result<Workload, String> {
        let w = Workload {
            name: name_from_origin(origin),
            description: parts.description,
            params: BTreeMap::new(),
            count_params: Vec::new(),
            duration: parts.duration,
            seed: ov.seed.unwrap_or(1),
            machine: parts.machine,
            tunables: parts.tunables,
            groups: parts.groups,
            tasks: parts.tasks,
            channels: parts.channels,
            conds: parts.conds,
            barriers: parts.barriers,
            measure_from: 0,
        };
        w.check_bounds()?;
        Ok(w)
    }
}

/// Command-line overrides applied while a file is read, so that references
/// (a `count` naming a parameter, CPU lists) are checked against them.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub cpus: Option<u32>,
    pub duration: Option<Nanos>,
    pub seed: Option<u64>,
    pub params: BTreeMap<String, i64>,
    pub tunables: BTreeMap<String, i64>,
    /// `[machine] costs` by name, e.g. from `schedlab calibrate`: one
    /// duration each, a distribution for timer_latency.
    pub costs: BTreeMap<String, Dist>,
    /// `[machine] uptime`.
    pub uptime: Option<Nanos>,
}

impl Workload {
    pub fn nr_cpus(&self) -> u32 {
        self.machine.topology.nr_cpus()
    }

    /// The affinity of instance `k` of spec `spec`.
    pub fn instance_affinity(&self, spec: TaskSpecId, k: u32) -> Option<CpuSet> {
        let s = &self.tasks[spec as usize];
        if s.per_cpu {
            let mut set = CpuSet::empty(self.nr_cpus());
            set.insert(k % self.nr_cpus());
            Some(set)
        } else {
            s.affinity.clone()
        }
    }

    /// Whether any task forks (starts a task from a template) in its program.
    pub fn forks(&self) -> bool {
        self.tasks.iter().any(|t| t.program.iter().any(|op| matches!(op, Op::Fork(_))))
    }

    /// Number of tasks started at the beginning (templates excluded).
    pub fn initial_tasks(&self) -> u64 {
        self.tasks.iter().filter(|t| !t.template).map(|t| t.count as u64).sum()
    }

    /// What is legal in a workload but almost surely not meant: a channel
    /// or condition some task waits on and no task signals (its waiters
    /// sleep for the rest of the run).
    pub fn lints(&self) -> Vec<String> {
        let (mut chan_wait, mut chan_signal) = (vec![false; self.channels.len()], vec![false; self.channels.len()]);
        let (mut cond_wait, mut cond_signal) = (vec![false; self.conds.len()], vec![false; self.conds.len()]);
        for op in self.tasks.iter().flat_map(|t| &t.program) {
            match op {
                Op::Wait(c) => chan_wait[*c as usize] = true,
                Op::Signal(c) => chan_signal[*c as usize] = true,
                Op::CondWait { cond, .. } => cond_wait[*cond as usize] = true,
                Op::CondSignal(c) | Op::CondBroadcast(c) => cond_signal[*c as usize] = true,
                _ => {}
            }
        }
        let mut out = Vec::new();
        for (i, ch) in self.channels.iter().enumerate() {
            if chan_wait[i] && !chan_signal[i] {
                out.push(format!(
                    "channel '{}' is waited on but no task signals it: its waiters sleep for the rest of the run",
                    ch.name
                ));
            }
        }
        for (i, name) in self.conds.iter().enumerate() {
            if cond_wait[i] && !cond_signal[i] {
                out.push(format!(
                    "condition '{name}' is waited on but no task signals it: its waiters sleep for the rest of the run"
                ));
            }
        }
        out
    }

    /// Refuses a workload that starts more than MAX_TASKS tasks in all
    /// (the count of one entry is bounded, but a file or a trace of many
    /// entries could ask for any number), or whose names hold control
    /// characters: they are printed to a terminal, where an escape sequence
    /// would clear the screen or forge a line.
    pub fn check_bounds(&self) -> Result<(), String> {
        let names = std::iter::once(("workload", &self.name)).chain(self.tasks.iter().map(|t| ("task", &t.name)));
        for (what, name) in names {
            if name.chars().any(char::is_control) {
                let shown: String = name.chars().take(40).collect();
                return Err(format!(
                    "{what} name '{}' holds control characters (a terminal would act on them): use printable ones",
                    shown.escape_debug()
                ));
            }
        }
        match self.initial_tasks() {
            n if n > MAX_TASKS => {
                Err(format!("the workload starts {n} tasks: schedlab simulates at most {MAX_TASKS} at once"))
            }
            _ => Ok(()),
        }
    }
}

/// Tasks a workload may start.
pub const MAX_TASKS: u64 = 1_000_000;

/// A group's name becomes a cgroup directory on the real kernel (as root):
/// one path component of plain characters, never a path. Nesting is said
/// with `parent`, not with '/'.
pub fn check_group_name(name: &str) -> Result<(), String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty() || name.len() > 64 || name == "." || name == ".." || !name.chars().all(plain) {
        return Err(format!(
            "group name '{}' must be 1 to 64 letters, digits, '_', '-' or '.' (not '.' or '..'): it names a cgroup \
             directory; nest groups with parent = \"NAME\"",
            name.chars().take(80).collect::<String>().escape_debug()
        ));
    }
    // A cgroup directory's own files: a group so named would collide with
    // one (mkdir says "File exists" and the run would go on ungrouped).
    let prefix = name.split('.').next().unwrap_or(name);
    if matches!(name, "tasks" | "notify_on_release" | "release_agent")
        || (name.contains('.') && CGROUP_FILE_PREFIXES.contains(&prefix))
    {
        return Err(format!(
            "group name '{name}' is the name of a cgroup control file (tasks, cgroup.*, cpu.*, memory.* and the \
             like): choose another name"
        ));
    }
    Ok(())
}

/// The prefixes of cgroup v1 and v2 control files ("cpu.shares").
const CGROUP_FILE_PREFIXES: &[&str] = &[
    "cgroup",
    "cpu",
    "cpuacct",
    "cpuset",
    "memory",
    "io",
    "blkio",
    "pids",
    "devices",
    "freezer",
    "net_cls",
    "net_prio",
    "perf_event",
    "hugetlb",
    "rdma",
    "misc",
];

/// Whether an op can let simulated time pass (a loop without one would
/// spin forever at one instant).
pub(crate) fn takes_time(op: &Op) -> bool {
    matches!(
        op,
        Op::Run(_) | Op::Sleep(_) | Op::Timer { .. } | Op::Wait(_) | Op::Yield | Op::CondWait { .. } | Op::Barrier(_)
    )
}
