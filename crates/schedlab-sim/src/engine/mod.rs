//! The discrete-event simulator: one clock, one event queue ordered by
//! (time, sequence) so a run is deterministic, the task programs, the CPUs
//! with their tick (NO_HZ idle: no tick on an idle CPU) and costs, the
//! kernel's jiffies (advanced by one timekeeping CPU's tick, as
//! tick_do_timer_cpu does, and by a CPU leaving idle), and all accounting.
//! Scheduling decisions are the policy's; the engine only asks.
//! `program.rs` carries out a task's ops, `rt.rs` is the real-time class
//! the engine keeps above every policy, `queue.rs` the event queue,
//! `checks.rs` what a policy must not do, `finish.rs` the report at the end,
//! `seeds.rs` the seeded streams (each task's, the tick's phase and jitter),
//! `window.rs` the counts noted where a late-starting window opens.

mod checks;
mod finish;
mod program;
pub mod queue;
mod rt;
mod seeds;
mod window;

use crate::policy::{Dequeue, Enqueue, Policy, Sys, TaskId, TaskInfo, TaskState, WakeKind};
use crate::report::{Hist, Report};
use crate::time::Nanos;
use crate::topology::CpuId;
use crate::workload::{BarrierId, ChanId, CondId, Op, SchedPolicy, TaskSpecId, TimerMode, Workload};
use queue::EventQueue;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use rt::{RtClass, rt_prio};
pub use seeds::task_rng;
use seeds::{tick_jitter, tick_phase};
use smallvec::SmallVec;
use std::collections::VecDeque;

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("task '{task}' ran {limit} program steps without letting time pass: give its loops a run, sleep or wait")]
    Runaway { task: String, limit: u64 },
    #[error(
        "task '{task}' forked the {limit}th task of the run: schedlab simulates at most {limit} tasks; make its fork \
         loop finite, or let children exit"
    )]
    TooManyTasks { task: String, limit: u64 },
    #[error("{0}")]
    Invariant(String),
    /// The policy answered a hook with something the engine cannot do: a
    /// task that cannot run there, a CPU that does not exist, an idle CPU
    /// with tasks waiting on it.
    #[error("policy '{policy}' at {}: {what}", crate::time::format_duration(*at))]
    PolicyBroke { policy: String, at: Nanos, what: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// A task from the workload file reaches its start time.
    Start(TaskId),
    /// A sleeping task's timer expires; the generation guards against stale
    /// events.
    Wake(TaskId, u32),
    /// The running task's burst ends (generation of the CPU's current run).
    BurstEnd(CpuId, u32),
    Tick(CpuId, u32),
    /// An idle CPU, kicked, comes out of idle and picks.
    IdleExit(CpuId),
    /// A busy CPU that a wakeup by interrupt preempted reaches schedule()
    /// (generation of the CPU's current run).
    PreemptDue(CpuId, u32),
    PolicyTimer(u64),
    /// The report's window opens (Workload::measure_from).
    MeasureStart,
}

/// What an observer (trace writer, invariant checker) is told.
#[derive(Clone, Copy, Debug)]
pub enum TraceEvent {
    Switch { cpu: CpuId, prev: Option<TaskId>, prev_state: TaskState, next: Option<TaskId> },
    Wakeup { task: TaskId, cpu: CpuId, new: bool },
    Migrate { task: TaskId, from: CpuId, to: CpuId },
}

pub trait Observer {
    fn event(&mut self, now: Nanos, sys: &Sys, ev: TraceEvent);
}

struct Prog {
    pc: u32,
    /// Open loops (start pc, iterations left), inline: read at every
    /// iteration, a heap allocation of its own would be one more miss.
    loops: SmallVec<[(u32, u64); 2]>,
    /// CPU time left in the current burst.
    remaining: Nanos,
    /// Part of `remaining` that is a cost (cache-cold penalty, a fork, a
    /// timer), not asked-for work.
    penalty: Nanos,
    /// The clone() of the fork at `pc - 1` has been paid for.
    fork_paid: bool,
    /// The program has ended and its thread's exit is being paid for.
    exit_paid: bool,
    /// CPU time owed for wakeups this task sent to other, idle CPUs
    /// (wake_remote), paid before its program goes on.
    wakes_owed: Nanos,
    /// Next expiry of each of the task's timers (by slot).
    timer_next: Vec<Option<Nanos>>,
    sleep_epoch: u32,
    /// Intended wakeup time, to measure wakeup latency at the next run.
    woke_at: Option<Nanos>,
    /// When its sleep's timer was due (before its lateness).
    timer_due: Nanos,
    /// Its wakeup's cost already holds the switch to it (timer_wakeup).
    switch_paid: bool,
    runnable_since: Nanos,
    last_exec_cpu: Option<CpuId>,
    rng: Pcg64Mcg,
    /// Kept with the program, not in an array of their own: an event
    /// touches both, and with many tasks each array is a cache miss.
    stats: TaskStats,
}

