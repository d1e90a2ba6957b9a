//! CFS as Linux 6.1.192 decides it: sched_period and sched_slice (the
//! slice a task gets of sched_latency by its weight, no less than
//! sched_min_granularity), pick_next_entity with the skip, next and last
//! buddies, and wakeup_preempt_entity's wakeup_gran (TT and CacULE change
//! the order, through `super::ListOrder`).

use super::*;

impl Fair {
    pub(super) fn sched_period(&self, nr: u64) -> u64 {
        if nr > self.tun.nr_latency() { nr * self.tun.sched_min_granularity_ns } else { self.tun.sched_latency_ns }
    }

    /// sched_slice. ALT_PERIOD and BASE_SLICE came with Linux 5.13 (commit
    /// 0c2de3f054a5, "sched,fair: Alternative sched_slice()"), on by
    /// default; both off gives 5.12's slice.
    pub(super) fn sched_slice(&self, se: u32) -> u64 {
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

    pub(super) fn sched_vslice(&self, se: u32) -> i64 {
        calc_delta_fair(self.sched_slice(se), self.ents[se as usize].weight) as i64
    }

    /// CFS pick_next_entity with the skip, next and last buddies. "First"
    /// and "before" follow the list order (TT's HRRN); the buddies compare
    /// CFS vruntime whatever the order.
    pub(super) fn pick_cfs(&mut self, rq: u32, now: Nanos) -> Option<u32> {
        let r = &self.rqs[rq as usize];
        let curr = r.curr.filter(|&c| self.ents[c as usize].on_rq);
        let first = self.first_entity(rq, now);
        let before = |a: u32, b: u32| self.entity_before(a, b, now);
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
                let next_in_tree = self.next_entity(rq, now, se);
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

    /// check_preempt_tick for the running `se` of `rq`, queued with others:
    /// whether it ran its slice, or is behind the first entity by more
    /// than a slice after running at least the minimum granularity.
    pub(super) fn check_preempt_tick(&mut self, rq: u32, se: u32, now: Nanos) -> bool {
        let ideal = self.sched_slice(se);
        let e = &self.ents[se as usize];
        let ran = e.sum_exec - e.prev_sum_exec;
        if ran > ideal {
            self.clear_buddies(rq, se);
            return true;
        }
        if ran < self.tun.sched_min_granularity_ns {
            return false;
        }
        let Some(first) = self.first_entity(rq, now) else {
            return false;
        };
        // CFS's `delta < 0` test; TT's patch puts its entity_before there.
        if self.entity_before(se, first, now) {
            return false;
        }
        // `s64 delta > unsigned long ideal_runtime` compares unsigned. CFS
        // returned above on a negative delta, but TT's entity_before lets
        // one through (a task not ahead by HRRN, ahead by vruntime), which
        // then ends its run: TT's vruntimes drift seconds apart (a
        // tt-6.1 guest's 3 hogs on 2 CPUs, traced with sched_stat_runtime:
        // 1 in 642 first ticks had a delta between 0 and the slice), so at
        // a tick HRRN alone decides.
        let d = self.ents[se as usize].vruntime - self.ents[first as usize].vruntime;
        d as u64 > ideal
    }

    /// wakeup_preempt_entity(curr, se): 1 when se leads curr by more than
    /// the wakeup granularity scaled to se's weight.
    pub(super) fn wakeup_preempt_entity(&self, curr: u32, se: u32) -> i32 {
        let vdiff = self.ents[curr as usize].vruntime - self.ents[se as usize].vruntime;
        if vdiff <= 0 {
            return -1;
        }
        let gran = calc_delta_fair(self.tun.sched_wakeup_granularity_ns, self.ents[se as usize].weight) as i64;
        i32::from(vdiff > gran)
    }

    pub(super) fn clear_buddies(&mut self, rq: u32, se: u32) {
        let r = &mut self.rqs[rq as usize];
        for b in [&mut r.skip, &mut r.last, &mut r.next] {
            if *b == Some(se) {
                *b = None;
            }
        }
    }
}
