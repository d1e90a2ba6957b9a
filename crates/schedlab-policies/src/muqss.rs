//! MuQSS, the Multiple Queue Skiplist Scheduler, as in Con Kolivas's v0.205
//! (5.10-ck1, kernel/sched/MuQSS.c; ../shared/kernels/patches/muqss-5.10.patch,
//! the patch the muqss-5.10 kernel is built from): BFS's virtual deadlines
//! on skiplist runqueues, one per CPU or shared by a group of CPUs.
//!
//! - Deadlines, slices and nice ratios are BFS's ([`crate::bfs`]):
//!   niffies + prio_ratios\[nice\] x rr_interval, slices of
//!   MS_TO_US(rr_interval) "us" of 1024 ns (6.29 ms for 6 ms).
//! - rqshare (boot parameter `rqshare=`, default MuQSS's Kconfig default
//!   with SCHED_MC: mc): which CPUs share one runqueue, none, smt (SMT
//!   siblings), mc and llc (the cores of an LLC: schedlab's topology has no
//!   cluster below the LLC, so they are the same), smp and all (every CPU,
//!   one node). A shared runqueue is one skiplist that every CPU of the
//!   group takes from; each CPU keeps its own running task and load.
//! - earliest_deadline_task: a CPU looks at every runqueue in cache-locality
//!   order (rq_order: its own first, each shared runqueue once) and takes
//!   the task with the lowest key; a remote queue must be strictly better to
//!   win. With `interactive` off it only takes from a queue holding more
//!   tasks than the best seen so far.
//! - Niffies are per CPU (rq->niffies, shared runqueue or not), advanced by
//!   update_clocks wherever MuQSS calls it: the tick, schedule(), enqueue
//!   and dequeue on the CPU's runqueue (take_task's dequeue on the CPU the
//!   task was on), a fork. Each update adds the CPU's clock since the last
//!   one, but at least JIFFIES_TO_NS of the jiffies seen since the last
//!   jiffy it saw, counted from then: a CPU whose tick reads jiffies before
//!   the timekeeping CPU has advanced them (`Sys::jiffies`) sees two at
//!   the next one and gains a jiffy. The two niffies are made equal only
//!   where one CPU holds both runqueue locks: trylock_rq of a remote
//!   runqueue whose first key beats the best so far (never with one
//!   shared runqueue). Deadlines are stamped on the stamping CPU's niffies
//!   and slices counted down by them (update_cpu_clock_tick/_switch at the
//!   tick, at a switch and at a fork), so deadlines of two CPUs drift
//!   apart: with 3 hogs on 2 CPUs the hog on the CPU that lags renews an
//!   earlier deadline than the queued one's at every expiry and keeps its
//!   CPU. A muqss-5.10 guest (rqshare=mc) shows it: a nice 19 thread's
//!   /proc priority (task_prio: 1 + (deadline - its CPU's niffies) x 40 /
//!   the nice 19 deadline) read on CPU 0 just after its deadline was
//!   stamped on CPU 1, and the other way, put CPU 1's niffies about 50-95 ms
//!   ahead of CPU 0's when a workload started and 56 to over 250 ms ahead
//!   after 1 s of 3 spinners, the lone spinner on CPU 0 in 6 boots of 7
//!   (tools/validation/muqss-niffies.c). The CPUs' niffies start as far
//!   apart as the machine says (`Machine::niffies_ahead`, which validate
//!   takes from what the runner reads in each run), else together. In
//!   validate's boots of the runner of 6f41595 (the guest calibrated again,
//!   its CPUs' ticks 7-11 us apart) one hog kept CPU 0 in every boot: 0.3-0.6
//!   migrations a second and the hogs' shares 25-50 points apart, against
//!   0.3 and 40 simulated with the guest's costs; the boots of the day before
//!   moved a hog 3.4-4.6 times a second, in episodes where the three took
//!   turns on both CPUs (0.57-0.74 s of a traced boot), which the model does
//!   not produce: what brought those guests' niffies back within a slice of
//!   each other was not found.
//! - Slices end with hrexpiry (a high-resolution timer, armed
//!   US_TO_NS(time_slice) ahead, which fires as late as the machine's
//!   timers do) unless the tick finds them used up first on the CPU's
//!   niffies.
//! - wake_up_new_task: the child stays on the forking CPU's runqueue (no
//!   select_best_rq), starts with its parent's deadline and half its slice
//!   (the parent's hrexpiry is armed again for its half); a parent left
//!   under RESCHED_US is rescheduled and the child gets its own slice and
//!   deadline, with only an idle CPU kicked for it. Either way an idle CPU
//!   is kicked (resched_best_idle) and takes the child from the forking
//!   CPU's runqueue if it is then the earliest deadline: the placement the
//!   trace shows is the forking CPU, the move a pick. Spawned tasks are
//!   threads, so the child-runs-first branch never applies.
//! - select_best_rq on wakeup: an idle CPU nearest the task's cache, else the
//!   CPU with the fewest tasks (rq->nr_running) in locality order;
//!   try_preempt then walks CPUs in locality order from there and preempts
//!   the first one whose running task has a later deadline (or lower
//!   priority class); with `interactive` off it skips CPUs no busier than
//!   the target.
//!
//! - SCHED_ISO: each CPU keeps its own ISO CPU use (rq->iso_ticks, not
//!   shared with the runqueue: iso_ticks decays by (ISO_PERIOD - 1) /
//!   ISO_PERIOD a tick, ISO_PERIOD = 5 s of ticks, +100 a tick an ISO task
//!   runs); past sched_iso_cpu (70%) that CPU is refractory and queues SCHED_ISO tasks as normal ones until it falls
//!   under 90% of the limit ([`crate::bfs::IsoLimit`]).
//!
//! - sched_yield() follows yield_type (sysctl kernel.yield_type, default 1):
//!   a yielder goes back in the queue with its deadline and runs on while
//!   that is the earliest, so a task that yields in a loop beside a hog
//!   still gets its rr_interval slices and half the CPU (type 2 expires the
//!   slice first, type 0 ignores the call).
//!
//! Left out: real-time tasks counting as ISO time (schedlab's rt class runs
//! them outside the policy), the catch-up decay of a CPU that ticks while
//! idle (NO_HZ idle CPUs do not tick here), SMT_NICE, the skiplist's level
//! randomisation (a BTreeSet gives the same order), and trylock_rq's
//! failures (a CPU skips a remote runqueue whose lock another CPU holds at
//! that instant; the simulation has no such instants).

