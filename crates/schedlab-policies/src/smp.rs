//! SMP placement and load balancing shared by the per-CPU-runqueue
//! policies, after kernel/sched/fair.c of Linux 6.12.117 (cfs uses it as
//! well: 6.1.192's balancer differs in details this model leaves out):
//!
//! - `select_task_rq_fair`: new tasks go to the idlest allowed CPU
//!   (sched_balance_find_dst_cpu); wakeups record the waker's wakee flips
//!   and, unless wake_wide finds a waker serving many, try wake_affine
//!   (waker's CPU vs the previous one); then select_idle_sibling over the
//!   LLC: target, prev, the task's recent_used_cpu, an idle core when the
//!   LLC has one, else an idle SMT sibling of prev, else an idle CPU among
//!   the first nr_idle_scan of the LLC (SIS_UTIL: the scan depth falls
//!   with the LLC's utilization, to none at 85%, and is set by the
//!   periodic balance of the LLC domain). 6.1.192 has the same code for
//!   all of these (its recent_used_cpu tests the affinity of prev, which
//!   it has just stored, instead of the recent CPU's: the same answer
//!   unless the affinity changed, which workloads here do not do).
//! - `sched_balance_rq` (load_balance) per sched domain (SMT, MC = LLC, PKG),
//!   with the group classification has_spare / fully_busy / overloaded,
//!   calculate_imbalance's migrate_task and migrate_load cases, detach_tasks
//!   with cache hotness (sysctl_sched_migration_cost), nr_balance_failed
//!   shifting the load test, active balance after cache_nice_tries + 2
//!   failures of a task-count (migrate_task) imbalance, balance intervals
//!   of sd_weight ms times busy_factor 16 while busy, NO_HZ idle balancing
//!   kicked from busy CPUs, and new-idle balance.
//!
//! Among fully busy groups the balancer takes the later one (6.12; 6.1
//! keeps the first), their avg_load being left at 0 by both.
//!
//! Left out: group_imbalanced/misfit/asym classes (no capacity asymmetry is
//! modelled), the cluster level (sched_cluster_active), NUMA balancing;
//! newidle balance is not gated by avg_idle. These, and the wakeup path's
//! wake_wide, recent_used_cpu and SIS_UTIL, matter on machines larger than
//! the 2-CPU guests of `schedlab validate`, which has not measured them.

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
    /// sd->last_balance: the interval is added when the CPU next checks,
    /// multiplied by busy_factor only if it is busy then, so a CPU that
    /// balanced while busy and has since gone idle is due after the idle
    /// interval, not the busy one.
    last_balance: Nanos,
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
    /// SCHED_FEAT(SIS_UTIL), on by default since 6.0; off, the wakeup's
    /// scan is not cut (SIS_PROP, its predecessor, is not modelled).
    pub sis_util: bool,
}

/// MAX_PINNED_INTERVAL: how far the balance interval grows while every
/// task it finds is pinned away.
const MAX_PINNED_INTERVAL: Nanos = 512_000_000;

