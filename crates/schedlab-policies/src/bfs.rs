//! BFS, the Brain Fuck Scheduler, as in Con Kolivas's v0.512 (Linux 4.8,
//! kernel/sched/bfs.c; read in the copy trilean/linux-4.9-pca carries,
//! whose banner is "BFS CPU scheduler v0.512"): one global runqueue shared
//! by every CPU, ordered by virtual deadline. MuQSS ([`crate::muqss`])
//! shares the deadline and slice machinery here (`VirtualDeadlines`).
//!
//! - A task's deadline is set when its time slice is refilled
//!   (time_slice_expired): niffies + prio_ratios\[nice\] x rr_interval x
//!   (MS_TO_NS(1) / 128), with prio_ratios\[0\] = 128 growing by 11/10 per
//!   nice level. Every slice is timeslice() = MS_TO_US(rr_interval) "us",
//!   counted down by NS_TO_US(ns) = ns >> 10, so a 6 ms rr_interval lasts
//!   6144 x 1024 ns = 6.29 ms; nice acts only through the deadline. A
//!   waking task keeps its deadline; SCHED_BATCH gets a new one at every
//!   deschedule (check_deadline).
//! - earliest_deadline_task walks the queue in key order and takes the first
//!   task allowed on this CPU. With `interactive` off, a task that last ran
//!   on another CPU is compared by its deadline shifted left by the cache
//!   distance (cpu_locality), and the first task that last ran here ends
//!   the walk.
//! - The tick (task_running_tick) ends a slice with less than RESCHED_US
//!   (100 "us") left, or, on a CPU that scheduled within half a jiffy of
//!   its last tick ("dither"), with at most HALF_JIFFY_US left.
//! - try_preempt on wakeup: the idle allowed CPU best_mask_cpu ranks first
//!   (the task's own, then by cache distance and busy SMT siblings); else
//!   the first CPU in the task's rq_order (its own CPU first, then by
//!   locality and CPU number) whose running task is of a worse class or a
//!   later deadline. A WF_SYNC wakeup with no idle CPU preempts nothing.
//!   A preempted task that stays runnable kicks an idle CPU.
//! - wake_up_new_task: the child takes its parent's deadline and half its
//!   slice; a parent left under RESCHED_US is rescheduled and the child
//!   gets its own slice and deadline, and only an idle CPU is kicked.
//!   Spawned tasks are threads, so child-runs-first (a forked process)
//!   never applies.
//! - sched_yield() only calls schedule(): the yielder runs on while its
//!   deadline is still the earliest.
//! - SCHED_IDLE tasks run as SCHED_IDLEPRIO: after every normal task.
//! - SCHED_ISO tasks (`policy = "iso"`) are queued at ISO_PRIO, FIFO among
//!   themselves and ahead of every normal task, while the machine's ISO
//!   CPU use (iso_ticks: +100 a tick an ISO task runs, -(iso_ticks /
//!   ISO_PERIOD + 1) a tick on a CPU running something else, ISO_PERIOD =
//!   5 s of ticks x CPUs + 1) stays within sched_iso_cpu (70%); above it
//!   they are "refractory" and run as SCHED_NORMAL until it falls under 90%
//!   of the limit.
//!
//! Left out: real-time tasks count as ISO time in BFS, but schedlab's rt
//! class runs them outside the policy, so they do not; the idle tick's
//! no_iso_tick (NO_HZ idle CPUs do not tick here); SMT_NICE, CPU frequency
//! hooks, the skiplist's O(log n) cost model (a BTreeSet gives the same
//! order, FIFO among equal keys). Topology: schedlab's LLC groups stand for
//! BFS's packages (cpu_locality 2 within one, 3 between them, one node).
//! docs/schedulers.md lists what the audit against v0.512 checked.

use crate::common::{self, KeyedQueues, TunableSpec};
use schedlab_sim::workload::SchedPolicy;
use schedlab_sim::{CpuId, Dequeue, Enqueue, Nanos, Policy, Sys, TaskId, TaskState, Tunable, WakeKind, Workload};