use crate::bfs::{IsoAction, IsoLimit, RESCHED_US, VirtualDeadlines, us_to_ns};
use crate::common::{self, KeyedQueues, SliceTimers, TunableSpec};
use schedlab_sim::{CpuId, Dequeue, Enqueue, Policy, Sys, TaskId, TaskState, Tunable, WakeKind, Workload};

const IDLEPRIO_KEY: u64 = 0xF000_0000_0000_0000;

/// rqshare's levels, as the boot parameter names them.
const RQSHARE: [&str; 6] = ["none", "smt", "mc", "llc", "smp", "all"];

pub struct Muqss {
    dl: VirtualDeadlines,
    /// One skiplist per runqueue, filed under its first CPU.
    rqs: KeyedQueues,
    /// The runqueue each CPU takes from and queues on (its leader CPU).
    queue_of: Vec<CpuId>,
    /// cpu_order of each CPU: every CPU in locality order, its own first
    /// (computed at the first task).
    order: Vec<Vec<CpuId>>,
    /// rq_order of each CPU: the distinct runqueues in locality order, its
    /// own first (computed with the CPUs' order at the first task).
    rq_order: Vec<Vec<CpuId>>,
    timers: SliceTimers,
    iso: Vec<IsoLimit>,
    yield_type: i64,
    /// Each CPU's niffies (its rq's, shared runqueue or not).
    clocks: Vec<Niffies>,
    /// p->last_ran: the niffies of the task's CPU when its run was last
    /// charged to its slice.
    last_ran: Vec<u64>,
}

