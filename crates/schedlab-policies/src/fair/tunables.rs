//! Tunables and sched_features of the fair class, under the kernel's names,
//! with defaults scaled by sysctl_sched_tunable_scaling as at boot
//! (update_sysctl / get_update_sysctl_factor in kernel/sched/fair.c).

use crate::common::{TunableSpec, apply_tunables, list_tunables};
use schedlab_sim::Tunable;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// CFS, Linux 5.15 - 6.5.
    Cfs,
    /// EEVDF, Linux 6.12 - 6.18.
    Eevdf,
}

#[derive(Clone, Debug)]
pub struct FairTunables {
    pub tunable_scaling: i64,
    pub sched_latency_ns: u64,
    pub sched_min_granularity_ns: u64,
    pub sched_wakeup_granularity_ns: u64,
    pub base_slice_ns: u64,
    pub sched_child_runs_first: bool,
    pub migration_cost_ns: u64,
    pub nr_migrate: u32,
    /// Built with CONFIG_PREEMPTION (the balancer's new-idle pull).
    pub config_preemption: bool,
    pub sched_cfs_bandwidth_slice_us: u64,
    pub features: Features,
    /// Every tunable of the variant, with the value in force, as
    /// `schedlab list` shows them.
    table: Vec<TunableSpec>,
}

/// sched_features (kernel/sched/features.h) that change decisions here.
#[derive(Clone, Debug)]
pub struct Features {
    pub gentle_fair_sleepers: bool,
    pub start_debit: bool,
    pub alt_period: bool,
    pub base_slice: bool,
    pub next_buddy: bool,
    pub last_buddy: bool,
    pub wakeup_preemption: bool,
    pub hrtick: bool,
    pub place_lag: bool,
    pub place_deadline_initial: bool,
    pub place_rel_deadline: bool,
    pub run_to_parity: bool,
    pub preempt_short: bool,
    pub delay_dequeue: bool,
    pub delay_zero: bool,
    pub sis_util: bool,
    pub ni_random: bool,
}

impl Features {
    fn defaults(v: Variant) -> Features {
        let eevdf = v == Variant::Eevdf;
        Features {
            gentle_fair_sleepers: true,
            start_debit: true,
            alt_period: true,
            base_slice: true,
            next_buddy: false,
            last_buddy: true,
            wakeup_preemption: true,
            hrtick: false,
            place_lag: eevdf,
            place_deadline_initial: eevdf,
            place_rel_deadline: eevdf,
            run_to_parity: eevdf,
            preempt_short: eevdf,
            delay_dequeue: eevdf,
            delay_zero: eevdf,
            sis_util: true,
            // "sched/fair: Proportional newidle balance" (v6.18), in the
            // stable series by 6.1.192 and 6.12.117, the versions followed,
            // and on there: left off here (see crate::smp).
            ni_random: false,
        }
    }

    /// The features of variant `v` under their features.h names, with
    /// their help, in the order `schedlab list` shows them.
    fn names(v: Variant) -> Vec<(&'static str, &'static str)> {
        let mut all = vec![
            ("NEXT_BUDDY", "prefer the task just woken"),
            ("WAKEUP_PREEMPTION", "let a waking task preempt the running one"),
            ("HRTICK", "end slices with a high-resolution timer, not at the next tick"),
            ("SIS_UTIL", "a wakeup scans fewer CPUs for an idle one the busier the LLC is, none from 85% (6.0+)"),
            (
                "NI_RANDOM",
                "a CPU going idle balances with the odds its domain's past new-idle balances succeeded (6.18, 6.1.192, 6.12.117; off here, see docs/schedulers.md)",
            ),
        ];
        match v {
            Variant::Cfs => all.extend([
                ("GENTLE_FAIR_SLEEPERS", "sleeper credit is half of sched_latency"),
                ("START_DEBIT", "new tasks start one vslice behind"),
                ("LAST_BUDDY", "prefer the task preempted at wakeup"),
                ("ALT_PERIOD", "the period counts every task on the CPU, not the entity's cfs_rq (5.13+; off = 5.12)"),
                ("BASE_SLICE", "no slice below sched_min_granularity (5.13+; off = 5.12)"),
            ]),
            Variant::Eevdf => all.extend([
                ("PLACE_LAG", "a waking task keeps its lag"),
                ("PLACE_DEADLINE_INITIAL", "a new task gets half a slice to its deadline"),
                ("PLACE_REL_DEADLINE", "a migrating task keeps its relative deadline"),
                ("RUN_TO_PARITY", "the running task keeps the CPU until its protected slice ends"),
                ("PREEMPT_SHORT", "a task with a shorter slice may cut that protection"),
                ("DELAY_DEQUEUE", "a sleeper with negative lag stays queued until it is paid"),
                ("DELAY_ZERO", "a delayed task's positive lag is dropped"),
            ]),
        }
        all
    }

