//! SMP placement and load balancing shared by the per-CPU-runqueue
//! policies, after kernel/sched/fair.c of Linux 6.12.117 (cfs uses it as
//! well: 6.1.192's balancer differs in details this model leaves out):
//!
//! - `select_task_rq_fair`: new tasks go to the idlest allowed CPU
//!   (sched_balance_find_dst_cpu); wakeups try wake_affine (waker's CPU vs
//!   the previous one) then select_idle_sibling over the LLC (target, prev,
//!   an idle core, an idle SMT sibling, any idle CPU).
//! - `sched_balance_rq` (load_balance) per sched domain (SMT, MC = LLC, PKG),
//!   with the group classification has_spare / fully_busy / overloaded,
//!   calculate_imbalance's migrate_task and migrate_load cases, detach_tasks
//!   with cache hotness (sysctl_sched_migration_cost), nr_balance_failed
//!   shifting the load test, active balance after cache_nice_tries + 2
//!   failures of a task-count (migrate_task) imbalance, balance intervals
//!   of sd_weight ms times busy_factor 16 while busy, NO_HZ idle balancing
//!   kicked from busy CPUs, and new-idle balance.
//!
//! Left out: group_imbalanced/misfit/asym classes (no capacity asymmetry is
//! modelled), SIS_UTIL's scan-depth cut, recent_used_cpu, wake_wide, NUMA
//! balancing; newidle balance is not gated by avg_idle. These matter on
//! machines larger than the 2-CPU guests of `schedlab validate`, which has
//! not measured them.

use schedlab_sim::{CpuId, Nanos, Sys, TaskId, Topology, WakeKind};
use std::ops::Range;

const SCHED_CAPACITY_SCALE: f64 = 1024.0;

