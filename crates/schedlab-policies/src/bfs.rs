//! BFS, the Brain Fuck Scheduler, as in Con Kolivas's v0.512 (Linux 4.8,
//! kernel/sched/bfs.c): one global runqueue shared by every CPU, ordered by
//! virtual deadline.
//!
//! - A task's deadline is set when its time slice is refilled: niffies (a
//!   global nanosecond clock) + prio_ratios\[nice\] x rr_interval x
//!   (MS_TO_NS(1) / 128), with prio_ratios\[0\] = 128 growing by 11/10 per
//!   nice level. Every slice is rr_interval long (MS_TO_US(6) = 6144 us);
//!   nice acts only through the deadline. A waking task keeps its deadline.
//! - earliest_deadline_task walks the queue in key order and takes the first
//!   task allowed on this CPU. With `interactive` off, a task that last ran on
//!   another CPU is compared with its deadline shifted left by the cache
//!   distance (locality_diff), BFS's soft affinity.
//! - A slice ends at the tick when less than RESCHED_US (100 us) is left, or
//!   at once if the task was scheduled in the first half of the previous tick
//!   and less than half a jiffy is left ("dither"). SCHED_BATCH gets a new
//!   deadline at every deschedule.
//! - try_preempt on wakeup: an idle allowed CPU (ranked by cache distance
//!   from the task's last CPU) first; else the CPU running the lowest
//!   priority, latest deadline task, preempted when the woken task's deadline
//!   is earlier. A preempted task that stays runnable kicks an idle CPU.
//! - SCHED_IDLE tasks run as SCHED_IDLEPRIO: after every normal task.
//! - SCHED_ISO tasks (`policy = "iso"`) are queued at ISO_PRIO, FIFO among
//!   themselves and ahead of every normal task, while the machine's ISO
//!   CPU use (iso_ticks: +100 a tick an ISO task runs, -(iso_ticks /
//!   ISO_PERIOD + 1) a tick on a CPU running something else, ISO_PERIOD =
//!   5 s of ticks x CPUs + 1) stays within sched_iso_cpu (70%); above it
//!   they are "refractory" and run as SCHED_NORMAL until it falls under 90%
//!   of the limit. This is the grq accounting of bfs.c (0.4xx-0.5xx).
//!
//! Left out: real-time tasks count as ISO time in BFS, but schedlab's rt
//! class runs them outside the policy, so they do not; SMT_NICE, CPU frequency scaling ("sticky"/
//! scaling_rq), the skiplist's O(log n) cost model (a BTreeSet gives the
//! same order).

use crate::common::{self, KeyedQueues, TunableSpec};
use schedlab_sim::workload::SchedPolicy;
use schedlab_sim::{CpuId, Dequeue, Enqueue, Nanos, Policy, Sys, TaskId, TaskState, Tunable, WakeKind, Workload};

pub const RESCHED_NS: Nanos = 100 * 1024;
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

/// timeslice(): MS_TO_US(rr_interval) microseconds, in ns.
pub fn timeslice_ns(rr_interval_ms: u64) -> u64 {
    (rr_interval_ms << 10) * 1000
}

#[derive(Clone, Debug, Default)]
struct DeadlineTask {
    deadline: u64,
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
    /// cpu_order (rq_order) of every CPU, computed at the first task.
    pub order: Vec<Vec<CpuId>>,
}