    /// The flag of the feature named `name` (its features.h name), if the
    /// class has one.
    fn slot(&mut self, name: &str) -> Option<&mut bool> {
        Some(match name {
            "NEXT_BUDDY" => &mut self.next_buddy,
            "WAKEUP_PREEMPTION" => &mut self.wakeup_preemption,
            "HRTICK" => &mut self.hrtick,
            "SIS_UTIL" => &mut self.sis_util,
            "NI_RANDOM" => &mut self.ni_random,
            "GENTLE_FAIR_SLEEPERS" => &mut self.gentle_fair_sleepers,
            "START_DEBIT" => &mut self.start_debit,
            "LAST_BUDDY" => &mut self.last_buddy,
            "ALT_PERIOD" => &mut self.alt_period,
            "BASE_SLICE" => &mut self.base_slice,
            "PLACE_LAG" => &mut self.place_lag,
            "PLACE_DEADLINE_INITIAL" => &mut self.place_deadline_initial,
            "PLACE_REL_DEADLINE" => &mut self.place_rel_deadline,
            "RUN_TO_PARITY" => &mut self.run_to_parity,
            "PREEMPT_SHORT" => &mut self.preempt_short,
            "DELAY_DEQUEUE" => &mut self.delay_dequeue,
            "DELAY_ZERO" => &mut self.delay_zero,
            _ => return None,
        })
    }
}

/// 1 + ilog2(min(ncpus, 8)) for LOG scaling (the default), ncpus for LINEAR.
pub fn scaling_factor(scaling: i64, nr_cpus: u32) -> u64 {
    let cpus = nr_cpus.clamp(1, 8) as u64;
    match scaling {
        0 => 1,
        2 => cpus,
        _ => 1 + (63 - cpus.leading_zeros() as u64),
    }
}

/// Every one of the fair class's sysctls and debugfs files is an unsigned
/// int in the kernel: refused above that, not truncated.
const KERNEL_UINT_MAX: i64 = u32::MAX as i64;

impl FairTunables {
    pub fn new(v: Variant, nr_cpus: u32, set: &BTreeMap<String, i64>) -> Result<FairTunables, String> {
        let scaling = *set.get("sched_tunable_scaling").unwrap_or(&1);
        if !(0..=2).contains(&scaling) {
            return Err("sched_tunable_scaling is 0 (none), 1 (log, the default) or 2 (linear)".into());
        }
        let factor = scaling_factor(scaling, nr_cpus);
        let mut table = Self::table(v, scaling, factor);
        apply_tunables(
            match v {
                Variant::Cfs => "cfs",
                Variant::Eevdf => "eevdf",
            },
            &mut table,
            set,
        )?;
        // A variant's own tunables from its table; the other variant's keep
        // their scaled defaults, read from that variant's table (a group
        // entity's slice under CFS is base_slice_ns, as the kernel's
        // se->slice is sysctl_sched_base_slice).
        let other = Self::table(
            match v {
                Variant::Cfs => Variant::Eevdf,
                Variant::Eevdf => Variant::Cfs,
            },
            scaling,
            factor,
        );
        let n = |name| table.iter().chain(&other).find(|s| s.name == name).map_or(0, |s| s.value as u64);
        let mut features = Features::defaults(v);
        for s in &table {
            if let Some(flag) = features.slot(s.name) {
                *flag = s.value != 0;
            }
        }
        Ok(FairTunables {
            tunable_scaling: scaling,
            sched_latency_ns: n("sched_latency_ns"),
            sched_min_granularity_ns: n("sched_min_granularity_ns"),
            sched_wakeup_granularity_ns: n("sched_wakeup_granularity_ns"),
            base_slice_ns: n("base_slice_ns"),
            sched_child_runs_first: n("sched_child_runs_first") != 0,
            migration_cost_ns: n("migration_cost_ns"),
            nr_migrate: n("nr_migrate") as u32,
            config_preemption: n("CONFIG_PREEMPTION") != 0,
            sched_cfs_bandwidth_slice_us: n("sched_cfs_bandwidth_slice_us"),
            features,
            table,
        })
    }