/// What the balancer needs to know of, and do to, a policy's runqueues.
pub trait LbQueues {
    /// The first `max` tasks queued (not running, not delayed, not
    /// throttled) on `cpu` that the balancer may move, least recently run
    /// first: the ones detach_tasks looks at, from the tail of cfs_tasks.
    fn candidates(&self, sys: &Sys, cpu: CpuId, max: usize, out: &mut Vec<TaskId>);
    /// task_h_load: the task's PELT load as seen at the root.
    fn task_load(&self, sys: &Sys, t: TaskId) -> f64;
    /// The CPU's PELT load average (cfs_rq->avg.load_avg of the root).
    fn cpu_load(&self, sys: &Sys, cpu: CpuId) -> f64;
    /// The CPU's PELT utilization, 0..1024.
    fn cpu_util(&self, sys: &Sys, cpu: CpuId) -> f64;
    /// Tasks of this class the CPU's runqueue counts (rq->nr_running less
    /// other classes): not throttled ones, delayed ones until dequeued.
    fn cpu_nr(&self, sys: &Sys, cpu: CpuId) -> u32;
    /// Move a queued task between runqueues (detach_task + attach_task).
    fn move_task(&mut self, sys: &mut Sys, t: TaskId, from: CpuId, to: CpuId);
    /// Active balance: have `from` push its running task to `to` at its
    /// next schedule. Returns false when there is nothing to push.
    fn request_push(&mut self, sys: &mut Sys, from: CpuId, to: CpuId) -> bool;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LevelKind {
    Smt,
    Mc,
    Pkg,
}

#[derive(Clone, Debug)]
struct Level {
    kind: LevelKind,
    imbalance_pct: u32,
    cache_nice_tries: u32,
}

#[derive(Clone, Copy, Debug)]
struct DomState {
    next_balance: Nanos,
    interval: Nanos,
    failed: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

#[derive(Clone, Debug)]
struct GroupStats {
    cpus: Range<CpuId>,
    nr: u32,
    load: f64,
    util: f64,
    idle_cpus: u32,
    weight: u32,
    capacity: f64,
    kind: GroupType,
    avg_load: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleKind {
    Busy,
    Idle,
    NewlyIdle,
}

/// How one sched_balance_rq ended, which decides the next interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// out_balanced: nothing to do; nr_balance_failed = 0, interval doubles.
    Balanced,
    /// Unbalanced but nothing moved: nr_balance_failed++, interval reset.
    Failed,
    Moved,
    /// out_all_pinned: every task looked at is pinned away from this CPU,
    /// on every CPU outside its own group; nr_balance_failed = 0.
    AllPinned,
    /// out_one_pinned: the active balance found the busiest CPU's running
    /// task pinned there; `all_pinned` when LBF_ALL_PINNED was still set
    /// (the busiest CPU had only that task, so none was looked at).
    OnePinned {
        all_pinned: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MigrationType {
    Task,
    Load,
}

/// Tunables of the balancer, under the kernel's names.
#[derive(Clone, Debug)]
pub struct LbTunables {
    pub migration_cost_ns: Nanos,
    pub nr_migrate: u32,
}

/// MAX_PINNED_INTERVAL: how far the balance interval grows while every
/// task it finds is pinned away.
const MAX_PINNED_INTERVAL: Nanos = 512_000_000;

impl Default for LbTunables {
    fn default() -> Self {
        LbTunables { migration_cost_ns: 500_000, nr_migrate: 32 }
    }
}

pub struct Balancer {
    levels: Vec<Level>,
    /// [cpu * levels + level]
    dom: Vec<DomState>,
    nohz_next: Nanos,
    pub tun: LbTunables,
    scratch: Vec<TaskId>,
    /// CPUs a balance found all pinned (env->cpus cleared), reused.
    excluded: Vec<CpuId>,
    /// sched_balance_rq calls (schedstat lb_count).
    pub lb_count: u64,
    pub balanced_moves: u64,
    pub active_moves: u64,
}

impl Balancer {
    pub fn new(t: &Topology, tun: LbTunables) -> Balancer {
        let mut levels = Vec::new();
        if t.threads_per_core > 1 {
            levels.push(Level { kind: LevelKind::Smt, imbalance_pct: 110, cache_nice_tries: 0 });
        }
        if t.cores_per_llc > 1 {
            levels.push(Level { kind: LevelKind::Mc, imbalance_pct: 117, cache_nice_tries: 1 });
        }
        if t.llcs > 1 {
            levels.push(Level { kind: LevelKind::Pkg, imbalance_pct: 117, cache_nice_tries: 1 });
        }
        let mut b = Balancer {
            dom: Vec::with_capacity(levels.len() * t.nr_cpus() as usize),
            levels,
            nohz_next: 0,
            tun,
            scratch: Vec::new(),
            excluded: Vec::new(),
            lb_count: 0,
            balanced_moves: 0,
            active_moves: 0,
        };
        for cpu in 0..t.nr_cpus() {
            for l in 0..b.levels.len() {
                let interval = b.span(t, cpu, l).len() as Nanos * 1_000_000;
                b.dom.push(DomState { next_balance: interval, interval, failed: 0 });
            }
        }
        b
    }

    fn span(&self, t: &Topology, cpu: CpuId, level: usize) -> Range<CpuId> {
        match self.levels[level].kind {
            LevelKind::Smt => t.siblings(cpu),
            LevelKind::Mc => t.llc_cpus(cpu),
            LevelKind::Pkg => 0..t.nr_cpus(),
        }
    }

    fn groups(&self, sys: &Sys, cpu: CpuId, level: usize) -> Vec<Range<CpuId>> {
        let span = self.span(&sys.topology, cpu, level);
        let mut out = Vec::new();
        let mut c = span.start;
        while c < span.end {
            let g = self.group_of(&sys.topology, c, level);
            c = g.end;
            out.push(g);
        }
        out
    }

    /// The group of the domain at `level` that holds `cpu`.
    fn group_of(&self, t: &Topology, cpu: CpuId, level: usize) -> Range<CpuId> {
        match self.levels[level].kind {
            LevelKind::Smt => cpu..cpu + 1,
            LevelKind::Mc => t.siblings(cpu),
            LevelKind::Pkg => t.llc_cpus(cpu),
        }
    }

    /// sd->min_interval = sd_weight (ms); max_interval = 2 * sd_weight.
    fn min_interval(&self, sys: &Sys, cpu: CpuId, level: usize) -> Nanos {
        self.span(&sys.topology, cpu, level).len() as Nanos * 1_000_000
    }

    fn dom_mut(&mut self, cpu: CpuId, level: usize) -> &mut DomState {
        let n = self.levels.len();
        &mut self.dom[cpu as usize * n + level]
    }

    /// Called from a busy CPU's tick: its own periodic balance, and on behalf
    /// of idle CPUs (the NO_HZ idle balancer) when this CPU has waiting work.
    pub fn tick(&mut self, sys: &mut Sys, q: &mut dyn LbQueues, cpu: CpuId) {
        self.rebalance_domains(sys, q, cpu, IdleKind::Busy);
        if sys.now >= self.nohz_next && q.cpu_nr(sys, cpu) >= 2 {
            self.nohz_next = sys.now + sys.tick_ns;
            for idle in 0..sys.nr_cpus {
                if idle != cpu && sys.idle(idle) && sys.cpus[idle as usize].curr.is_none() {
                    self.rebalance_domains(sys, q, idle, IdleKind::Idle);
                }
            }
        }
    }

    fn rebalance_domains(&mut self, sys: &mut Sys, q: &mut dyn LbQueues, cpu: CpuId, idle: IdleKind) {
        for level in 0..self.levels.len() {
            let now = sys.now;
            let d = *self.dom_mut(cpu, level);
            if now < d.next_balance {
                continue;
            }
            let outcome = self.load_balance(sys, q, cpu, level, idle);
            let min = self.min_interval(sys, cpu, level);
            let d = self.dom_mut(cpu, level);
            d.interval = match outcome {
                Outcome::Balanced | Outcome::OnePinned { all_pinned: false } => (d.interval * 2).min(2 * min),
                // LBF_ALL_PINNED lets the interval grow to MAX_PINNED_INTERVAL,
                // past max_interval: a CPU facing only tasks it may not take
                // stops asking every few milliseconds.
                Outcome::AllPinned | Outcome::OnePinned { all_pinned: true } => {
                    if d.interval < MAX_PINNED_INTERVAL || d.interval < 2 * min { d.interval * 2 } else { d.interval }
                }
                Outcome::Failed | Outcome::Moved => min,
            };
            let busy_factor = if idle == IdleKind::Busy { 16 } else { 1 };
            d.next_balance = now + d.interval * busy_factor;
        }
    }

    /// sched_balance_newidle: pull work before going idle.
    pub fn newidle(&mut self, sys: &mut Sys, q: &mut dyn LbQueues, cpu: CpuId) {
        for level in 0..self.levels.len() {
            let span = self.span(&sys.topology, cpu, level);
            // rd->overload: nothing to pull unless some CPU has waiting work.
            if !sys.may_have_waiting(span.clone()) || !span.clone().any(|c| q.cpu_nr(sys, c) >= 2) {
                continue;
            }
            if self.load_balance(sys, q, cpu, level, IdleKind::NewlyIdle) == Outcome::Moved {
                return;
            }
        }
    }

    /// update_sg_lb_stats: the group's CPUs outside `excluded` (env->cpus)
    /// count; its weight and capacity stay the whole group's.
    fn group_stats(&self, sys: &Sys, q: &dyn LbQueues, cpus: Range<CpuId>, pct: u32, excluded: &[CpuId]) -> GroupStats {
        let mut s = GroupStats {
            cpus: cpus.clone(),
            nr: 0,
            load: 0.0,
            util: 0.0,
            idle_cpus: 0,
            weight: cpus.len() as u32,
            capacity: SCHED_CAPACITY_SCALE * cpus.len() as f64,
            kind: GroupType::HasSpare,
            avg_load: 0.0,
        };
        for c in cpus.filter(|c| !excluded.contains(c)) {
            s.nr += q.cpu_nr(sys, c);
            s.load += q.cpu_load(sys, c);
            s.util += q.cpu_util(sys, c);
            if sys.idle(c) {
                s.idle_cpus += 1;
            }
        }
        let pct = pct as f64;
        // group_is_overloaded / group_has_capacity.
        s.kind = if s.nr > s.weight && s.capacity * 100.0 < s.util * pct {
            GroupType::Overloaded
        } else if s.nr < s.weight || s.capacity * 100.0 > s.util * pct {
            GroupType::HasSpare
        } else {
            GroupType::FullyBusy
        };
        if s.kind >= GroupType::FullyBusy {
            s.avg_load = s.load * SCHED_CAPACITY_SCALE / s.capacity;
        }
        s
    }

    /// update_sd_pick_busiest.
    fn busier(a: &GroupStats, b: &GroupStats) -> bool {
        if a.kind != b.kind {
            return a.kind > b.kind;
        }
        match a.kind {
            GroupType::Overloaded | GroupType::FullyBusy => a.avg_load > b.avg_load,
            GroupType::HasSpare => a.idle_cpus < b.idle_cpus || (a.idle_cpus == b.idle_cpus && a.nr > b.nr),
        }
    }

    fn load_balance(
        &mut self,
        sys: &mut Sys,
        q: &mut dyn LbQueues,
        this: CpuId,
        level: usize,
        idle: IdleKind,
    ) -> Outcome {
        self.lb_count += 1;
        let mut excluded = std::mem::take(&mut self.excluded);
        excluded.clear();
        let (span, local) = (self.span(&sys.topology, this, level), self.group_of(&sys.topology, this, level));
        let outcome = loop {
            let outcome = self.find_and_move(sys, q, this, level, idle, &mut excluded);
            // LBF_ALL_PINNED: the busiest CPU is now left out; look again
            // unless only this CPU's own group is left.
            if outcome != Outcome::AllPinned || span.clone().all(|c| local.contains(&c) || excluded.contains(&c)) {
                break outcome;
            }
        };
        self.excluded = excluded;
        if matches!(outcome, Outcome::Balanced | Outcome::AllPinned) {
            self.dom_mut(this, level).failed = 0;
        }
        outcome
    }

    fn find_and_move(
        &mut self,
        sys: &mut Sys,
        q: &mut dyn LbQueues,
        this: CpuId,
        level: usize,
        idle: IdleKind,
        excluded: &mut Vec<CpuId>,
    ) -> Outcome {
        let lv = self.levels[level].clone();
        let groups = self.groups(sys, this, level);
        let stats: Vec<GroupStats> =
            groups.iter().map(|g| self.group_stats(sys, q, g.clone(), lv.imbalance_pct, excluded)).collect();
        let Some(local_i) = stats.iter().position(|s| s.cpus.contains(&this)) else {
            return Outcome::Balanced;
        };
        let local = &stats[local_i];

        // should_we_balance: one CPU per group does the periodic work: the
        // first idle one, or the first one.
        if idle != IdleKind::NewlyIdle && local.weight > 1 {
            let first = local.cpus.clone().find(|&c| sys.idle(c)).unwrap_or(local.cpus.start);
            if first != this {
                return Outcome::Balanced;
            }
        }

        let mut busiest_i = None;
        for (i, s) in stats.iter().enumerate() {
            if i == local_i || s.nr == 0 {
                continue;
            }
            if s.kind == GroupType::HasSpare && s.nr <= 1 {
                continue;
            }
            if busiest_i.is_none_or(|b: usize| Self::busier(s, &stats[b])) {
                busiest_i = Some(i);
            }
        }
        let Some(busiest_i) = busiest_i else {
            return Outcome::Balanced;
        };
        let busiest = &stats[busiest_i];
        let total_load: f64 = stats.iter().map(|s| s.load).sum();
        let total_cap: f64 = stats.iter().map(|s| s.capacity).sum();
        let sd_avg = total_load * SCHED_CAPACITY_SCALE / total_cap;

        // sched_balance_find_src_group's early exits.
        if local.kind > busiest.kind {
            return Outcome::Balanced;
        }
        if local.kind == GroupType::Overloaded {
            if local.avg_load >= busiest.avg_load || local.avg_load >= sd_avg {
                return Outcome::Balanced;
            }
            if 100.0 * busiest.avg_load <= lv.imbalance_pct as f64 * local.avg_load {
                return Outcome::Balanced;
            }
        }
        if busiest.kind != GroupType::Overloaded {
            if idle == IdleKind::Busy {
                return Outcome::Balanced;
            }
            if busiest.weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                return Outcome::Balanced;
            }
            if busiest.nr <= 1 {
                return Outcome::Balanced;
            }
        }

        // calculate_imbalance.
        let (mtype, mut imbalance) = if local.kind == GroupType::HasSpare {
            if busiest.weight == 1 || lv.kind != LevelKind::Pkg {
                let diff = busiest.nr.saturating_sub(local.nr) as f64;
                (MigrationType::Task, (diff / 2.0).floor().max(1.0))
            } else {
                let diff = local.idle_cpus.saturating_sub(busiest.idle_cpus) as f64;
                (MigrationType::Task, (diff / 2.0).floor().max(1.0))
            }
        } else {
            let mut local_avg = local.avg_load;
            if local.kind < GroupType::Overloaded {
                local_avg = local.load * SCHED_CAPACITY_SCALE / local.capacity;
                if local_avg >= busiest.avg_load || local_avg >= sd_avg {
                    return Outcome::Balanced;
                }
            }
            let imb = ((busiest.avg_load - sd_avg) * busiest.capacity).min((sd_avg - local_avg) * local.capacity)
                / SCHED_CAPACITY_SCALE;
            (MigrationType::Load, imb)
        };
        if imbalance <= 0.0 {
            return Outcome::Balanced;
        }

        // sched_balance_find_src_rq.
        let mut src = None;
        let mut best = f64::MIN;
        for c in busiest.cpus.clone() {
            let nr = q.cpu_nr(sys, c);
            if nr == 0 || c == this || excluded.contains(&c) {
                continue;
            }
            let metric = match mtype {
                MigrationType::Load => {
                    let load = q.cpu_load(sys, c);
                    if nr == 1 && load > imbalance {
                        continue;
                    }
                    load
                }
                MigrationType::Task => nr as f64,
            };
            if metric > best {
                best = metric;
                src = Some(c);
            }
        }
        let Some(src) = src else {
            return Outcome::Balanced;
        };

        // detach_tasks.
        let failed = self.dom_mut(this, level).failed;
        let mut cands = std::mem::take(&mut self.scratch);
        cands.clear();
        let src_nr = q.cpu_nr(sys, src);
        let loop_max = (self.tun.nr_migrate as usize).min(src_nr as usize);
        q.candidates(sys, src, loop_max, &mut cands);
        // can_migrate_task clears LBF_ALL_PINNED at the first task allowed
        // here, the running one included (the list's head, reached when the
        // loop gets that far).
        let mut all_pinned =
            !sys.cpus[src as usize].curr.is_some_and(|curr| cands.len() < loop_max && sys.allowed(curr, this));
        let mut moved = 0;
        for &t in &cands {
            if !sys.allowed(t, this) {
                continue;
            }
            all_pinned = false;
            let hot = sys.now.saturating_sub(sys.task(t).last_ran) < self.tun.migration_cost_ns;
            if hot && failed <= lv.cache_nice_tries {
                continue;
            }
            match mtype {
                MigrationType::Load => {
                    let load = q.task_load(sys, t).max(1.0);
                    let shifted = load / f64::from(1u32 << failed.min(31));
                    if shifted > imbalance {
                        continue;
                    }
                    imbalance -= load;
                }
                MigrationType::Task => imbalance -= 1.0,
            }
            q.move_task(sys, t, src, this);
            self.balanced_moves += 1;
            moved += 1;
            // CONFIG_PREEMPTION kernels stop a new-idle pull after one task.
            if idle == IdleKind::NewlyIdle || imbalance <= 0.0 {
                break;
            }
        }
        self.scratch = cands;

        let d = self.dom_mut(this, level);
        if moved > 0 {
            d.failed = 0;
            sys.resched(this);
            return Outcome::Moved;
        }
        if all_pinned && src_nr > 1 {
            excluded.push(src);
            return Outcome::AllPinned;
        }
        if idle != IdleKind::NewlyIdle {
            d.failed += 1;
            // need_active_balance (imbalanced_active_balance since 5.10):
            // only a task-count imbalance pushes a running task; a load
            // imbalance waits for nr_balance_failed to shift the load test
            // down until a queued task fits (misfit and asym capacity are
            // not modelled).
            if mtype == MigrationType::Task && d.failed > lv.cache_nice_tries + 2 {
                if sys.cpus[src as usize].curr.is_some_and(|curr| !sys.allowed(curr, this)) {
                    return Outcome::OnePinned { all_pinned: src_nr <= 1 };
                }
                // need_active_balance: push the running task instead; the
                // kernel then sets nr_balance_failed to cache_nice_tries + 1.
                d.failed = lv.cache_nice_tries + 1;
                if q.request_push(sys, src, this) {
                    self.active_moves += 1;
                    return Outcome::Moved;
                }
            }
        }
        Outcome::Failed
    }
}

/// select_task_rq_fair for the shared per-CPU-runqueue policies.
pub fn select_task_rq(sys: &Sys, q: &impl LbQueues, t: TaskId, prev: CpuId, kind: WakeKind) -> CpuId {
    if let Some(aff) = &sys.task(t).affinity
        && aff.count() == 1
    {
        return aff.first().expect("non-empty");
    }
    let prev = if sys.allowed(t, prev) { prev } else { first_allowed(sys, t) };
    match kind {
        WakeKind::New => find_idlest_cpu(sys, q, t, prev),
        WakeKind::Wakeup { waker_cpu, sync } => {
            let mut target = prev;
            if let Some(this) = waker_cpu
                && this != prev
                && sys.allowed(t, this)
            {
                target = wake_affine(sys, q, t, this, prev, sync);
            }
            select_idle_sibling(sys, t, prev, target)
        }
    }
}

fn first_allowed(sys: &Sys, t: TaskId) -> CpuId {
    sys.task(t).affinity.as_ref().and_then(|a| a.first()).unwrap_or(0)
}

/// wake_affine_idle, then wake_affine_weight.
fn wake_affine(sys: &Sys, q: &impl LbQueues, t: TaskId, this: CpuId, prev: CpuId, sync: bool) -> CpuId {
    if sys.idle(this) && sys.topology.share_cache(this, prev) {
        return if sys.idle(prev) { prev } else { this };
    }
    if sync && sys.cpus[this as usize].nr_running == 1 {
        return this;
    }
    if sys.idle(prev) {
        return prev;
    }
    let task_load = q.task_load(sys, t);
    let mut this_eff = q.cpu_load(sys, this);
    if sync {
        // The waker is about to sleep: its load leaves this CPU.
        let cur = sys.cpus[this as usize].curr.map_or(0.0, |c| q.task_load(sys, c));
        this_eff = (this_eff - cur).max(0.0);
    }
    this_eff += task_load;
    // prev_eff_load scaled by 100 + (imbalance_pct - 100) / 2 (sd imbalance 117).
    let prev_eff = (q.cpu_load(sys, prev) - task_load).max(0.0) * (100.0 + 17.0 / 2.0);
    if this_eff * 100.0 < prev_eff { this } else { prev }
}

fn select_idle_sibling(sys: &Sys, t: TaskId, prev: CpuId, target: CpuId) -> CpuId {
    if sys.idle(target) && sys.allowed(t, target) {
        return target;
    }
    if prev != target && sys.topology.share_cache(prev, target) && sys.idle(prev) && sys.allowed(t, prev) {
        return prev;
    }
    let llc = sys.topology.llc_cpus(target);
    let n = llc.len() as CpuId;
    let scan = |f: &dyn Fn(CpuId) -> bool| {
        (1..=n).map(|i| llc.start + (target - llc.start + i) % n).find(|&c| sys.allowed(t, c) && f(c))
    };
    if sys.topology.threads_per_core > 1 {
        // select_idle_core: a core whose every thread is idle.
        if sys.llc_has_idle_core(target)
            && let Some(c) = scan(&|c| sys.topology.siblings(c).all(|s| sys.idle(s)))
        {
            return c;
        }
        if let Some(c) = sys.topology.siblings(target).find(|&s| sys.idle(s) && sys.allowed(t, s)) {
            return c;
        }
    }
    if sys.llc_has_idle_cpu(target)
        && let Some(c) = scan(&|c| sys.idle(c))
    {
        return c;
    }
    if sys.allowed(t, target) { target } else { prev }
}

/// sched_balance_find_dst_cpu, flattened: the allowed CPU with the fewest
/// runnable tasks, then the least load, then the nearest to the parent
/// (the first in CPU order on a full tie).
///
/// It runs at every fork and visits every CPU, as the kernel's group walk
/// does, so it narrows in passes: the runnable counts alone first, the load
/// (which decays PELT to now) only on the CPUs with the fewest, the
/// distance only on those that tie on load too.
fn find_idlest_cpu(sys: &Sys, q: &impl LbQueues, t: TaskId, prev: CpuId) -> CpuId {
    let affinity = sys.task(t).affinity.as_ref();
    let allowed = |c: CpuId| affinity.is_none_or(|a| a.contains(c));
    let nr = |c: CpuId| sys.cpus[c as usize].nr_running;
    let Some(fewest) = (0..sys.nr_cpus).filter(|&c| allowed(c)).map(nr).min() else {
        return prev;
    };
    let distance = sys.topology.distance_from(prev);
    let mut best = prev;
    let mut best_key = (f64::MAX, u32::MAX);
    for c in (0..sys.nr_cpus).filter(|&c| nr(c) == fewest && allowed(c)) {
        let load = q.cpu_load(sys, c);
        if load > best_key.0 {
            continue;
        }
        let key = (load, distance(c));
        if key.0 < best_key.0 || key.1 < best_key.1 {
            best = c;
            best_key = key;
        }
    }
    best
}
