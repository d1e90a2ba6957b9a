//! Where BORE, CacULE and TT hook the fair class: every point at which the
//! core calls into a patch, as the patched kernels mark them in fair.c with
//! `#ifdef CONFIG_SCHED_BORE` (CONFIG_CACULE_SCHED, CONFIG_TT_SCHED). Each
//! hook does nothing for plain CFS and EEVDF, and sends each patch to its
//! own file (`bore`, `cacule` with its balancer `rdb`, `tt`), so this table
//! is the map from a point of fair.c to what each patch does there. The
//! core files never name a patch; a new patch on this class adds a variant
//! to [`Patch`] and its arms here.

use super::*;

/// The out-of-tree scheduler built on the class, with its tunables. Its
/// per-task state is in the class's side tables (`burst`, `cnodes`,
/// `tnodes`, ...), as the patches add fields to sched_entity.
pub(super) enum Patch {
    /// Plain CFS or EEVDF.
    None,
    /// BORE on EEVDF (`bore`).
    Bore(BoreTunables),
    /// CacULE on CFS, balanced by RDB (`cacule`, `rdb`).
    Cacule(CaculeTunables),
    /// TT on CFS (`tt`).
    Tt(TtTunables),
}

/// Whose list order a CFS-based cfs_rq follows: the pick-order hook.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ListOrder {
    /// The vruntime or deadline tree (CFS, EEVDF, BORE).
    Tree,
    /// A list scanned for the lowest interactivity + cache + starve score.
    Cacule,
    /// A list scanned for the lowest HRRN.
    Tt,
}

/// Identity: which patch, its tunables, its list order.
impl Fair {
    pub(super) fn bore(&self) -> Option<&BoreTunables> {
        match &self.patch {
            Patch::Bore(b) => Some(b),
            _ => None,
        }
    }

    /// BORE built and switched on (sysctl sched_bore): every change BORE
    /// makes to EEVDF is behind it.
    pub(super) fn bore_on(&self) -> bool {
        self.bore().is_some_and(|b| b.sched_bore)
    }

    pub(super) fn cacule(&self) -> Option<&CaculeTunables> {
        match &self.patch {
            Patch::Cacule(c) => Some(c),
            _ => None,
        }
    }

    pub(super) fn tt(&self) -> Option<&TtTunables> {
        match &self.patch {
            Patch::Tt(t) => Some(t),
            _ => None,
        }
    }

    pub(super) fn patch_name(&self) -> Option<&'static str> {
        match self.patch {
            Patch::None => None,
            Patch::Bore(_) => Some("bore"),
            Patch::Cacule(_) => Some("cacule"),
            Patch::Tt(_) => Some("tt"),
        }
    }

    /// The patch's sysctls after the class's (CacULE removes some).
    pub(super) fn patch_tunables(&self, all: &mut Vec<Tunable>) {
        match &self.patch {
            Patch::None => {}
            Patch::Bore(b) => all.extend(b.list()),
            Patch::Cacule(c) => {
                all.retain(|t| !CaculeTunables::hides(t.name));
                all.extend(c.list());
            }
            Patch::Tt(t) => all.extend(t.list()),
        }
    }

    /// __pick_first_entity: the tree's leftmost, or TT's lowest HRRN.
    pub(super) fn first_entity(&self, rq: u32, now: Nanos) -> Option<u32> {
        match self.order() {
            ListOrder::Tt => self.tt_first(rq, now, None),
            _ => self.rqs[rq as usize].leftmost.map(|(_, s)| s),
        }
    }

    /// __pick_next_entity of the first entity `se`: the one after it.
    pub(super) fn next_entity(&self, rq: u32, now: Nanos, se: u32) -> Option<u32> {
        match self.order() {
            ListOrder::Tt => self.tt_first(rq, now, Some(se)),
            _ => self.rqs[rq as usize].tree.next(&self.ents, se),
        }
    }

    /// entity_before: by vruntime, or TT's HRRN.
    pub(super) fn entity_before(&self, a: u32, b: u32, now: Nanos) -> bool {
        match self.order() {
            ListOrder::Tt => tt::Node::before(&self.tnodes[a as usize], &self.tnodes[b as usize], now),
            _ => self.ents[a as usize].vruntime < self.ents[b as usize].vruntime,
        }
    }

    pub(super) fn order(&self) -> ListOrder {
        match self.patch {
            Patch::Cacule(_) => ListOrder::Cacule,
            Patch::Tt(_) => ListOrder::Tt,
            Patch::None | Patch::Bore(_) => ListOrder::Tree,
        }
    }

    /// One error naming every tunable a CFS-based patch knows (CFS's own
    /// check would name only CFS's).
    pub(super) fn refuse_unknown(
        policy: &str,
        w: &Workload,
        own: &[Tunable],
        hides: fn(&str) -> bool,
    ) -> Result<(), String> {
        let cfs = FairTunables::new(Variant::Cfs, w.nr_cpus(), &Default::default())?;
        let mut known: Vec<&str> = cfs.list().iter().map(|t| t.name).filter(|n| !hides(n)).collect();
        known.extend(own.iter().map(|t| t.name));
        match w.tunables.keys().find(|k| !known.contains(&k.as_str())) {
            Some(name) => Err(format!(
                "unknown tunable '{name}' for {policy}{}: known are {}",
                schedlab_sim::names::did_you_mean(name, known.iter().copied()),
                known.join(", ")
            )),
            None => Ok(()),
        }
    }
}

