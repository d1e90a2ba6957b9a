//! CacULE, Hamad Al Marri's interactivity-score scheduler, as in the
//! CacULE-cachy patch for Linux 6.1 (CachyOS, 12 Dec 2022;
//! ../shared/kernels/patches/cacule-6.1.patch, banner "CacULE CPU scheduler
//! (RDB) v6.0"), built with CONFIG_CACULE_SCHED and CONFIG_CACULE_RDB as the
//! cacule-6.1 kernel is, on top of [`super::Fair`]'s CFS. Its balancer is in
//! [`super::rdb`].
//!
//! Each entity carries its own vruntime (weighted CPU time, never placed
//! or normalised), the time it was born, and when it last ran. Which of two
//! entities goes first (entity_before) is decided by the sum of three
//! scores, lower first:
//! - interactivity, FreeBSD ULE's with m = sched_interactivity_factor
//!   (65536): with life l, run r (that vruntime) and sleep s = l - r (every
//!   moment not run, waiting included), m / (s / r) when s >= r, else
//!   2m - m / (r / s), in integer division;
//! - cache (sched_cache_factor 13107 over sched_cache_divisor 1 ms): with p
//!   the time since the entity's exec_start, m / (1 ms / p) up to 1 ms, then
//!   2m - m / (p / 1 ms): a task that ran a moment ago is cache-hot and
//!   scores low; the running entity scores 0;
//! - starvation (sched_starve_factor 19660 over sched_starve_divisor 3 ms):
//!   with w the time since it last ran, 2m - m / (3 ms / w) up to 3 ms, then
//!   m / (w / 3 ms): the longer it waited, the lower; the running entity
//!   scores the maximum 2m.
//!
//! So a waiting CPU hog overtakes the running one only once it has waited
//! 6 ms (its cache and starvation scores fall below the runner's 2m), and a
//! CPU shared by two hogs switches every other 4 ms tick. SCHED_IDLE
//! entities always go after normal ones. The cfs_rq is a list with new
//! entries at the head; pick_next_entity scans it for the strictly lowest
//! sum (a tie keeps the entry nearer the head) and keeps the running entity
//! only if it scores strictly lower. The tick reschedules whenever that pick
//! is not the running entity, a waking entity preempts one scoring higher,
//! and a yield marks the vruntime's top bit until the next pick. When an
//! entity's life passes sched_max_lifetime_ms (11000, in 2^20 ns "ms"),
//! life is halved and vruntime rescaled to keep the ratio.
//!
//! A task is born at wake_up_new_task; a task group's entity is never
//! stamped (zeroed memory), so it was born at the boot, sched_clock 0,
//! which is `[machine] uptime` before the simulation's start (an hour
//! unless set; 2-3 s in validate's guests). Its life is then the uptime,
//! and the interactivity scores of two groups differ less the older the
//! kernel: the cache and starvation scores even the split. Weights 100 and
//! 300 give the 300 group 75% at the groups' birth, 68% 2.5 s after boot
//! (the cacule-6.1 guest: 67.4-68.5%) and 63% an hour after.
//!
//! What CacULE removes from CFS is removed here too: place_entity and
//! min_vruntime, the skip/next/last buddies, wake_affine/wake_wide (a
//! waking task goes to select_idle_sibling around its previous CPU), SIS_UTIL
//! (SIS_PROP is on instead: its depth from avg_idle and the scan cost is not
//! modelled, and it scans at least 4 CPUs, so LLCs of up to 4 CPUs are exact)
//! and the whole CFS load balancer (RDB replaces it). A migrated entity's
//! exec_start is 0 until it runs (6.1.y's ENQUEUE_MIGRATED), which makes it
//! cache-cold and, for RDB, not movable again.
//!
//! Left out: RDB compiles out update_blocked_averages, so an idle CPU's
//! blocked load never decays, which only find_idlest_cpu (fork placement)
//! reads; the model's PELT decays it as CFS does.

use super::super::common::{TunableSpec, apply_tunables, list_tunables, take_own, value_of};
use super::{Fair, Patch, Variant, rdb};
use crate::smp::{Balancer, LbTunables};
use crate::weights::calc_delta_fair;
use schedlab_sim::workload::SchedPolicy;
use schedlab_sim::{Enqueue, Nanos, Sys, TaskId, Tunable, WakeKind, Workload};
use std::collections::BTreeMap;

const YIELD_MARK: u64 = 1 << 63;