/// RESCHED_US: a slice with less than this left is as good as used up.
/// Slices are counted in BFS's "us", NS_TO_US(ns) = ns >> 10 (1024 ns).
pub const RESCHED_US: i64 = 100;
const IDLEPRIO_KEY: u64 = 0x00FF_0000_0000_0000;

/// prio_ratios[0..40] from sched_init: 128, then x 11/10 per nice level.
pub fn prio_ratios() -> [u64; 40] {
    let mut r = [0u64; 40];
    r[0] = 128;
    for i in 1..40 {
        r[i] = r[i - 1] * 11 / 10;
    }
    r
}

/// prio_deadline_diff: the deadline offset of a nice level, in ns.
pub fn deadline_diff(ratios: &[u64; 40], nice: i32, rr_interval_ms: u64) -> u64 {
    ratios[(nice + 20).clamp(0, 39) as usize] * rr_interval_ms * ((1u64 << 20) / 128)
}

/// timeslice(): MS_TO_US(rr_interval) = rr_interval << 10 of BFS's "us"
/// (1024 ns each): 6144 for 6 ms, which last 6.291456 ms.
pub fn timeslice_us(rr_interval_ms: u64) -> i64 {
    (rr_interval_ms << 10) as i64
}

/// NS_TO_US: ns >> 10, as both kernels count a slice down.
pub fn ns_to_us(ns: Nanos) -> i64 {
    (ns >> 10) as i64
}

/// US_TO_NS: "us" << 10, as MuQSS arms its slice timer (hrexpiry).
pub fn us_to_ns(us: i64) -> Nanos {
    (us.max(0) as Nanos) << 10
}

#[derive(Clone, Debug, Default)]
struct DeadlineTask {
    deadline: u64,
    /// What is left of the slice, in BFS's "us" (1024 ns).
    time_slice: i64,
    /// p->prio == ISO_PRIO: a SCHED_ISO task queued while ISO was allowed.
    iso_prio: bool,
}

/// The key ISO_PRIO tasks are queued under: before every deadline.
const ISO_KEY: u64 = 0;

/// What the tick does about SCHED_ISO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsoAction {
    None,
    /// The limit was hit while an ISO task ran as ISO: zero its slice.
    Expire,
    /// ISO is allowed again for a task running as normal: reschedule.
    Resched,
}

/// SCHED_ISO's CPU limit: BFS keeps one for the machine (linear decay,
/// ISO_PERIOD scaled by CPU count), MuQSS one per runqueue (exponential
/// decay over 5 s of ticks).
#[derive(Clone, Debug)]
pub struct IsoLimit {
    ticks: i64,
    pub refractory: bool,
    period: i64,
    iso_cpu: i64,
    per_rq: bool,
}

impl IsoLimit {
    pub fn bfs(hz: u32, nr_cpus: u32, iso_cpu: i64) -> IsoLimit {
        IsoLimit { ticks: 0, refractory: false, period: 5 * hz as i64 * nr_cpus as i64 + 1, iso_cpu, per_rq: false }
    }

    pub fn muqss(hz: u32, iso_cpu: i64) -> IsoLimit {
        IsoLimit { ticks: 0, refractory: false, period: 5 * hz as i64, iso_cpu, per_rq: true }
    }

    fn low_water(&self) -> i64 {
        self.period * (self.iso_cpu * 115 / 128)
    }