impl VirtualDeadlines {
    /// `rr_interval` and `interactive` under `policy`'s name.
    /// `extra`: the policy's own tunables beside these (read back with
    /// [`VirtualDeadlines::value`]).
    pub fn new(
        policy: &str,
        interactive_help: &'static str,
        extra: Vec<TunableSpec>,
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
            order: Vec::new(),
        })
    }

    pub fn task_new(&mut self, sys: &Sys, t: TaskId) {
        if self.order.is_empty() {
            self.order = (0..sys.nr_cpus).map(|c| common::cpu_order(sys, c)).collect();
        }
        if self.tasks.len() <= t as usize {
            self.tasks.resize(t as usize + 1, DeadlineTask::default());
        }
        self.time_slice_expired(sys, t);
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

    pub fn time_slice(&self, t: TaskId) -> i64 {
        self.tasks[t as usize].time_slice
    }

    pub fn account(&mut self, t: TaskId, delta: Nanos) {
        self.tasks[t as usize].time_slice -= delta as i64;
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

    /// time_slice_expired: a full slice and a new deadline from now.
    pub fn time_slice_expired(&mut self, sys: &Sys, t: TaskId) {
        let d = deadline_diff(&self.ratios, sys.task(t).nice, self.rr_interval);
        let s = &mut self.tasks[t as usize];
        s.time_slice = timeslice_ns(self.rr_interval) as i64;
        s.deadline = sys.now + d;
    }

    /// check_deadline at every deschedule: SCHED_BATCH is renewed every time.
    pub fn check_deadline(&mut self, sys: &Sys, t: TaskId) {
        if self.tasks[t as usize].time_slice < RESCHED_NS as i64 || sys.task(t).policy == SchedPolicy::Batch {
            self.time_slice_expired(sys, t);
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
    /// (never for SCHED_BATCH).
    pub fn can_preempt(&self, sys: &Sys, p: TaskId, rq: (u8, u64)) -> bool {
        let prio = self.class(sys, p);
        if prio != rq.0 {
            return prio < rq.0;
        }
        sys.task(p).policy != SchedPolicy::Batch && self.tasks[p as usize].deadline < rq.1
    }

    /// resched_best_idle: the allowed idle CPU nearest the task's cache.
    pub fn best_idle(&self, sys: &Sys, t: TaskId) -> Option<CpuId> {
        let from = sys.task(t).cpu;
        common::nearest(sys, from, (0..sys.nr_cpus).filter(|&c| sys.allowed(t, c) && sys.idle(c)))
    }

    /// schedule()'s first step, in BFS and MuQSS alike: the task that ran
    /// on `cpu` leaves it, its slice and deadline checked; it is returned
    /// if still runnable, for the caller to queue again.
    pub fn take_prev(&mut self, sys: &Sys, cpu: CpuId) -> Option<TaskId> {
        let prev = self.curr[cpu as usize].take()?;
        self.check_deadline(sys, prev);
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
    half_jiffy: Nanos,
    /// The global runqueue (queue 0).
    queue: KeyedQueues,
    last_tick: Vec<Nanos>,
    dither: Vec<bool>,
    iso: IsoLimit,
}

impl Bfs {
    pub fn new(w: &Workload) -> Result<Bfs, String> {
        let dl = VirtualDeadlines::new(
            "bfs",
            "1: pure deadline order; 0: bias against tasks whose cache is on another CPU",
            Vec::new(),
            w,
        )?;
        let n = w.nr_cpus() as usize;
        Ok(Bfs {
            iso: IsoLimit::bfs(w.machine.hz, w.nr_cpus(), dl.iso_cpu()),
            dl,
            half_jiffy: 500_000_000 / w.machine.hz as Nanos,
            queue: KeyedQueues::new(1),
            last_tick: vec![0; n],
            dither: vec![false; n],
        })
    }

    fn enqueue_task(&mut self, sys: &Sys, t: TaskId) {
        self.dl.set_iso_prio(sys, t, !self.iso.refractory);
        self.queue.insert(0, t, self.dl.key(sys, t, IDLEPRIO_KEY));
    }

    fn earliest_deadline_task(&self, sys: &Sys, cpu: CpuId) -> Option<TaskId> {
        let mut best: Option<(u64, TaskId)> = None;
        for (key, t) in self.queue.iter(0) {
            if !sys.allowed(t, cpu) {
                continue;
            }
            if !self.dl.interactive {
                let tcpu = sys.task(t).cpu;
                if tcpu != cpu {
                    let dl = key.checked_shl(common::locality(sys, tcpu, cpu)).unwrap_or(u64::MAX);
                    if best.is_none_or(|(b, _)| dl < b) {
                        best = Some((dl, t));
                    }
                    // The locality offset means a later entry may still win.
                    continue;
                }
            }
            return Some(best.map_or(t, |(b, bt)| if b < key { bt } else { t }));
        }
        best.map(|(_, t)| t)
    }
}

impl Policy for Bfs {
    fn name(&self) -> &'static str {
        "bfs"
    }

    fn tunables(&self) -> Vec<Tunable> {
        common::list_tunables(&self.dl.tun)
    }

    fn task_new(&mut self, sys: &mut Sys, t: TaskId, _parent: Option<TaskId>) {
        self.dl.task_new(sys, t);
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, _kind: WakeKind) -> CpuId {
        // try_preempt: an idle CPU first, else the CPU running the worst
        // (lowest priority, latest deadline) task.
        if let Some(c) = self.dl.best_idle(sys, t) {
            return c;
        }
        let mut best: Option<(CpuId, (u8, u64))> = None;
        for &c in &self.dl.order[prev as usize] {
            if !sys.allowed(t, c) {
                continue;
            }
            let p = self.dl.rq_prio(sys, c);
            if best.is_none_or(|(_, b)| p > b) {
                best = Some((c, p));
            }
        }
        best.map_or(prev, |(c, _)| c)
    }

    fn enqueue(&mut self, sys: &mut Sys, _cpu: CpuId, t: TaskId, _how: Enqueue) {
        self.enqueue_task(sys, t);
    }

    fn dequeue(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId, _why: Dequeue) {
        self.queue.remove(t);
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        let requeued = self.dl.take_prev(sys, cpu);
        if let Some(p) = requeued {
            self.enqueue_task(sys, p);
        }
        self.dither[cpu as usize] = sys.now.saturating_sub(self.last_tick[cpu as usize]) <= self.half_jiffy;
        let next = self.earliest_deadline_task(sys, cpu);
        if let Some(n) = next {
            self.queue.remove(n);
            self.dl.set_curr(sys, cpu, n);
        }
        self.dl.resched_suitable_idle(sys, requeued, next);
        next
    }

    fn put_prev(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, runnable: bool) {
        self.dl.curr[cpu as usize] = None;
        self.dl.check_deadline(sys, t);
        if runnable {
            self.enqueue_task(sys, t);
            if let Some(c) = self.dl.best_idle(sys, t) {
                sys.resched(c);
            }
        }
    }

    fn account(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId, delta: Nanos) {
        self.dl.account(t, delta);
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        // task_running_tick, then rq->last_tick = now.
        self.dl.iso_tick(sys, &mut self.iso, curr);
        let left = self.dl.time_slice(curr);
        let expire = if self.dither[cpu as usize] {
            if left > self.half_jiffy as i64 {
                false
            } else {
                self.dl.expire_now(curr);
                true
            }
        } else {
            left < RESCHED_NS as i64
        };
        if expire {
            sys.resched(cpu);
        }
        self.last_tick[cpu as usize] = sys.now;
    }

    fn wakeup_preempt(&mut self, sys: &mut Sys, cpu: CpuId, _curr: TaskId, woken: TaskId) -> bool {
        // IDLEPRIO tasks never preempt anything but idle.
        !VirtualDeadlines::is_idleprio(sys, woken) && self.dl.can_preempt(sys, woken, self.dl.rq_prio(sys, cpu))
    }

    fn yield_task(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        // sched_yield: give up the rest of the slice.
        self.dl.expire_now(t);
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
