//! The Linux fair class, as CFS (Linux 6.1.192, the last CFS series; the
//! same code from 5.13 to 6.5) and as EEVDF (Linux 6.12.117), the versions
//! of the cfs-6.1 and eevdf-6.12 guest kernels `schedlab validate` checks
//! them against, sharing what the kernel shares between them in
//! kernel/sched/fair.c: per-CPU cfs_rqs in a hierarchy of task groups,
//! group entities weighted by calc_group_shares, CFS bandwidth control
//! (cpu.max), PELT load for balancing, and the SMP code in [`crate::smp`].
//!
//! CFS orders each cfs_rq by vruntime and follows sched_slice,
//! check_preempt_tick, check_preempt_wakeup with wakeup_gran, place_entity
//! (START_DEBIT, GENTLE_FAIR_SLEEPERS) and the skip/last/next buddies.
//!
//! EEVDF orders by virtual deadline and follows avg_vruntime and
//! entity_eligible, update_deadline, pick_eevdf with RUN_TO_PARITY's
//! protected slice (6.12's: until the deadline stashed at pick moves),
//! place_entity with PLACE_LAG and
//! PLACE_DEADLINE_INITIAL, update_entity_lag, DELAY_DEQUEUE with DELAY_ZERO,
//! PLACE_REL_DEADLINE, PREEMPT_SHORT and custom slices (sched_attr).
//!
//! Simplifications, each small against the decisions modelled: group shares
//! use instantaneous runqueue weight where the kernel uses max(weight,
//! load_avg); only task entities are delayed (the kernel may delay group
//! entities too); throttling is the per-cfs_rq throttle both versions
//! have. pick_eevdf walks the augmented
//! tree as the kernel does ([`tree`]).
//!
//! Three out-of-tree schedulers are built on this code as their patches
//! build on fair.c: [`bore`] on EEVDF, [`cacule`] and [`tt`] on CFS (their
//! runqueues become lists scanned for an interactivity score or a response
//! ratio, kept here as the tree in list order). Each one's own state,
//! tunables and helpers live in its file; the hooks below call them where
//! the patch changes fair.c, each behind a test of `self.bore` (`cacule`,
//! `tt`), so that a reader of one patch can grep for its field.

mod bore;
mod cacule;
mod rdb;
mod tree;
mod tt;
mod tunables;

pub use bore::BoreTunables;
pub use cacule::CaculeTunables;
pub use tt::{TaskType, TtTunables};

pub use tunables::{FairTunables, Features, Variant, scaling_factor};

use crate::pelt::Pelt;
use crate::smp::{Balancer, LbQueues, LbTunables, Wakees, select_task_rq};
use crate::weights::{calc_delta, calc_delta_fair, task_weight};
use schedlab_sim::Workload;
use schedlab_sim::workload::{GroupSpec, SchedPolicy};
use schedlab_sim::{CpuId, Dequeue, Enqueue, Nanos, Policy, Sys, TaskId, TaskState, Tunable, WakeKind};
use tree::{Node, Tree};

const NONE: u32 = u32::MAX;
/// MIN_SHARES: the smallest weight a group entity gets.
const MIN_SHARES: u64 = 2;
const TIMER_BANDWIDTH: u64 = 1 << 63;

#[derive(Clone, Debug)]
struct Ent {
    weight: u64,
    vruntime: i64,
    deadline: i64,
    vlag: i64,
    vprot: i64,
    slice: u64,
    custom_slice: bool,
    rel_deadline: bool,
    delayed: bool,
    on_rq: bool,
    sum_exec: u64,
    prev_sum_exec: u64,
    /// Key it is filed under in its cfs_rq's tree.
    key: i64,
    /// Enqueue order, for CacULE's and TT's head-inserted lists.
    list_seq: u64,
    /// The cfs_rq it belongs to.
    rq: u32,
    /// For a group entity, the cfs_rq it represents.
    my_rq: u32,
    task: u32,
    depth: u32,
    /// Its links in its cfs_rq's tree.
    node: Node,
}

/// What the class keeps per task, together: a wakeup reads all three.
#[derive(Clone, Debug)]
struct FairTask {
    se: u32,
    /// Index in its CPU's `cpu_tasks` (NONE when not queued).
    pos: u32,
    /// Runnable load (PELT).
    pelt: Pelt,
}

#[derive(Clone, Debug, Default)]
struct Rq {
    tree: Tree,
    /// The tree's first entry, cached as the kernel's rb_root_cached caches
    /// it: asked for on every update_curr, it is then a load, not a walk.
    leftmost: Option<(i64, u32)>,
    load: u64,
    nr_queued: u32,
    h_nr_running: u32,
    curr: Option<u32>,
    /// CFS: min_vruntime. EEVDF: zero_vruntime, the base of avg sums.
    min_vruntime: i64,
    /// EEVDF avg_vruntime: sum of (v - base) * w over tree entities.
    sum_wv: i128,
    sum_w: i64,
    skip: Option<u32>,
    last: Option<u32>,
    next: Option<u32>,
    cpu: CpuId,
    group: u32,
    /// The group entity that stands for this cfs_rq in its parent (NONE at
    /// the root).
    se: u32,
    runtime_remaining: i64,
    throttled: bool,
    throttled_at: Nanos,
}

#[derive(Clone, Debug)]
struct Bandwidth {
    quota: Nanos,
    period: Nanos,
    pool: Nanos,
    throttled: Vec<u32>,
    nr_periods: u64,
    nr_throttled: u64,
    throttled_ns: Nanos,
}

pub struct Fair {
    variant: Variant,
    tun: FairTunables,
    ents: Vec<Ent>,
    rqs: Vec<Rq>,
    /// Per task: its entity, its place in its CPU's list, its PELT.
    per_task: Vec<FairTask>,
    /// cgroup v2 cpu.weight turned into shares (weight * 1024 / 100).
    group_shares: Vec<u64>,
    /// Sum over CPUs of each group's cfs_rq load (tg->load_avg stand-in).
    group_load: Vec<u64>,
    bw: Vec<Option<Bandwidth>>,
    nr_cpus: u32,
    /// Per-CPU PELT of the root cfs_rq's load and of utilization.
    cpu_load: Vec<Pelt>,
    cpu_util: Vec<Pelt>,
    /// Queued fair tasks per CPU, for the balancer (a task's index in
    /// its list is `FairTask::pos`).
    cpu_tasks: Vec<Vec<TaskId>>,
    push_to: Vec<Option<CpuId>>,
    hrtick_epoch: Vec<u32>,
    lb: Option<Balancer>,
    /// What select_task_rq_fair keeps per task (wakee flips, recent CPU).
    wakees: Wakees,
    tick: u64,
    verify: bool,
    violations: Vec<String>,
    /// BORE on top of EEVDF, when built as `bore`.
    bore: Option<BoreTunables>,
    burst: Vec<bore::Burst>,
    parent_of: Vec<Option<TaskId>>,
    children: Vec<Vec<TaskId>>,
    /// CacULE on top of CFS, when built as `cacule`: a node per entity.
    cacule: Option<CaculeTunables>,
    cnodes: Vec<cacule::Node>,
    /// CacULE's balancer, which replaces CFS's (see [`rdb`]).
    rdb: Option<rdb::Rdb>,
    /// TT on top of CFS, when built as `tt`: a node per task entity, the
    /// dedicated CPU-bound task per CPU, and the last update_curr per task
    /// (time, delta) for the burst shift at sleep.
    tt: Option<TtTunables>,
    tnodes: Vec<tt::Node>,
    dedicated: Vec<Option<TaskId>>,
    last_charge: Vec<(Nanos, u64)>,
    list_seq: u64,
    /// Group scheduling off (TT): every task in the root cfs_rq.
    flat: bool,
}

/// Whose list order a CFS-based cfs_rq follows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ListOrder {
    /// The vruntime tree (CFS, BORE, EEVDF).
    Tree,
    Cacule,
    Tt,
}

impl Fair {
    pub fn new(variant: Variant, w: &Workload) -> Result<Fair, String> {
        Self::with_tunables(variant, w, &w.tunables)
    }

    /// BORE: EEVDF with burst penalties (see [`bore`]).
    pub fn new_bore(w: &Workload) -> Result<Fair, String> {
        let mut set = w.tunables.clone();
        let b = BoreTunables::take(&mut set)?;
        let mut f = Self::with_tunables(Variant::Eevdf, w, &set).map_err(|e| e.replace("for eevdf", "for bore"))?;
        // BORE: SCHED_TUNABLESCALING_NONE, base slice a whole number of ticks.
        f.tun.tunable_scaling = 0;
        f.tun.base_slice_ns = b.base_slice(f.tick);
        for e in &mut f.ents {
            e.slice = f.tun.base_slice_ns;
        }
        f.bore = Some(b);
        f.burst.reserve_exact(w.initial_tasks() as usize);
        f.parent_of.reserve_exact(w.initial_tasks() as usize);
        Ok(f)
    }

    /// CacULE: CFS ordered by interactivity score (see [`cacule`]).
    pub fn new_cacule(w: &Workload) -> Result<Fair, String> {
        let mut set = w.tunables.clone();
        let c = CaculeTunables::take(&mut set)?;
        Self::refuse_unknown("cacule", w, &c.list(), CaculeTunables::hides)?;
        let c_interval = c.rdb_interval_ms;
        let own_cost = set.contains_key("migration_cost_ns");
        let mut f = Self::with_tunables(Variant::Cfs, w, &set)?;
        f.cacule = Some(c);
        if !own_cost {
            f.tun.migration_cost_ns = 200_000;
        }
        // The patch takes SIS_UTIL out (SIS_PROP is back on).
        f.tun.features.sis_util = false;
        f.rdb = Some(rdb::Rdb::new(w, c_interval));
        f.lb = Some(Balancer::new(
            &w.machine.topology,
            LbTunables {
                migration_cost_ns: f.tun.migration_cost_ns,
                nr_migrate: f.tun.nr_migrate,
                sis_util: f.tun.features.sis_util,
            },
        ));
        // Group entities exist from boot: born at time 0.
        f.cnodes = vec![cacule::Node::default(); f.ents.len()];
        f.cnodes.reserve_exact(w.initial_tasks() as usize);
        Ok(f)
    }