/// CacULE's sysctls (kernel/sysctl.c of the patch) and RDB's Kconfig
/// interval.
fn table() -> Vec<TunableSpec> {
    vec![
        TunableSpec {
            name: "sched_interactivity_factor",
            value: 65536,
            min: 1,
            max: i32::MAX as i64,
            help: "m of the ULE score: scores run 0..2m, below m the task slept more than it ran",
        },
        TunableSpec {
            name: "sched_max_lifetime_ms",
            value: 11000,
            min: 1,
            max: 1 << 23,
            help: "life (in 2^20 ns units) after which life is halved and vruntime rescaled",
        },
        TunableSpec {
            name: "sched_cache_factor",
            value: 13107,
            min: 0,
            max: i32::MAX as i64,
            help: "m of the cache score (0 turns it off): 0 for the running task, up to 2m for one long off the CPU",
        },
        TunableSpec {
            name: "sched_cache_divisor",
            value: 1_000_000,
            min: 1,
            max: i32::MAX as i64,
            help: "ns off the CPU at which the cache score reaches m",
        },
        TunableSpec {
            name: "sched_starve_factor",
            value: 19660,
            min: 0,
            max: i32::MAX as i64,
            help: "m of the starvation score (0 turns it off): 2m for the running task, falling as a task waits",
        },
        TunableSpec {
            name: "sched_starve_divisor",
            value: 3_000_000,
            min: 1,
            max: i32::MAX as i64,
            help: "ns of waiting at which the starvation score falls to m",
        },
        TunableSpec {
            name: "sched_cacule_yield",
            value: 1,
            min: 0,
            max: 1,
            help: "1: sched_yield() makes the task least interactive until the next pick",
        },
        TunableSpec {
            name: "RDB_INTERVAL",
            value: 19,
            min: 0,
            max: 1_000_000,
            help: "CONFIG_RDB_INTERVAL: ms between a busy CPU's RDB balancing ticks (0: every tick)",
        },
    ]
}

/// CFS names CacULE has no use for; setting one is an error, not a no-op.
const REMOVED: [&str; 7] = [
    "sched_wakeup_granularity_ns",
    "sched_child_runs_first",
    "GENTLE_FAIR_SLEEPERS",
    "START_DEBIT",
    "NEXT_BUDDY",
    "LAST_BUDDY",
    "SIS_UTIL",
];

#[derive(Clone, Debug)]
pub struct CaculeTunables {
    table: Vec<TunableSpec>,
    pub interactivity_factor: u64,
    pub max_lifetime_ms: u64,
    pub cache_factor: u64,
    pub cache_divisor: u64,
    pub starve_factor: u64,
    pub starve_divisor: u64,
    pub yield_mark: bool,
    pub rdb_interval_ms: u64,
}