    /// The variant's tunables with their defaults, the *_ns ones scaled by
    /// `factor` (sched_tunable_scaling's, as at boot).
    fn table(v: Variant, scaling: i64, factor: u64) -> Vec<TunableSpec> {
        let spec =
            |name, value: u64, min, help| TunableSpec { name, value: value as i64, min, max: KERNEL_UINT_MAX, help };
        let mut out = vec![TunableSpec {
            name: "sched_tunable_scaling",
            value: scaling,
            min: 0,
            max: 2,
            help: "0 none, 1 log (default), 2 linear: scales the *_ns defaults by CPU count",
        }];
        match v {
            Variant::Cfs => out.extend([
                spec(
                    "sched_latency_ns",
                    6_000_000 * factor,
                    1,
                    "targeted preemption latency for CPU-bound tasks (6ms x scaling)",
                ),
                spec(
                    "sched_min_granularity_ns",
                    750_000 * factor,
                    1,
                    "minimal preemption granularity (0.75ms x scaling)",
                ),
                spec(
                    "sched_wakeup_granularity_ns",
                    1_000_000 * factor,
                    1,
                    "vruntime lead a waking task needs to preempt (1ms x scaling)",
                ),
                TunableSpec {
                    name: "sched_child_runs_first",
                    value: 0,
                    min: 0,
                    max: 1,
                    help: "a forked child runs before its parent",
                },
            ]),
            // 6.12.y: 0.70 ms (the 6.15 change backported to the stable
            // series by 2ae891b8); 6.12.117, booted as eevdf-6.12, reads
            // 1400000 at 2 CPUs and 2100000 at 4.
            Variant::Eevdf => out.push(spec(
                "base_slice_ns",
                700_000 * factor,
                1,
                "request size of every task without a custom slice (0.70ms x scaling, 6.12.y)",
            )),
        }
        out.extend([
            spec("migration_cost_ns", 500_000, 0, "a task that ran this recently is cache hot and not migrated"),
            spec("nr_migrate", 32, 1, "tasks looked at per balance"),
            // A build option, not a sysctl: the guests the models are held
            // against are PREEMPT_VOLUNTARY builds without it (a cfs-6.1
            // guest's trace shows a CPU going idle pull 7 of fork-burst's
            // children at once), where distribution kernels' PREEMPT_DYNAMIC
            // selects it whatever preempt= they boot with.
            TunableSpec {
                name: "CONFIG_PREEMPTION",
                value: 0,
                min: 0,
                max: 1,
                help: "built preemptible (PREEMPT, PREEMPT_DYNAMIC): a CPU going idle pulls one task, not the imbalance",
            },
            spec("sched_cfs_bandwidth_slice_us", 5_000, 1, "runtime a CPU takes from a cpu.max pool at once"),
        ]);
        let mut defaults = Features::defaults(v);
        for (name, help) in Features::names(v) {
            let value = *defaults.slot(name).expect("every listed feature has a flag") as i64;
            out.push(TunableSpec { name, value, min: 0, max: 1, help });
        }
        out
    }

    /// A patch's own value for one of the fair class's tunables (BORE's
    /// scaling and tick-rounded base slice, CacULE's migration cost and
    /// SIS_UTIL): in force, and shown by `schedlab list` and reports.
    pub fn set(&mut self, name: &str, value: i64) {
        if let Some(s) = self.table.iter_mut().find(|s| s.name == name) {
            s.value = value;
        }
        match name {
            "sched_tunable_scaling" => self.tunable_scaling = value,
            "base_slice_ns" => self.base_slice_ns = value as u64,
            "migration_cost_ns" => self.migration_cost_ns = value as u64,
            feature => *self.features.slot(feature).expect("a patch sets a known feature") = value != 0,
        }
    }

    /// sched_nr_latency = sched_latency / sched_min_granularity.
    pub fn nr_latency(&self) -> u64 {
        (self.sched_latency_ns / self.sched_min_granularity_ns.max(1)).max(1)
    }

    pub fn list(&self) -> Vec<Tunable> {
        list_tunables(&self.table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_scaling_matches_the_kernel() {
        assert_eq!(scaling_factor(1, 1), 1);
        assert_eq!(scaling_factor(1, 2), 2);
        assert_eq!(scaling_factor(1, 4), 3);
        assert_eq!(scaling_factor(1, 8), 4);
        assert_eq!(scaling_factor(1, 64), 4);
        // What /sys/kernel/debug/sched/base_slice_ns reads in 6.12.117
        // booted with 2 and 4 vCPUs.
        let t = FairTunables::new(Variant::Eevdf, 2, &BTreeMap::new()).unwrap();
        assert_eq!(t.base_slice_ns, 1_400_000);
        let t = FairTunables::new(Variant::Eevdf, 4, &BTreeMap::new()).unwrap();
        assert_eq!(t.base_slice_ns, 2_100_000);
        let t = FairTunables::new(Variant::Cfs, 16, &BTreeMap::new()).unwrap();
        assert_eq!((t.sched_latency_ns, t.sched_min_granularity_ns), (24_000_000, 3_000_000));
        assert_eq!(t.nr_latency(), 8);
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let mut set = BTreeMap::new();
        set.insert("sched_latency_ns".to_string(), 1);
        let err = FairTunables::new(Variant::Eevdf, 2, &set).unwrap_err();
        assert!(err.contains("base_slice_ns"), "{err}");
        set.clear();
        set.insert("RUN_TO_PARITY".to_string(), 0);
        assert!(!FairTunables::new(Variant::Eevdf, 2, &set).unwrap().features.run_to_parity);
    }
}