    /// TT: CFS with task types and HRRN order (see [`tt`]).
    pub fn new_tt(w: &Workload) -> Result<Fair, String> {
        let mut set = w.tunables.clone();
        let t = TtTunables::take(&mut set, w.machine.tick_ns())?;
        Self::refuse_unknown("tt", w, &t.list(), |_| false)?;
        let mut flat = w.clone();
        flat.groups.truncate(1);
        let mut f = Self::with_tunables(Variant::Cfs, &flat, &set)?;
        f.flat = true;
        f.dedicated = vec![None; f.nr_cpus as usize];
        f.tt = Some(t);
        f.tnodes.reserve_exact(w.initial_tasks() as usize);
        Ok(f)
    }

    /// One error naming every tunable a CFS-based patch knows (CFS's own
    /// check would name only CFS's).
    fn refuse_unknown(policy: &str, w: &Workload, own: &[Tunable], hides: fn(&str) -> bool) -> Result<(), String> {
        let mut cfs = FairTunables::new(Variant::Cfs, w.nr_cpus(), &Default::default())?;
        let mut known: Vec<&str> = cfs.list(Variant::Cfs).iter().map(|t| t.name).filter(|n| !hides(n)).collect();
        known.extend(own.iter().map(|t| t.name));
        match w.tunables.keys().find(|k| !known.contains(&k.as_str())) {
            Some(name) => Err(format!("unknown tunable '{name}' for {policy}: known are {}", known.join(", "))),
            None => Ok(()),
        }
    }

    fn order(&self) -> ListOrder {
        if self.cacule.is_some() {
            ListOrder::Cacule
        } else if self.tt.is_some() {
            ListOrder::Tt
        } else {
            ListOrder::Tree
        }
    }

    fn task_group(&self, sys: &Sys, t: TaskId) -> u32 {
        if self.flat { 0 } else { sys.task(t).group }
    }

    fn with_tunables(
        variant: Variant,
        w: &Workload,
        set: &std::collections::BTreeMap<String, i64>,
    ) -> Result<Fair, String> {
        let tun = FairTunables::new(variant, w.nr_cpus(), set)?;
        let n = w.nr_cpus();
        let groups = &w.groups;
        let nr_groups = groups.len() as u32;
        // Sized once for the tasks the workload starts with: grown by
        // doubling, a million tasks held the old and the new array at once.
        let tasks = w.initial_tasks() as usize;
        let mut f = Fair {
            variant,
            ents: Vec::with_capacity(tasks + nr_groups as usize * n as usize),
            rqs: Vec::new(),
            per_task: Vec::with_capacity(tasks),
            wakees: Wakees::with_capacity(tasks),
            group_shares: groups.iter().map(|g| (g.cpu_weight as u64 * 1024).div_ceil(100).max(MIN_SHARES)).collect(),
            group_load: vec![0; nr_groups as usize],
            bw: groups
                .iter()
                .map(|g| {
                    g.cpu_max.map(|(quota, period)| Bandwidth {
                        quota,
                        period,
                        pool: quota,
                        throttled: Vec::new(),
                        nr_periods: 0,
                        nr_throttled: 0,
                        throttled_ns: 0,
                    })
                })
                .collect(),
            nr_cpus: n,
            cpu_load: vec![Pelt::default(); n as usize],
            cpu_util: vec![Pelt::default(); n as usize],
            cpu_tasks: vec![Vec::new(); n as usize],
            push_to: vec![None; n as usize],
            hrtick_epoch: vec![0; n as usize],
            tick: w.machine.tick_ns(),
            lb: Some(Balancer::new(
                &w.machine.topology,
                LbTunables {
                    migration_cost_ns: tun.migration_cost_ns,
                    nr_migrate: tun.nr_migrate,
                    sis_util: tun.features.sis_util,
                },
            )),
            tun,
            verify: false,
            violations: Vec::new(),
            bore: None,
            burst: Vec::new(),
            parent_of: Vec::new(),
            children: Vec::new(),
            cacule: None,
            cnodes: Vec::new(),
            rdb: None,
            tt: None,
            tnodes: Vec::new(),
            dedicated: Vec::new(),
            last_charge: Vec::new(),
            list_seq: 0,
            flat: false,
        };
        // rq index = group * ncpus + cpu; group entities for groups >= 1.
        for g in 0..nr_groups {
            for cpu in 0..n {
                f.rqs.push(Rq { cpu, group: g, se: NONE, ..Rq::default() });
            }
        }
        for g in 1..nr_groups {
            let parent = groups[g as usize].parent.unwrap_or(0);
            let depth = Self::group_depth(groups, g);
            for cpu in 0..n {
                let se = f.ents.len() as u32;
                f.ents.push(Ent {
                    weight: f.group_shares[g as usize],
                    vruntime: 0,
                    deadline: 0,
                    vlag: 0,
                    vprot: 0,
                    slice: f.tun.base_slice_ns,
                    custom_slice: false,
                    rel_deadline: false,
                    delayed: false,
                    on_rq: false,
                    sum_exec: 0,
                    prev_sum_exec: 0,
                    key: 0,
                    list_seq: 0,
                    rq: parent * n + cpu,
                    my_rq: g * n + cpu,
                    task: NONE,
                    depth: depth - 1,
                    node: Node::default(),
                });
                f.rqs[(g * n + cpu) as usize].se = se;
            }
        }
        Ok(f)
    }

    /// Check every pick against a brute-force answer (tests).
    pub fn with_verification(mut self) -> Fair {
        self.verify = true;
        self
    }

    fn group_depth(groups: &[GroupSpec], g: u32) -> u32 {
        let mut d = 0;
        let mut cur = Some(g);
        while let Some(c) = cur {
            if c == 0 {
                break;
            }
            d += 1;
            cur = groups[c as usize].parent;
        }
        d
    }

    fn root(&self, cpu: CpuId) -> u32 {
        cpu
    }

    fn group_rq(&self, group: u32, cpu: CpuId) -> u32 {
        group * self.nr_cpus + cpu
    }

    fn parent_rq(&self, rq: u32) -> Option<u32> {
        let se = self.rqs[rq as usize].se;
        (se != NONE).then(|| self.ents[se as usize].rq)
    }

    fn tree_key(&self, e: &Ent) -> i64 {
        match (self.order(), self.variant) {
            // Newest first, as CacULE and TT insert at the list head.
            (ListOrder::Cacule | ListOrder::Tt, _) => -(e.list_seq as i64),
            (ListOrder::Tree, Variant::Cfs) => e.vruntime,
            (ListOrder::Tree, Variant::Eevdf) => e.deadline,
        }
    }

    // ---- tree and averages ----

    fn tree_insert(&mut self, rq: u32, se: u32) {
        self.list_seq += 1;
        self.ents[se as usize].list_seq = self.list_seq;
        let key = self.tree_key(&self.ents[se as usize]);
        self.ents[se as usize].key = key;
        let (v, w) = (self.ents[se as usize].vruntime, self.ents[se as usize].weight);
        let r = &mut self.rqs[rq as usize];
        r.tree.insert(&mut self.ents, se);
        if r.leftmost.is_none_or(|l| (key, se) < l) {
            r.leftmost = Some((key, se));
        }
        r.sum_wv += (v - r.min_vruntime) as i128 * w as i128;
        r.sum_w += w as i64;
    }

    fn tree_remove(&mut self, rq: u32, se: u32) {
        let e = &self.ents[se as usize];
        let (key, v, w) = (e.key, e.vruntime, e.weight);
        let r = &mut self.rqs[rq as usize];
        r.tree.remove(&mut self.ents, se);
        if r.leftmost == Some((key, se)) {
            r.leftmost = r.tree.first_keyed(&self.ents);
        }
        r.sum_wv -= (v - r.min_vruntime) as i128 * w as i128;
        r.sum_w -= w as i64;
    }

    /// avg_vruntime: the weighted average vruntime V of the queue, the
    /// running entity included.
    fn avg_vruntime(&self, rq: u32) -> i64 {
        let (mut avg, load) = self.queue_sums(rq);
        if load > 0 {
            // Floor division, as the kernel rounds towards -inf here.
            avg = avg.div_euclid(load);
        }
        self.rqs[rq as usize].min_vruntime + avg as i64
    }

    /// The queue's sum of (vruntime - min_vruntime) * weight and its sum of
    /// weights, the running entity included: avg_vruntime's numerator and
    /// denominator.
    fn queue_sums(&self, rq: u32) -> (i128, i128) {
        let r = &self.rqs[rq as usize];
        let (mut avg, mut load) = (r.sum_wv, r.sum_w as i128);
        if let Some(c) = r.curr {
            let e = &self.ents[c as usize];
            if e.on_rq {
                avg += (e.vruntime - r.min_vruntime) as i128 * e.weight as i128;
                load += e.weight as i128;
            }
        }
        (avg, load)
    }

    /// vruntime_eligible (lag >= 0, i.e. v <= V, without the division),
    /// with the queue's weighted sums read once for a walk that asks it at
    /// every level.
    fn eligibility(&self, rq: u32) -> impl Fn(i64) -> bool + use<> {
        let (avg, load) = self.queue_sums(rq);
        let base = self.rqs[rq as usize].min_vruntime;
        move |v| avg >= (v - base) as i128 * load
    }

    fn eligible(&self, rq: u32, se: u32) -> bool {
        self.eligibility(rq)(self.ents[se as usize].vruntime)
    }

    /// update_min_vruntime (CFS): monotonic, from curr and the leftmost.
    fn update_min_vruntime(&mut self, rq: u32) {
        if self.variant != Variant::Cfs {
            return;
        }
        let r = &self.rqs[rq as usize];
        let mut v = r.min_vruntime;
        let curr = r.curr.filter(|&c| self.ents[c as usize].on_rq);
        if let Some(c) = curr {
            v = self.ents[c as usize].vruntime;
        }
        if let Some((_, left)) = r.leftmost {
            let lv = self.ents[left as usize].vruntime;
            v = if curr.is_some() { v.min(lv) } else { lv };
        }
        let r = &mut self.rqs[rq as usize];
        let new = r.min_vruntime.max(v);
        // The avg sums are kept relative to min_vruntime.
        r.sum_wv -= (new - r.min_vruntime) as i128 * r.sum_w as i128;
        r.min_vruntime = new;
    }

    // ---- CFS slices ----

