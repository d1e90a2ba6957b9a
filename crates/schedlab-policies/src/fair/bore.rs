//! BORE, the Burst-Oriented Response Enhancer, version 6.5.5 by Masahito
//! Suzuki, as patches/bore-6.12.patch applies it to Linux 6.12.117
//! (kernel/sched/bore.c and its fair.c hooks), on top of [`super::Fair`]'s
//! EEVDF.
//!
//! A task's burst time is the CPU time since it last slept or yielded. Its
//! burst penalty is (log2plus1(burst) - sched_burst_penalty_offset), both in
//! 8.8 fixed point, times sched_burst_penalty_scale / 1024 (1536: 1.5 per
//! doubling), capped at (40 << 8) - 1; the burst score is the penalty's high
//! byte (0..39), added to the task's nice level for the weight EEVDF uses,
//! so a task that runs long without sleeping loses weight while one that
//! sleeps often keeps nice 0's. The penalty in force is the larger of the
//! current burst's and prev_penalty; when a task sleeps or yields, the
//! burst's penalty is folded into prev_penalty: a lower one replaces it at
//! once, a higher one moves it halfway up (sched_burst_smoothness = 1,
//! rounded up). A forked task starts from its parent's prev_penalty, raised
//! to the average penalty of the parent's children (at least the parent's
//! own), cached for sched_burst_cache_lifetime.
//!
//! BORE also changes EEVDF: base_slice_ns is the multiple of the tick at or
//! above min_base_slice_ns (2 ms), without CPU scaling (4 ms at HZ=250);
//! the lag clamp is halved; RUN_TO_PARITY gives way to RUN_TO_PARITY_BORE,
//! off by default, so the running task has no protected slice; a waking or
//! new task gets half a slice to its deadline, and a task woken from a
//! futex wait (a schedlab condition or barrier; a channel `wait` is a pipe
//! read) none at all; a delayed task's lag is taken when it
//! is delayed, so a requeued one is not placed again; a yielding task
//! restarts its burst and keeps its remaining request in real time.
//!
//! Left out: sched_burst_inherit_type's ancestor-hub walk and the thread
//! group cache reduce to the direct parent's children, since schedlab's
//! tasks form no process tree beyond fork; `is_idle_core` in
//! select_idle_sibling (only SMT machines see it).

use super::super::common::{TunableSpec, apply_tunables, list_tunables, take_own, value_of};
use super::{Fair, Patch, Variant};
use crate::weights::task_weight;
use schedlab_sim::workload::SchedPolicy;
use schedlab_sim::{Dequeue, Enqueue, Nanos, Sys, TaskId, Workload};
use std::collections::BTreeMap;

pub const MAX_BURST_PENALTY: u32 = (40 << 8) - 1;

#[derive(Clone, Debug)]
pub struct BoreTunables {
    pub sched_bore: bool,
    pub smoothness: u32,
    /// features.h RUN_TO_PARITY_BORE: the running task's slice protected.
    pub run_to_parity: bool,
    pub penalty_offset: u32,
    pub penalty_scale: u32,
    pub cache_lifetime: Nanos,
    pub min_base_slice_ns: u64,
    table: Vec<TunableSpec>,
}

/// BORE's sysctls and feature with bore.c's defaults, in the order
/// `schedlab list` shows them.
fn table() -> Vec<TunableSpec> {
    let spec = |name, value, min, max, help| TunableSpec { name, value, min, max, help };
    vec![
        spec("sched_bore", 1, 0, 1, "1: burst penalties on; 0: plain EEVDF weights"),
        spec(
            "sched_burst_penalty_offset",
            24,
            0,
            63,
            "log2 of the burst (ns) below which no penalty applies (24: ~16.8 ms)",
        ),
        spec(
            "sched_burst_penalty_scale",
            1536,
            0,
            4095,
            "nice levels x 256 per doubling of the burst beyond the offset, /1024",
        ),
        spec(
            "sched_burst_smoothness",
            1,
            0,
            3,
            "shift smoothing a rising penalty across bursts (a falling one is taken at once)",
        ),
        spec(
            "RUN_TO_PARITY_BORE",
            0,
            0,
            1,
            "the running task keeps the CPU until its slice ends (replaces RUN_TO_PARITY under bore)",
        ),
        spec(
            "sched_burst_cache_lifetime",
            75_000_000,
            0,
            u32::MAX as i64,
            "ns a parent's children-penalty average is reused for forks",
        ),
        spec("min_base_slice_ns", 2_000_000, 1, 1_000_000_000, "base_slice_ns is this rounded up to a whole tick"),
    ]
}

