//! CacULE, Hamad Al Marri's interactivity-score scheduler, as in CacULE 5.14
//! (hamadmarri/cacule-cpu-scheduler, patches/CacULE/v5.14/cacule-5.14.patch),
//! on top of [`super::Fair`]'s CFS.
//!
//! Each entity carries its own vruntime (weighted CPU time, never placed
//! or normalised) and the time it was born. Its interactivity score is
//! FreeBSD ULE's with m = sched_interactivity_factor: with life l, run r
//! (that vruntime) and sleep s = l - r (every moment not run, waiting
//! included), score = m / (s / r) when s >= r, else 2m - m / (r / s), in
//! integer division; lower is more interactive. The cfs_rq is a list with
//! new entries at the head; pick_next_entity scans it for the strictly
//! lowest score (a tie keeps the entry nearer the head) and keeps the
//! running entity only if it scores strictly lower. The tick reschedules
//! whenever that pick is not the running entity, a waking entity preempts
//! one scoring higher, and a yield marks the vruntime's top bit until the
//! next pick. When an entity's life passes sched_max_lifetime_ms (in 2^20
//! ns "ms"), life is halved and vruntime rescaled to keep the ratio.
//!
//! What CacULE removes from CFS is removed here too: place_entity and
//! min_vruntime, the skip/next/last buddies, wake_affine/wake_wide (a
//! waking task goes to select_idle_sibling around its previous CPU), and
//! the avg_idle gate of new-idle balancing; sysctl_sched_migration_cost is
//! 0.2 ms. The RDB ("response driven balancer") variant is not modelled.
//! The wakeup's idle scan is not cut: 5.14 has SIS_PROP (a depth from
//! avg_idle and the measured scan cost, neither modelled), not 6.0's
//! SIS_UTIL.

use super::super::common::{TunableSpec, apply_tunables, list_tunables, take_own, value_of};
use schedlab_sim::{Nanos, Tunable};
use std::collections::BTreeMap;

const YIELD_MARK: u64 = 1 << 63;

/// CacULE's sysctls; the interactivity factor defaults to the code's 32768
/// (the patch's documentation still says 10).
fn table() -> Vec<TunableSpec> {
    vec![
        TunableSpec {
            name: "sched_interactivity_factor",
            value: 32768,
            min: 1,
            max: i32::MAX as i64,
            help: "m of the ULE score: scores run 0..2m, below m the task slept more than it ran",
        },
        TunableSpec {
            name: "sched_max_lifetime_ms",
            value: 22000,
            min: 1,
            max: 1 << 23,
            help: "life (in 2^20 ns units) after which life is halved and vruntime rescaled",
        },
        TunableSpec {
            name: "sched_cacule_yield",
            value: 1,
            min: 0,
            max: 1,
            help: "1: sched_yield() makes the task least interactive until the next pick",
        },
    ]
}

/// CFS names CacULE has no use for; setting one is an error, not a no-op.
const REMOVED: [&str; 6] = [
    "sched_wakeup_granularity_ns",
    "sched_child_runs_first",
    "GENTLE_FAIR_SLEEPERS",
    "START_DEBIT",
    "NEXT_BUDDY",
    "LAST_BUDDY",
];

#[derive(Clone, Debug)]
pub struct CaculeTunables {
    table: Vec<TunableSpec>,
    pub interactivity_factor: u64,
    pub max_lifetime_ms: u64,
    pub yield_mark: bool,
}

impl CaculeTunables {
    /// Takes CacULE's names out of `set`, leaving CFS's.
    pub fn take(set: &mut BTreeMap<String, i64>) -> Result<CaculeTunables, String> {
        if let Some(name) = REMOVED.iter().find(|n| set.contains_key(**n)) {
            return Err(format!(
                "{name} does not exist under cacule: CacULE removes place_entity, the buddies and the wakeup \
                 granularity; use sched_interactivity_factor or sched_max_lifetime_ms"
            ));
        }
        let mut table = table();
        let mine = take_own(&table, set);
        apply_tunables("cacule", &mut table, &mine)?;
        Ok(CaculeTunables {
            interactivity_factor: value_of(&table, "sched_interactivity_factor") as u64,
            max_lifetime_ms: value_of(&table, "sched_max_lifetime_ms") as u64,
            yield_mark: value_of(&table, "sched_cacule_yield") != 0,
            table,
        })
    }

    pub fn list(&self) -> Vec<Tunable> {
        list_tunables(&self.table)
    }

    pub fn hides(name: &str) -> bool {
        REMOVED.contains(&name)
    }
}