    fn sched_period(&self, nr: u64) -> u64 {
        if nr > self.tun.nr_latency() { nr * self.tun.sched_min_granularity_ns } else { self.tun.sched_latency_ns }
    }

    /// sched_slice. ALT_PERIOD and BASE_SLICE came with Linux 5.13 (commit
    /// 0c2de3f054a5, "sched,fair: Alternative sched_slice()"), on by
    /// default; both off gives 5.12's slice.
    fn sched_slice(&self, se: u32) -> u64 {
        let e = &self.ents[se as usize];
        let cpu = self.rqs[e.rq as usize].cpu;
        let nr_running = if self.tun.features.alt_period {
            self.rqs[self.root(cpu) as usize].h_nr_running
        } else {
            self.rqs[e.rq as usize].nr_queued
        };
        let nr = nr_running as u64 + u64::from(!e.on_rq);
        let mut slice = self.sched_period(nr);
        let mut cur = se;
        loop {
            let c = &self.ents[cur as usize];
            let q = &self.rqs[c.rq as usize];
            let load = q.load + if c.on_rq { 0 } else { c.weight };
            slice = calc_delta(slice, c.weight, load.max(1));
            let up = q.se;
            if up == NONE {
                break;
            }
            cur = up;
        }
        if self.tun.features.base_slice { slice.max(self.tun.sched_min_granularity_ns) } else { slice }
    }

    fn sched_vslice(&self, se: u32) -> i64 {
        calc_delta_fair(self.sched_slice(se), self.ents[se as usize].weight) as i64
    }

    // ---- EEVDF deadlines and lag ----

    fn vslice(&self, se: u32) -> i64 {
        let e = &self.ents[se as usize];
        calc_delta_fair(e.slice, e.weight) as i64
    }

    /// update_deadline: returns true when the request is used up.
    fn update_deadline(&mut self, se: u32) -> bool {
        let e = &self.ents[se as usize];
        if e.vruntime < e.deadline {
            return false;
        }
        if !e.custom_slice {
            self.ents[se as usize].slice = self.tun.base_slice_ns;
        }
        let vs = self.vslice(se);
        let e = &mut self.ents[se as usize];
        e.deadline = e.vruntime + vs;
        true
    }

    fn update_entity_lag(&mut self, rq: u32, se: u32) {
        let avg = self.avg_vruntime(rq);
        self.ents[se as usize].vlag = self.entity_lag(avg, se);
    }

    /// entity_lag: V - v_i, clamped to the virtual time of two slices or a
    /// tick, whichever is longer (halved under BORE).
    fn entity_lag(&self, avg: i64, se: u32) -> i64 {
        let e = &self.ents[se as usize];
        let mut limit = calc_delta_fair((2 * e.slice).max(self.tick_ns()), e.weight) as i64;
        if self.bore.as_ref().is_some_and(|b| b.sched_bore) {
            limit >>= 1;
        }
        (avg - e.vruntime).clamp(-limit, limit)
    }

    fn tick_ns(&self) -> u64 {
        // TICK_NSEC; the engine's HZ is fixed for a run, kept in the lag limit.
        self.tick
    }

    fn protect_slice(&self, se: u32) -> bool {
        let e = &self.ents[se as usize];
        e.vruntime < e.vprot
    }

    fn place_entity(&mut self, rq: u32, se: u32, initial: bool, wakeup: bool) {
        match self.variant {
            Variant::Cfs => {
                let min = self.rqs[rq as usize].min_vruntime;
                let mut v = min;
                if initial && self.tun.features.start_debit {
                    v += self.sched_vslice(se);
                }
                if !initial {
                    let mut thresh = self.tun.sched_latency_ns as i64;
                    if self.tun.features.gentle_fair_sleepers {
                        thresh >>= 1;
                    }
                    v -= thresh;
                }
                // "ensure we never gain time by being placed backwards"
                let e = &mut self.ents[se as usize];
                e.vruntime = e.vruntime.max(v);
            }
            Variant::Eevdf => {
                if !self.ents[se as usize].custom_slice {
                    self.ents[se as usize].slice = self.tun.base_slice_ns;
                }
                let mut vslice = self.vslice(se);
                let v = self.avg_vruntime(rq);
                let r = &self.rqs[rq as usize];
                let e = &self.ents[se as usize];
                let mut lag = 0i64;
                if self.tun.features.place_lag && r.nr_queued > 0 && e.vlag != 0 {
                    let mut load = r.sum_w as i128;
                    if let Some(c) = r.curr
                        && self.ents[c as usize].on_rq
                    {
                        load += self.ents[c as usize].weight as i128;
                    }
                    let l = e.vlag as i128 * (load + e.weight as i128);
                    lag = (l / load.max(1)) as i64;
                }
                let e = &mut self.ents[se as usize];
                e.vruntime = v - lag;
                if e.rel_deadline {
                    e.deadline += e.vruntime;
                    e.rel_deadline = false;
                    return;
                }
                if self.bore.as_ref().is_some_and(|b| b.sched_bore) {
                    if e.task != NONE && self.burst[e.task as usize].futex_waiting {
                        // A futex waiter's deadline is its vruntime.
                        vslice = 0;
                    } else if initial || wakeup {
                        vslice /= 2;
                    }
                } else if self.tun.features.place_deadline_initial && initial {
                    vslice /= 2;
                }
                e.deadline = e.vruntime + vslice;
            }
        }
    }

    // ---- enqueue / dequeue ----

    fn account_enqueue(&mut self, rq: u32, se: u32) {
        let w = self.ents[se as usize].weight;
        let r = &mut self.rqs[rq as usize];
        r.load += w;
        r.nr_queued += 1;
        let g = r.group as usize;
        self.group_load[g] += w;
    }

    fn account_dequeue(&mut self, rq: u32, se: u32) {
        let w = self.ents[se as usize].weight;
        let r = &mut self.rqs[rq as usize];
        r.load -= w;
        r.nr_queued -= 1;
        let g = r.group as usize;
        self.group_load[g] -= w;
    }

    fn enqueue_entity(&mut self, rq: u32, se: u32, initial: bool, wakeup: bool) {
        let is_curr = self.rqs[rq as usize].curr == Some(se);
        match self.variant {
            Variant::Cfs => {
                // CacULE has no place_entity.
                if (initial || wakeup) && self.cacule.is_none() {
                    self.place_entity(rq, se, initial, wakeup);
                }
            }
            Variant::Eevdf => self.place_entity(rq, se, initial, wakeup),
        }
        self.account_enqueue(rq, se);
        if !is_curr {
            self.tree_insert(rq, se);
        }
        self.ents[se as usize].on_rq = true;
        self.update_min_vruntime(rq);
    }

    fn dequeue_entity(&mut self, rq: u32, se: u32, sleep: bool) {
        if self.variant == Variant::Eevdf {
            self.update_entity_lag(rq, se);
            if self.tun.features.place_rel_deadline && !sleep {
                let e = &mut self.ents[se as usize];
                e.deadline -= e.vruntime;
                e.rel_deadline = true;
            }
        }
        self.clear_buddies(rq, se);
        if self.rqs[rq as usize].curr != Some(se) {
            self.tree_remove(rq, se);
        }
        self.ents[se as usize].on_rq = false;
        self.account_dequeue(rq, se);
        self.update_min_vruntime(rq);
    }

    /// calc_group_shares and reweight_entity for the group entity of `rq`.
    fn update_group_weight(&mut self, rq: u32) {
        let se = self.rqs[rq as usize].se;
        if se == NONE {
            return;
        }
        let g = self.rqs[rq as usize].group as usize;
        let shares = self.group_shares[g];
        let local = self.rqs[rq as usize].load;
        let total = self.group_load[g].max(1);
        let new = (shares * local / total).clamp(MIN_SHARES, shares);
        self.reweight_entity(se, new);
    }

    /// reweight_entity: a new weight, keeping lag and the virtual slice's
    /// real length under EEVDF.
    fn reweight_entity(&mut self, se: u32, new: u64) {
        let old = self.ents[se as usize].weight;
        if new == old {
            return;
        }
        let parent = self.ents[se as usize].rq;
        let on_rq = self.ents[se as usize].on_rq;
        let in_tree = on_rq && self.rqs[parent as usize].curr != Some(se);
        if self.variant == Variant::Eevdf && on_rq {
            // reweight_eevdf: keep lag and the virtual slice's real length.
            let avg = self.avg_vruntime(parent);
            if in_tree {
                self.tree_remove(parent, se);
            }
            // reweight_eevdf takes the lag through entity_lag, clamped.
            let vlag = self.entity_lag(avg, se);
            let e = &mut self.ents[se as usize];
            e.vruntime = avg - (vlag as i128 * old as i128 / new as i128) as i64;
            let vslice = e.deadline - avg;
            e.deadline = avg + (vslice as i128 * old as i128 / new as i128) as i64;
            // The stashed deadline no longer matches: no protection (6.12).
            e.vprot = i64::MIN;
        } else if self.variant == Variant::Eevdf {
            let e = &mut self.ents[se as usize];
            e.vlag = (e.vlag as i128 * old as i128 / new as i128) as i64;
        } else if in_tree {
            self.tree_remove(parent, se);
        }
        if on_rq {
            let pr = &mut self.rqs[parent as usize];
            pr.load = pr.load - old + new;
            let pg = pr.group as usize;
            self.group_load[pg] = self.group_load[pg] - old + new;
        }
        self.ents[se as usize].weight = new;
        if in_tree {
            self.tree_insert(parent, se);
        }
    }