    /// One tick of a CPU running a task: `iso_policy` is SCHED_ISO,
    /// `iso_prio` whether it runs at ISO_PRIO.
    pub fn tick(&mut self, iso_policy: bool, iso_prio: bool) -> IsoAction {
        let p = self.period;
        if self.per_rq {
            // MuQSS iso_tick / no_iso_tick(rq, 1).
            if iso_prio {
                self.ticks = self.ticks * (p - 1) / p + 100;
                if self.ticks > p * self.iso_cpu {
                    self.refractory = true;
                    self.ticks = self.ticks.min(p * 100);
                }
            } else if self.ticks > 0 || self.refractory {
                self.ticks = self.ticks * (p - 1) / p;
                if self.ticks < self.low_water() {
                    self.refractory = false;
                    self.ticks = self.ticks.max(0);
                }
            }
            return match (iso_policy, iso_prio, self.refractory) {
                (true, true, true) => IsoAction::Expire,
                (true, false, false) => IsoAction::Resched,
                _ => IsoAction::None,
            };
        }
        // BFS task_running_tick: iso_tick / no_iso_tick, then
        // test_ret_isorefractory for an ISO task.
        if iso_policy && !self.refractory {
            if self.ticks <= p * 128 - 128 {
                self.ticks += 100;
            }
        } else if self.ticks > 0 {
            self.ticks -= self.ticks / p + 1;
            if self.refractory && self.ticks < self.low_water() {
                self.refractory = false;
            }
        }
        if iso_policy {
            if !self.refractory {
                self.refractory = self.ticks > p * self.iso_cpu;
            } else if self.ticks < self.low_water() {
                self.refractory = false;
            }
            if self.refractory && iso_prio {
                return IsoAction::Expire;
            }
        }
        IsoAction::None
    }
}

/// What BFS and MuQSS share: rr_interval slices, nice-scaled virtual
/// deadlines, the task running on each CPU, and how a task compares with
/// the one a CPU runs (can_preempt) or finds an idle CPU.
pub(crate) struct VirtualDeadlines {
    pub tun: Vec<TunableSpec>,
    rr_interval: u64,
    pub interactive: bool,
    ratios: [u64; 40],
    tasks: Vec<DeadlineTask>,
    pub curr: Vec<Option<TaskId>>,
    /// MuQSS's can_preempt refuses SCHED_BATCH; BFS v0.512's does not.
    batch_never_preempts: bool,
    /// A task whose coming wakeup does not try_preempt when no CPU is
    /// idle: a child whose parent's halved slice ran out, or (BFS) a
    /// WF_SYNC wakee; taken by the next placement or preemption check.
    no_try_preempt: Option<TaskId>,
}

impl VirtualDeadlines {
    /// `rr_interval` and `interactive` under `policy`'s name.
    /// `extra`: the policy's own tunables beside these (read back with
    /// [`VirtualDeadlines::value`]).
    /// `batch_never_preempts`: can_preempt returns false for SCHED_BATCH.
    pub fn new(
        policy: &str,
        interactive_help: &'static str,
        extra: Vec<TunableSpec>,
        batch_never_preempts: bool,
        w: &Workload,
    ) -> Result<VirtualDeadlines, String> {
        let mut tun = vec![
            TunableSpec {
                name: "rr_interval",
                value: 6,
                min: 1,
                max: 1000,
                help: "ms every task runs before its deadline is renewed (/proc/sys/kernel/rr_interval)",
            },
            TunableSpec { name: "interactive", value: 1, min: 0, max: 1, help: interactive_help },
            TunableSpec {
                name: "sched_iso_cpu",
                value: 70,
                min: 0,
                max: 100,
                help: "% of CPU SCHED_ISO tasks may use (over 5 s) before they run as SCHED_NORMAL",
            },
        ];
        tun.extend(extra);
        common::apply_tunables(policy, &mut tun, &w.tunables)?;
        Ok(VirtualDeadlines {
            rr_interval: common::value_of(&tun, "rr_interval") as u64,
            interactive: common::value_of(&tun, "interactive") != 0,
            tun,
            ratios: prio_ratios(),
            tasks: Vec::with_capacity(w.initial_tasks() as usize),
            curr: vec![None; w.nr_cpus() as usize],
            batch_never_preempts,
            no_try_preempt: None,
        })
    }