impl CaculeTunables {
    /// Takes CacULE's names out of `set`, leaving CFS's.
    pub fn take(set: &mut BTreeMap<String, i64>) -> Result<CaculeTunables, String> {
        if let Some(name) = REMOVED.iter().find(|n| set.contains_key(**n)) {
            return Err(format!(
                "{name} does not exist under cacule: CacULE removes place_entity, the buddies, the wakeup \
                 granularity and SIS_UTIL; use sched_interactivity_factor, sched_cache_factor or \
                 sched_starve_factor"
            ));
        }
        let mut table = table();
        let mine = take_own(&table, set);
        apply_tunables("cacule", &mut table, &mine)?;
        let v = |name| value_of(&table, name) as u64;
        Ok(CaculeTunables {
            interactivity_factor: v("sched_interactivity_factor"),
            max_lifetime_ms: v("sched_max_lifetime_ms"),
            cache_factor: v("sched_cache_factor"),
            cache_divisor: v("sched_cache_divisor"),
            starve_factor: v("sched_starve_factor"),
            starve_divisor: v("sched_starve_divisor"),
            yield_mark: v("sched_cacule_yield") != 0,
            rdb_interval_ms: v("RDB_INTERVAL"),
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

/// A cacule_node, with the entity's exec_start beside it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Node {
    pub vruntime: u64,
    pub start_time: Nanos,
    /// When it last ran (update_curr, set_next_entity).
    pub last_run: Nanos,
    /// se->exec_start: as last_run, but 0 after a migration until it runs.
    pub exec_start: Nanos,
    /// A SCHED_IDLE task's (cn_has_idle_policy); never a group entity's.
    pub idle: bool,
}

/// ULE's two-sided ratio score of `x` against `div`, as calc_cache_score
/// (rising with x) computes it; calc_starve_score is its mirror.
fn rising(m: u64, div: u64, x: u64) -> u64 {
    if div >= x { m / (div / x) } else { 2 * m - m / (x / div) }
}

impl Node {
    /// A task's node at wake_up_new_task: born now, never run
    /// (__sched_fork zeroes exec_start: sched_clock 0, the boot); last_run
    /// is the forking parent's, which ran last a moment ago.
    pub fn born(now: Nanos, boot: Nanos, idle: bool) -> Node {
        Node { vruntime: 0, start_time: now, last_run: now, exec_start: boot, idle }
    }

    /// A task group's node, all zeroes in the kernel: every stamp at the
    /// boot, `uptime` before the simulation's start.
    pub fn at_boot(uptime: Nanos) -> Node {
        let boot = 0u64.wrapping_sub(uptime);
        Node { vruntime: 0, start_time: boot, last_run: boot, exec_start: boot, idle: false }
    }

    /// calc_interactivity: 0..2m, lower is more interactive.
    pub fn score(&self, now: Nanos, m: u64) -> u64 {
        let life = now.wrapping_sub(self.start_time);
        let vr = self.vruntime | 1;
        let sleep = if life > vr { (life - vr) | 1 } else { 1 };
        if sleep >= vr { m / (sleep / vr) } else { 2 * m - m / (vr / sleep) }
    }

    /// calc_cache_score: 0 for the running entity.
    pub fn cache_score(&self, now: Nanos, running: bool, t: &CaculeTunables) -> u64 {
        if t.cache_factor == 0 || running {
            return 0;
        }
        rising(t.cache_factor, t.cache_divisor, now.wrapping_sub(self.exec_start) | 1)
    }

    /// calc_starve_score: 2m for the running entity.
    pub fn starve_score(&self, now: Nanos, running: bool, t: &CaculeTunables) -> u64 {
        if t.starve_factor == 0 {
            return 0;
        }
        let m = t.starve_factor;
        if running {
            return 2 * m;
        }
        let waited = now.wrapping_sub(self.last_run) | 1;
        2 * m - rising(m, t.starve_divisor, waited)
    }

    /// What entity_before compares: whether it is SCHED_IDLE, and the sum
    /// of the three scores as the kernel's unsigned int.
    pub fn key(&self, now: Nanos, running: bool, t: &CaculeTunables) -> (bool, u32) {
        (self.idle, self.total(now, running, t))
    }

    /// The sum of the three scores, as the kernel's unsigned int.
    pub fn total(&self, now: Nanos, running: bool, t: &CaculeTunables) -> u32 {
        (self.score(now, t.interactivity_factor)
            + self.cache_score(now, running, t)
            + self.starve_score(now, running, t)) as u32
    }

    /// update_curr's share: weighted run time, the run stamps, then
    /// normalize_lifetime.
    pub fn charge(&mut self, now: Nanos, delta_fair: u64, t: &CaculeTunables) {
        self.last_run = now;
        self.exec_start = now;
        self.vruntime = self.vruntime.wrapping_add(delta_fair);
        normalize_lifetime(now, &mut self.start_time, &mut self.vruntime, t.max_lifetime_ms, false);
    }

    /// set_next_entity (update_stats_curr_start).
    pub fn start_run(&mut self, now: Nanos) {
        self.last_run = now;
        self.exec_start = now;
    }

    pub fn mark_yield(&mut self) {
        self.vruntime |= YIELD_MARK;
    }

    pub fn unmark_yield(&mut self) {
        self.vruntime &= !YIELD_MARK;
    }
}

/// entity_before(now, a, b) == 1: b goes before a. `idle` is whether each is
/// a SCHED_IDLE task; the scores are compared as the kernel's int
/// difference of two unsigned ints.
pub fn before(a: (bool, u32), b: (bool, u32)) -> bool {
    match (a.0, b.0) {
        (false, true) => false,
        (true, false) => true,
        _ => (b.1.wrapping_sub(a.1) as i32) < 0,
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
    *start = now.wrapping_sub(max_life >> 1);
    *vruntime = (max_life << 9) / old_hrrn_x;
    true
}

/// CacULE's part of the fair class: its constructor, its hooks (see
/// `patches`) and the scores its list is ordered by.
impl Fair {
    /// CacULE: CFS ordered by interactivity score, balanced by RDB.
    pub fn new_cacule(w: &Workload) -> Result<Fair, String> {
        let mut set = w.tunables.clone();
        let c = CaculeTunables::take(&mut set)?;
        Self::refuse_unknown("cacule", w, &c.list(), CaculeTunables::hides)?;
        let c_interval = c.rdb_interval_ms;
        let own_cost = set.contains_key("migration_cost_ns");
        let mut f = Self::with_tunables(Variant::Cfs, w, &set)?;
        f.patch = Patch::Cacule(c);
        if !own_cost {
            f.tun.set("migration_cost_ns", 200_000);
        }
        // The patch takes SIS_UTIL out (SIS_PROP is back on).
        f.tun.set("SIS_UTIL", 0);
        f.rdb = Some(rdb::Rdb::new(w, c_interval));
        f.lb = Some(Balancer::new(
            &w.machine.topology,
            LbTunables {
                migration_cost_ns: f.tun.migration_cost_ns,
                nr_migrate: f.tun.nr_migrate,
                sis_util: f.tun.features.sis_util,
                preemption: f.tun.config_preemption,
                ni_random: f.tun.features.ni_random,
            },
            w.seed,
        ));
        // A group's entity is zeroed memory (alloc_fair_sched_group):
        // every stamp of its node is sched_clock 0, the boot, `uptime`
        // before the workload starts.
        f.cnodes = vec![Node::at_boot(w.machine.uptime); f.ents.len()];
        f.boot = 0u64.wrapping_sub(w.machine.uptime);
        f.cnodes.reserve_exact(w.initial_tasks() as usize);
        Ok(f)
    }

    fn cacule_tun(&self) -> &CaculeTunables {
        self.cacule().expect("a CacULE hook outside cacule")
    }

    /// wake_up_new_task stamps cacule_start_time.
    pub(super) fn cacule_fork(&mut self, sys: &Sys, t: TaskId) {
        self.cnodes.push(Node::born(sys.now, self.boot, sys.task(t).policy == SchedPolicy::Idle));
    }

    /// CacULE drops wake_affine: select_idle_sibling around prev.
    pub(super) fn cacule_wake_kind(kind: WakeKind) -> WakeKind {
        match kind {
            WakeKind::Wakeup { sync, .. } => WakeKind::Wakeup { waker: None, waker_cpu: None, sync },
            k => k,
        }
    }

    pub(super) fn cacule_enqueue(&mut self, sys: &Sys, t: TaskId, how: Enqueue, migrated: bool) {
        let se = self.per_task[t as usize].se as usize;
        if how == Enqueue::New {
            // task_struct start_time is the fork: a task whose workload
            // start lies later is born then, not when the engine made it.
            self.cnodes[se].start_time = sys.now;
        }
        if migrated {
            // ENQUEUE_MIGRATED (6.1.y's activate_task sets it on every
            // migration): cache-cold, and not movable by RDB until it runs.
            self.cnodes[se].exec_start = 0;
        }
    }

    /// update_curr's vruntime, CacULE's own, at every level.
    pub(super) fn cacule_charge(&mut self, sys: &Sys, t: TaskId, delta: Nanos) {
        let Patch::Cacule(c) = &self.patch else { unreachable!("a CacULE hook outside cacule") };
        let mut se = self.per_task[t as usize].se;
        loop {
            let w = self.ents[se as usize].weight;
            self.cnodes[se as usize].charge(sys.now, calc_delta_fair(delta, w), c);
            let up = self.rqs[self.ents[se as usize].rq as usize].se;
            if up == super::NONE {
                break;
            }
            se = up;
        }
    }

    /// CacULE's check_preempt_tick: resched unless the pick is the running
    /// entity.
    pub(super) fn cacule_check_preempt_tick(&self, rq: u32, se: u32, now: Nanos) -> bool {
        self.pick_cacule(rq, now) != Some(se)
    }

    /// check_preempt_wakeup's entity_before(curr, woken): the woken entity
    /// preempts when its scores sum strictly lower than the running one's;
    /// no buddies.
    pub(super) fn cacule_wakeup_preempt(&self, se: u32, pse: u32, now: Nanos) -> bool {
        before(self.cacule_key(se, now), self.cacule_key(pse, now))
    }

    /// yield_task_fair marks before the lone-task test and sets no skip
    /// buddy: the mark is all a yield does.
    pub(super) fn cacule_yield(&mut self, t: TaskId) {
        if self.cacule_tun().yield_mark {
            self.cnodes[self.per_task[t as usize].se as usize].mark_yield();
        }
    }

    pub(super) fn cacule_score(&self, se: u32, now: Nanos) -> u64 {
        let m = self.cacule_tun().interactivity_factor;
        self.cnodes[se as usize].score(now, m)
    }

    /// What CacULE's entity_before compares of `se`: its SCHED_IDLE-ness and
    /// the sum of its interactivity, cache and starvation scores, those of
    /// its cfs_rq's running entity scored as running.
    pub(super) fn cacule_key(&self, se: u32, now: Nanos) -> (bool, u32) {
        let running = self.rqs[self.ents[se as usize].rq as usize].curr == Some(se);
        self.cnodes[se as usize].key(now, running, self.cacule_tun())
    }

    /// CacULE's pick_next_entity: the lowest key in the list (on a tie,
    /// the entry nearest the head), the running entity only when it goes
    /// strictly before that.
    pub(super) fn pick_cacule(&self, rq: u32, now: Nanos) -> Option<u32> {
        let r = &self.rqs[rq as usize];
        let curr = r.curr.filter(|&c| self.ents[c as usize].on_rq);
        let mut best: Option<(u32, (bool, u32))> = None;
        r.tree.for_each(&self.ents, |s| {
            let key = self.cacule_key(s, now);
            if best.is_none_or(|(_, b)| before(b, key)) {
                best = Some((s, key));
            }
        });
        match (best, curr) {
            (None, c) => c,
            (Some((_, b)), Some(c)) if before(b, self.cacule_key(c, now)) => Some(c),
            (Some((s, _)), _) => Some(s),
        }
    }

    /// The CacULE interactivity score of `t` at `now` (tests, reports).
    pub fn interactivity_score(&self, t: TaskId, now: Nanos) -> Option<u64> {
        self.cacule().map(|_| self.cacule_score(self.per_task[t as usize].se, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 65536;

    #[test]
    fn score_follows_ule() {
        let n = |life: u64, run: u64| Node { vruntime: run, ..Node::default() }.score(life, M);
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
        let mut a = Node { vruntime: 1_000_000, ..Node::default() };
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
        let max_life = 11000u64 << 20;
        let mut a = Node { vruntime: max_life / 4, ..Node::default() };
        let before = a.score(max_life, M);
        a.charge(max_life + 1, 0, &t);
        assert_eq!(a.start_time, max_life + 1 - max_life / 2);
        let after = a.score(max_life + 1, M);
        assert!(after.abs_diff(before) <= M / 50, "{before} -> {after}");
    }

    #[test]
    fn a_waiting_hog_overtakes_the_running_one_after_six_ms() {
        // Two hogs of the same interactivity: the waiter's cache and
        // starvation scores against the runner's 0 + 2m. At 4 ms (one tick)
        // the waiter still loses, at 5 ms too (5 ms / 3 ms floors to 1), at
        // 6 ms it wins.
        let t = CaculeTunables::take(&mut BTreeMap::new()).unwrap();
        let ms = 1_000_000u64;
        let runner = Node { vruntime: 50 * ms, ..Node::default() };
        let waiter_for =
            |w: u64| Node { vruntime: 50 * ms, last_run: 100 * ms - w, exec_start: 100 * ms - w, ..Node::default() };
        let now = 100 * ms;
        let run = (false, runner.total(now, true, &t));
        for (waited, wins) in [(ms, false), (4 * ms, false), (5 * ms, false), (6 * ms, true), (8 * ms, true)] {
            let w = (false, waiter_for(waited).total(now, false, &t));
            assert_eq!(before(run, w), wins, "waited {waited}: runner {run:?}, waiter {w:?}");
        }
        // A SCHED_IDLE waiter never goes first; a normal one before an idle runner.
        assert!(!before(run, (true, 0)));
        assert!(before((true, u32::MAX), (false, u32::MAX)));
    }

    #[test]
    fn removed_cfs_names_are_refused() {
        let mut set = BTreeMap::from([("START_DEBIT".to_string(), 1)]);
        assert!(CaculeTunables::take(&mut set).unwrap_err().contains("removes place_entity"));
        let mut set = BTreeMap::from([("SIS_UTIL".to_string(), 1)]);
        assert!(CaculeTunables::take(&mut set).is_err());
        let mut set = BTreeMap::from([("sched_interactivity_factor".to_string(), 50), ("sched_latency_ns".into(), 1)]);
        let t = CaculeTunables::take(&mut set).unwrap();
        assert_eq!(t.interactivity_factor, 50);
        assert!(set.contains_key("sched_latency_ns") && set.len() == 1);
    }
}