    fn enqueue_task(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, how: Enqueue) {
        let se = self.per_task[t as usize].se;
        let target = self.group_rq(self.task_group(sys, t), cpu);
        if self.ents[se as usize].delayed {
            debug_assert_eq!(self.ents[se as usize].rq, target, "delayed task woken on another CPU");
            self.requeue_delayed(target, se);
            self.list_add(cpu, t);
            self.pelt_task(sys, t, true);
            return;
        }
        let old = self.ents[se as usize].rq;
        if self.tt.is_some() {
            // enqueue_entity's TT block, and migrate_task_rq_fair's unmark.
            let node = &mut self.tnodes[se as usize];
            if old != target {
                node.unmark_yield();
            }
            let change = node.enqueue(sys.now, how == Enqueue::Wakeup, old != target);
            self.tt_type_changed(cpu, t, change);
        }
        if old != target {
            if self.cacule.is_some() {
                // ENQUEUE_MIGRATED (6.1.y's activate_task sets it on every
                // migration): cache-cold, and not movable by RDB until it runs.
                self.cnodes[se as usize].exec_start = 0;
            }
            if self.variant == Variant::Cfs && how != Enqueue::New && self.cacule.is_none() {
                let delta = self.rqs[target as usize].min_vruntime - self.rqs[old as usize].min_vruntime;
                self.ents[se as usize].vruntime += delta;
            }
            self.ents[se as usize].rq = target;
        }
        if how == Enqueue::New && self.variant == Variant::Cfs && self.cacule.is_none() {
            // task_fork_fair: start from the parent's vruntime when it runs
            // on this cfs_rq, then place_entity(initial).
            let base = sys
                .task(t)
                .parent
                .map(|p| self.per_task[p as usize].se)
                .filter(|&p| self.ents[p as usize].rq == target && self.ents[p as usize].on_rq)
                .map_or(self.rqs[target as usize].min_vruntime, |p| self.ents[p as usize].vruntime);
            self.ents[se as usize].vruntime = base;
        }
        let mut cur = se;
        let mut initial = how == Enqueue::New;
        let wakeup = how != Enqueue::Migrate;
        let mut rq = target;
        let mut entities = true;
        loop {
            if entities && !self.ents[cur as usize].on_rq {
                self.enqueue_entity(rq, cur, initial, wakeup);
                self.check_enqueue_throttle(sys, rq);
            } else {
                entities = false;
            }
            self.rqs[rq as usize].h_nr_running += 1;
            self.update_group_weight(rq);
            if self.rqs[rq as usize].throttled {
                break;
            }
            let Some(parent) = self.parent_rq(rq) else {
                break;
            };
            cur = self.rqs[rq as usize].se;
            rq = parent;
            initial = false;
        }
        if how == Enqueue::New {
            self.child_runs_first(sys, cpu, t);
        }
        self.list_add(cpu, t);
        self.pelt_task(sys, t, true);
    }

    /// task_fork_fair's sched_child_runs_first (CFS): a child placed behind
    /// its running parent swaps vruntimes with it and the parent is
    /// rescheduled. The kernel does it on the parent's cfs_rq before the
    /// child's CPU is chosen; here only when the child is placed there too.
    fn child_runs_first(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        if self.variant != Variant::Cfs
            || !self.tun.sched_child_runs_first
            || self.cacule.is_some()
            || self.tt.is_some()
        {
            return;
        }
        let Some(parent) = sys.task(t).parent else { return };
        let (se, pse) = (self.per_task[t as usize].se, self.per_task[parent as usize].se);
        let rq = self.ents[se as usize].rq;
        if self.rqs[rq as usize].curr != Some(pse)
            || self.ents[pse as usize].vruntime >= self.ents[se as usize].vruntime
        {
            return;
        }
        self.tree_remove(rq, se);
        let (a, b) = (self.ents[pse as usize].vruntime, self.ents[se as usize].vruntime);
        self.ents[pse as usize].vruntime = b;
        self.ents[se as usize].vruntime = a;
        self.tree_insert(rq, se);
        self.update_min_vruntime(rq);
        sys.resched(cpu);
    }

    /// Remove a task entity, and group entities left empty, walking up.
    fn dequeue_task_entities(&mut self, se: u32, sleep: bool) {
        let mut cur = se;
        let mut rq = self.ents[se as usize].rq;
        let mut entities = true;
        loop {
            if entities {
                self.dequeue_entity(rq, cur, sleep);
                if self.rqs[rq as usize].nr_queued > 0 {
                    entities = false;
                }
            }
            self.rqs[rq as usize].h_nr_running -= 1;
            self.update_group_weight(rq);
            if self.rqs[rq as usize].throttled {
                break;
            }
            let Some(parent) = self.parent_rq(rq) else {
                break;
            };
            cur = self.rqs[rq as usize].se;
            rq = parent;
        }
    }

    fn requeue_delayed(&mut self, rq: u32, se: u32) {
        if self.tun.features.delay_zero {
            // BORE took the lag when the entity was delayed (negative then:
            // it was not eligible), and would place it as a wakeup.
            let bore = self.bore.as_ref().is_some_and(|b| b.sched_bore);
            if !bore {
                self.update_entity_lag(rq, se);
            }
            if self.ents[se as usize].vlag > 0 {
                let is_curr = self.rqs[rq as usize].curr == Some(se);
                self.rqs[rq as usize].nr_queued -= 1;
                if !is_curr {
                    self.tree_remove(rq, se);
                }
                self.ents[se as usize].vlag = 0;
                self.place_entity(rq, se, false, bore);
                if !is_curr {
                    self.tree_insert(rq, se);
                }
                self.rqs[rq as usize].nr_queued += 1;
            }
        }
        self.ents[se as usize].delayed = false;
    }

    /// The delayed entity reached the front: dequeue it for real.
    fn finish_delayed(&mut self, sys: &mut Sys, se: u32) {
        self.dequeue_task_entities(se, true);
        let e = &mut self.ents[se as usize];
        e.delayed = false;
        if self.tun.features.delay_zero && e.vlag > 0 {
            e.vlag = 0;
        }
        let cpu = self.rqs[e.rq as usize].cpu;
        self.pelt_root(sys, cpu);
    }

    // ---- bandwidth ----

    fn assign_runtime(&mut self, rq: u32) {
        let g = self.rqs[rq as usize].group as usize;
        let Some(bw) = self.bw[g].as_mut() else {
            return;
        };
        let slice = self.tun.sched_cfs_bandwidth_slice_us * 1000;
        let r = &mut self.rqs[rq as usize];
        let want = (slice as i64 - r.runtime_remaining).max(0) as u64;
        let amount = want.min(bw.pool);
        bw.pool -= amount;
        r.runtime_remaining += amount as i64;
    }

    fn check_enqueue_throttle(&mut self, sys: &mut Sys, rq: u32) {
        let g = self.rqs[rq as usize].group as usize;
        if self.bw[g].is_none() || self.rqs[rq as usize].curr.is_some() || self.rqs[rq as usize].throttled {
            return;
        }
        if self.rqs[rq as usize].runtime_remaining <= 0 {
            self.assign_runtime(rq);
        }
        if self.rqs[rq as usize].runtime_remaining <= 0 {
            self.throttle(sys, rq);
        }
    }

    fn throttle(&mut self, sys: &mut Sys, rq: u32) {
        let g = self.rqs[rq as usize].group as usize;
        let h = self.rqs[rq as usize].h_nr_running;
        self.rqs[rq as usize].throttled = true;
        self.rqs[rq as usize].throttled_at = sys.now;
        if let Some(bw) = self.bw[g].as_mut() {
            bw.throttled.push(rq);
            bw.nr_throttled += 1;
        }
        let cpu = self.rqs[rq as usize].cpu;
        sys.resched(cpu);
        // Take the group entity out of its parents, as throttle_cfs_rq does;
        // one not queued yet (enqueue in progress) has nothing to take out.
        let se = self.rqs[rq as usize].se;
        if !self.ents[se as usize].on_rq {
            return;
        }
        let mut cur = se;
        let mut prq = self.ents[se as usize].rq;
        let mut entities = self.ents[se as usize].on_rq;
        loop {
            if entities {
                self.dequeue_entity(prq, cur, false);
                if self.rqs[prq as usize].nr_queued > 0 {
                    entities = false;
                }
            }
            self.rqs[prq as usize].h_nr_running -= h;
            self.update_group_weight(prq);
            if self.rqs[prq as usize].throttled {
                break;
            }
            let Some(parent) = self.parent_rq(prq) else {
                break;
            };
            cur = self.rqs[prq as usize].se;
            prq = parent;
        }
        self.pelt_root(sys, cpu);
    }

    fn unthrottle(&mut self, sys: &mut Sys, rq: u32) {
        let g = self.rqs[rq as usize].group as usize;
        let h = self.rqs[rq as usize].h_nr_running;
        self.rqs[rq as usize].throttled = false;
        if let Some(bw) = self.bw[g].as_mut() {
            bw.throttled_ns += sys.now - self.rqs[rq as usize].throttled_at;
        }
        let se = self.rqs[rq as usize].se;
        let mut cur = se;
        let mut prq = self.ents[se as usize].rq;
        let mut entities = self.rqs[rq as usize].nr_queued > 0;
        loop {
            if entities && !self.ents[cur as usize].on_rq {
                self.enqueue_entity(prq, cur, false, true);
            } else {
                entities = false;
            }
            self.rqs[prq as usize].h_nr_running += h;
            self.update_group_weight(prq);
            if self.rqs[prq as usize].throttled {
                break;
            }
            let Some(parent) = self.parent_rq(prq) else {
                break;
            };
            cur = self.rqs[prq as usize].se;
            prq = parent;
        }
        let cpu = self.rqs[rq as usize].cpu;
        self.pelt_root(sys, cpu);
        sys.resched(cpu);
    }

    fn throttled_hierarchy(&self, mut rq: u32) -> bool {
        loop {
            if self.rqs[rq as usize].throttled {
                return true;
            }
            match self.parent_rq(rq) {
                Some(p) => rq = p,
                None => return false,
            }
        }
    }

    // ---- pick / put ----

    /// CFS pick_next_entity with the skip, next and last buddies; under TT
    /// "first" and "before" are by HRRN_PERCENT (the buddies still compare
    /// CFS vruntime).
    fn pick_cfs(&mut self, rq: u32, now: Nanos) -> Option<u32> {
        let tt = self.tt.is_some();
        let r = &self.rqs[rq as usize];
        let curr = r.curr.filter(|&c| self.ents[c as usize].on_rq);
        let first = if tt { self.tt_first(rq, now, None) } else { r.leftmost.map(|(_, s)| s) };
        let before = |a: u32, b: u32| {
            if tt {
                tt::Node::before(&self.tnodes[a as usize], &self.tnodes[b as usize], now)
            } else {
                self.ents[a as usize].vruntime < self.ents[b as usize].vruntime
            }
        };
        let mut left = match (first, curr) {
            (None, c) => c?,
            (Some(f), Some(c)) if before(c, f) => c,
            (Some(f), _) => f,
        };
        let mut se = left;
        if r.skip == Some(se) {
            let second = if Some(se) == curr {
                first
            } else {
                let next_in_tree = if tt { self.tt_first(rq, now, Some(se)) } else { r.tree.next(&self.ents, se) };
                match (next_in_tree, curr) {
                    (None, c) => c,
                    (Some(n), Some(c)) if before(c, n) => Some(c),
                    (n, _) => n,
                }
            };
            if let Some(s) = second
                && self.wakeup_preempt_entity(s, left) < 1
            {
                se = s;
            }
        }
        let r = &self.rqs[rq as usize];
        if let Some(n) = r.next.filter(|&n| self.wakeup_preempt_entity(n, left) < 1) {
            se = n;
        } else if let Some(l) = r.last.filter(|&l| self.wakeup_preempt_entity(l, left) < 1) {
            se = l;
        }
        left = se;
        self.clear_buddies(rq, left);
        Some(left)
    }