    /// A new task's slice and deadline, from `niffies`.
    pub fn task_new(&mut self, sys: &Sys, t: TaskId, niffies: u64) {
        if self.tasks.len() <= t as usize {
            self.tasks.resize(t as usize + 1, DeadlineTask::default());
        }
        self.time_slice_expired(sys, t, niffies);
    }

    pub fn is_idleprio(sys: &Sys, t: TaskId) -> bool {
        sys.task(t).policy == SchedPolicy::Idle
    }

    pub fn value(&self, name: &str) -> i64 {
        common::value_of(&self.tun, name)
    }

    pub fn iso_cpu(&self) -> i64 {
        common::value_of(&self.tun, "sched_iso_cpu")
    }

    /// enqueue_task's prio: ISO_PRIO for a SCHED_ISO task while the limit
    /// allows (isoprio_suitable), else the normal level.
    pub fn set_iso_prio(&mut self, sys: &Sys, t: TaskId, suitable: bool) {
        self.tasks[t as usize].iso_prio = sys.task(t).policy == SchedPolicy::Iso && suitable;
    }

    pub fn iso_prio(&self, t: TaskId) -> bool {
        self.tasks[t as usize].iso_prio
    }

    /// The tick's SCHED_ISO bookkeeping for the task running on a CPU;
    /// zeroes its slice when the limit was hit.
    pub fn iso_tick(&mut self, sys: &Sys, limit: &mut IsoLimit, curr: TaskId) -> IsoAction {
        let action = limit.tick(sys.task(curr).policy == SchedPolicy::Iso, self.iso_prio(curr));
        if action == IsoAction::Expire {
            self.expire_now(curr);
        }
        action
    }

    /// Priority class: 0 ISO_PRIO, 1 normal, 2 idleprio.
    fn class(&self, sys: &Sys, t: TaskId) -> u8 {
        if self.tasks[t as usize].iso_prio {
            0
        } else if Self::is_idleprio(sys, t) {
            2
        } else {
            1
        }
    }

    /// What is left of the slice, in BFS's "us" (1024 ns).
    pub fn time_slice(&self, t: TaskId) -> i64 {
        self.tasks[t as usize].time_slice
    }

    /// update_cpu_clock_tick/_switch: `delta` ns of running, counted down
    /// as NS_TO_US(delta).
    pub fn account(&mut self, t: TaskId, delta: Nanos) {
        self.tasks[t as usize].time_slice -= ns_to_us(delta);
    }

    /// wake_up_new_task's split of the slice, in BFS and MuQSS alike: a
    /// parent running on its CPU gives half its slice to the child, which
    /// starts with the parent's deadline (BFS copies rq_deadline, MuQSS
    /// keeps dup_task_struct's copy). A parent left with less than
    /// RESCHED_US gives up the CPU instead, the child keeps the slice and
    /// deadline of its own that task_new gave it, and its wakeup kicks only
    /// an idle CPU. Returns the parent's CPU and what it has left of its
    /// slice when it runs on.
    pub fn share_slice(&mut self, sys: &mut Sys, child: TaskId, parent: TaskId) -> Option<(CpuId, i64)> {
        let cpu = sys.task(parent).cpu;
        if self.curr[cpu as usize] != Some(parent) {
            return None;
        }
        let half = self.tasks[parent as usize].time_slice / 2;
        self.tasks[parent as usize].time_slice = half;
        if half < RESCHED_US {
            self.expire_now(parent);
            sys.resched(cpu);
            self.hold_preempt(child);
            return None;
        }
        let deadline = self.tasks[parent as usize].deadline;
        let c = &mut self.tasks[child as usize];
        c.deadline = deadline;
        c.time_slice = half;
        Some((cpu, half))
    }

    /// `t`'s coming wakeup does not try_preempt unless a CPU is idle.
    pub fn hold_preempt(&mut self, t: TaskId) {
        self.no_try_preempt = Some(t);
    }