impl BoreTunables {
    /// Takes BORE's names out of `set`, leaving EEVDF's.
    pub fn take(set: &mut BTreeMap<String, i64>) -> Result<BoreTunables, String> {
        let mut table = table();
        let mine = take_own(&table, set);
        apply_tunables("bore", &mut table, &mine)?;
        if set.contains_key("base_slice_ns") {
            return Err("base_slice_ns is read-only under bore: set min_base_slice_ns (rounded up to a tick)".into());
        }
        let v = |name| value_of(&table, name);
        Ok(BoreTunables {
            sched_bore: v("sched_bore") != 0,
            smoothness: v("sched_burst_smoothness") as u32,
            run_to_parity: v("RUN_TO_PARITY_BORE") != 0,
            penalty_offset: v("sched_burst_penalty_offset") as u32,
            penalty_scale: v("sched_burst_penalty_scale") as u32,
            cache_lifetime: v("sched_burst_cache_lifetime") as Nanos,
            min_base_slice_ns: v("min_base_slice_ns") as u64,
            table,
        })
    }

    /// base_slice_ns = the first multiple of the tick at or above min_base_slice_ns.
    pub fn base_slice(&self, tick_ns: u64) -> u64 {
        tick_ns * self.min_base_slice_ns.div_ceil(tick_ns).max(1)
    }

    pub fn list(&self) -> Vec<schedlab_sim::Tunable> {
        list_tunables(&self.table)
    }
}

/// log2plus1_u64_u32f8: fls64(v) in the high bits, the next 8 bits below
/// the leading one as the fraction.
pub fn log2plus1_u32f8(v: u64) -> u32 {
    if v == 0 {
        return 0;
    }
    let integral = 64 - v.leading_zeros();
    let fractional = ((v << (64 - integral)) >> 55) as u8;
    (integral << 8) | fractional as u32
}

pub fn calc_burst_penalty(t: &BoreTunables, burst_time: u64) -> u32 {
    let greed = log2plus1_u32f8(burst_time) as i64;
    let tolerance = (t.penalty_offset as i64) << 8;
    let penalty = (greed - tolerance).max(0) as u64;
    let scaled = (penalty * t.penalty_scale as u64) >> 10;
    (scaled as u32).min(MAX_BURST_PENALTY)
}

pub fn binary_smooth(t: &BoreTunables, new: u32, old: u32) -> u32 {
    if new <= old {
        return new;
    }
    let divisor = 1u32 << t.smoothness;
    old + ((new - old + divisor - 1) >> t.smoothness)
}

/// Per-task burst state.
#[derive(Clone, Debug, Default)]
pub struct Burst {
    pub burst_time: u64,
    pub prev_penalty: u32,
    pub curr_penalty: u32,
    pub penalty: u32,
    pub score: u32,
    /// Children-average cache: (score, timestamp).
    pub child_cache: Option<(u32, Nanos)>,
    /// Woken from a futex wait and not yet run.
    pub futex_waiting: bool,
}

impl Burst {
    /// update_curr_bore / update_penalty; returns the new burst score.
    pub fn update(&mut self, t: &BoreTunables) -> u32 {
        self.curr_penalty = calc_burst_penalty(t, self.burst_time);
        self.penalty = self.prev_penalty.max(self.curr_penalty);
        self.score = if t.sched_bore { self.penalty >> 8 } else { 0 };
        self.score
    }

