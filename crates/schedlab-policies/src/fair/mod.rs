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
//! tree as the kernel does (`tree`).
//!
//! Three out-of-tree schedulers are built on this code as their patches
//! build on fair.c: `bore` on EEVDF, `cacule` and `tt` on CFS (their
//! runqueues become lists scanned for an interactivity score or a response
//! ratio, kept here as the tree in list order), with `rdb` CacULE's own
//! balancer. Each one's state, tunables, constructor and hooks live in its
//! file; the core reaches them only through the hooks in `patches`, one per
//! point where a patch changes fair.c (fork, wakeup, enqueue, dequeue,
//! placement, update_curr, the pick order, the tick, wakeup preemption,
//! yield, balancing), so the core files read as fair.c and a patch's whole
//! change is its file plus its arms in that table.
//!
//! The files, in the order of fair.c's story:
//!
//! - this file: the entities, cfs_rqs and tasks the class keeps, and the
//!   constructors that read the tunables (`tunables`);
//! - `group`: the task-group hierarchy and group entity weights;
//! - `queue`: a cfs_rq's tree (`tree`), avg_vruntime, min_vruntime;
//! - `cfs`: CFS's slice, pick and wakeup granularity;
//! - `eevdf`: EEVDF's deadlines, lag, protected slice and pick;
//! - `enqueue`: placement, enqueue/dequeue, delayed dequeue;
//! - `bandwidth`: cpu.max throttling;
//! - `pick`: pick_next_task_fair down the hierarchy, HRTICK;
//! - `balance`: PELT and the task lists the balancer in [`crate::smp`] uses;
//! - `class`: the `Policy` hooks, fair_sched_class's callbacks;
//! - `patches`: where BORE (`bore`), CacULE (`cacule`, `rdb`) and TT
//!   (`tt`) hook the above.

mod balance;
mod bandwidth;
mod bore;
mod cacule;
mod cfs;
mod class;
mod eevdf;
mod enqueue;
mod group;
mod patches;
mod pick;
mod queue;
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
use patches::{ListOrder, Patch};
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

impl Ent {
    /// A new entity, not queued, with nothing run: a task's (`task`, no
    /// `my_rq`) or a group's (`my_rq` the cfs_rq it stands for, no task).
    fn new(weight: u64, slice: u64, custom_slice: bool, rq: u32, my_rq: u32, task: TaskId, depth: u32) -> Ent {
        Ent {
            weight,
            vruntime: 0,
            deadline: 0,
            vlag: 0,
            vprot: 0,
            slice,
            custom_slice,
            rel_deadline: false,
            delayed: false,
            on_rq: false,
            sum_exec: 0,
            prev_sum_exec: 0,
            key: 0,
            list_seq: 0,
            rq,
            my_rq,
            task,
            depth,
            node: Node::default(),
        }
    }
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
    /// The out-of-tree scheduler built on the class, if any (`patches`).
    patch: Patch,
    /// BORE's per-task state (`bore`): burst, and the fork tree its
    /// inheritance reads.
    burst: Vec<bore::Burst>,
    parent_of: Vec<Option<TaskId>>,
    children: Vec<Vec<TaskId>>,
    /// CacULE's node per entity (`cacule`).
    cnodes: Vec<cacule::Node>,
    /// When the kernel booted, in the simulation's time (before 0, so
    /// wrapped): sched_clock's zero, which CacULE's stamps start from.
    boot: Nanos,
    /// CacULE's balancer, which replaces CFS's (see [`rdb`]).
    rdb: Option<rdb::Rdb>,
    /// TT's node per task entity, the dedicated CPU-bound task per CPU,
    /// and the last update_curr per task (time, delta) for the burst shift
    /// at sleep (`tt`).
    tnodes: Vec<tt::Node>,
    dedicated: Vec<Option<TaskId>>,
    last_charge: Vec<(Nanos, u64)>,
    list_seq: u64,
    /// Group scheduling off (TT): every task in the root cfs_rq.
    flat: bool,
}

impl Fair {
    pub fn new(variant: Variant, w: &Workload) -> Result<Fair, String> {
        Self::with_tunables(variant, w, &w.tunables)
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
                    preemption: tun.config_preemption,
                    ni_random: tun.features.ni_random,
                },
                w.seed,
            )),
            tun,
            verify: false,
            violations: Vec::new(),
            patch: Patch::None,
            burst: Vec::new(),
            parent_of: Vec::new(),
            children: Vec::new(),
            cnodes: Vec::new(),
            boot: 0,
            rdb: None,
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
                f.ents.push(Ent::new(
                    f.group_shares[g as usize],
                    f.tun.base_slice_ns,
                    false,
                    parent * n + cpu,
                    g * n + cpu,
                    NONE,
                    depth - 1,
                ));
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

    fn tree_key(&self, e: &Ent) -> i64 {
        match (self.order(), self.variant) {
            // Newest first, as CacULE and TT insert at the list head.
            (ListOrder::Cacule | ListOrder::Tt, _) => -(e.list_seq as i64),
            (ListOrder::Tree, Variant::Cfs) => e.vruntime,
            (ListOrder::Tree, Variant::Eevdf) => e.deadline,
        }
    }
}