    /// Whether `t`'s wakeup was held from try_preempt (the mark is taken:
    /// it holds for one placement or one preemption check).
    pub fn preempt_held(&mut self, t: TaskId) -> bool {
        std::mem::take(&mut self.no_try_preempt) == Some(t)
    }

    /// The deadline a task is queued and compared under (p->deadline).
    pub fn deadline(&self, t: TaskId) -> u64 {
        self.tasks[t as usize].deadline
    }

    /// The slice is used up (it ends at the next schedule).
    pub fn expire_now(&mut self, t: TaskId) {
        self.tasks[t as usize].time_slice = 0;
    }

    /// The queue key: the deadline, with `idle_mask` set for IDLEPRIO tasks
    /// so that they sort after every normal one; ISO_PRIO tasks by priority
    /// alone, FIFO.
    pub fn key(&self, sys: &Sys, t: TaskId, idle_mask: u64) -> u64 {
        let d = self.tasks[t as usize].deadline;
        if self.tasks[t as usize].iso_prio {
            ISO_KEY
        } else if Self::is_idleprio(sys, t) {
            d | idle_mask
        } else {
            d
        }
    }

    /// time_slice_expired: a full slice and a new deadline from `niffies`,
    /// the clock deadlines are kept in (BFS's one, the CPU's in MuQSS).
    pub fn time_slice_expired(&mut self, sys: &Sys, t: TaskId, niffies: u64) {
        let d = deadline_diff(&self.ratios, sys.task(t).nice, self.rr_interval);
        let s = &mut self.tasks[t as usize];
        s.time_slice = timeslice_us(self.rr_interval);
        s.deadline = niffies + d;
    }

    /// check_deadline at every deschedule: SCHED_BATCH is renewed every time.
    pub fn check_deadline(&mut self, sys: &Sys, t: TaskId, niffies: u64) {
        if self.tasks[t as usize].time_slice < RESCHED_US || sys.task(t).policy == SchedPolicy::Batch {
            self.time_slice_expired(sys, t, niffies);
        }
    }

    /// The priority class a CPU runs at, lower is better: ISO 0, normal 1,
    /// idleprio 2, an idle CPU 3 (PRIO_LIMIT); then its task's deadline.
    pub fn rq_prio(&self, sys: &Sys, cpu: CpuId) -> (u8, u64) {
        match self.curr[cpu as usize] {
            None => (3, u64::MAX),
            Some(c) => (self.class(sys, c), self.tasks[c as usize].deadline),
        }
    }

    /// can_preempt: a better class, or an earlier deadline in the same one
    /// (never for SCHED_BATCH in MuQSS).
    pub fn can_preempt(&self, sys: &Sys, p: TaskId, rq: (u8, u64)) -> bool {
        let prio = self.class(sys, p);
        if prio != rq.0 {
            return prio < rq.0;
        }
        if self.batch_never_preempts && sys.task(p).policy == SchedPolicy::Batch {
            return false;
        }
        self.tasks[p as usize].deadline < rq.1
    }

    /// resched_best_idle: the allowed idle CPU nearest the task's cache.
    pub fn best_idle(&self, sys: &Sys, t: TaskId) -> Option<CpuId> {
        let from = sys.task(t).cpu;
        common::nearest(sys, from, (0..sys.nr_cpus).filter(|&c| sys.allowed(t, c) && sys.idle(c)))
    }

    /// schedule()'s first step, in BFS and MuQSS alike: the task that ran
    /// on `cpu` leaves it, its slice and deadline checked; it is returned
    /// if still runnable, for the caller to queue again.
    pub fn take_prev(&mut self, sys: &Sys, cpu: CpuId, niffies: u64) -> Option<TaskId> {
        let prev = self.curr[cpu as usize].take()?;
        self.check_deadline(sys, prev, niffies);
        (sys.task(prev).state == TaskState::Runnable).then_some(prev)
    }

