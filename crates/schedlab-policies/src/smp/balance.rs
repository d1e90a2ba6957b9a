//! The load balancer: sched_balance_rq per sched domain (SMT, MC = LLC,
//! PKG) with its group statistics, imbalance, source CPU, detach_tasks and
//! active balance, the balance intervals, NO_HZ idle balancing and
//! new-idle balance.

use super::*;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LevelKind {
    Smt,
    Mc,
    Pkg,
}

#[derive(Clone, Debug)]
pub(super) struct Level {
    pub(super) kind: LevelKind,
    pub(super) imbalance_pct: u32,
    pub(super) cache_nice_tries: u32,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct DomState {
    /// sd->last_balance: the interval is added when the CPU next checks,
    /// multiplied by busy_factor only if it is busy then, so a CPU that
    /// balanced while busy and has since gone idle is due after the idle
    /// interval, not the busy one.
    pub(super) last_balance: Nanos,
    pub(super) interval: Nanos,
    pub(super) failed: u32,
    /// sd->newidle_call, newidle_success and newidle_ratio (NI_RANDOM):
    /// new-idle balances asked for, those that pulled (each weighted by
    /// the inverse of the odds it ran with), and the success rate in
    /// 1/1024 they last gave. A domain is built at 50%.
    pub(super) newidle_call: u32,
    pub(super) newidle_success: u32,
    pub(super) newidle_ratio: u32,
}

impl DomState {
    /// update_newidle_stats: the ratio is taken every 1024 calls, and the
    /// counts halved, so it follows the last thousand or so.
    fn newidle_stats(&mut self, success: u32) {
        self.newidle_call += 1;
        self.newidle_success += success;
        if self.newidle_call >= 1024 {
            self.newidle_ratio = self.newidle_success;
            self.newidle_call /= 2;
            self.newidle_success /= 2;
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

#[derive(Clone, Debug)]
pub(super) struct GroupStats {
    pub(super) cpus: Range<CpuId>,
    pub(super) nr: u32,
    pub(super) load: f64,
    pub(super) util: f64,
    pub(super) idle_cpus: u32,
    pub(super) weight: u32,
    pub(super) capacity: f64,
    pub(super) kind: GroupType,
    pub(super) avg_load: f64,
}

/// How one sched_balance_rq ended, which decides the next interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
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
pub(super) enum MigrationType {
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
    /// CONFIG_PREEMPTION: detach_tasks stops a new-idle pull after one task
    /// (distribution kernels build it with PREEMPT_DYNAMIC); without it a
    /// CPU going idle pulls as much as the imbalance.
    pub preemption: bool,
    /// SCHED_FEAT(NI_RANDOM): a domain's new-idle balance runs with the
    /// odds its past ones pulled something.
    pub ni_random: bool,
}

/// MAX_PINNED_INTERVAL: how far the balance interval grows while every
/// task it finds is pinned away.
pub(super) const MAX_PINNED_INTERVAL: Nanos = 512_000_000;

impl Default for LbTunables {
    fn default() -> Self {
        LbTunables { migration_cost_ns: 500_000, nr_migrate: 32, sis_util: true, preemption: false, ni_random: false }
    }
}

pub struct Balancer {
    pub(super) levels: Vec<Level>,
    /// [cpu * levels + level]
    pub(super) dom: Vec<DomState>,
    pub(super) nohz_next: Nanos,
    pub tun: LbTunables,
    pub(super) scratch: Vec<TaskId>,
    /// CPUs a balance found all pinned (env->cpus cleared), reused.
    pub(super) excluded: Vec<CpuId>,
    /// sd_llc_shared->nr_idle_scan per LLC: how many CPUs a wakeup's
    /// select_idle_cpu may look at. The workload starts on an idle machine,
    /// whose last periodic balance left it at the LLC's size.
    pub(super) nr_idle_scan: Vec<u32>,
    /// sched_balance_rq calls (schedstat lb_count).
    pub lb_count: u64,
    pub balanced_moves: u64,
    pub active_moves: u64,
    /// sched_rng() for NI_RANDOM's dice: the kernel's per-CPU prandom
    /// state, seeded from the workload's seed so a run repeats.
    rng: Pcg32,
}

impl Balancer {
    pub fn new(t: &Topology, tun: LbTunables, seed: u64) -> Balancer {
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
            rng: Pcg32::seed_from_u64(seed ^ 0x6e69_5f72_616e_646f),
        };
        for cpu in 0..t.nr_cpus() {
            for l in 0..b.levels.len() {
                let interval = b.span(t, cpu, l).len() as Nanos * 1_000_000;
                b.dom.push(DomState {
                    last_balance: 0,
                    interval,
                    failed: 0,
                    newidle_call: 512,
                    newidle_success: 256,
                    newidle_ratio: 512,
                });
            }
        }
        b
    }

    pub(super) fn span(&self, t: &Topology, cpu: CpuId, level: usize) -> Range<CpuId> {
        match self.levels[level].kind {
            LevelKind::Smt => t.siblings(cpu),
            LevelKind::Mc => t.llc_cpus(cpu),
            LevelKind::Pkg => 0..t.nr_cpus(),
        }
    }

    pub(super) fn groups(&self, sys: &Sys, cpu: CpuId, level: usize) -> Vec<Range<CpuId>> {
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
    pub(super) fn group_of(&self, t: &Topology, cpu: CpuId, level: usize) -> Range<CpuId> {
        match self.levels[level].kind {
            LevelKind::Smt => cpu..cpu + 1,
            LevelKind::Mc => t.siblings(cpu),
            LevelKind::Pkg => t.llc_cpus(cpu),
        }
    }

    /// sd->min_interval = sd_weight (ms); max_interval = 2 * sd_weight.
    pub(super) fn min_interval(&self, sys: &Sys, cpu: CpuId, level: usize) -> Nanos {
        self.span(&sys.topology, cpu, level).len() as Nanos * 1_000_000
    }

    pub(super) fn dom_mut(&mut self, cpu: CpuId, level: usize) -> &mut DomState {
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

    pub(super) fn rebalance_domains(&mut self, sys: &mut Sys, q: &mut dyn LbQueues, cpu: CpuId, idle: IdleKind) {
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
        // rd->overloaded: no domain is looked at, nor a die thrown, unless
        // some CPU has waiting work.
        if !sys.may_have_waiting(0..sys.nr_cpus) {
            return;
        }
        for level in 0..self.levels.len() {
            // NI_RANDOM: a 1024-sided die against 1 + the success rate; a
            // balance that runs counts its success at the inverse of its
            // odds, so the rate stays that of every call.
            let mut weight = 1;
            if self.tun.ni_random {
                let d1k = self.rng.random::<u32>() % 1024;
                let odds = 1 + self.dom_mut(cpu, level).newidle_ratio;
                if d1k > odds {
                    self.dom_mut(cpu, level).newidle_stats(0);
                    continue;
                }
                weight = (1024 + odds / 2) / odds;
            }
            let span = self.span(&sys.topology, cpu, level);
            let moved = sys.may_have_waiting(span.clone())
                && span.clone().any(|c| q.cpu_nr(sys, c) >= 2)
                && self.load_balance(sys, q, cpu, level, IdleKind::NewlyIdle) == Outcome::Moved;
            self.dom_mut(cpu, level).newidle_stats(weight * u32::from(moved));
            if moved {
                return;
            }
        }
    }

    /// update_sg_lb_stats: the group's CPUs outside `excluded` (env->cpus)
    /// count; its weight and capacity stay the whole group's.
    pub(super) fn group_stats(
        &self,
        sys: &Sys,
        q: &dyn LbQueues,
        cpus: Range<CpuId>,
        pct: u32,
        excluded: &[CpuId],
    ) -> GroupStats {
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
    pub(super) fn update_idle_cpu_scan(&mut self, sys: &Sys, cpu: CpuId, sum_util: f64, pct: u32) {
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
    pub(super) fn busier(a: &GroupStats, b: &GroupStats, smt_groups: bool) -> bool {
        if a.kind != b.kind {
            return a.kind > b.kind;
        }
        match a.kind {
            GroupType::Overloaded => a.avg_load > b.avg_load,
            GroupType::FullyBusy => !smt_groups,
            GroupType::HasSpare => a.idle_cpus < b.idle_cpus || (a.idle_cpus == b.idle_cpus && a.nr > b.nr),
        }
    }

    pub(super) fn load_balance(
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

    /// One pass of sched_balance_rq: the busiest group and CPU, the tasks
    /// pulled from it, and what the pass ended as.
    pub(super) fn find_and_move(
        &mut self,
        sys: &mut Sys,
        q: &mut dyn LbQueues,
        this: CpuId,
        level: usize,
        idle: IdleKind,
        excluded: &mut Vec<CpuId>,
    ) -> Outcome {
        let lv = self.levels[level].clone();
        let Some((busiest, mtype, imbalance)) = self.find_src_group(sys, q, this, level, idle, excluded) else {
            return Outcome::Balanced;
        };
        let Some(src) = find_src_rq(sys, q, &busiest, mtype, imbalance, this, excluded) else {
            return Outcome::Balanced;
        };
        let src_nr = q.cpu_nr(sys, src);
        let (moved, all_pinned) = self.detach_tasks(sys, q, src, this, level, idle, mtype, imbalance);

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

    /// sched_balance_find_src_group with should_we_balance before it and
    /// calculate_imbalance after: the busiest group, how its imbalance is
    /// counted and how much of it to move; None when balanced.
    pub(super) fn find_src_group(
        &mut self,
        sys: &Sys,
        q: &dyn LbQueues,
        this: CpuId,
        level: usize,
        idle: IdleKind,
        excluded: &[CpuId],
    ) -> Option<(GroupStats, MigrationType, f64)> {
        let lv = self.levels[level].clone();
        let groups = self.groups(sys, this, level);
        let stats: Vec<GroupStats> =
            groups.iter().map(|g| self.group_stats(sys, q, g.clone(), lv.imbalance_pct, excluded)).collect();
        let local_i = stats.iter().position(|s| s.cpus.contains(&this))?;
        let local = &stats[local_i];

        // should_we_balance: one CPU per group does the periodic work: the
        // first idle one, or the first one.
        if idle != IdleKind::NewlyIdle && local.weight > 1 {
            let first = local.cpus.clone().find(|&c| sys.idle(c)).unwrap_or(local.cpus.start);
            if first != this {
                return None;
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
        let busiest = &stats[busiest_i?];
        let total_load: f64 = stats.iter().map(|s| s.load).sum();
        let total_cap: f64 = stats.iter().map(|s| s.capacity).sum();
        let sd_avg = total_load * SCHED_CAPACITY_SCALE / total_cap;

        // sched_balance_find_src_group's early exits.
        if local.kind > busiest.kind {
            return None;
        }
        if local.kind == GroupType::Overloaded {
            if local.avg_load >= busiest.avg_load || local.avg_load >= sd_avg {
                return None;
            }
            if 100.0 * busiest.avg_load <= lv.imbalance_pct as f64 * local.avg_load {
                return None;
            }
        }
        if busiest.kind != GroupType::Overloaded {
            if idle == IdleKind::Busy {
                return None;
            }
            if busiest.weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                return None;
            }
            if busiest.nr <= 1 {
                return None;
            }
        }

        // calculate_imbalance.
        let (mtype, imbalance) = if local.kind == GroupType::HasSpare {
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
                    return None;
                }
            }
            let imb = ((busiest.avg_load - sd_avg) * busiest.capacity).min((sd_avg - local_avg) * local.capacity)
                / SCHED_CAPACITY_SCALE;
            (MigrationType::Load, imb)
        };
        (imbalance > 0.0).then(|| (busiest.clone(), mtype, imbalance))
    }

    /// detach_tasks and attach_tasks: pulls from `src` to `this` until the
    /// imbalance is moved (one task for a new-idle pull); how many moved
    /// and whether every task there was pinned away from `this`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn detach_tasks(
        &mut self,
        sys: &mut Sys,
        q: &mut dyn LbQueues,
        src: CpuId,
        this: CpuId,
        level: usize,
        idle: IdleKind,
        mtype: MigrationType,
        mut imbalance: f64,
    ) -> (u32, bool) {
        let lv = self.levels[level].clone();
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
            // "NEWIDLE balancing is a source of latency, so preemptible
            // kernels will stop after the first task is detached."
            if (self.tun.preemption && idle == IdleKind::NewlyIdle) || imbalance <= 0.0 {
                break;
            }
        }
        self.scratch = cands;

        (moved, all_pinned)
    }
}

/// sched_balance_find_src_rq: the CPU of `busiest` to pull from, the most
/// loaded (or the one with most tasks when counting tasks) that has
/// something to give.
pub(super) fn find_src_rq(
    sys: &Sys,
    q: &dyn LbQueues,
    busiest: &GroupStats,
    mtype: MigrationType,
    imbalance: f64,
    this: CpuId,
    excluded: &[CpuId],
) -> Option<CpuId> {
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
    src
}

/// update_idle_cpu_scan's equations [2]-[4], in the kernel's integer
/// arithmetic: CPUs of an LLC of `llc_weight` whose CPUs' utilization sums
/// to `sum_util` (SCHED_CAPACITY_SCALE per busy CPU) that a wakeup scans.
pub(super) fn idle_scan_depth(sum_util: u64, llc_weight: u32, imbalance_pct: u32) -> u32 {
    let scale = SCHED_CAPACITY_SCALE as u64;
    let x = sum_util / llc_weight as u64;
    let pct = imbalance_pct as u64;
    let tmp = (x * x * pct * pct / (10_000 * scale)).min(scale);
    ((scale - tmp) * llc_weight as u64 / scale) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newidle_ratio_is_the_weighted_successes_of_the_last_thousand_calls() {
        // A domain is built at 512 calls, 256 successes, ratio 512.
        let mut d = DomState {
            last_balance: 0,
            interval: 0,
            failed: 0,
            newidle_call: 512,
            newidle_success: 256,
            newidle_ratio: 512,
        };
        // 511 more calls leave the ratio where it was built...
        for _ in 0..511 {
            d.newidle_stats(0);
        }
        assert_eq!((d.newidle_call, d.newidle_ratio), (1023, 512));
        // ...the 1024th takes the successes as the ratio and halves both.
        d.newidle_stats(2);
        assert_eq!((d.newidle_ratio, d.newidle_call, d.newidle_success), (258, 512, 129));
        // A run of balances that all pull, each counted at the inverse of
        // its odds (2 at 50%), brings the ratio to every call's: each
        // halving takes it half way there.
        for i in 0..4096 {
            d.newidle_stats(if i & 1 == 0 { 2 } else { 0 });
        }
        assert!((1010..=1024).contains(&d.newidle_ratio), "{}", d.newidle_ratio);
    }
}