    /// restart_burst_bore: the burst's penalty folded into prev_penalty.
    pub fn restart(&mut self, t: &BoreTunables) -> u32 {
        self.prev_penalty = binary_smooth(t, self.curr_penalty, self.prev_penalty);
        self.burst_time = 0;
        self.curr_penalty = 0;
        self.penalty = self.prev_penalty;
        self.score = if t.sched_bore { self.penalty >> 8 } else { 0 };
        self.score
    }
}

/// BORE's part of the fair class: its constructor, its hooks (see
/// `patches`), the burst score as a weight, and the score a child inherits.
impl Fair {
    /// BORE: EEVDF with burst penalties.
    pub fn new_bore(w: &Workload) -> Result<Fair, String> {
        let mut set = w.tunables.clone();
        let b = BoreTunables::take(&mut set)?;
        let mut f = Self::with_tunables(Variant::Eevdf, w, &set).map_err(|e| e.replace("for eevdf", "for bore"))?;
        // BORE: SCHED_TUNABLESCALING_NONE, base slice a whole number of ticks.
        f.tun.set("sched_tunable_scaling", 0);
        f.tun.set("base_slice_ns", b.base_slice(f.tick) as i64);
        for e in &mut f.ents {
            e.slice = f.tun.base_slice_ns;
        }
        f.patch = Patch::Bore(b);
        f.burst.reserve_exact(w.initial_tasks() as usize);
        f.parent_of.reserve_exact(w.initial_tasks() as usize);
        Ok(f)
    }

    /// task_fork_bore: the copied prev_penalty, raised to the inherited one.
    pub(super) fn bore_fork(&mut self, sys: &Sys, t: TaskId, parent: Option<TaskId>, se: u32) {
        if self.burst.len() <= t as usize {
            self.burst.resize(t as usize + 1, Burst::default());
            self.parent_of.resize(t as usize + 1, None);
            self.children.resize(t as usize + 1, Vec::new());
        }
        if let Some(p) = parent {
            let inherited = self.bore_inherit(sys.now, p);
            self.parent_of[t as usize] = Some(p);
            self.children[p as usize].push(t);
            let parent_prev = self.burst[p as usize].prev_penalty;
            let Patch::Bore(tun) = &self.patch else { unreachable!("a BORE hook outside bore") };
            let b = &mut self.burst[t as usize];
            b.prev_penalty = parent_prev.max(inherited);
            b.update(tun);
            self.ents[se as usize].weight = self.bore_weight(sys, t);
        }
    }

    /// futex_wait_queue sets the flag before schedule() and clears it when
    /// the task runs again: a wakeup's placement sees it.
    pub(super) fn bore_wakeup(&mut self, sys: &Sys, t: TaskId, how: Enqueue) {
        self.burst[t as usize].futex_waiting = how == Enqueue::Wakeup && sys.task(t).futex_wait;
    }