    /// wakeup_preempt_entity(curr, se): 1 when se leads curr by more than
    /// the wakeup granularity scaled to se's weight.
    fn wakeup_preempt_entity(&self, curr: u32, se: u32) -> i32 {
        let vdiff = self.ents[curr as usize].vruntime - self.ents[se as usize].vruntime;
        if vdiff <= 0 {
            return -1;
        }
        let gran = calc_delta_fair(self.tun.sched_wakeup_granularity_ns, self.ents[se as usize].weight) as i64;
        i32::from(vdiff > gran)
    }

    fn clear_buddies(&mut self, rq: u32, se: u32) {
        let r = &mut self.rqs[rq as usize];
        for b in [&mut r.skip, &mut r.last, &mut r.next] {
            if *b == Some(se) {
                *b = None;
            }
        }
    }

    /// pick_eevdf: the eligible entity with the earliest virtual deadline,
    /// or the running one while its slice is protected.
    fn pick_eevdf(&self, rq: u32, protect: bool) -> Option<u32> {
        let r = &self.rqs[rq as usize];
        let first = r.leftmost.map(|(_, s)| s);
        let curr_on = r.curr.filter(|&c| self.ents[c as usize].on_rq);
        if r.nr_queued == 1 {
            return curr_on.or(first);
        }
        let eligible = self.eligibility(rq);
        let curr = curr_on.filter(|&c| eligible(self.ents[c as usize].vruntime));
        // Under BORE, RUN_TO_PARITY_BORE (off by default) stands for it.
        let protect = match &self.bore {
            Some(b) if b.sched_bore => b.run_to_parity,
            _ => protect,
        };
        if let Some(c) = curr
            && protect
            && self.protect_slice(c)
        {
            return Some(c);
        }
        let best = r.tree.first_eligible(&self.ents, eligible);
        match (best, curr) {
            (None, c) => c.or(first),
            (Some(b), Some(c)) if self.ents[c as usize].deadline < self.ents[b as usize].deadline => Some(c),
            (b, _) => b,
        }
    }

    fn verify_pick(&mut self, rq: u32, picked: u32) {
        if self.variant != Variant::Eevdf {
            return;
        }
        let r = &self.rqs[rq as usize];
        if r.nr_queued <= 1 {
            return;
        }
        let mut all = r.tree.to_vec(&self.ents);
        if let Some(c) = r.curr.filter(|&c| self.ents[c as usize].on_rq) {
            all.push(c);
        }
        let eligible: Vec<u32> = all.iter().copied().filter(|&s| self.eligible(rq, s)).collect();
        if eligible.is_empty() {
            return;
        }
        let protected = r.curr == Some(picked) && self.protect_slice(picked);
        if !eligible.contains(&picked) {
            self.violations.push(format!("pick_eevdf chose ineligible entity {picked}"));
        } else if !protected {
            let best = eligible.iter().map(|&s| self.ents[s as usize].deadline).min().unwrap_or(i64::MAX);
            if self.ents[picked as usize].deadline != best {
                self.violations.push(format!(
                    "pick_eevdf chose deadline {} while an eligible entity had {best}",
                    self.ents[picked as usize].deadline
                ));
            }
        }
    }

    fn put_prev_entity(&mut self, rq: u32, se: u32) {
        if self.ents[se as usize].on_rq {
            self.tree_insert(rq, se);
        }
        self.rqs[rq as usize].curr = None;
    }

    fn set_next_entity(&mut self, rq: u32, se: u32) {
        if self.ents[se as usize].on_rq {
            self.tree_remove(rq, se);
        }
        self.rqs[rq as usize].curr = Some(se);
        let e = &mut self.ents[se as usize];
        e.prev_sum_exec = e.sum_exec;
        if self.variant == Variant::Eevdf {
            // set_next_entity's stash of the deadline (6.12: se->vlag =
            // se->deadline): the slice is protected until the deadline
            // moves, when the request is used up (update_deadline) or
            // reweighted, or until a PREEMPT_SHORT wakeup cancels it.
            e.vprot = e.deadline;
        }
    }

    /// put_prev_task for the whole chain of a task that stops running.
    fn put_prev_chain(&mut self, sys: &mut Sys, t: TaskId) {
        let mut se = self.per_task[t as usize].se;
        loop {
            let rq = self.ents[se as usize].rq;
            if self.rqs[rq as usize].curr != Some(se) {
                break;
            }
            self.put_prev_entity(rq, se);
            let _ = self.check_runtime(sys, rq);
            let up = self.rqs[rq as usize].se;
            if up == NONE {
                break;
            }
            se = up;
        }
        let cpu = sys.task(t).cpu;
        self.cpu_util[cpu as usize].set(sys.now, 0, 1);
    }

    /// check_cfs_rq_runtime: throttle a cfs_rq whose runtime is spent.
    fn check_runtime(&mut self, sys: &mut Sys, rq: u32) -> bool {
        let g = self.rqs[rq as usize].group as usize;
        if self.bw[g].is_none() || self.rqs[rq as usize].throttled || self.rqs[rq as usize].runtime_remaining > 0 {
            return false;
        }
        self.assign_runtime(rq);
        if self.rqs[rq as usize].runtime_remaining > 0 {
            return false;
        }
        self.throttle(sys, rq);
        true
    }

    /// set_next_entity from the root cfs_rq down to `se`. Recursive rather
    /// than collecting the chain: it runs at every switch, and the depth is
    /// the group hierarchy's.
    fn set_next_chain(&mut self, se: u32) {
        let rq = self.ents[se as usize].rq;
        let up = self.rqs[rq as usize].se;
        if up != NONE {
            self.set_next_chain(up);
        }
        if self.rqs[rq as usize].curr != Some(se) {
            self.set_next_entity(rq, se);
        }
    }

    fn pick_task(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        'again: loop {
            let mut rq = self.root(cpu);
            if self.rqs[rq as usize].nr_queued == 0 {
                return None;
            }
            loop {
                if rq != self.root(cpu) && self.check_runtime(sys, rq) {
                    continue 'again;
                }
                let se = match self.variant {
                    Variant::Cfs if self.cacule.is_some() => self.pick_cacule(rq, sys.now),
                    Variant::Cfs => self.pick_cfs(rq, sys.now),
                    Variant::Eevdf => {
                        let p = self.pick_eevdf(rq, true);
                        if self.verify
                            && let Some(p) = p
                        {
                            self.verify_pick(rq, p);
                        }
                        p
                    }
                }?;
                if self.ents[se as usize].delayed {
                    self.finish_delayed(sys, se);
                    continue 'again;
                }
                let my = self.ents[se as usize].my_rq;
                if my == NONE {
                    return Some(self.ents[se as usize].task);
                }
                rq = my;
            }
        }
    }

    fn hrtick_start(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        if !self.tun.features.hrtick {
            return;
        }
        let se = self.per_task[t as usize].se;
        let e = &self.ents[se as usize];
        let slice = match self.variant {
            Variant::Cfs => self.sched_slice(se),
            Variant::Eevdf => e.slice,
        };
        let ran = e.sum_exec - e.prev_sum_exec;
        let left = slice.saturating_sub(ran).max(10_000);
        let epoch = &mut self.hrtick_epoch[cpu as usize];
        *epoch = epoch.wrapping_add(1);
        sys.arm_timer(sys.now + left, ((cpu as u64) << 32) | *epoch as u64);
    }

    // ---- PELT and per-CPU task lists ----

    fn pelt_task(&mut self, sys: &Sys, t: TaskId, runnable: bool) {
        // A task's sum counts its runnable time; its weight applies when
        // the average is read (se_weight in ___update_load_avg).
        let weight = self.ents[self.per_task[t as usize].se as usize].weight;
        self.per_task[t as usize].pelt.set(sys.now, u64::from(runnable), weight);
        self.pelt_root(sys, sys.task(t).cpu);
    }

    fn pelt_root(&mut self, sys: &Sys, cpu: CpuId) {
        let load = self.rqs[self.root(cpu) as usize].load;
        self.cpu_load[cpu as usize].set(sys.now, load, 1);
    }

    fn list_add(&mut self, cpu: CpuId, t: TaskId) {
        if self.per_task[t as usize].pos != NONE {
            return;
        }
        let l = &mut self.cpu_tasks[cpu as usize];
        self.per_task[t as usize].pos = l.len() as u32;
        l.push(t);
    }

    fn list_remove(&mut self, cpu: CpuId, t: TaskId) {
        let p = self.per_task[t as usize].pos;
        if p == NONE {
            return;
        }
        let l = &mut self.cpu_tasks[cpu as usize];
        l.swap_remove(p as usize);
        if let Some(&moved) = l.get(p as usize) {
            self.per_task[moved as usize].pos = p;
        }
        self.per_task[t as usize].pos = NONE;
    }

    /// find_matching_se: walk both up to the cfs_rq they share.
    fn matching(&self, mut a: u32, mut b: u32) -> (u32, u32) {
        while self.ents[a as usize].depth > self.ents[b as usize].depth {
            a = self.rqs[self.ents[a as usize].rq as usize].se;
        }
        while self.ents[b as usize].depth > self.ents[a as usize].depth {
            b = self.rqs[self.ents[b as usize].rq as usize].se;
        }
        while self.ents[a as usize].rq != self.ents[b as usize].rq {
            a = self.rqs[self.ents[a as usize].rq as usize].se;
            b = self.rqs[self.ents[b as usize].rq as usize].se;
        }
        (a, b)
    }

    fn migrate_queued(&mut self, sys: &mut Sys, t: TaskId, from: CpuId, to: CpuId) {
        self.move_queued(sys, t, from, to);
        sys.resched(to);
    }

    /// detach_task + attach_task without the preemption check.
    fn move_queued(&mut self, sys: &mut Sys, t: TaskId, from: CpuId, to: CpuId) {
        let se = self.per_task[t as usize].se;
        self.list_remove(from, t);
        self.pelt_task(sys, t, false);
        self.dequeue_task_entities(se, false);
        self.pelt_root(sys, from);
        sys.migrate(t, to);
        self.enqueue_task(sys, to, t, Enqueue::Migrate);
    }
}

