//! Group scheduling: each task group's cfs_rq per CPU under its parent's,
//! the group entity that stands for it there, weighted by calc_group_shares
//! (cpu.weight spread over the CPUs by their share of the group's weight,
//! at least MIN_SHARES), and reweight_entity keeping an entity's lag and
//! deadline through a weight change (6.12's reweight_eevdf, CFS's
//! vruntime rescale) — kernel/sched/fair.c of both guest versions.

use super::*;

impl Fair {
    pub(super) fn task_group(&self, sys: &Sys, t: TaskId) -> u32 {
        if self.flat { 0 } else { sys.task(t).group }
    }

    pub(super) fn group_depth(groups: &[GroupSpec], g: u32) -> u32 {
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

    pub(super) fn root(&self, cpu: CpuId) -> u32 {
        cpu
    }

    pub(super) fn group_rq(&self, group: u32, cpu: CpuId) -> u32 {
        group * self.nr_cpus + cpu
    }

    pub(super) fn parent_rq(&self, rq: u32) -> Option<u32> {
        let se = self.rqs[rq as usize].se;
        (se != NONE).then(|| self.ents[se as usize].rq)
    }

    /// calc_group_shares and reweight_entity for the group entity of `rq`.
    pub(super) fn update_group_weight(&mut self, rq: u32) {
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
    pub(super) fn reweight_entity(&mut self, se: u32, new: u64) {
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

    /// find_matching_se: walk both up to the cfs_rq they share.
    pub(super) fn matching(&self, mut a: u32, mut b: u32) -> (u32, u32) {
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
}