    /// A sleep restarts the burst; an exit leaves the parent's children.
    pub(super) fn bore_dequeue(&mut self, sys: &Sys, t: TaskId, why: Dequeue) {
        if why == Dequeue::Sleep {
            let Patch::Bore(tun) = &self.patch else { unreachable!("a BORE hook outside bore") };
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

    /// update_curr's update_burst_penalty, before the run is charged at
    /// the weight it sets.
    pub(super) fn bore_charge(&mut self, sys: &Sys, t: TaskId, delta: Nanos) {
        let Patch::Bore(tun) = &self.patch else { unreachable!("a BORE hook outside bore") };
        let b = &mut self.burst[t as usize];
        b.futex_waiting = false;
        b.burst_time += delta;
        let old = b.score;
        if b.update(tun) != old {
            self.bore_reweight(sys, t);
        }
    }

    /// restart_burst_rescale_deadline, even when alone on the CPU.
    pub(super) fn bore_yield(&mut self, sys: &Sys, t: TaskId) {
        let Patch::Bore(tun) = &self.patch else { unreachable!("a BORE hook outside bore") };
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

    /// place_entity's deadline: half a slice for a waking or new task, none
    /// for one woken from a futex wait (its deadline is its vruntime).
    pub(super) fn bore_deadline_vslice(&self, task: u32, initial: bool, wakeup: bool, vslice: i64) -> i64 {
        if task != super::NONE && self.burst[task as usize].futex_waiting {
            0
        } else if initial || wakeup {
            vslice / 2
        } else {
            vslice
        }
    }

    /// BORE: the weight of nice + burst score (effective_prio).
    pub(super) fn bore_weight(&self, sys: &Sys, t: TaskId) -> u64 {
        let info = sys.task(t);
        if info.policy == SchedPolicy::Idle {
            return task_weight(sys, t);
        }
        let score = self.burst[t as usize].score as i32;
        crate::weights::nice_to_weight((info.nice + score).min(19))
    }

    /// update_burst_score's reweight_task_by_prio when the score moved.
    pub(super) fn bore_reweight(&mut self, sys: &Sys, t: TaskId) {
        let se = self.per_task[t as usize].se;
        let w = self.bore_weight(sys, t);
        if w != self.ents[se as usize].weight {
            self.reweight_entity(se, w);
        }
    }

    /// The burst score of a task under BORE (tests, reports).
    pub fn burst_score(&self, t: TaskId) -> Option<u32> {
        self.bore().map(|_| self.burst[t as usize].score)
    }

    /// inherit_from_parent: the parent's children's average penalty, at
    /// least the parent's own, cached for sched_burst_cache_lifetime.
    pub(super) fn bore_inherit(&mut self, now: Nanos, parent: TaskId) -> u32 {
        let lifetime = self.bore().expect("a BORE hook outside bore").cache_lifetime;
        if let Some((score, at)) = self.burst[parent as usize].child_cache
            && at + lifetime >= now
        {
            return score;
        }
        // BURST_CACHE_STOP_COUNT: the first 63 children.
        let kids = &self.children[parent as usize][..self.children[parent as usize].len().min(63)];
        let sum: u32 = kids.iter().map(|&c| self.burst[c as usize].penalty).sum();
        let avg = if kids.is_empty() { 0 } else { sum / kids.len() as u32 };
        let score = avg.max(self.burst[parent as usize].penalty);
        self.burst[parent as usize].child_cache = Some((score, now));
        score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tun() -> BoreTunables {
        BoreTunables::take(&mut BTreeMap::new()).unwrap()
    }

    #[test]
    fn penalty_starts_beyond_the_offset_and_caps() {
        let t = tun();
        // 2^23 ns (8.4 ms) is below the 2^24 offset: no penalty.
        assert_eq!(calc_burst_penalty(&t, 1 << 23), 0);
        // 1 s: fls = 30, 5.86 doublings past the offset,
        // 1.5 nice levels each: score 10.
        let p = calc_burst_penalty(&t, 1_000_000_000);
        assert_eq!(p >> 8, 10, "{p}");
        assert_eq!(calc_burst_penalty(&t, u64::MAX), MAX_BURST_PENALTY);
    }

    #[test]
    fn smoothing_halves_rises_and_takes_falls_whole() {
        let t = tun();
        assert_eq!(binary_smooth(&t, 41, 0), 21);
        assert_eq!(binary_smooth(&t, 0, 20), 0);
    }

    #[test]
    fn base_slice_rounds_up_to_the_tick() {
        let t = tun();
        assert_eq!(t.base_slice(4_000_000), 4_000_000);
        assert_eq!(t.base_slice(1_000_000), 2_000_000);
        assert_eq!(t.base_slice(3_333_333), 3_333_333);
    }
}