    /// The picked task, taken off its queue by the caller, runs on `cpu`.
    pub fn set_curr(&mut self, sys: &mut Sys, cpu: CpuId, next: TaskId) {
        if sys.task(next).cpu != cpu {
            sys.migrate(next, cpu);
        }
        self.curr[cpu as usize] = Some(next);
    }

    /// resched_suitable_idle: a task put back in the queue and not picked
    /// again may run at once on an idle CPU.
    pub fn resched_suitable_idle(&self, sys: &mut Sys, requeued: Option<TaskId>, next: Option<TaskId>) {
        if let Some(p) = requeued.filter(|&p| Some(p) != next)
            && let Some(c) = self.best_idle(sys, p)
        {
            sys.resched(c);
        }
    }
}

pub struct Bfs {
    dl: VirtualDeadlines,
    /// HALF_JIFFY_NS: schedule() dithers when the last tick is at most this
    /// long ago.
    half_jiffy_ns: Nanos,
    /// HALF_JIFFY_US: a dithering CPU's tick ends a slice with no more than
    /// this many of BFS's "us" left.
    half_jiffy_us: i64,
    jiffy_ns: Nanos,
    /// The global runqueue (queue 0).
    queue: KeyedQueues,
    /// rq_order of every CPU: by cpu_locality, then CPU number (sched_init_smp).
    order: Vec<Vec<CpuId>>,
    last_tick: Vec<Nanos>,
    dither: Vec<bool>,
    iso: IsoLimit,
}

/// The ranking bits of best_mask_cpu: lower is better.
const CPUIDLE_DIFF_THREAD: u32 = 1;
const CPUIDLE_DIFF_CORE: u32 = 2;
const CPUIDLE_CACHE_BUSY: u32 = 4;
const CPUIDLE_DIFF_CPU: u32 = 8;
const CPUIDLE_THREAD_BUSY: u32 = 16;

impl Bfs {
    pub fn new(w: &Workload) -> Result<Bfs, String> {
        let dl = VirtualDeadlines::new(
            "bfs",
            "1: pure deadline order; 0: bias against tasks whose cache is on another CPU",
            Vec::new(),
            false,
            w,
        )?;
        let n = w.nr_cpus() as usize;
        let hz = w.machine.hz as u64;
        Ok(Bfs {
            iso: IsoLimit::bfs(w.machine.hz, w.nr_cpus(), dl.iso_cpu()),
            dl,
            half_jiffy_ns: 1_000_000_000 / hz / 2,
            half_jiffy_us: (1_000_000 / hz / 2) as i64,
            jiffy_ns: 1_000_000_000 / hz,
            queue: KeyedQueues::new(1),
            order: Vec::new(),
            last_tick: vec![0; n],
            dither: vec![false; n],
        })
    }

    fn enqueue_task(&mut self, sys: &Sys, t: TaskId) {
        self.dl.set_iso_prio(sys, t, !self.iso.refractory);
        self.queue.insert(0, t, self.dl.key(sys, t, IDLEPRIO_KEY));
    }

    /// resched_best_idle's choice, best_mask_cpu: the task's own CPU if idle,
    /// else the idle allowed CPU of lowest CPUIDLE ranking (ties to the
    /// lowest CPU number). An SMT sibling is preferred unless the rest of
    /// its package is busy; any CPU whose SMT siblings are busy comes last.
    ///
    /// Idle is `sys.idle`: no task runs on the CPU or was sent to it. The
    /// kernel's cpu_idle_map bit stays set until the kicked CPU runs
    /// schedule(), microseconds in which a second wakeup would pick the same
    /// CPU; here tasks woken at one instant would all pick it.
    fn best_idle(&self, sys: &Sys, t: TaskId) -> Option<CpuId> {
        let from = sys.task(t).cpu;
        if sys.allowed(t, from) && sys.idle(from) {
            return Some(from);
        }
        let topo = &sys.topology;
        let all_idle = |cpus: std::ops::Range<CpuId>, but: CpuId| cpus.filter(|&c| c != but).all(|c| sys.idle(c));
        let mut best: Option<(u32, CpuId)> = None;
        for c in (0..sys.nr_cpus).filter(|&c| sys.allowed(t, c) && sys.idle(c)) {
            let locality = common::locality(sys, from, c);
            let mut ranking = match locality {
                3.. => CPUIDLE_DIFF_CPU,
                2 => CPUIDLE_DIFF_CORE,
                _ if !all_idle(topo.llc_cpus(c), c) => CPUIDLE_CACHE_BUSY,
                _ => 0,
            };
            if locality == 1 {
                ranking |= CPUIDLE_DIFF_THREAD;
            }
            if !all_idle(topo.siblings(c), c) {
                ranking |= CPUIDLE_THREAD_BUSY;
            }
            if best.is_none_or(|(b, _)| ranking < b) {
                best = Some((ranking, c));
            }
        }
        best.map(|(_, c)| c)
    }