#[derive(Default, Clone)]
struct TaskStats {
    created: Nanos,
    exited: Option<Nanos>,
    run_delay: Nanos,
    wakeups: u64,
    lat_sum: Nanos,
    lat_max: Nanos,
    voluntary: u64,
    involuntary: u64,
    migrations: u64,
    work: Nanos,
    runs_done: u64,
}

#[derive(Default, Clone)]
struct CpuRun {
    /// Bumped whenever `curr` changes, invalidating queued BurstEnd events.
    epoch: u32,
    tick_epoch: u32,
    tick_armed: bool,
    /// When the switch to `curr` began, and when `curr` starts executing
    /// (after the switch cost).
    switch_at: Nanos,
    exec_start: Nanos,
    last_sync: Nanos,
    waking: bool,
    idle_since: Option<Nanos>,
    idle_ns: Nanos,
    overhead_ns: Nanos,
}

impl CpuRun {
    /// Idle time up to `now`, the open idle interval included.
    fn idle_at(&self, now: Nanos) -> Nanos {
        self.idle_ns + self.idle_since.map_or(0, |s| now.saturating_sub(s))
    }

    /// Switch overhead up to `now`: the switch to a current task that did
    /// not pay for it is added only when the task leaves, so it is counted
    /// here while the task still runs (`running`).
    fn overhead_at(&self, running: bool, now: Nanos) -> Nanos {
        self.overhead_ns + if running { self.exec_start.min(now) - self.switch_at.min(now) } else { 0 }
    }
}

/// What update_curr would charge a running task at `now`: its CPU time
/// since the last charge, the part of its burst done, and the part of
/// that which was a cost (so the rest is asked-for work).
struct Uncharged {
    ran: Nanos,
    done: Nanos,
    from_penalty: Nanos,
}

impl Uncharged {
    fn of(run: &CpuRun, prog: &Prog, now: Nanos) -> Uncharged {
        let ran = now.saturating_sub(run.last_sync.max(run.exec_start));
        let done = ran.min(prog.remaining);
        Uncharged { ran, done, from_penalty: done.min(prog.penalty) }
    }

    fn work(&self) -> Nanos {
        self.done - self.from_penalty
    }
}

struct Chan {
    tokens: u64,
    waiters: VecDeque<TaskId>,
}

struct BarrierState {
    users: u32,
    waiting: Vec<TaskId>,
}

/// The random-number generator of a task's durations.
pub type TaskRng = Pcg64Mcg;

/// Limits a run's bookkeeping; defaults suit the CLI.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Check the policy's and the engine's invariants after every event
    /// (slow; for tests).
    pub check_invariants: bool,
    /// Program steps a task may take without time passing.
    pub runaway_limit: u64,
    /// Tasks a run may create in all, forks included: each costs memory
    /// for the rest of the run, and a fork loop would otherwise grow it
    /// without bound.
    pub task_limit: u64,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions { check_invariants: false, runaway_limit: 1_000_000, task_limit: 2_000_000 }
    }
}

pub struct Engine<'w> {
    w: &'w Workload,
    pub sys: Sys,
    policy: Box<dyn Policy + 'w>,
    rt: RtClass,
    queue: EventQueue<Kind>,
    /// Start events still queued (the run ends early only when none is).
    pending_starts: u64,
    progs: Vec<Prog>,
    cpu_run: Vec<CpuRun>,
    chans: Vec<Chan>,
    conds: Vec<VecDeque<TaskId>>,
    barriers: Vec<BarrierState>,
    spec_lat: Vec<Hist>,
    spec_rps: Vec<Hist>,
    /// Instances created so far per spec (for per-cpu affinity).
    spec_instances: Vec<u32>,
    alive: u64,
    events: u64,
    switches: u64,
    last_exit: Nanos,
    opts: EngineOptions,
    /// Draws the lateness of the policy's hrtimers.
    timer_rng: Pcg64Mcg,
    observer: Option<&'w mut dyn Observer>,
    error: Option<SimError>,
    /// The counts where the report's window opened, if it opens late.
    baseline: Option<window::Baseline>,
    /// tick_do_timer_cpu: the CPU whose tick advances `sys.jiffies`, none
    /// while the last one is idle (until the next CPU to tick takes it).
    timekeeper: Option<CpuId>,
}