impl Default for LbTunables {
    fn default() -> Self {
        LbTunables { migration_cost_ns: 500_000, nr_migrate: 32, sis_util: true }
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
    /// sd_llc_shared->nr_idle_scan per LLC: how many CPUs a wakeup's
    /// select_idle_cpu may look at. The workload starts on an idle machine,
    /// whose last periodic balance left it at the LLC's size.
    nr_idle_scan: Vec<u32>,
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
            nr_idle_scan: vec![t.threads_per_core * t.cores_per_llc; t.llcs as usize],
            lb_count: 0,
            balanced_moves: 0,
            active_moves: 0,
        };
        for cpu in 0..t.nr_cpus() {
            for l in 0..b.levels.len() {
                let interval = b.span(t, cpu, l).len() as Nanos * 1_000_000;
                b.dom.push(DomState { last_balance: 0, interval, failed: 0 });
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
        // get_sd_balance_interval: busy_factor 16 while busy.
        let busy_factor = if idle == IdleKind::Busy { 16 } else { 1 };
        for level in 0..self.levels.len() {
            let now = sys.now;
            let d = *self.dom_mut(cpu, level);
            if now < d.last_balance + d.interval * busy_factor {
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
            d.last_balance = now;
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
        // "Computing avg_load makes sense only when group is overloaded":
        // a fully busy group's stays 0, which decides the choice among
        // such groups and leaves calculate_imbalance nothing to pull from
        // one.
        if s.kind == GroupType::Overloaded {
            s.avg_load = s.load * SCHED_CAPACITY_SCALE / s.capacity;
        }
        s
    }

    /// update_idle_cpu_scan (SIS_UTIL): the share of the LLC a wakeup
    /// scans for an idle CPU, y = 1 - (util/capacity)^2 * (pct/100)^2 in
    /// units of SCHED_CAPACITY_SCALE, so that it reaches none when the LLC
    /// is as busy as an overloaded group (85% at imbalance_pct 117).
    /// Integer arithmetic as the kernel's.
    fn update_idle_cpu_scan(&mut self, sys: &Sys, cpu: CpuId, sum_util: f64, pct: u32) {
        let llc_weight = sys.topology.llc_cpus(cpu).len() as u32;
        self.nr_idle_scan[sys.topology.llc_of(cpu) as usize] = idle_scan_depth(sum_util as u64, llc_weight, pct);
    }

    /// The CPUs select_idle_cpu may look at in `cpu`'s LLC now.
    pub fn idle_scan_depth(&self, sys: &Sys, cpu: CpuId) -> u32 {
        if self.tun.sis_util { self.nr_idle_scan[sys.topology.llc_of(cpu) as usize] } else { u32::MAX }
    }

    /// update_sd_pick_busiest, for a group `a` met after the busiest so
    /// far, `b`. Fully busy groups all have an avg_load of 0 (6.12.117:
    /// the later one is taken, unless `b` is a core of SMT siblings, which
    /// "need more help").
    fn busier(a: &GroupStats, b: &GroupStats, smt_groups: bool) -> bool {
        if a.kind != b.kind {
            return a.kind > b.kind;
        }
        match a.kind {
            GroupType::Overloaded => a.avg_load > b.avg_load,
            GroupType::FullyBusy => !smt_groups,
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

        if self.tun.sis_util
            && idle != IdleKind::NewlyIdle
            && self.span(&sys.topology, this, level) == sys.topology.llc_cpus(this)
        {
            self.update_idle_cpu_scan(sys, this, stats.iter().map(|s| s.util).sum(), lv.imbalance_pct);
        }

        // The groups of the MC level are cores: SMT siblings when cores have
        // more than one thread.
        let smt_groups = lv.kind == LevelKind::Mc && sys.topology.threads_per_core > 1;
        let mut busiest_i = None;
        for (i, s) in stats.iter().enumerate() {
            if i == local_i || s.nr == 0 {
                continue;
            }
            if s.kind == GroupType::HasSpare && s.nr <= 1 {
                continue;
            }
            if busiest_i.is_none_or(|b: usize| Self::busier(s, &stats[b], smt_groups)) {
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

/// update_idle_cpu_scan's equations [2]-[4], in the kernel's integer
/// arithmetic: CPUs of an LLC of `llc_weight` whose CPUs' utilization sums
/// to `sum_util` (SCHED_CAPACITY_SCALE per busy CPU) that a wakeup scans.
fn idle_scan_depth(sum_util: u64, llc_weight: u32, imbalance_pct: u32) -> u32 {
    let scale = SCHED_CAPACITY_SCALE as u64;
    let x = sum_util / llc_weight as u64;
    let pct = imbalance_pct as u64;
    let tmp = (x * x * pct * pct / (10_000 * scale)).min(scale);
    ((scale - tmp) * llc_weight as u64 / scale) as u32
}

/// What select_task_rq_fair keeps in task_struct between wakeups.
#[derive(Clone, Copy, Debug)]
pub struct WakeeState {
    /// The task this one last woke, and how often it has woken another
    /// than the last (halved once a second): wake_wide's sign of a waker
    /// serving many.
    last_wakee: TaskId,
    wakee_flips: u32,
    wakee_flip_decay_at: Nanos,
    /// The CPU the task was on before its last wakeup.
    recent_used_cpu: CpuId,
}

impl WakeeState {
    /// A task that has woken nobody yet.
    const NEW: WakeeState =
        WakeeState { last_wakee: TaskId::MAX, wakee_flips: 0, wakee_flip_decay_at: 0, recent_used_cpu: 0 };
}

/// The per-task wakeup state of every task, by task id.
#[derive(Default)]
pub struct Wakees {
    tasks: Vec<WakeeState>,
}

impl Wakees {
    /// Sized once for the tasks the workload starts with.
    pub fn with_capacity(tasks: usize) -> Wakees {
        Wakees { tasks: Vec::with_capacity(tasks) }
    }

    /// A new task: wake_up_new_task sets recent_used_cpu to the CPU the
    /// task was created on, before its first CPU is chosen.
    pub fn task_new(&mut self, sys: &Sys, t: TaskId) {
        if self.tasks.len() <= t as usize {
            self.tasks.resize(t as usize + 1, WakeeState::NEW);
        }
        self.tasks[t as usize].recent_used_cpu = sys.task(t).cpu;
    }

    /// record_wakee, run by the waker.
    fn record(&mut self, now: Nanos, waker: TaskId, wakee: TaskId) {
        let w = &mut self.tasks[waker as usize];
        if now > w.wakee_flip_decay_at + 1_000_000_000 {
            w.wakee_flips >>= 1;
            w.wakee_flip_decay_at = now;
        }
        if w.last_wakee != wakee {
            w.last_wakee = wakee;
            w.wakee_flips += 1;
        }
    }

    /// wake_wide: a one-to-many pattern (the one of the pair that switches
    /// partners more does so at least llc_size times as often as the other,
    /// which does so at least llc_size times), which wake_affine would pile
    /// onto the waker's LLC.
    fn wide(&self, waker: TaskId, wakee: TaskId, llc_size: u32) -> bool {
        let (a, b) = (self.tasks[waker as usize].wakee_flips, self.tasks[wakee as usize].wakee_flips);
        let (master, slave) = if a < b { (b, a) } else { (a, b) };
        !(slave < llc_size || master < slave.saturating_mul(llc_size))
    }
}

/// select_task_rq_fair for the shared per-CPU-runqueue policies. `lb`
/// gives the SIS_UTIL scan depth of the LLCs.
pub fn select_task_rq(
    sys: &Sys,
    q: &impl LbQueues,
    wakees: &mut Wakees,
    lb: &Balancer,
    t: TaskId,
    prev: CpuId,
    kind: WakeKind,
) -> CpuId {
    if let Some(aff) = &sys.task(t).affinity
        && aff.count() == 1
    {
        return aff.first().expect("non-empty");
    }
    let prev = if sys.allowed(t, prev) { prev } else { first_allowed(sys, t) };
    match kind {
        WakeKind::New => find_idlest_cpu(sys, q, t, prev),
        WakeKind::Wakeup { waker, waker_cpu, sync } => {
            let mut target = prev;
            let mut want_affine = waker_cpu.is_some();
            if let (Some(w), Some(this)) = (waker, waker_cpu) {
                wakees.record(sys.now, w, t);
                want_affine = !wakees.wide(w, t, sys.topology.llc_cpus(this).len() as u32);
            }
            if want_affine
                && let Some(this) = waker_cpu
                && this != prev
                && sys.allowed(t, this)
            {
                target = wake_affine(sys, q, t, this, prev, sync);
            }
            select_idle_sibling(sys, wakees, lb, t, prev, target)
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

fn select_idle_sibling(sys: &Sys, wakees: &mut Wakees, lb: &Balancer, t: TaskId, prev: CpuId, target: CpuId) -> CpuId {
    if sys.idle(target) && sys.allowed(t, target) {
        return target;
    }
    if prev != target && sys.topology.share_cache(prev, target) && sys.idle(prev) && sys.allowed(t, prev) {
        return prev;
    }
    let recent = std::mem::replace(&mut wakees.tasks[t as usize].recent_used_cpu, prev);
    if recent != prev
        && recent != target
        && sys.topology.share_cache(recent, target)
        && sys.idle(recent)
        && sys.allowed(t, recent)
    {
        return recent;
    }
    // Nothing idle found: the target, if the task may run there.
    let fallback = if sys.allowed(t, target) { target } else { prev };
    let llc = sys.topology.llc_cpus(target);
    if llc.len() == 1 {
        // No LLC domain (sd_llc is NULL): nothing to scan.
        return fallback;
    }
    let n = llc.len() as CpuId;
    // for_each_cpu_wrap(cpu, sd span & p->cpus_ptr, target + 1).
    let ring_pos = |c: CpuId| (c - llc.start + n - (target - llc.start + 1) % n) % n;
    let ring = || (1..=n).map(|i| llc.start + (target - llc.start + i) % n).filter(|&c| sys.allowed(t, c));
    let smt = sys.topology.threads_per_core > 1;
    let has_idle_core = smt && sys.llc_has_idle_core(target);
    if smt && !has_idle_core && sys.topology.share_cache(prev, target) {
        // select_idle_smt: an idle sibling of prev, before select_idle_cpu
        // and whatever SIS_UTIL allows it.
        if let Some(c) = sys.topology.siblings(prev).find(|&s| s != prev && sys.idle(s) && sys.allowed(t, s)) {
            return c;
        }
    }
    // SIS_UTIL: select_idle_cpu does not scan an LLC busy enough to leave
    // no depth, for idle cores or CPUs.
    let depth = lb.idle_scan_depth(sys, target) as usize;
    if depth == 0 {
        return fallback;
    }
    if has_idle_core {
        // select_idle_core for each core once, at the first of its CPUs the
        // ring reaches; no depth limit. The first idle CPU of a busy core
        // met on the way is the answer if no core is idle after all.
        let mut idle_cpu = None;
        for c in ring() {
            let core = sys.topology.siblings(c);
            if core.clone().any(|s| s != c && sys.allowed(t, s) && ring_pos(s) < ring_pos(c)) {
                continue;
            }
            if core.clone().all(|s| sys.idle(s)) {
                return c;
            }
            if idle_cpu.is_none() {
                idle_cpu = core.clone().find(|&s| sys.idle(s) && sys.allowed(t, s));
            }
        }
        if let Some(c) = idle_cpu {
            return c;
        }
    } else if sys.llc_has_idle_cpu(target)
        && let Some(c) = ring().take(depth).find(|&c| sys.idle(c))
    {
        return c;
    }
    fallback
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

#[cfg(test)]
mod tests {
    use super::*;

    fn wakees(n: usize) -> Wakees {
        Wakees { tasks: vec![WakeeState::NEW; n] }
    }

    #[test]
    fn sis_util_scans_less_of_a_busier_llc_and_none_from_85_percent() {
        // 16 CPUs, imbalance_pct 117: y = 16 * (1 - (u * 1.17)^2).
        let depth = |pct_busy: u64| idle_scan_depth(16 * 1024 * pct_busy / 100, 16, 117);
        assert_eq!(depth(0), 16);
        assert_eq!(depth(25), 14);
        assert_eq!(depth(50), 10);
        assert_eq!(depth(75), 3);
        assert_eq!(depth(84), 0);
        assert_eq!(depth(85), 0);
        assert_eq!(depth(100), 0);
        // Utilization above capacity (PELT can overshoot) is no scan, not
        // an overflow.
        assert_eq!(idle_scan_depth(16 * 2048, 16, 117), 0);
    }

    fn group(kind: GroupType, avg_load: f64) -> GroupStats {
        GroupStats {
            cpus: 0..2,
            nr: 2,
            load: 0.0,
            util: 0.0,
            idle_cpus: 0,
            weight: 2,
            capacity: 2048.0,
            kind,
            avg_load,
        }
    }

    #[test]
    fn the_busiest_group_is_the_later_fully_busy_one_unless_smt() {
        let (busy, over) = (GroupType::FullyBusy, GroupType::Overloaded);
        assert!(Balancer::busier(&group(busy, 0.0), &group(busy, 0.0), false));
        assert!(!Balancer::busier(&group(busy, 0.0), &group(busy, 0.0), true));
        assert!(Balancer::busier(&group(over, 900.0), &group(busy, 0.0), true));
        assert!(!Balancer::busier(&group(over, 900.0), &group(over, 1000.0), false));
        assert!(Balancer::busier(&group(over, 1100.0), &group(over, 1000.0), false));
    }

    #[test]
    fn wake_wide_needs_a_one_to_many_pair() {
        const MS: Nanos = 1_000_000;
        // Task 0 wakes tasks 1..=16 in turn: 16 flips. Task 1 wakes 2 and
        // 3 in turn, twice: 4 flips. 0 waking 1 on an LLC of 4 is wide
        // (4 >= 4 and 16 >= 4 * 4); of 8 it is not (4 < 8).
        let mut w = wakees(17);
        for t in 1..=16 {
            w.record(t as Nanos * MS, 0, t);
        }
        for i in 0..4 {
            w.record(20 * MS + i * MS, 1, 2 + (i as TaskId % 2));
        }
        assert!(w.wide(0, 1, 4));
        assert!(w.wide(1, 0, 4), "the pair is symmetric");
        assert!(!w.wide(0, 1, 8));
        // Waking the same task again is no flip.
        let flips = w.tasks[0].wakee_flips;
        w.record(30 * MS, 0, 16);
        assert_eq!(w.tasks[0].wakee_flips, flips);
        // A second later the waker's flips halve at its next wakeup: 16 ->
        // 8, +1 for a new wakee: 9 < 4 * 4, no longer wide.
        w.record(1_100 * MS, 0, 5);
        assert_eq!(w.tasks[0].wakee_flips, 9);
        assert!(!w.wide(0, 1, 4));
    }
}
