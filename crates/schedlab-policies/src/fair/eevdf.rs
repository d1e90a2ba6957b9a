//! EEVDF as Linux 6.12.117 decides it: a request of base_slice (or the
//! task's custom slice) and its virtual deadline (update_deadline), lag
//! (update_entity_lag, entity_lag's clamp), RUN_TO_PARITY's protected
//! slice, and pick_eevdf: the eligible entity of earliest deadline, found
//! by walking the augmented tree (`super::tree`).

use super::*;

impl Fair {
    pub(super) fn vslice(&self, se: u32) -> i64 {
        let e = &self.ents[se as usize];
        calc_delta_fair(e.slice, e.weight) as i64
    }

    /// update_deadline: returns true when the request is used up.
    pub(super) fn update_deadline(&mut self, se: u32) -> bool {
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

    pub(super) fn update_entity_lag(&mut self, rq: u32, se: u32) {
        let avg = self.avg_vruntime(rq);
        self.ents[se as usize].vlag = self.entity_lag(avg, se);
    }

    /// entity_lag: V - v_i, clamped to the virtual time of two slices or a
    /// tick, whichever is longer (halved under BORE).
    pub(super) fn entity_lag(&self, avg: i64, se: u32) -> i64 {
        let e = &self.ents[se as usize];
        let limit = self.patch_lag_limit(calc_delta_fair((2 * e.slice).max(self.tick_ns()), e.weight) as i64);
        (avg - e.vruntime).clamp(-limit, limit)
    }

    pub(super) fn tick_ns(&self) -> u64 {
        // TICK_NSEC; the engine's HZ is fixed for a run, kept in the lag limit.
        self.tick
    }

    pub(super) fn protect_slice(&self, se: u32) -> bool {
        let e = &self.ents[se as usize];
        e.vruntime < e.vprot
    }

    /// pick_eevdf: the eligible entity with the earliest virtual deadline,
    /// or the running one while its slice is protected.
    pub(super) fn pick_eevdf(&self, rq: u32, protect: bool) -> Option<u32> {
        let r = &self.rqs[rq as usize];
        let first = r.leftmost.map(|(_, s)| s);
        let curr_on = r.curr.filter(|&c| self.ents[c as usize].on_rq);
        if r.nr_queued == 1 {
            return curr_on.or(first);
        }
        let eligible = self.eligibility(rq);
        let curr = curr_on.filter(|&c| eligible(self.ents[c as usize].vruntime));
        let protect = self.patch_run_to_parity(protect);
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

    pub(super) fn verify_pick(&mut self, rq: u32, picked: u32) {
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
}