/// A CPU's niffies, the clock its deadlines are stamped and its running
/// task's slice is counted on, and what update_clocks keeps to advance it.
/// It advances by the CPU's clock, but at a call that finds jiffies moved
/// on by at least JIFFIES_TO_NS(jiffies since its last such call) since
/// then: a CPU that sees a jiffy late and the next one on time gains the
/// difference, which nothing takes back. A CPU whose tick reads jiffies
/// before the timekeeper has advanced them (ticks of one jiffy reach the
/// CPUs in no fixed order) now and then sees two at once, and its niffies
/// run ahead of the timekeeper's; MuQSS synchronises two CPUs' niffies
/// (to the later) only where one CPU holds both runqueue locks.
#[derive(Clone, Default)]
struct Niffies {
    niffies: u64,
    old_clock: u64,
    last_niffy: u64,
    last_jiffy: u64,
    last_jiffy_niffies: u64,
}

impl Niffies {
    /// update_clocks at `clock` (sched_clock_cpu, never going back), with
    /// the kernel's `jiffies`.
    fn update(&mut self, clock: u64, jiffies: u64, tick_ns: u64) {
        let clock = clock.max(self.old_clock);
        // What synchronise_niffies added since the last update is not added
        // again.
        let ndiff = (clock - self.old_clock) as i128 - (self.niffies - self.last_niffy) as i128;
        self.old_clock = clock;
        let jdiff = jiffies.saturating_sub(self.last_jiffy);
        let minndiff = (jdiff as i128 * tick_ns as i128 - (self.niffies - self.last_jiffy_niffies) as i128).max(0);
        self.niffies += ndiff.max(minndiff) as u64;
        self.last_niffy = self.niffies;
        if jdiff > 0 {
            self.last_jiffy += jdiff;
            self.last_jiffy_niffies = self.niffies;
        }
    }
}

impl Muqss {
    pub fn new(w: &Workload) -> Result<Muqss, String> {
        let dl = VirtualDeadlines::new(
            "muqss",
            "1: the earliest deadline of all runqueues; 0: only from busier runqueues",
            vec![
                TunableSpec {
                    name: "rqshare",
                    value: 2,
                    min: 0,
                    max: 5,
                    help: "CPUs sharing a runqueue (boot parameter rqshare=): 0 none, 1 smt, 2 mc (default), 3 llc, \
                           4 smp, 5 all",
                },
                TunableSpec {
                    name: "yield_type",
                    value: 1,
                    min: 0,
                    max: 2,
                    help: "sched_yield(): 0 does nothing, 1 reschedules and runs a better deadline if one waits \
                           (default), 2 expires the slice and renews the deadline first",
                },
            ],
            true,
            w,
        )?;
        let n = w.nr_cpus();
        let topo = &w.machine.topology;
        let queue_of = (0..n)
            .map(|c| match dl.value("rqshare") {
                0 => c,
                1 => topo.siblings(c).start,
                2 | 3 => topo.llc_cpus(c).start,
                _ => 0,
            })
            .collect();
        let iso = vec![IsoLimit::muqss(w.machine.hz, dl.iso_cpu()); n as usize];
        let yield_type = dl.value("yield_type");
        Ok(Muqss {
            yield_type,
            dl,
            rqs: KeyedQueues::new(n as usize),
            queue_of,
            order: Vec::new(),
            rq_order: Vec::new(),
            timers: SliceTimers::new(n, 1 << 56),
            iso,
            clocks: start_niffies(&w.machine.niffies_ahead, n),
            last_ran: Vec::with_capacity(w.initial_tasks() as usize),
        })
    }

    /// update_clocks(cpu_rq(cpu)): the CPU's niffies brought up to now.
    fn update_clocks(&mut self, sys: &Sys, cpu: CpuId) -> u64 {
        let c = &mut self.clocks[cpu as usize];
        c.update(sys.now, sys.jiffies, sys.tick_ns);
        c.niffies
    }

    /// synchronise_niffies: both CPUs' niffies to the later of the two.
    fn synchronise_niffies(&mut self, a: CpuId, b: CpuId) {
        let n = self.clocks[a as usize].niffies.max(self.clocks[b as usize].niffies);
        self.clocks[a as usize].niffies = n;
        self.clocks[b as usize].niffies = n;
    }

    /// update_cpu_clock_tick/_switch: the task's run since its last charge,
    /// on `niffies`, comes off its slice, and it is charged up to there.
    /// (update_cpu_clock_switch leaves last_ran to the pick, which sets it
    /// for the task switched in: the same, as a task's last_ran is read
    /// only while it runs.)
    fn charge(&mut self, t: TaskId, niffies: u64) {
        let ran = niffies.saturating_sub(std::mem::replace(&mut self.last_ran[t as usize], niffies));
        self.dl.account(t, ran);
    }