impl LbQueues for Fair {
    fn candidates(&self, sys: &Sys, cpu: CpuId, max: usize, out: &mut Vec<TaskId>) {
        let running = sys.cpus[cpu as usize].curr;
        // TT's can_migrate_task keeps a CPU's dedicated CPU-bound task.
        let dedicated = self.dedicated.get(cpu as usize).copied().flatten();
        out.extend(self.cpu_tasks[cpu as usize].iter().copied().filter(|&t| {
            Some(t) != running
                && Some(t) != dedicated
                && sys.task(t).state == TaskState::Runnable
                && !self.throttled_hierarchy(self.ents[self.per_task[t as usize].se as usize].rq)
        }));
        // The kernel's MRU list gives the tail in O(max); here the `max`
        // least recently run are selected, then only they are sorted.
        let lru = |&t: &TaskId| (sys.task(t).last_ran, t);
        if out.len() > max {
            out.select_nth_unstable_by_key(max, lru);
            out.truncate(max);
        }
        out.sort_by_key(lru);
    }

    fn task_load(&self, sys: &Sys, t: TaskId) -> f64 {
        let mut load = self.per_task[t as usize].pelt.avg(sys.now) as f64;
        let mut rq = self.ents[self.per_task[t as usize].se as usize].rq;
        while let Some(parent) = self.parent_rq(rq) {
            let gse = self.rqs[rq as usize].se;
            load = load * self.ents[gse as usize].weight as f64 / self.rqs[rq as usize].load.max(1) as f64;
            rq = parent;
        }
        load
    }

    fn cpu_load(&self, sys: &Sys, cpu: CpuId) -> f64 {
        self.cpu_load[cpu as usize].avg(sys.now) as f64
    }

    fn cpu_util(&self, sys: &Sys, cpu: CpuId) -> f64 {
        self.cpu_util[cpu as usize].avg(sys.now) as f64
    }

    /// The root's h_nr_running, which rq->nr_running follows for this
    /// class: throttle_cfs_rq subtracts a throttled group's tasks (6.18's
    /// task-based throttling dequeues them), while DELAY_DEQUEUE'd tasks
    /// stay counted until really dequeued (h_nr_queued since 6.13). The
    /// engine's count is neither: it knows no throttling and counts a
    /// delayed task as asleep.
    fn cpu_nr(&self, _sys: &Sys, cpu: CpuId) -> u32 {
        self.rqs[self.root(cpu) as usize].h_nr_running
    }

    fn move_task(&mut self, sys: &mut Sys, t: TaskId, from: CpuId, to: CpuId) {
        self.migrate_queued(sys, t, from, to);
    }

    fn request_push(&mut self, sys: &mut Sys, from: CpuId, to: CpuId) -> bool {
        let Some(curr) = sys.cpus[from as usize].curr else {
            return false;
        };
        if sys.task(curr).policy.is_rt() || !sys.allowed(curr, to) || self.cpu_nr(sys, from) < 2 {
            return false;
        }
        self.push_to[from as usize] = Some(to);
        sys.resched(from);
        true
    }
}

