//! pick_next_task_fair: down the group hierarchy from the CPU's root
//! cfs_rq, each level choosing by CFS's or EEVDF's pick, putting the
//! previous entities back and setting the next ones (set_next_entity), and
//! the HRTICK timer that ends a slice between ticks.

use super::*;

impl Fair {
    pub(super) fn put_prev_entity(&mut self, rq: u32, se: u32) {
        if self.ents[se as usize].on_rq {
            self.tree_insert(rq, se);
        }
        self.rqs[rq as usize].curr = None;
    }

    pub(super) fn set_next_entity(&mut self, rq: u32, se: u32) {
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
    pub(super) fn put_prev_chain(&mut self, sys: &mut Sys, t: TaskId) {
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
    pub(super) fn check_runtime(&mut self, sys: &mut Sys, rq: u32) -> bool {
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
    pub(super) fn set_next_chain(&mut self, se: u32) {
        let rq = self.ents[se as usize].rq;
        let up = self.rqs[rq as usize].se;
        if up != NONE {
            self.set_next_chain(up);
        }
        if self.rqs[rq as usize].curr != Some(se) {
            self.set_next_entity(rq, se);
        }
    }

    pub(super) fn pick_task(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
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
                    Variant::Cfs if self.order() == ListOrder::Cacule => self.pick_cacule(rq, sys.now),
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

    pub(super) fn hrtick_start(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
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
}