/// A task's life in the class: fork, wakeup, enqueue, dequeue.
impl Fair {
    /// sched_fork / wake_up_new_task, after the class made the entity `se`.
    pub(super) fn patch_fork(&mut self, sys: &Sys, t: TaskId, parent: Option<TaskId>, se: u32) {
        match self.patch {
            Patch::None => {}
            Patch::Bore(_) => self.bore_fork(sys, t, parent, se),
            Patch::Cacule(_) => self.cacule_fork(sys, t),
            Patch::Tt(_) => self.tt_fork(sys, t),
        }
    }

    /// select_task_rq_fair's view of the wakeup.
    pub(super) fn patch_wake_kind(&self, kind: WakeKind) -> WakeKind {
        match self.patch {
            Patch::Cacule(_) => Self::cacule_wake_kind(kind),
            _ => kind,
        }
    }

    /// The engine hands the class a task to enqueue (try_to_wake_up,
    /// wake_up_new_task), before any of it is queued.
    pub(super) fn patch_wakeup(&mut self, sys: &Sys, t: TaskId, how: Enqueue) {
        if let Patch::Bore(_) = self.patch {
            self.bore_wakeup(sys, t, how);
        }
    }

    /// enqueue_task_fair, a balancer's move included, before the entities
    /// are placed; `migrated` when the task changes cfs_rq.
    pub(super) fn patch_enqueue(&mut self, sys: &Sys, cpu: CpuId, t: TaskId, how: Enqueue, migrated: bool) {
        match self.patch {
            Patch::None | Patch::Bore(_) => {}
            Patch::Cacule(_) => self.cacule_enqueue(sys, t, how, migrated),
            Patch::Tt(_) => self.tt_enqueue(sys, cpu, t, how, migrated),
        }
    }

    /// dequeue_task_fair, before the task leaves its CPU's list.
    pub(super) fn patch_dequeue(&mut self, sys: &Sys, t: TaskId, why: Dequeue) {
        match self.patch {
            Patch::None | Patch::Cacule(_) => {}
            Patch::Bore(_) => self.bore_dequeue(sys, t, why),
            Patch::Tt(_) => self.tt_dequeue(sys, t),
        }
    }

    /// A CPU's queue changed (enqueue, dequeue, tick): RDB's update_IS.
    pub(super) fn patch_rq_changed(&mut self, sys: &Sys, cpu: CpuId) {
        if self.rdb.is_some() {
            self.rdb_update_is(sys, cpu);
        }
    }
}

/// Placement: where an entity's vruntime and deadline start.
impl Fair {
    /// CFS's place_entity, the vruntime renormalised across cfs_rqs and
    /// task_fork_fair's start from the parent: all removed by CacULE, whose
    /// vruntime is the entity's own CPU time.
    pub(super) fn patch_keeps_cfs_placement(&self) -> bool {
        !matches!(self.patch, Patch::Cacule(_))
    }

    /// sysctl_sched_child_runs_first, which CacULE and TT ignore.
    pub(super) fn patch_keeps_child_runs_first(&self) -> bool {
        matches!(self.patch, Patch::None | Patch::Bore(_))
    }

    /// EEVDF's place_entity: the virtual slice to the new deadline, when
    /// the patch decides it (None: EEVDF's own rule).
    pub(super) fn patch_deadline_vslice(&self, task: u32, initial: bool, wakeup: bool, vslice: i64) -> Option<i64> {
        if self.bore_on() { Some(self.bore_deadline_vslice(task, initial, wakeup, vslice)) } else { None }
    }

    /// entity_lag's clamp.
    pub(super) fn patch_lag_limit(&self, limit: i64) -> i64 {
        if self.bore_on() { limit >> 1 } else { limit }
    }

    /// DELAY_ZERO: BORE takes the lag when the entity is delayed, not when
    /// it is requeued, and places a requeued one as a wakeup.
    pub(super) fn patch_lag_at_delay(&self) -> bool {
        self.bore_on()
    }
}

/// Running: update_curr, the pick, the tick, wakeup preemption, yield.
impl Fair {
    /// update_curr at an instant already charged (put_prev_entity of a task
    /// still queued, check_preempt_wakeup): only TT's clock moves.
    pub(super) fn patch_update_curr(&mut self, sys: &Sys, cpu: CpuId, t: TaskId) {
        if let Patch::Tt(_) = self.patch {
            self.tt_update_curr(sys, cpu, t, 0);
        }
    }

    /// update_curr, before the run is charged to the entities.
    pub(super) fn patch_before_charge(&mut self, sys: &Sys, t: TaskId, delta: Nanos) {
        if let Patch::Bore(_) = self.patch {
            self.bore_charge(sys, t, delta);
        }
    }