    /// try_preempt after the idle CPUs: the first CPU in rq_order of the
    /// task's CPU whose running task it can preempt; with `interactive` off
    /// only CPUs with more tasks than its own.
    fn preemptible_cpu(&self, sys: &Sys, t: TaskId, this: CpuId) -> Option<CpuId> {
        if VirtualDeadlines::is_idleprio(sys, t) {
            return None;
        }
        // soft_affined of the task's CPU, the woken task counted.
        let this_entries = sys.cpus[this as usize].nr_running + 1;
        self.order[this as usize].iter().copied().find(|&c| {
            sys.allowed(t, c)
                && (self.dl.interactive || c == this || sys.cpus[c as usize].nr_running > this_entries)
                && self.dl.can_preempt(sys, t, self.dl.rq_prio(sys, c))
        })
    }

    /// earliest_deadline_task: the first task in deadline order allowed on
    /// this CPU. With `interactive` off a task cached on another CPU is
    /// compared with its deadline shifted left by the cache distance, and
    /// the first task that last ran here ends the search, whatever the
    /// shifted deadlines before it.
    fn earliest_deadline_task(&self, sys: &Sys, cpu: CpuId) -> Option<TaskId> {
        let mut edt: Option<TaskId> = None;
        let mut earliest_deadline = u64::MAX;
        for (_, t) in self.queue.iter(0) {
            if !sys.allowed(t, cpu) {
                continue;
            }
            if !self.dl.interactive {
                let tcpu = sys.task(t).cpu;
                if tcpu != cpu {
                    let dl = self.dl.deadline(t) << common::locality(sys, tcpu, cpu);
                    if dl < earliest_deadline {
                        earliest_deadline = dl;
                        edt = Some(t);
                    }
                    continue;
                }
            }
            return Some(t);
        }
        edt
    }
}