    /// The boot parameter's name of an rqshare value.
    pub fn rqshare_name(value: i64) -> &'static str {
        RQSHARE.get(value as usize).copied().unwrap_or("?")
    }

    fn enqueue_task(&mut self, sys: &Sys, cpu: CpuId, t: TaskId) {
        self.update_clocks(sys, cpu);
        // The ISO limit is the CPU's (rq->iso_ticks is not shared).
        self.dl.set_iso_prio(sys, t, !self.iso[cpu as usize].refractory);
        self.rqs.insert(self.queue_of[cpu as usize], t, self.dl.key(sys, t, IDLEPRIO_KEY));
    }

    /// rq_load: the CPU's rq->nr_running.
    fn rq_load(sys: &Sys, cpu: CpuId) -> u32 {
        sys.cpus[cpu as usize].nr_running
    }

    fn earliest_deadline_task(&mut self, sys: &Sys, cpu: CpuId) -> Option<TaskId> {
        let (mut best, mut best_key, mut best_entries) = (None, u64::MAX, 0usize);
        for i in 0..self.rq_order[cpu as usize].len() {
            let other = self.rq_order[cpu as usize][i];
            let entries = self.rqs.len(other);
            if entries == 0 || (!self.dl.interactive && entries <= best_entries) {
                continue;
            }
            if i > 0 {
                // A remote runqueue is locked (trylock_rq, which
                // synchronises the two CPUs' niffies) only when its first
                // key beats the best so far.
                if self.rqs.iter(other).next().is_none_or(|(key, _)| key >= best_key) {
                    continue;
                }
                self.synchronise_niffies(cpu, other);
            }
            if let Some((key, t)) = self.rqs.iter(other).find(|&(_, t)| sys.allowed(t, cpu))
                && key < best_key
            {
                best = Some(t);
                best_key = key;
                best_entries = entries;
            }
        }
        best
    }
}

/// Each CPU's niffies at the start, as far apart as `ahead` says (ns ahead
/// of CPU 0's; only the differences count, so the lowest starts at 0).
fn start_niffies(ahead: &[i64], nr_cpus: u32) -> Vec<Niffies> {
    let at = |c: usize| ahead.get(c).copied().unwrap_or(0);
    let lowest = (0..nr_cpus as usize).map(at).min().unwrap_or(0);
    (0..nr_cpus as usize)
        .map(|c| {
            let n = (at(c) - lowest) as u64;
            Niffies { niffies: n, last_niffy: n, last_jiffy_niffies: n, ..Niffies::default() }
        })
        .collect()
}

/// rq_order: the runqueues of `order`'s CPUs, each once, in that order.
fn rq_order(order: &[CpuId], queue_of: &[CpuId]) -> Vec<CpuId> {
    // A mark per runqueue: a search of the list so far was quadratic in
    // CPUs per CPU with a runqueue each (rqshare=none).
    let mut seen = vec![false; queue_of.len()];
    order.iter().map(|&c| queue_of[c as usize]).filter(|&q| !std::mem::replace(&mut seen[q as usize], true)).collect()
}