/// A cacule_node: the entity's own vruntime and birth time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Node {
    pub vruntime: u64,
    pub start_time: Nanos,
}

impl Node {
    /// calc_interactivity: 0..2m, lower is more interactive.
    pub fn score(&self, now: Nanos, m: u64) -> u64 {
        let life = now.saturating_sub(self.start_time);
        let vr = self.vruntime | 1;
        let sleep = if life > vr { (life - vr) | 1 } else { 1 };
        if sleep >= vr { m / (sleep / vr) } else { 2 * m - m / (vr / sleep) }
    }

    /// update_curr's share: weighted run time, then normalize_lifetime.
    pub fn charge(&mut self, now: Nanos, delta_fair: u64, t: &CaculeTunables) {
        self.vruntime = self.vruntime.wrapping_add(delta_fair);
        normalize_lifetime(now, &mut self.start_time, &mut self.vruntime, t.max_lifetime_ms, false);
    }

    pub fn mark_yield(&mut self) {
        self.vruntime |= YIELD_MARK;
    }

    pub fn unmark_yield(&mut self) {
        self.vruntime &= !YIELD_MARK;
    }
}

/// normalize_lifetime, shared by CacULE and TT: past max_lifetime_ms (in
/// 2^20 ns units) life is halved and vruntime rescaled to keep the
/// life/vruntime ratio, the yield mark dropped. CacULE acts past the
/// limit, TT (`at_limit`) from the limit on. Returns whether it acted.
pub(super) fn normalize_lifetime(
    now: Nanos,
    start: &mut Nanos,
    vruntime: &mut u64,
    max_lifetime_ms: u64,
    at_limit: bool,
) -> bool {
    let max_life = max_lifetime_ms << 20;
    let diff = now.wrapping_sub(*start).wrapping_sub(max_life) as i64;
    if diff < 0 || (diff == 0 && !at_limit) {
        return false;
    }
    let life = now.wrapping_sub(*start);
    *vruntime &= !YIELD_MARK;
    let old_hrrn_x = ((life << 7) / ((*vruntime >> 3) | 1)).max(1);
    *start = now - (max_life >> 1);
    *vruntime = (max_life << 9) / old_hrrn_x;
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 32768;

    #[test]
    fn score_follows_ule() {
        let n = |life: u64, run: u64| Node { vruntime: run, start_time: 0 }.score(life, M);
        // Slept 9x what it ran; the "| 1" on both sides floors the ratio to 8.
        assert_eq!(n(10_000_000, 1_000_000), M / 8);
        assert_eq!(n(10_000_010, 1_000_001), M / 9);
        // Ran as much as it slept: m.
        assert_eq!(n(2_000_000, 1_000_000), M);
        // Never slept: 2m - m / (r / 1), essentially 2m.
        assert_eq!(n(1_000_000, 1_000_000), 2 * M - M / 1_000_001);
        // A task that sleeps more scores lower (more interactive).
        assert!(n(100_000_000, 1_000_000) < n(100_000_000, 30_000_000));
    }

    #[test]
    fn yield_mark_makes_the_least_interactive_score() {
        let mut a = Node { vruntime: 1_000_000, start_time: 0 };
        let fresh = a.score(50_000_000, M);
        a.mark_yield();
        assert!(a.score(50_000_000, M) > fresh);
        assert!(a.score(50_000_000, M) >= 2 * M - 1);
        a.unmark_yield();
        assert_eq!(a.score(50_000_000, M), fresh);
    }

    #[test]
    fn lifetime_normalisation_halves_life_and_keeps_the_ratio() {
        let t = CaculeTunables::take(&mut BTreeMap::new()).unwrap();
        let max_life = 22000u64 << 20;
        let mut a = Node { vruntime: max_life / 4, start_time: 0 };
        let before = a.score(max_life, M);
        a.charge(max_life + 1, 0, &t);
        assert_eq!(a.start_time, max_life + 1 - max_life / 2);
        let after = a.score(max_life + 1, M);
        assert!(after.abs_diff(before) <= M / 50, "{before} -> {after}");
    }

    #[test]
    fn removed_cfs_names_are_refused() {
        let mut set = BTreeMap::from([("START_DEBIT".to_string(), 1)]);
        assert!(CaculeTunables::take(&mut set).unwrap_err().contains("removes place_entity"));
        let mut set = BTreeMap::from([("sched_interactivity_factor".to_string(), 50), ("sched_latency_ns".into(), 1)]);
        let t = CaculeTunables::take(&mut set).unwrap();
        assert_eq!(t.interactivity_factor, 50);
        assert!(set.contains_key("sched_latency_ns") && set.len() == 1);
    }
}
