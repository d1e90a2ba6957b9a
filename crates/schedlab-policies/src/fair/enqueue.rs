//! Entities joining and leaving their cfs_rqs: place_entity (CFS's
//! START_DEBIT and GENTLE_FAIR_SLEEPERS, EEVDF's PLACE_LAG,
//! PLACE_DEADLINE_INITIAL and PLACE_REL_DEADLINE), enqueue and dequeue up
//! the group hierarchy, sched_child_runs_first, and EEVDF's DELAY_DEQUEUE:
//! a sleeper with negative lag stays queued until it is paid.

use super::*;

impl Fair {
    pub(super) fn place_entity(&mut self, rq: u32, se: u32, initial: bool, wakeup: bool) {
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
                let task = e.task;
                if let Some(v) = self.patch_deadline_vslice(task, initial, wakeup, vslice) {
                    vslice = v;
                } else if self.tun.features.place_deadline_initial && initial {
                    vslice /= 2;
                }
                let e = &mut self.ents[se as usize];
                e.deadline = e.vruntime + vslice;
            }
        }
    }

    pub(super) fn enqueue_entity(&mut self, rq: u32, se: u32, initial: bool, wakeup: bool) {
        let is_curr = self.rqs[rq as usize].curr == Some(se);
        match self.variant {
            Variant::Cfs => {
                if (initial || wakeup) && self.patch_keeps_cfs_placement() {
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

    pub(super) fn dequeue_entity(&mut self, rq: u32, se: u32, sleep: bool) {
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

    pub(super) fn enqueue_task(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, how: Enqueue) {
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
        self.patch_enqueue(sys, cpu, t, how, old != target);
        if old != target {
            if self.variant == Variant::Cfs && how != Enqueue::New && self.patch_keeps_cfs_placement() {
                let delta = self.rqs[target as usize].min_vruntime - self.rqs[old as usize].min_vruntime;
                self.ents[se as usize].vruntime += delta;
            }
            self.ents[se as usize].rq = target;
        }
        if how == Enqueue::New && self.variant == Variant::Cfs && self.patch_keeps_cfs_placement() {
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
    pub(super) fn child_runs_first(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        if self.variant != Variant::Cfs || !self.tun.sched_child_runs_first || !self.patch_keeps_child_runs_first() {
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
    pub(super) fn dequeue_task_entities(&mut self, se: u32, sleep: bool) {
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

    pub(super) fn requeue_delayed(&mut self, rq: u32, se: u32) {
        if self.tun.features.delay_zero {
            // BORE took the lag when the entity was delayed (negative then:
            // it was not eligible), and would place it as a wakeup.
            let lag_taken = self.patch_lag_at_delay();
            if !lag_taken {
                self.update_entity_lag(rq, se);
            }
            if self.ents[se as usize].vlag > 0 {
                let is_curr = self.rqs[rq as usize].curr == Some(se);
                self.rqs[rq as usize].nr_queued -= 1;
                if !is_curr {
                    self.tree_remove(rq, se);
                }
                self.ents[se as usize].vlag = 0;
                self.place_entity(rq, se, false, lag_taken);
                if !is_curr {
                    self.tree_insert(rq, se);
                }
                self.rqs[rq as usize].nr_queued += 1;
            }
        }
        self.ents[se as usize].delayed = false;
    }

    /// The delayed entity reached the front: dequeue it for real.
    pub(super) fn finish_delayed(&mut self, sys: &mut Sys, se: u32) {
        self.dequeue_task_entities(se, true);
        let e = &mut self.ents[se as usize];
        e.delayed = false;
        if self.tun.features.delay_zero && e.vlag > 0 {
            e.vlag = 0;
        }
        let cpu = self.rqs[e.rq as usize].cpu;
        self.pelt_root(sys, cpu);
    }
}