impl Policy for Muqss {
    fn name(&self) -> &'static str {
        "muqss"
    }

    fn tunables(&self) -> Vec<Tunable> {
        common::list_tunables(&self.dl.tun)
    }

    fn task_new(&mut self, sys: &mut Sys, t: TaskId, parent: Option<TaskId>) {
        // The child starts on the forking CPU (sched_fork's set_task_cpu),
        // and a deadline it gets there is on that CPU's niffies.
        let cpu = sys.task(t).cpu;
        let niffies = self.update_clocks(sys, cpu);
        self.dl.task_new(sys, t, niffies);
        if self.last_ran.len() <= t as usize {
            self.last_ran.resize(t as usize + 1, 0);
        }
        self.last_ran[t as usize] = niffies;
        // account_task_cpu: the forking task's run so far comes off its
        // slice before wake_up_new_task halves it, and the child's
        // last_ran is its parent's.
        if let Some(p) = parent.filter(|&p| self.dl.curr[cpu as usize] == Some(p)) {
            self.charge(p, niffies);
        }
        if self.order.is_empty() {
            self.order = (0..sys.nr_cpus).map(|c| common::cpu_order(sys, c)).collect();
            self.rq_order = self.order.iter().map(|order| rq_order(order, &self.queue_of)).collect();
        }
        // wake_up_new_task (spawned tasks are threads, so never the
        // child-runs-first branch, which needs the forking task to be
        // p->parent).
        // The parent runs on with half its slice: hrexpiry again.
        if let Some(p) = parent
            && let Some((parent_cpu, left)) = self.dl.share_slice(sys, t, p)
        {
            self.timers.arm(sys, parent_cpu, sys.now + us_to_ns(left));
        }
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, kind: WakeKind) -> CpuId {
        let skip_preempt = self.dl.preempt_held(t);
        // A new task stays on the runqueue of the CPU that forked it
        // (sched_fork's set_task_cpu, and no select_best_rq in
        // wake_up_new_task): an idle CPU is only kicked for it, and takes it
        // from there if it is still the earliest deadline (try_preempt).
        if kind == WakeKind::New && sys.allowed(t, prev) {
            if skip_preempt {
                self.dl.hold_preempt(t);
            }
            return prev;
        }
        if let Some(c) = self.dl.best_idle(sys, t) {
            return c;
        }
        let mut best = (prev, u32::MAX);
        for &c in &self.order[prev as usize] {
            if sys.allowed(t, c) && Self::rq_load(sys, c) < best.1 {
                best = (c, Self::rq_load(sys, c));
            }
        }
        best.0
    }

    fn enqueue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, _how: Enqueue) {
        self.enqueue_task(sys, cpu, t);
    }

    fn dequeue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, _why: Dequeue) {
        self.update_clocks(sys, cpu);
        self.rqs.remove(t);
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        // __schedule: niffies brought up to date, the leaving task's run
        // charged (update_cpu_clock_switch), its slice checked on this
        // CPU's niffies.
        let niffies = self.update_clocks(sys, cpu);
        if let Some(p) = self.dl.curr[cpu as usize] {
            self.charge(p, niffies);
        }
        let requeued = self.dl.take_prev(sys, cpu, niffies);
        if let Some(p) = requeued {
            self.enqueue_task(sys, cpu, p);
        }
        let next = self.earliest_deadline_task(sys, cpu);
        match next {
            Some(n) => {
                // take_task: dequeue_task on the runqueue of the CPU the
                // task was on updates that CPU's niffies.
                self.update_clocks(sys, sys.task(n).cpu);
                self.rqs.remove(n);
                self.last_ran[n as usize] = niffies;
                self.dl.set_curr(sys, cpu, n);
                // hrexpiry: the slice ends US_TO_NS(time_slice) from now
                // (6144 "us" of a 6 ms rr_interval are 6.29 ms), when the
                // hrtimer fires.
                self.timers.arm(sys, cpu, sys.now + us_to_ns(self.dl.time_slice(n)));
            }
            None => self.timers.cancel(cpu),
        }
        self.dl.resched_suitable_idle(sys, requeued, next);
        next
    }

    fn put_prev(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, runnable: bool) {
        let niffies = self.update_clocks(sys, cpu);
        self.charge(t, niffies);
        self.dl.curr[cpu as usize] = None;
        self.timers.cancel(cpu);
        self.dl.check_deadline(sys, t, niffies);
        if runnable {
            self.enqueue_task(sys, cpu, t);
        }
    }

    // No `account`: MuQSS charges a slice only at the tick, at a switch and
    // at a fork, by the CPU's niffies since the task's last charge (see
    // `charge`), not by the time the engine saw it run.

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        // scheduler_tick: update_clocks, then update_cpu_clock_tick.
        let niffies = self.update_clocks(sys, cpu);
        self.charge(curr, niffies);
        let iso = self.dl.iso_tick(sys, &mut self.iso[cpu as usize], curr);
        if iso == IsoAction::Resched || self.dl.time_slice(curr) < RESCHED_US {
            sys.resched(cpu);
        }
    }

    fn wakeup_preempt(&mut self, sys: &mut Sys, cpu: CpuId, _curr: TaskId, woken: TaskId) -> bool {
        // try_preempt's first step, and all that a fork held from it gets
        // (wake_up_new_task's resched_best_idle): the idle CPU nearest the
        // task is kicked.
        let held = self.dl.preempt_held(woken);
        if let Some(c) = self.dl.best_idle(sys, woken) {
            sys.resched(c);
            return false;
        }
        if held || VirtualDeadlines::is_idleprio(sys, woken) {
            return false;
        }
        // try_preempt: the first CPU in locality order that p can preempt.
        let this_entries = Self::rq_load(sys, cpu);
        for &c in &self.order[cpu as usize] {
            if !self.dl.interactive && c != cpu && Self::rq_load(sys, c) <= this_entries {
                continue;
            }
            if sys.allowed(woken, c) && self.dl.can_preempt(sys, woken, self.dl.rq_prio(sys, c)) {
                if c == cpu {
                    return true;
                }
                sys.resched(c);
                return false;
            }
        }
        false
    }

    fn yield_task(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        // do_sched_yield: type 0 returns at once; otherwise schedule(),
        // where the yielder is requeued with the deadline it has and runs
        // on if that is still the earliest; type 2 first expires its slice
        // (time_slice_expired: a new slice and a later deadline).
        match self.yield_type {
            0 => return,
            2 => self.dl.expire_now(t),
            _ => {}
        }
        sys.resched(cpu);
    }

    fn timer(&mut self, sys: &mut Sys, token: u64) {
        if let Some(cpu) = self.timers.fired(token)
            && let Some(c) = self.dl.curr[cpu as usize]
        {
            self.dl.expire_now(c);
            sys.resched(cpu);
        }
    }

    fn unsupported(&self, sys: &Sys) -> Vec<String> {
        common::no_groups("muqss", sys)
    }

    fn check_invariants(&self, sys: &Sys) -> Result<(), String> {
        for cpu in 0..self.rqs.nr_queues() as CpuId {
            if self.queue_of[cpu as usize] != cpu && self.rqs.len(cpu) > 0 {
                return Err(format!("muqss: CPU {cpu} shares a runqueue but its own queue holds tasks"));
            }
            for (_, t) in self.rqs.iter(cpu) {
                if sys.task(t).state != TaskState::Runnable {
                    return Err(format!("muqss: task {t} queued on CPU {cpu} is {:?}", sys.task(t).state));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Niffies, start_niffies};

    #[test]
    fn niffies_start_as_far_apart_as_the_machine_says() {
        // Only the differences count: the lowest CPU starts at 0.
        let at = |ahead: &[i64], n| start_niffies(ahead, n).iter().map(|c| c.niffies).collect::<Vec<_>>();
        assert_eq!(at(&[0, 70_000_000], 2), [0, 70_000_000]);
        assert_eq!(at(&[0, -5_000_000, 2_000_000], 4), [5_000_000, 0, 7_000_000, 5_000_000]);
        assert_eq!(at(&[], 2), [0, 0]);
    }

    const TICK: u64 = 4_000_000;

    #[test]
    fn niffies_follow_the_clock_and_gain_what_a_jiffy_read_late_takes() {
        // Read on the jiffy, every jiffy: the clock's time, nothing more.
        let mut on_time = Niffies::default();
        for j in 1..=10 {
            on_time.update(j * TICK + 1_000, j, TICK);
        }
        assert_eq!(on_time.niffies, 10 * TICK + 1_000);
        // The same clock, but the ticks of jiffies 4 and 5 come before the
        // timekeeper's and read the jiffy before, and jiffy 6's after it:
        // jiffy 4 is first seen a whole jiffy late, jiffies 5 and 6 on
        // time at once, and update_clocks takes their two jiffies' length
        // over the one jiffy of clock since: a jiffy gained for good.
        let mut late = Niffies::default();
        for j in 1..=10 {
            let seen = match j {
                4 | 5 => j - 1,
                _ => j,
            };
            late.update(j * TICK + 1_000, seen, TICK);
        }
        assert_eq!(late.niffies, 11 * TICK + 1_000);
        // What synchronise_niffies added is taken out of the clock's next
        // advance: 3 jiffies added, 1 of clock since, nothing more.
        let mut synced = Niffies::default();
        synced.update(TICK, 1, TICK);
        synced.niffies += 3 * TICK;
        synced.update(2 * TICK, 2, TICK);
        assert_eq!(synced.niffies, 4 * TICK);
    }
}
