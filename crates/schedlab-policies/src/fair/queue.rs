//! A cfs_rq's queue: the tree its entities are filed in (by vruntime
//! under CFS, by deadline under EEVDF, in list order under CacULE and TT),
//! the weighted sums behind EEVDF's avg_vruntime and entity_eligible, and
//! CFS's min_vruntime.

use super::*;

impl Fair {
    pub(super) fn tree_insert(&mut self, rq: u32, se: u32) {
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

    pub(super) fn tree_remove(&mut self, rq: u32, se: u32) {
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
    pub(super) fn avg_vruntime(&self, rq: u32) -> i64 {
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
    pub(super) fn queue_sums(&self, rq: u32) -> (i128, i128) {
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
    pub(super) fn eligibility(&self, rq: u32) -> impl Fn(i64) -> bool + use<> {
        let (avg, load) = self.queue_sums(rq);
        let base = self.rqs[rq as usize].min_vruntime;
        move |v| avg >= (v - base) as i128 * load
    }

    pub(super) fn eligible(&self, rq: u32, se: u32) -> bool {
        self.eligibility(rq)(self.ents[se as usize].vruntime)
    }

    /// update_min_vruntime (CFS): monotonic, from curr and the leftmost.
    pub(super) fn update_min_vruntime(&mut self, rq: u32) {
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

    pub(super) fn account_enqueue(&mut self, rq: u32, se: u32) {
        let w = self.ents[se as usize].weight;
        let r = &mut self.rqs[rq as usize];
        r.load += w;
        r.nr_queued += 1;
        let g = r.group as usize;
        self.group_load[g] += w;
    }

    pub(super) fn account_dequeue(&mut self, rq: u32, se: u32) {
        let w = self.ents[se as usize].weight;
        let r = &mut self.rqs[rq as usize];
        r.load -= w;
        r.nr_queued -= 1;
        let g = r.group as usize;
        self.group_load[g] -= w;
    }
}