    /// update_curr, after the run was charged up the hierarchy.
    pub(super) fn patch_charged(&mut self, sys: &Sys, cpu: CpuId, t: TaskId, delta: Nanos) {
        match self.patch {
            Patch::None | Patch::Bore(_) => {}
            Patch::Cacule(_) => self.cacule_charge(sys, t, delta),
            Patch::Tt(_) => {
                self.tt_update_curr(sys, cpu, t, delta);
                self.last_charge[t as usize] = (sys.now, delta);
            }
        }
    }

    /// pick_next_task_fair, once the next task is chosen and before the
    /// previous one is put back: the yield mark lasts one pick.
    pub(super) fn patch_picked(&mut self, prev: TaskId) {
        let se = self.per_task[prev as usize].se as usize;
        match self.patch {
            Patch::None | Patch::Bore(_) => {}
            Patch::Cacule(_) => self.cnodes[se].unmark_yield(),
            Patch::Tt(_) => self.tnodes[se].unmark_yield(),
        }
    }

    /// set_next_entity down the picked chain (or going idle): RDB.
    pub(super) fn patch_set_next(&mut self, sys: &Sys, cpu: CpuId, next: Option<TaskId>) {
        if self.rdb.is_some() {
            self.rdb_set_next(sys, cpu, next);
        }
    }

    /// pick_eevdf's RUN_TO_PARITY.
    pub(super) fn patch_run_to_parity(&self, protect: bool) -> bool {
        match self.bore() {
            // Under BORE, RUN_TO_PARITY_BORE (off by default) stands for it.
            Some(b) if b.sched_bore => b.run_to_parity,
            _ => protect,
        }
    }

    /// task_tick_fair, before entity_tick.
    pub(super) fn patch_tick(&mut self, cpu: CpuId) {
        if let Patch::Tt(_) = self.patch {
            self.tt_check_dedicated(cpu);
        }
    }

    /// check_preempt_tick for the running `se` of `rq`, queued with
    /// others, when the patch replaces CFS's (None: CFS's decides, in the
    /// list's order).
    pub(super) fn patch_check_preempt_tick(&self, rq: u32, se: u32, now: Nanos) -> Option<bool> {
        match self.patch {
            Patch::Cacule(_) => Some(self.cacule_check_preempt_tick(rq, se, now)),
            _ => None,
        }
    }

    /// check_preempt_wakeup with `se` and `pse` the running and woken
    /// entities at their common level (None: the class decides).
    pub(super) fn patch_wakeup_preempt(
        &mut self,
        sys: &Sys,
        cpu: CpuId,
        curr: TaskId,
        se: u32,
        pse: u32,
    ) -> Option<bool> {
        match self.patch {
            Patch::None | Patch::Bore(_) => None,
            Patch::Cacule(_) => Some(self.cacule_wakeup_preempt(se, pse, sys.now)),
            Patch::Tt(_) => {
                // check_preempt_wakeup's update_curr, after enqueue_entity's.
                self.tt_update_curr(sys, cpu, curr, 0);
                None
            }
        }
    }

    /// yield_task_fair, at its start. Returns whether the patch ended it.
    pub(super) fn patch_yield(&mut self, sys: &Sys, cpu: CpuId, t: TaskId) -> bool {
        match self.patch {
            Patch::None => false,
            Patch::Bore(_) => {
                self.bore_yield(sys, t);
                false
            }
            Patch::Cacule(_) => {
                self.cacule_yield(t);
                true
            }
            Patch::Tt(_) => {
                self.tt_yield(sys, cpu, t);
                false
            }
        }
    }
}

/// Balancing and reports.
impl Fair {
    /// The periodic or new-idle balance, when the patch has its own
    /// balancer (RDB); false leaves it to the class's.
    pub(super) fn patch_balance(&mut self, sys: &mut Sys, cpu: CpuId, newidle: bool) -> bool {
        if self.rdb.is_none() {
            return false;
        }
        if newidle {
            self.rdb_newidle(sys, cpu);
        } else {
            self.rdb_tick(sys, cpu);
        }
        true
    }

    /// can_migrate_task: the task a patch keeps on `cpu` (TT's dedicated
    /// CPU-bound task).
    pub(super) fn patch_kept_on(&self, cpu: CpuId) -> Option<TaskId> {
        match self.patch {
            Patch::Tt(_) => self.dedicated[cpu as usize],
            _ => None,
        }
    }

    /// The balancer's figures, when the patch has its own balancer (RDB);
    /// false leaves them to the class's.
    pub(super) fn patch_balancer_metrics(&self, out: &mut Vec<(String, f64)>) -> bool {
        let Some(rdb) = &self.rdb else {
            return false;
        };
        out.push(("rdb_migrations".into(), rdb.moves as f64));
        true
    }

    /// The patch's own figures for the report, after the balancer's.
    pub(super) fn patch_metrics(&self, sys: &Sys, out: &mut Vec<(String, f64)>) {
        if let Patch::Tt(_) = self.patch {
            self.tt_metrics(sys, out);
        }
    }
}