impl Policy for Bfs {
    fn name(&self) -> &'static str {
        "bfs"
    }

    fn tunables(&self) -> Vec<Tunable> {
        common::list_tunables(&self.dl.tun)
    }

    fn task_new(&mut self, sys: &mut Sys, t: TaskId, parent: Option<TaskId>) {
        if self.order.is_empty() {
            self.order = (0..sys.nr_cpus)
                .map(|from| {
                    let mut v: Vec<CpuId> = (0..sys.nr_cpus).collect();
                    v.sort_by_key(|&c| common::locality(sys, from, c));
                    v
                })
                .collect();
        }
        self.dl.task_new(sys, t, sys.now);
        // Spawned tasks are threads: p->parent is not the forking thread,
        // so BFS's child-runs-first (for a forked process) does not apply.
        if let Some(p) = parent {
            self.dl.share_slice(sys, t, p);
        }
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, kind: WakeKind) -> CpuId {
        let skip_preempt = self.dl.preempt_held(t);
        if let Some(c) = self.best_idle(sys, t) {
            return c;
        }
        let stay = if sys.allowed(t, prev) {
            prev
        } else {
            self.order[prev as usize].iter().copied().find(|&c| sys.allowed(t, c)).unwrap_or(prev)
        };
        // ttwu_activate: a WF_SYNC waker is about to sleep, so with no idle
        // CPU its wakee waits for it instead of preempting anything.
        if skip_preempt || matches!(kind, WakeKind::Wakeup { sync: true, .. }) {
            self.dl.hold_preempt(t);
            return stay;
        }
        self.preemptible_cpu(sys, t, stay).unwrap_or(stay)
    }

    fn enqueue(&mut self, sys: &mut Sys, _cpu: CpuId, t: TaskId, _how: Enqueue) {
        self.enqueue_task(sys, t);
    }

    fn dequeue(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId, _why: Dequeue) {
        self.queue.remove(t);
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        let requeued = self.dl.take_prev(sys, cpu, sys.now);
        if let Some(p) = requeued {
            self.enqueue_task(sys, p);
        }
        self.dither[cpu as usize] = sys.now.saturating_sub(self.last_tick[cpu as usize]) <= self.half_jiffy_ns;
        let next = self.earliest_deadline_task(sys, cpu);
        if let Some(n) = next {
            self.queue.remove(n);
            self.dl.set_curr(sys, cpu, n);
        }
        // resched_suitable_idle: the preempted task may run at once on an
        // idle CPU.
        if let Some(p) = requeued.filter(|&p| Some(p) != next)
            && let Some(c) = self.best_idle(sys, p)
        {
            sys.resched(c);
        }
        next
    }

    fn put_prev(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, runnable: bool) {
        self.dl.curr[cpu as usize] = None;
        self.dl.check_deadline(sys, t, sys.now);
        if runnable {
            self.enqueue_task(sys, t);
            if let Some(c) = self.best_idle(sys, t) {
                sys.resched(c);
            }
        }
    }

    fn account(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId, delta: Nanos) {
        // niffy_diff(&time_diff, 1): a gap of more than two jiffies is not
        // believed and counts as 1 ns.
        let delta = if delta > 2 * self.jiffy_ns { 1 } else { delta };
        self.dl.account(t, delta);
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        // task_running_tick, then rq->last_tick = now.
        self.dl.iso_tick(sys, &mut self.iso, curr);
        let left = self.dl.time_slice(curr);
        let expire = if self.dither[cpu as usize] {
            if left > self.half_jiffy_us {
                false
            } else {
                self.dl.expire_now(curr);
                true
            }
        } else {
            left < RESCHED_US
        };
        if expire {
            sys.resched(cpu);
        }
        self.last_tick[cpu as usize] = sys.now;
    }

    fn wakeup_preempt(&mut self, sys: &mut Sys, cpu: CpuId, _curr: TaskId, woken: TaskId) -> bool {
        if self.dl.preempt_held(woken) {
            return false;
        }
        // IDLEPRIO tasks never preempt anything but idle.
        !VirtualDeadlines::is_idleprio(sys, woken) && self.dl.can_preempt(sys, woken, self.dl.rq_prio(sys, cpu))
    }

    fn yield_task(&mut self, sys: &mut Sys, cpu: CpuId, _t: TaskId) {
        // sys_sched_yield only calls schedule(): the yielder goes back in
        // the queue with its deadline and runs on if that is the earliest.
        sys.resched(cpu);
    }

    fn unsupported(&self, sys: &Sys) -> Vec<String> {
        common::no_groups("bfs", sys)
    }

    fn check_invariants(&self, sys: &Sys) -> Result<(), String> {
        for (_, t) in self.queue.iter(0) {
            if sys.task(t).state != TaskState::Runnable {
                return Err(format!("bfs: queued task {t} is {:?}", sys.task(t).state));
            }
        }
        for (cpu, c) in self.dl.curr.iter().enumerate() {
            if let Some(t) = c
                && self.queue.queue_of(*t).is_some()
            {
                return Err(format!("bfs: task {t} runs on CPU {cpu} and is queued"));
            }
        }
        Ok(())
    }
}
