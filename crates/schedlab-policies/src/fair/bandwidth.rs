//! CFS bandwidth control (cgroup v2 cpu.max): each group's pool refilled
//! every period, runtime taken by a CPU sched_cfs_bandwidth_slice_us at a
//! time, and the per-cfs_rq throttle and unthrottle both guest versions
//! have (kernel/sched/fair.c, assign_cfs_rq_runtime, throttle_cfs_rq).

use super::*;

impl Fair {
    pub(super) fn assign_runtime(&mut self, rq: u32) {
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

    pub(super) fn check_enqueue_throttle(&mut self, sys: &mut Sys, rq: u32) {
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

    pub(super) fn throttle(&mut self, sys: &mut Sys, rq: u32) {
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

    pub(super) fn unthrottle(&mut self, sys: &mut Sys, rq: u32) {
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

    pub(super) fn throttled_hierarchy(&self, mut rq: u32) -> bool {
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
}