impl<'w> Engine<'w> {
    pub fn new(w: &'w Workload, policy: Box<dyn Policy + 'w>, opts: EngineOptions) -> Engine<'w> {
        let nr_cpus = w.nr_cpus();
        let sys = Sys::new(w.machine.topology.clone(), w.machine.tick_ns(), w.groups.clone());
        let mut e = Engine {
            w,
            sys,
            policy,
            rt: RtClass::new(nr_cpus),
            queue: EventQueue::new(),
            pending_starts: 0,
            progs: Vec::new(),
            cpu_run: vec![CpuRun { idle_since: Some(0), ..CpuRun::default() }; nr_cpus as usize],
            timekeeper: Some(0),
            chans: w.channels.iter().map(|c| Chan { tokens: c.initial, waiters: VecDeque::new() }).collect(),
            conds: vec![VecDeque::new(); w.conds.len()],
            barriers: w.barriers.iter().map(|b| BarrierState { users: b.users, waiting: Vec::new() }).collect(),
            spec_lat: vec![Hist::default(); w.tasks.len()],
            spec_rps: vec![Hist::default(); w.tasks.len()],
            spec_instances: vec![0; w.tasks.len()],
            alive: 0,
            events: 0,
            switches: 0,
            last_exit: 0,
            opts,
            timer_rng: Pcg64Mcg::seed_from_u64(w.seed ^ 0x6872_7469_636b),
            observer: None,
            error: None,
            baseline: None,
        };
        // Sized once: grown by doubling, a million tasks held the old and
        // the new array at once (forks still grow them).
        let tasks = w.initial_tasks() as usize;
        e.sys.tasks.reserve_exact(tasks);
        e.progs.reserve_exact(tasks);
        e.policy.init(&mut e.sys);
        if w.measure_from > 0 {
            e.push(w.measure_from, Kind::MeasureStart);
        }
        let mut start_rng = Pcg64Mcg::seed_from_u64(w.seed ^ 0x5eed_57a7);
        for (spec_id, spec) in w.tasks.iter().enumerate() {
            if spec.template {
                continue;
            }
            for _ in 0..spec.count {
                let t = e.create_task(spec_id as TaskSpecId, None);
                let at = spec.start.sample(&mut start_rng);
                e.push(at, Kind::Start(t));
            }
        }
        e
    }

    pub fn with_observer(mut self, obs: &'w mut dyn Observer) -> Self {
        self.observer = Some(obs);
        self
    }

    fn push(&mut self, at: Nanos, kind: Kind) {
        // Nothing after the end is ever handled; not queueing it keeps the
        // heap small and the time within the queue's range.
        if at > self.w.duration {
            return;
        }
        if let Kind::Start(t) = kind
            && self.ends_the_run(t)
        {
            self.pending_starts += 1;
        }
        self.queue.push(at, kind);
    }

    fn observe(&mut self, ev: TraceEvent) {
        self.observe_moves();
        if let Some(obs) = self.observer.as_mut() {
            obs.event(self.sys.now, &self.sys, ev);
        }
    }

    /// Count the queued tasks the policy moved (Sys::migrate) against each
    /// task and tell the observer of them, before whatever the engine
    /// reports next. Asked several times per event and mostly with nothing
    /// moved: the check is inlined, the telling is not.
    #[inline]
    fn observe_moves(&mut self) {
        if !self.sys.moved.is_empty() {
            self.tell_moves();
        }
    }

    #[cold]
    fn tell_moves(&mut self) {
        let moved = std::mem::take(&mut self.sys.moved);
        for &(task, _, _) in &moved {
            self.progs[task as usize].stats.migrations += 1;
        }
        if let Some(obs) = self.observer.as_mut() {
            for &(task, from, to) in &moved {
                obs.event(self.sys.now, &self.sys, TraceEvent::Migrate { task, from, to });
            }
        }
        self.sys.moved = moved;
        self.sys.moved.clear();
    }

    fn create_task(&mut self, spec_id: TaskSpecId, parent: Option<TaskId>) -> TaskId {
        let spec = &self.w.tasks[spec_id as usize];
        let t = self.sys.tasks.len() as TaskId;
        self.sys.tasks.push(TaskInfo {
            spec: spec_id,
            nice: spec.nice,
            policy: spec.policy,
            affinity: self.w.instance_affinity(spec_id, self.spec_instances[spec_id as usize]),
            group: spec.group,
            slice: spec.slice,
            parent,
            state: TaskState::New,
            cpu: parent.map_or(0, |p| self.sys.tasks[p as usize].cpu),
            sum_exec: 0,
            last_ran: 0,
            slept_at: 0,
            last_sleep_len: 0,
            futex_wait: false,
        });
        let rng = task_rng(self.w.seed, t);
        self.progs.push(Prog {
            pc: 0,
            loops: SmallVec::new(),
            // A forked thread starts up before its program's first step;
            // the workload's own tasks were started before the run.
            remaining: if parent.is_some() { self.w.machine.costs.thread_start } else { 0 },
            penalty: if parent.is_some() { self.w.machine.costs.thread_start } else { 0 },
            fork_paid: false,
            exit_paid: false,
            wakes_owed: 0,
            timer_next: Vec::new(),
            sleep_epoch: 0,
            woke_at: None,
            timer_due: 0,
            switch_paid: false,
            runnable_since: 0,
            last_exec_cpu: None,
            rng,
            stats: TaskStats::default(),
        });
        self.spec_instances[spec_id as usize] += 1;
        self.policy.task_new(&mut self.sys, t, parent);
        t
    }

    /// Whether the run waits for task `t` to exit: every task but the
    /// machine's own (`TaskSpec::background`).
    fn ends_the_run(&self, t: TaskId) -> bool {
        !self.w.tasks[self.sys.tasks[t as usize].spec as usize].background
    }

    /// Runs the workload to its duration (or until every task exited).
    pub fn run(mut self) -> Result<Report, SimError> {
        let end = self.w.duration;
        while let Some((at, kind)) = self.queue.pop() {
            if let Kind::Start(t) = kind
                && self.ends_the_run(t)
            {
                self.pending_starts -= 1;
            }
            self.sys.now = at;
            self.events += 1;
            self.handle(kind);
            self.drain_requests();
            if let Some(err) = self.error.take() {
                return Err(err);
            }
            if let Some(what) = self.sys.broken.take() {
                return Err(SimError::PolicyBroke { policy: self.policy.name().to_string(), at, what });
            }
            if self.opts.check_invariants {
                self.check_invariants()?;
            }
            if self.alive == 0 && self.pending_starts == 0 {
                break;
            }
        }
        let finished = self.alive == 0;
        let stop = if finished { self.last_exit } else { end };
        self.sys.now = stop.max(self.sys.now.min(end));
        let stop = self.sys.now;
        for cpu in 0..self.sys.nr_cpus {
            self.sync(cpu);
        }
        Ok(self.report(stop, finished))
    }

    fn handle(&mut self, kind: Kind) {
        match kind {
            Kind::Start(t) => self.wake(t, None, true),
            Kind::Wake(t, epoch) => {
                if self.progs[t as usize].sleep_epoch == epoch
                    && self.sys.tasks[t as usize].state == TaskState::Sleeping
                {
                    // A timer's wakeup is late by its interrupt's delivery,
                    // which its latency counts (as cyclictest's does), and
                    // the task pays for the sleep and the wakeup's return.
                    let costs = &self.w.machine.costs;
                    let prog = &mut self.progs[t as usize];
                    prog.woke_at.get_or_insert(prog.timer_due);
                    prog.remaining += costs.timer_wakeup;
                    prog.penalty += costs.timer_wakeup;
                    prog.switch_paid = true;
                    self.wake(t, None, false);
                }
            }
            Kind::BurstEnd(cpu, epoch) => {
                if self.cpu_run[cpu as usize].epoch == epoch {
                    self.burst_end(cpu);
                }
            }
            Kind::Tick(cpu, epoch) => {
                if self.cpu_run[cpu as usize].tick_epoch == epoch {
                    self.tick(cpu);
                }
            }
            Kind::IdleExit(cpu) => {
                self.cpu_run[cpu as usize].waking = false;
                if self.sys.cpus[cpu as usize].curr.is_none() {
                    self.schedule(cpu);
                }
            }
            Kind::PreemptDue(cpu, epoch) => {
                // Switched already (it blocked, or its tick preempted it):
                // that pick saw the woken task.
                if self.cpu_run[cpu as usize].epoch == epoch {
                    self.sys.resched(cpu);
                }
            }
            Kind::PolicyTimer(token) => self.policy.timer(&mut self.sys, token),
            Kind::MeasureStart => self.begin_window(),
        }
    }

    /// Apply what the policy asked for: timers and reschedules.
    fn drain_requests(&mut self) {
        self.observe_moves();
        loop {
            for (at, token, hrtimer) in std::mem::take(&mut self.sys.timers) {
                let late = if hrtimer { self.w.machine.costs.timer_latency.sample(&mut self.timer_rng) } else { 0 };
                self.push(at.saturating_add(late), Kind::PolicyTimer(token));
            }
            let Some(cpu) = self.sys.resched.pop() else {
                break;
            };
            self.sys.resched_mask[cpu as usize] = false;
            if self.sys.cpus[cpu as usize].curr.is_some() {
                self.schedule(cpu);
            } else if !self.cpu_run[cpu as usize].waking {
                self.cpu_run[cpu as usize].waking = true;
                let at = self.sys.now + self.w.machine.costs.idle_exit;
                self.push(at, Kind::IdleExit(cpu));
            }
        }
    }

    /// update_curr: charge the running task for the time since last sync.
    fn sync(&mut self, cpu: CpuId) {
        let Some(t) = self.sys.cpus[cpu as usize].curr else {
            return;
        };
        let now = self.sys.now;
        let run = &mut self.cpu_run[cpu as usize];
        let prog = &mut self.progs[t as usize];
        let c = Uncharged::of(run, prog, now);
        if c.ran == 0 {
            return;
        }
        run.last_sync = now;
        prog.remaining -= c.done;
        prog.penalty -= c.from_penalty;
        prog.stats.work += c.work();
        self.sys.tasks[t as usize].sum_exec += c.ran;
        if !self.sys.tasks[t as usize].policy.is_rt() {
            self.policy.account(&mut self.sys, cpu, t, c.ran);
        }
    }

    fn is_rt(&self, t: TaskId) -> bool {
        self.sys.tasks[t as usize].policy.is_rt()
    }

    fn wake(&mut self, t: TaskId, waker: Option<TaskId>, new: bool) {
        let now = self.sys.now;
        let prev = self.sys.tasks[t as usize].cpu;
        let kind = if new {
            WakeKind::New
        } else {
            // A pipe write wakes its reader with WF_SYNC; a futex wake (a
            // condition, a barrier) does not.
            let sync = waker.is_some() && !self.sys.tasks[t as usize].futex_wait;
            WakeKind::Wakeup { waker, waker_cpu: waker.map(|w| self.sys.tasks[w as usize].cpu), sync }
        };
        {
            let info = &mut self.sys.tasks[t as usize];
            if !new {
                info.last_sleep_len = now - info.slept_at;
            }
        }
        let prio = rt_prio(self.sys.tasks[t as usize].policy);
        let mut cpu = match prio {
            Some(p) => self.rt.select_cpu(&self.sys, t, prev, p),
            None => self.policy.select_cpu(&mut self.sys, t, prev, kind),
        };
        if cpu >= self.sys.nr_cpus || !self.sys.allowed(t, cpu) {
            self.sys.broke(format!(
                "select_cpu placed task {t} ({}) on CPU {cpu}, {}",
                self.w.tasks[self.sys.tasks[t as usize].spec as usize].name,
                if cpu >= self.sys.nr_cpus { "which does not exist" } else { "outside its affinity" }
            ));
            // Placed somewhere it may run until the run ends with the error.
            cpu = (0..self.sys.nr_cpus).find(|&c| self.sys.allowed(t, c)).unwrap_or(prev);
        }
        if new {
            self.alive += u64::from(self.ends_the_run(t));
            self.progs[t as usize].stats.created = now;
        } else {
            self.progs[t as usize].stats.wakeups += 1;
        }
        // The waker pays for the IPI that wakes another, idle CPU.
        if let Some(w) = waker
            && !new
            && self.w.machine.costs.wake_remote > 0
            && cpu != self.sys.tasks[w as usize].cpu
            && self.sys.cpus[cpu as usize].curr.is_none()
        {
            self.progs[w as usize].wakes_owed += self.w.machine.costs.wake_remote;
        }
        if cpu != prev && !new {
            self.sys.migrations += 1;
            self.progs[t as usize].stats.migrations += 1;
            self.observe(TraceEvent::Migrate { task: t, from: prev, to: cpu });
        }
        // enqueue_task runs update_curr on the target runqueue first.
        self.sync(cpu);
        let info = &mut self.sys.tasks[t as usize];
        info.cpu = cpu;
        info.state = TaskState::Runnable;
        self.sys.inc_running(cpu);
        let prog = &mut self.progs[t as usize];
        prog.runnable_since = now;
        // Wakeup latency counts wakeups from sleep, as cyclictest does; a
        // new task's first run is run delay, not a wakeup.
        if !new && prog.woke_at.is_none() {
            prog.woke_at = Some(now);
        }
        match prio {
            Some(p) => {
                self.sys.cpus[cpu as usize].nr_rt += 1;
                self.rt.enqueue(cpu, t, p);
            }
            None => {
                let how = if new { Enqueue::New } else { Enqueue::Wakeup };
                self.policy.enqueue(&mut self.sys, cpu, t, how);
            }
        }
        self.observe(TraceEvent::Wakeup { task: t, cpu, new });
        // A timer's wakeup, or one another CPU sends (an IPI), reaches
        // this CPU as an interrupt; a task waking another beside it
        // preempts from its own system call.
        let by_interrupt = !new && waker.is_none_or(|w| self.sys.tasks[w as usize].cpu != cpu);
        self.check_preempt(cpu, t, by_interrupt);
    }

    fn check_preempt(&mut self, cpu: CpuId, woken: TaskId, by_interrupt: bool) {
        let Some(curr) = self.sys.cpus[cpu as usize].curr else {
            self.sys.resched(cpu);
            return;
        };
        let preempt =
            match (rt_prio(self.sys.tasks[woken as usize].policy), rt_prio(self.sys.tasks[curr as usize].policy)) {
                (Some(w), Some(c)) => w > c,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => {
                    self.sync(cpu);
                    self.policy.wakeup_preempt(&mut self.sys, cpu, curr, woken)
                }
            };
        if !preempt {
            return;
        }
        let delay = self.w.machine.costs.wake_preempt;
        if by_interrupt && delay > 0 {
            let epoch = self.cpu_run[cpu as usize].epoch;
            self.push(self.sys.now + delay, Kind::PreemptDue(cpu, epoch));
        } else {
            self.sys.resched(cpu);
        }
    }

    fn tick(&mut self, cpu: CpuId) {
        let run = &mut self.cpu_run[cpu as usize];
        run.tick_armed = false;
        let Some(curr) = self.sys.cpus[cpu as usize].curr else {
            return;
        };
        // tick_sched_do_timer, before the scheduler's tick: a CPU takes up
        // the timekeeping no CPU holds, and the timekeeper advances jiffies.
        let keeper = *self.timekeeper.get_or_insert(cpu);
        if keeper == cpu {
            self.update_jiffies();
        }
        self.sync(cpu);
        let policy = self.sys.tasks[curr as usize].policy;
        if policy.is_rt() {
            if self.rt.tick(cpu, curr, policy, self.sys.tick_ns) {
                self.sys.resched(cpu);
            }
        } else {
            self.policy.tick(&mut self.sys, cpu, curr);
        }
        self.policy.balance(&mut self.sys, cpu, false);
        self.arm_tick(cpu);
    }

    /// The jiffy boundaries passed by now: `tick_phase`, and every `tick_ns`
    /// after it. Tick n falls on boundary n (plus its jitter).
    fn jiffies_passed(&self) -> u64 {
        let tick = self.sys.tick_ns;
        let phase = tick_phase(self.w.seed, tick);
        if self.sys.now < phase { 0 } else { (self.sys.now - phase) / tick + 1 }
    }

    /// tick_do_update_jiffies64: jiffies count the boundaries passed by now.
    fn update_jiffies(&mut self) {
        self.sys.jiffies = self.sys.jiffies.max(self.jiffies_passed());
    }

    fn arm_tick(&mut self, cpu: CpuId) {
        if self.cpu_run[cpu as usize].tick_armed {
            return;
        }
        // Ticks fall on jiffy boundaries on every CPU (sched_skew_tick=0),
        // but interrupts of one jiffy reach the CPUs in no fixed order: a
        // seeded jitter of up to costs.tick_jitter keeps the CPU numbering from
        // deciding who balances first (with costs.tick_spread, the jiffy's
        // lateness is one draw for every CPU and the spread each CPU's).
        // The next tick is on the next boundary.
        let tick = self.sys.tick_ns;
        let jiffy = self.jiffies_passed();
        let costs = &self.w.machine.costs;
        let late = match costs.tick_spread {
            None => tick_jitter(self.w.seed, cpu, jiffy, costs.tick_jitter),
            Some(spread) => {
                tick_jitter(self.w.seed, CpuId::MAX, jiffy, costs.tick_jitter)
                    + tick_jitter(self.w.seed, cpu, jiffy, spread)
            }
        };
        let at = tick_phase(self.w.seed, tick) + jiffy * tick + late;
        let run = &mut self.cpu_run[cpu as usize];
        run.tick_armed = true;
        run.tick_epoch = run.tick_epoch.wrapping_add(1);
        let epoch = run.tick_epoch;
        self.push(at, Kind::Tick(cpu, epoch));
    }

    fn burst_end(&mut self, cpu: CpuId) {
        self.sync(cpu);
        let Some(t) = self.sys.cpus[cpu as usize].curr else {
            return;
        };
        let prog = &self.progs[t as usize];
        if prog.remaining > 0 {
            let at = self.sys.now + prog.remaining;
            let epoch = self.cpu_run[cpu as usize].epoch;
            self.push(at, Kind::BurstEnd(cpu, epoch));
            return;
        }
        self.advance(cpu, t);
    }

    /// Switches the CPUs that were sent a reschedule in this same instant
    /// while running a task (a wakeup that preempts it) before `cpu`, whose
    /// task is leaving it, picks. On a machine the reschedule IPI is taken
    /// within a microsecond or two, before the task that sent it has gone
    /// on to block, so this CPU's newidle balance finds those CPUs running
    /// the tasks that preempted and the preempted ones queued; taken after
    /// this event, in request order, they would still run the preempted
    /// tasks and the newidle balance would take the one that had just
    /// won the CPU.
    fn take_sent_preemptions(&mut self, cpu: CpuId) {
        if self.sys.resched.is_empty() {
            return;
        }
        let sent: Vec<CpuId> = self
            .sys
            .resched
            .iter()
            .copied()
            .filter(|&c| c != cpu && self.sys.cpus[c as usize].curr.is_some())
            .collect();
        for c in sent {
            self.sys.resched.retain(|&r| r != c);
            self.sys.resched_mask[c as usize] = false;
            self.schedule(c);
        }
    }

    fn dequeue_running(&mut self, cpu: CpuId, t: TaskId, why: Dequeue) {
        self.sync(cpu);
        self.sys.dec_running(cpu);
        if self.is_rt(t) {
            self.sys.cpus[cpu as usize].nr_rt -= 1;
            self.rt.dequeue(cpu, t);
        } else {
            self.policy.dequeue(&mut self.sys, cpu, t, why);
        }
    }

    /// __schedule(): put the current task back, pick the next, switch.
    fn schedule(&mut self, cpu: CpuId) {
        let now = self.sys.now;
        let prev = self.sys.cpus[cpu as usize].curr;
        if prev.is_none() {
            // An idle CPU is woken by an interrupt (the kick, a timer):
            // tick_nohz_irq_enter brings jiffies up to date before it
            // schedules.
            self.update_jiffies();
        }
        let mut prev_state = TaskState::Exited;
        if let Some(p) = prev {
            self.sync(cpu);
            prev_state = self.sys.tasks[p as usize].state;
            if prev_state == TaskState::Running {
                self.sys.tasks[p as usize].state = TaskState::Runnable;
            }
            self.sys.cpus[cpu as usize].curr = None;
        }
        let next = self.pick(cpu, prev);
        if let Some(t) = next.filter(|_| next == prev) {
            self.sys.tasks[t as usize].state = TaskState::Running;
            self.sys.cpus[cpu as usize].curr = next;
            return;
        }
        let run = &mut self.cpu_run[cpu as usize];
        run.epoch = run.epoch.wrapping_add(1);
        if let Some(p) = prev {
            // Switch-out bookkeeping for the task leaving the CPU.
            let exec_start = run.exec_start;
            let switch_at = run.switch_at;
            run.overhead_ns += exec_start.min(now) - switch_at;
            let ran = now.saturating_sub(exec_start);
            let info = &mut self.sys.tasks[p as usize];
            info.last_ran = now;
            let stats = &mut self.progs[p as usize].stats;
            if prev_state == TaskState::Running {
                stats.involuntary += 1;
                self.progs[p as usize].runnable_since = now;
            } else {
                stats.voluntary += 1;
            }
            self.spec_rps[info.spec as usize].record(ran);
            self.switches += 1;
        }
        self.observe(TraceEvent::Switch {
            cpu,
            prev,
            prev_state: if prev_state == TaskState::Running { TaskState::Runnable } else { prev_state },
            next,
        });
        let run = &mut self.cpu_run[cpu as usize];
        match next {
            None => {
                // An idle CPU kicked for nothing stays in its idle interval.
                run.idle_since.get_or_insert(now);
                // NO_HZ idle stops the tick, and a timekeeper gives up the
                // jiffies (tick_nohz_stop_tick) to the next CPU that ticks.
                if self.timekeeper == Some(cpu) {
                    self.timekeeper = None;
                }
            }
            Some(t) => {
                if let Some(since) = run.idle_since.take() {
                    run.idle_ns += now - since;
                }
                let cs = self.w.machine.costs.context_switch;
                // The kernel charges a switch to the task switched in (its
                // exec_start is stamped before context_switch()), so the
                // switch is part of its CPU time and of what its policy
                // accounts; but a task woken by its timer has paid for it in
                // timer_wakeup (measured as the sleeper's own CPU time per
                // sleep), and there the switch stays the CPU's overhead.
                let charged = !std::mem::take(&mut self.progs[t as usize].switch_paid);
                run.switch_at = now;
                run.exec_start = if charged { now } else { now + cs };
                run.last_sync = run.exec_start;
                let exec_start = now + cs;
                let epoch = run.epoch;
                self.sys.cpus[cpu as usize].curr = Some(t);
                let info = &mut self.sys.tasks[t as usize];
                info.state = TaskState::Running;
                info.last_ran = exec_start;
                let spec = info.spec;
                let prog = &mut self.progs[t as usize];
                let stats = &mut prog.stats;
                stats.run_delay += exec_start - prog.runnable_since.min(exec_start);
                // A timed wakeup is seen by its thread once the sleep has
                // returned to it, which is part of what it pays.
                let seen_at = if charged {
                    exec_start
                } else {
                    let costs = &self.w.machine.costs;
                    exec_start + costs.timer_return.min(costs.timer_wakeup)
                };
                if let Some(w) = prog.woke_at.take() {
                    let lat = seen_at - w.min(seen_at);
                    stats.lat_sum += lat;
                    stats.lat_max = stats.lat_max.max(lat);
                    self.spec_lat[spec as usize].record(lat);
                }
                if let Some(last) = prog.last_exec_cpu.filter(|&l| l != cpu) {
                    {
                        let m = self.w.machine.costs.migration;
                        let cost = if self.sys.topology.share_cache(last, cpu) { m } else { 2 * m };
                        prog.remaining += cost;
                        prog.penalty += cost;
                    }
                }
                prog.last_exec_cpu = Some(cpu);
                if charged {
                    prog.remaining += cs;
                    prog.penalty += cs;
                }
                let at = now + cs + prog.remaining - if charged { cs } else { 0 };
                self.push(at, Kind::BurstEnd(cpu, epoch));
                self.arm_tick(cpu);
            }
        }
    }

    /// pick_next_task: the rt class first, then the policy. The policy puts
    /// a fair `prev` back itself, after choosing with it still current (as
    /// pick_task_fair then put_prev_set_next_task do); when rt work wins,
    /// the engine asks the policy to put it back.
    fn pick(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        if !self.rt.is_empty(cpu) {
            // Local rt work: no pull.
        } else if let Some((t, from)) = self.rt.find_pull(&self.sys, cpu) {
            {
                self.rt.dequeue(from, t);
                self.sys.cpus[from as usize].nr_rt -= 1;
                self.sys.cpus[cpu as usize].nr_rt += 1;
                let prio = rt_prio(self.sys.tasks[t as usize].policy).expect("rt queue holds rt tasks");
                self.sys.migrate(t, cpu);
                self.rt.enqueue(cpu, t, prio);
            }
        }
        if let Some(t) = self.rt.pick(cpu) {
            if let Some(p) = prev.filter(|&p| !self.is_rt(p)) {
                let runnable = self.sys.tasks[p as usize].state == TaskState::Runnable;
                self.policy.put_prev(&mut self.sys, cpu, p, runnable);
            }
            return Some(t);
        }
        let mut next = self.policy.pick_next(&mut self.sys, cpu);
        if next.is_none() {
            self.policy.newidle_balance(&mut self.sys, cpu);
            next = self.policy.pick_next(&mut self.sys, cpu);
        }
        self.checked_pick(cpu, next)
    }
}

impl SchedPolicy {
    /// The name sched_setscheduler(2) and chrt use.
    pub fn label(self) -> &'static str {
        match self {
            SchedPolicy::Normal => "SCHED_NORMAL",
            SchedPolicy::Batch => "SCHED_BATCH",
            SchedPolicy::Idle => "SCHED_IDLE",
            SchedPolicy::Iso => "SCHED_ISO",
            SchedPolicy::Fifo(_) => "SCHED_FIFO",
            SchedPolicy::Rr(_) => "SCHED_RR",
        }
    }
}