impl Policy for Fair {
    fn name(&self) -> &'static str {
        match (self.variant, &self.bore, self.order()) {
            (Variant::Cfs, _, ListOrder::Cacule) => "cacule",
            (Variant::Cfs, _, ListOrder::Tt) => "tt",
            (Variant::Cfs, _, ListOrder::Tree) => "cfs",
            (Variant::Eevdf, None, _) => "eevdf",
            (Variant::Eevdf, Some(_), _) => "bore",
        }
    }

    fn tunables(&self) -> Vec<Tunable> {
        let mut all = self.tun.clone().list(self.variant);
        if let Some(b) = &self.bore {
            all.extend(b.list());
        }
        if let Some(c) = &self.cacule {
            all.retain(|t| !CaculeTunables::hides(t.name));
            all.extend(c.list());
        }
        if let Some(t) = &self.tt {
            all.extend(t.list());
        }
        all
    }

    fn init(&mut self, sys: &mut Sys) {
        // The cpu.max period timers run for the whole simulation.
        for (g, bw) in self.bw.iter().enumerate() {
            if let Some(bw) = bw {
                sys.arm_timer(bw.period, TIMER_BANDWIDTH | g as u64);
            }
        }
    }

    fn task_new(&mut self, sys: &mut Sys, t: TaskId, parent: Option<TaskId>) {
        let info = sys.task(t);
        let group = self.task_group(sys, t);
        let depth = if self.flat { 0 } else { Self::group_depth(&sys.groups, group) };
        let custom = info.slice;
        let se = self.ents.len() as u32;
        self.ents.push(Ent {
            weight: task_weight(sys, t),
            vruntime: 0,
            deadline: 0,
            vlag: 0,
            vprot: 0,
            slice: custom.unwrap_or(self.tun.base_slice_ns),
            custom_slice: custom.is_some(),
            rel_deadline: false,
            delayed: false,
            on_rq: false,
            sum_exec: 0,
            prev_sum_exec: 0,
            key: 0,
            list_seq: 0,
            rq: self.group_rq(group, info.cpu),
            my_rq: NONE,
            task: t,
            depth,
            node: Node::default(),
        });
        if self.per_task.len() <= t as usize {
            self.per_task.resize(t as usize + 1, FairTask { se: NONE, pos: NONE, pelt: Pelt::default() });
        }
        self.per_task[t as usize].se = se;
        self.wakees.task_new(sys, t);
        if self.cacule.is_some() {
            // wake_up_new_task stamps cacule_start_time.
            self.cnodes.push(cacule::Node::born(sys.now, sys.task(t).policy == SchedPolicy::Idle));
        }
        if self.tt.is_some() {
            // TT has no group entities: one node per entity, in order.
            self.tnodes.push(tt::Node::new(sys.now));
            if self.last_charge.len() <= t as usize {
                self.last_charge.resize(t as usize + 1, (0, 0));
            }
        }
        if self.bore.is_some() {
            if self.burst.len() <= t as usize {
                self.burst.resize(t as usize + 1, bore::Burst::default());
                self.parent_of.resize(t as usize + 1, None);
                self.children.resize(t as usize + 1, Vec::new());
            }
            if let Some(p) = parent {
                // task_fork_bore: the copied prev_penalty, raised to the inherited one.
                let inherited = self.bore_inherit(sys.now, p);
                self.parent_of[t as usize] = Some(p);
                self.children[p as usize].push(t);
                let parent_prev = self.burst[p as usize].prev_penalty;
                let b = &mut self.burst[t as usize];
                b.prev_penalty = parent_prev.max(inherited);
                b.update(self.bore.as_ref().expect("bore"));
                self.ents[se as usize].weight = self.bore_weight(sys, t);
            }
        }
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, kind: WakeKind) -> CpuId {
        // A delayed task is still queued: ttwu_runnable requeues it in place.
        if self.ents[self.per_task[t as usize].se as usize].delayed {
            return prev;
        }
        // CacULE drops wake_affine: select_idle_sibling around prev.
        let kind = match kind {
            WakeKind::Wakeup { sync, .. } if self.cacule.is_some() => {
                WakeKind::Wakeup { waker: None, waker_cpu: None, sync }
            }
            k => k,
        };
        // The wakee state is taken out for the call: the policy itself is
        // the runqueues select_task_rq reads.
        let mut wakees = std::mem::take(&mut self.wakees);
        let lb = self.lb.as_ref().expect("balancer present outside balancing");
        let cpu = select_task_rq(sys, self, &mut wakees, lb, t, prev, kind);
        self.wakees = wakees;
        cpu
    }

    fn enqueue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, how: Enqueue) {
        if how == Enqueue::New {
            // task_struct start_time is the fork: a task whose workload
            // start lies later is born then, not when the engine made it.
            let se = self.per_task[t as usize].se as usize;
            if self.cacule.is_some() {
                self.cnodes[se].start_time = sys.now;
            }
            if self.tt.is_some() {
                self.tnodes[se].start_time = sys.now;
            }
        }
        if self.bore.is_some() {
            // futex_wait_queue sets it before schedule() and clears it when
            // the task runs again: a wakeup's placement sees it.
            self.burst[t as usize].futex_waiting = how == Enqueue::Wakeup && sys.task(t).futex_wait;
        }
        self.enqueue_task(sys, cpu, t, how);
        if self.rdb.is_some() {
            self.rdb_update_is(sys, cpu);
        }
    }

    fn dequeue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, why: Dequeue) {
        if let Some(tun) = &self.bore {
            if why == Dequeue::Sleep {
                let b = &mut self.burst[t as usize];
                let old = b.score;
                if b.restart(tun) != old {
                    self.bore_reweight(sys, t);
                }
            }
            if why == Dequeue::Exit
                && let Some(p) = self.parent_of[t as usize]
            {
                self.children[p as usize].retain(|&c| c != t);
            }
        }
        let se = self.per_task[t as usize].se;
        let rq = self.ents[se as usize].rq;
        if self.tt.is_some() {
            // dequeue_entity's TT block runs before its update_curr: the
            // run charged at this very moment opens the next burst.
            let (at, delta) = self.last_charge[t as usize];
            self.tnodes[se as usize].sleep(if at == sys.now { delta } else { 0 });
        }
        self.list_remove(cpu, t);
        if self.variant == Variant::Eevdf
            && why == Dequeue::Sleep
            && self.tun.features.delay_dequeue
            && !self.eligible(rq, se)
        {
            // DELAY_DEQUEUE: stays in the tree, ineligible, until picked.
            if self.tun.features.delay_zero && self.bore.as_ref().is_some_and(|b| b.sched_bore) {
                self.update_entity_lag(rq, se);
            }
            self.ents[se as usize].delayed = true;
            self.per_task[t as usize].pelt.set(sys.now, 0, self.ents[se as usize].weight);
            return;
        }
        self.dequeue_task_entities(se, true);
        self.pelt_task(sys, t, false);
        if self.rdb.is_some() {
            self.rdb_update_is(sys, cpu);
        }
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        let prev_task = self.running_task(cpu);
        if let Some(p) = prev_task.filter(|&p| self.tt.is_some() && sys.task(p).state == TaskState::Runnable) {
            // put_prev_entity of a task still queued runs update_curr.
            self.tt_update_curr(sys, cpu, p, 0);
        }
        if let (Some(p), Some(dst)) = (prev_task, self.push_to[cpu as usize].take()) {
            // Active balance: the stopper pushes the running task away.
            if sys.task(p).state == TaskState::Runnable && sys.allowed(p, dst) {
                self.put_prev_chain(sys, p);
                self.migrate_queued(sys, p, cpu, dst);
            }
        }
        let next = self.pick_task(sys, cpu);
        let prev_task = self.running_task(cpu);
        if let Some(p) = prev_task {
            // pick_next_task_fair: the yield mark lasts one pick.
            let pse = self.per_task[p as usize].se as usize;
            if self.cacule.is_some() {
                self.cnodes[pse].unmark_yield();
            } else if self.tt.is_some() {
                self.tnodes[pse].unmark_yield();
            }
        }
        match (prev_task, next) {
            (Some(p), Some(n)) if p == n => {}
            (Some(p), Some(n)) => {
                // put_prev_set_next over the levels where the chains differ.
                let (mut a, mut b) = (self.per_task[p as usize].se, self.per_task[n as usize].se);
                loop {
                    if self.ents[a as usize].rq == self.ents[b as usize].rq {
                        let rq = self.ents[a as usize].rq;
                        if self.rqs[rq as usize].curr == Some(a) {
                            self.put_prev_entity(rq, a);
                            let _ = self.check_runtime(sys, rq);
                        }
                        break;
                    }
                    let (da, db) = (self.ents[a as usize].depth, self.ents[b as usize].depth);
                    if da >= db {
                        let rq = self.ents[a as usize].rq;
                        if self.rqs[rq as usize].curr == Some(a) {
                            self.put_prev_entity(rq, a);
                            let _ = self.check_runtime(sys, rq);
                        }
                        a = self.rqs[rq as usize].se;
                    }
                    if db >= da {
                        b = self.rqs[self.ents[b as usize].rq as usize].se;
                    }
                    if a == NONE || b == NONE {
                        break;
                    }
                }
                self.set_next_chain(self.per_task[n as usize].se);
            }
            (Some(p), None) => self.put_prev_chain(sys, p),
            (None, Some(n)) => self.set_next_chain(self.per_task[n as usize].se),
            (None, None) => {}
        }
        if let Some(n) = next {
            // A throttle found while putting prev back can leave the picked
            // task's hierarchy throttled: pick again.
            if self.throttled_hierarchy(self.ents[self.per_task[n as usize].se as usize].rq) {
                self.put_prev_chain(sys, n);
                return self.pick_next(sys, cpu);
            }
            self.cpu_util[cpu as usize].set(sys.now, 1024, 1);
            self.hrtick_start(sys, cpu, n);
        }
        if self.rdb.is_some() {
            // update_stats_curr_start down the picked chain, then update_IS
            // (or, going idle, nothing left to give).
            let mut se = next.map_or(NONE, |n| self.per_task[n as usize].se);
            while se != NONE {
                self.cnodes[se as usize].start_run(sys.now);
                se = self.rqs[self.ents[se as usize].rq as usize].se;
            }
            match next {
                Some(_) => self.rdb_update_is(sys, cpu),
                None => self.rdb_clear(cpu),
            }
        }
        next
    }

    fn put_prev(&mut self, sys: &mut Sys, _cpu: CpuId, t: TaskId, _runnable: bool) {
        self.put_prev_chain(sys, t);
    }

    fn account(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, delta: Nanos) {
        if let Some(tun) = &self.bore {
            let b = &mut self.burst[t as usize];
            b.futex_waiting = false;
            b.burst_time += delta;
            let old = b.score;
            if b.update(tun) != old {
                self.bore_reweight(sys, t);
            }
        }
        let mut se = self.per_task[t as usize].se;
        let mut resched = false;
        loop {
            let rq = self.ents[se as usize].rq;
            let e = &mut self.ents[se as usize];
            e.sum_exec += delta;
            e.vruntime += calc_delta_fair(delta, e.weight) as i64;
            if self.variant == Variant::Eevdf && self.rqs[rq as usize].curr == Some(se) {
                let expired = self.update_deadline(se);
                if self.rqs[rq as usize].nr_queued > 1 && (expired || !self.protect_slice(se)) {
                    resched = true;
                }
            }
            self.update_min_vruntime(rq);
            let g = self.rqs[rq as usize].group as usize;
            if self.bw[g].is_some() {
                self.rqs[rq as usize].runtime_remaining -= delta as i64;
                if self.rqs[rq as usize].runtime_remaining <= 0 {
                    self.assign_runtime(rq);
                    if self.rqs[rq as usize].runtime_remaining <= 0 {
                        resched = true;
                    }
                }
            }
            if let Some(c) = &self.cacule {
                let w = self.ents[se as usize].weight;
                self.cnodes[se as usize].charge(sys.now, calc_delta_fair(delta, w), c);
            }
            let up = self.rqs[rq as usize].se;
            if up == NONE {
                break;
            }
            se = up;
        }
        if self.tt.is_some() {
            self.tt_update_curr(sys, cpu, t, delta);
            self.last_charge[t as usize] = (sys.now, delta);
        }
        if resched {
            sys.resched(cpu);
        }
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        if self.variant != Variant::Cfs {
            return;
        }
        if self.tt.is_some() {
            self.tt_check_dedicated(cpu);
        }
        // entity_tick -> check_preempt_tick at every level.
        let mut se = self.per_task[curr as usize].se;
        loop {
            let rq = self.ents[se as usize].rq;
            if self.cacule.is_some() {
                // CacULE's check_preempt_tick: resched unless the pick is curr.
                if self.rqs[rq as usize].nr_queued > 1
                    && self.rqs[rq as usize].curr == Some(se)
                    && self.pick_cacule(rq, sys.now) != Some(se)
                {
                    sys.resched(cpu);
                }
            } else if self.rqs[rq as usize].nr_queued > 1 && self.rqs[rq as usize].curr == Some(se) {
                let ideal = self.sched_slice(se);
                let e = &self.ents[se as usize];
                let ran = e.sum_exec - e.prev_sum_exec;
                if ran > ideal {
                    self.clear_buddies(rq, se);
                    sys.resched(cpu);
                } else if ran >= self.tun.sched_min_granularity_ns
                    && let Some(first) = self.tick_first(rq, sys.now)
                {
                    // TT: a running task ahead by HRRN is left alone.
                    let tt_ahead = self.tt.is_some()
                        && tt::Node::before(&self.tnodes[se as usize], &self.tnodes[first as usize], sys.now);
                    let d = e.vruntime - self.ents[first as usize].vruntime;
                    if !tt_ahead && d > ideal as i64 {
                        sys.resched(cpu);
                    }
                }
            }
            let up = self.rqs[rq as usize].se;
            if up == NONE {
                break;
            }
            se = up;
        }
        if self.rdb.is_some() {
            // task_tick_fair's update_IS.
            self.rdb_update_is(sys, cpu);
        }
    }

    fn wakeup_preempt(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId, woken: TaskId) -> bool {
        let (cp, wp) = (sys.task(curr).policy, sys.task(woken).policy);
        let pse0 = self.per_task[woken as usize].se;
        if self.throttled_hierarchy(self.ents[pse0 as usize].rq) {
            return false;
        }
        if !self.tun.features.wakeup_preemption {
            return false;
        }
        let curr_idle = cp == SchedPolicy::Idle;
        let woken_idle = wp == SchedPolicy::Idle;
        if curr_idle && !woken_idle {
            return true;
        }
        if curr_idle != woken_idle || !matches!(wp, SchedPolicy::Normal | SchedPolicy::Iso) {
            return false;
        }
        let (se, pse) = self.matching(self.per_task[curr as usize].se, pse0);
        let rq = self.ents[se as usize].rq;
        if self.tt.is_some() {
            // check_preempt_wakeup's update_curr, after enqueue_entity's.
            self.tt_update_curr(sys, cpu, curr, 0);
        }
        if self.cacule.is_some() {
            // entity_before(curr, woken): the woken entity preempts when its
            // scores sum strictly lower than the running one's; no buddies.
            return cacule::before(self.cacule_key(se, sys.now), self.cacule_key(pse, sys.now));
        }
        match self.variant {
            Variant::Cfs => {
                let scale = self.rqs[rq as usize].nr_queued as u64 >= self.tun.nr_latency();
                if self.tun.features.next_buddy && scale {
                    self.rqs[rq as usize].next = Some(pse);
                }
                if self.wakeup_preempt_entity(se, pse) == 1 {
                    if self.tun.features.last_buddy && scale && self.ents[se as usize].my_rq == NONE {
                        self.rqs[rq as usize].last = Some(se);
                    }
                    return true;
                }
                false
            }
            Variant::Eevdf => {
                if self.rqs[rq as usize].curr != Some(se) {
                    return false;
                }
                let mut preempt_short = false;
                if self.tun.features.preempt_short {
                    let (ps, cs) = (&self.ents[pse as usize], &self.ents[se as usize]);
                    if ps.slice < cs.slice
                        && self.eligible(rq, pse)
                        && (ps.deadline < cs.deadline || !self.eligible(rq, se))
                    {
                        preempt_short = true;
                        // cancel_protect_slice
                        if self.protect_slice(se) {
                            self.ents[se as usize].vprot = self.ents[se as usize].vruntime;
                        }
                    }
                }
                let picked = self.pick_eevdf(rq, !preempt_short);
                picked == Some(pse)
            }
        }
    }

    fn yield_task(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        if let Some(tun) = &self.bore {
            // restart_burst_rescale_deadline, even when alone on the CPU.
            let se = self.per_task[t as usize].se;
            let old_w = self.ents[se as usize].weight;
            let b = &mut self.burst[t as usize];
            let old = b.score;
            if b.restart(tun) != old {
                let vremain = self.ents[se as usize].deadline - self.ents[se as usize].vruntime;
                self.bore_reweight(sys, t);
                let new_w = self.ents[se as usize].weight;
                if new_w > old_w {
                    // The priority rose: the remaining request, kept in real
                    // time, is rescaled to the new weight.
                    let e = &mut self.ents[se as usize];
                    e.deadline = e.vruntime + (vremain as i128 * old_w as i128 / new_w as i128) as i64;
                }
            }
        }
        if let Some(c) = &self.cacule {
            // CacULE marks before the lone-task test and sets no skip buddy.
            if c.yield_mark {
                self.cnodes[self.per_task[t as usize].se as usize].mark_yield();
            }
            return;
        }
        if sys.cpus[cpu as usize].nr_running <= 1 {
            return;
        }
        let se = self.per_task[t as usize].se;
        if self.tt.is_some() {
            // yield_task_fair marks, then its update_curr runs detect_type
            // on the marked vruntime: (wait + run) / run is 1 and the run
            // share wraps to 0, so the yielder turns BATCH (+19) until it
            // next runs, which is what keeps a yield-looping task's TT
            // vruntime growing. The run itself was charged just before.
            let tun = self.tt.as_ref().expect("tt");
            let change = self.tnodes[se as usize].yield_now(sys.now, tun);
            self.tt_type_changed(cpu, t, change);
        }
        match self.variant {
            Variant::Cfs => {
                // set_skip_buddy at every level.
                let mut s = se;
                loop {
                    let rq = self.ents[s as usize].rq;
                    self.rqs[rq as usize].skip = Some(s);
                    let up = self.rqs[rq as usize].se;
                    if up == NONE {
                        break;
                    }
                    s = up;
                }
            }
            Variant::Eevdf => {
                // Linux 6.12.117's yield_task_fair: an eligible task
                // forfeits the rest of its request (vruntime jumps to its
                // deadline, update_deadline starts the next one there). An
                // ineligible one keeps both, so that core scheduling's
                // re-picks cannot run its vruntime away. (6.6's version
                // only pushed the deadline out by one slice.)
                let rq = self.ents[se as usize].rq;
                if self.eligible(rq, se) {
                    let e = &mut self.ents[se as usize];
                    e.vruntime = e.deadline;
                    self.update_deadline(se);
                }
            }
        }
    }

    fn balance(&mut self, sys: &mut Sys, cpu: CpuId, _idle: bool) {
        if self.rdb.is_some() {
            self.rdb_tick(sys, cpu);
            return;
        }
        let mut lb = self.lb.take().expect("balancer present outside balancing");
        lb.tick(sys, self, cpu);
        self.lb = Some(lb);
    }

    fn newidle_balance(&mut self, sys: &mut Sys, cpu: CpuId) {
        if self.rdb.is_some() {
            self.rdb_newidle(sys, cpu);
            return;
        }
        let mut lb = self.lb.take().expect("balancer present outside balancing");
        lb.newidle(sys, self, cpu);
        self.lb = Some(lb);
    }

    /// The tasks of this CPU's throttled cfs_rqs: each throttle took its
    /// h_nr_running out of its (unthrottled) ancestors, so the sum counts
    /// each held task once.
    fn held_back(&self, _sys: &Sys, cpu: CpuId) -> u32 {
        self.bw
            .iter()
            .flatten()
            .flat_map(|bw| bw.throttled.iter())
            .filter(|&&rq| self.rqs[rq as usize].throttled && self.rqs[rq as usize].cpu == cpu)
            .map(|&rq| self.rqs[rq as usize].h_nr_running)
            .sum()
    }

    fn timer(&mut self, sys: &mut Sys, token: u64) {
        if token & TIMER_BANDWIDTH != 0 {
            let g = (token & !TIMER_BANDWIDTH) as usize;
            let Some(bw) = self.bw[g].as_mut() else {
                return;
            };
            // sched_cfs_period_timer: refill, then hand runtime to the
            // throttled cfs_rqs in the order they were throttled.
            bw.pool = bw.quota;
            bw.nr_periods += 1;
            let period = bw.period;
            let throttled = std::mem::take(&mut bw.throttled);
            let mut still = Vec::new();
            for rq in throttled {
                let bw = self.bw[g].as_mut().expect("checked");
                let need = (-self.rqs[rq as usize].runtime_remaining + 1) as u64;
                let give = need.min(bw.pool);
                bw.pool -= give;
                self.rqs[rq as usize].runtime_remaining += give as i64;
                if self.rqs[rq as usize].runtime_remaining > 0 {
                    self.unthrottle(sys, rq);
                } else {
                    still.push(rq);
                }
            }
            self.bw[g].as_mut().expect("checked").throttled.extend(still);
            sys.arm_timer(sys.now + period, token);
            return;
        }
        let cpu = (token >> 32) as CpuId;
        if self.hrtick_epoch[cpu as usize] == token as u32 && sys.cpus[cpu as usize].curr.is_some() {
            sys.resched(cpu);
        }
    }

    fn extra_metrics(&self, sys: &Sys) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Some(rdb) = &self.rdb {
            out.push(("rdb_migrations".into(), rdb.moves as f64));
        } else if let Some(lb) = &self.lb {
            out.push(("lb_count".into(), lb.lb_count as f64));
            out.push(("lb_migrations".into(), lb.balanced_moves as f64));
            out.push(("active_balance_pushes".into(), lb.active_moves as f64));
        }
        if self.tt.is_some() {
            // How TT classified the tasks, as of the end of the run.
            for ty in [TaskType::Realtime, TaskType::Interactive, TaskType::NoType, TaskType::CpuBound, TaskType::Batch]
            {
                let n = (0..sys.tasks.len() as TaskId)
                    .filter(|&t| !sys.task(t).policy.is_rt() && sys.task(t).state != TaskState::Exited)
                    .filter(|&t| self.tnodes[self.per_task[t as usize].se as usize].task_type == ty)
                    .count();
                out.push((format!("tt_tasks_{}", ty.name()), n as f64));
            }
        }
        for (g, bw) in self.bw.iter().enumerate() {
            if let Some(bw) = bw {
                let name = &sys.groups[g].name;
                let mut throttled = bw.throttled_ns;
                for &rq in &bw.throttled {
                    throttled += sys.now - self.rqs[rq as usize].throttled_at;
                }
                out.push((format!("{name}.nr_periods"), bw.nr_periods as f64));
                out.push((format!("{name}.nr_throttled"), bw.nr_throttled as f64));
                out.push((format!("{name}.throttled_usec"), throttled as f64 / 1e3));
            }
        }
        out
    }

    fn unsupported(&self, sys: &Sys) -> Vec<String> {
        let mut out = crate::common::no_iso(self.name(), sys);
        if self.flat {
            out.extend(crate::common::no_groups("tt", sys));
        }
        out
    }

    fn check_invariants(&self, sys: &Sys) -> Result<(), String> {
        if let Some(v) = self.violations.first() {
            return Err(v.clone());
        }
        for (i, r) in self.rqs.iter().enumerate() {
            let members: Vec<usize> =
                self.ents.iter().enumerate().filter(|(_, e)| e.on_rq && e.rq == i as u32).map(|(j, _)| j).collect();
            let load: u64 = members.iter().map(|&j| self.ents[j].weight).sum();
            if load != r.load || members.len() as u32 != r.nr_queued {
                return Err(format!(
                    "cfs_rq {i}: load {} / nr_queued {} but members weigh {load} / count {}",
                    r.load,
                    r.nr_queued,
                    members.len()
                ));
            }
            let in_tree = members.iter().filter(|&&j| r.curr != Some(j as u32)).count();
            if in_tree != r.tree.len() as usize {
                return Err(format!("cfs_rq {i}: tree holds {} of {in_tree} queued entities", r.tree.len()));
            }
            r.tree.check(&self.ents).map_err(|e| format!("cfs_rq {i}: {e}"))?;
            if r.leftmost != r.tree.first_keyed(&self.ents) {
                return Err(format!("cfs_rq {i}: cached leftmost {:?} is not the tree's first", r.leftmost));
            }
            let (mut swv, mut sw) = (0i128, 0i64);
            r.tree.for_each(&self.ents, |s| {
                let e = &self.ents[s as usize];
                swv += (e.vruntime - r.min_vruntime) as i128 * e.weight as i128;
                sw += e.weight as i64;
            });
            if swv != r.sum_wv || sw != r.sum_w {
                return Err(format!("cfs_rq {i}: avg_vruntime sums drifted"));
            }
        }
        for (t, se) in self.per_task.iter().map(|p| p.se).enumerate() {
            if se == NONE {
                continue;
            }
            if sys.task(t as TaskId).policy.is_rt() {
                continue;
            }
            let e = &self.ents[se as usize];
            let state = sys.task(t as TaskId).state;
            let runnable = matches!(state, TaskState::Runnable | TaskState::Running);
            if runnable != (e.on_rq && !e.delayed) {
                return Err(format!("task {t} is {state:?} but its entity on_rq={} delayed={}", e.on_rq, e.delayed));
            }
            if runnable && self.rqs[e.rq as usize].cpu != sys.task(t as TaskId).cpu {
                return Err(format!("task {t} is queued on another CPU's cfs_rq"));
            }
        }
        Ok(())
    }
}

impl Fair {
    /// The entity check_preempt_tick compares against: the leftmost, or
    /// under TT the list's lowest HRRN.
    fn tick_first(&self, rq: u32, now: Nanos) -> Option<u32> {
        if self.tt.is_some() { self.tt_first(rq, now, None) } else { self.rqs[rq as usize].leftmost.map(|(_, s)| s) }
    }

    fn running_task(&self, cpu: CpuId) -> Option<TaskId> {
        let mut rq = self.root(cpu);
        loop {
            let se = self.rqs[rq as usize].curr?;
            let e = &self.ents[se as usize];
            if e.my_rq == NONE {
                return Some(e.task);
            }
            rq = e.my_rq;
        }
    }

    /// Real-time rescaling check used by tests: the slice CFS gives `t` now.
    pub fn slice_of(&self, t: TaskId) -> u64 {
        self.sched_slice(self.per_task[t as usize].se)
    }
}
