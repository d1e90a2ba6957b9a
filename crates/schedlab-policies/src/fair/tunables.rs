//! Tunables and sched_features of the fair class, under the kernel's names,
//! with defaults scaled by sysctl_sched_tunable_scaling as at boot
//! (update_sysctl / get_update_sysctl_factor in kernel/sched/fair.c).

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
    pub sched_cfs_bandwidth_slice_us: u64,
    pub features: Features,
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
        }
    }

    fn table(&mut self, v: Variant) -> Vec<(&'static str, &mut bool, &'static str)> {
        let mut all = vec![
            ("NEXT_BUDDY", &mut self.next_buddy, "prefer the task just woken"),
            ("WAKEUP_PREEMPTION", &mut self.wakeup_preemption, "let a waking task preempt the running one"),
            ("HRTICK", &mut self.hrtick, "end slices with a high-resolution timer, not at the next tick"),
            (
                "SIS_UTIL",
                &mut self.sis_util,
                "a wakeup scans fewer CPUs for an idle one the busier the LLC is, none from 85% (6.0+)",
            ),
        ];
        match v {
            Variant::Cfs => all.extend([
                ("GENTLE_FAIR_SLEEPERS", &mut self.gentle_fair_sleepers, "sleeper credit is half of sched_latency"),
                ("START_DEBIT", &mut self.start_debit, "new tasks start one vslice behind"),
                ("LAST_BUDDY", &mut self.last_buddy, "prefer the task preempted at wakeup"),
                (
                    "ALT_PERIOD",
                    &mut self.alt_period,
                    "the period counts every task on the CPU, not the entity's cfs_rq (5.13+; off = 5.12)",
                ),
                ("BASE_SLICE", &mut self.base_slice, "no slice below sched_min_granularity (5.13+; off = 5.12)"),
            ]),
            Variant::Eevdf => all.extend([
                ("PLACE_LAG", &mut self.place_lag, "a waking task keeps its lag"),
                (
                    "PLACE_DEADLINE_INITIAL",
                    &mut self.place_deadline_initial,
                    "a new task gets half a slice to its deadline",
                ),
                ("PLACE_REL_DEADLINE", &mut self.place_rel_deadline, "a migrating task keeps its relative deadline"),
                (
                    "RUN_TO_PARITY",
                    &mut self.run_to_parity,
                    "the running task keeps the CPU until its protected slice ends",
                ),
                ("PREEMPT_SHORT", &mut self.preempt_short, "a task with a shorter slice may cut that protection"),
                ("DELAY_DEQUEUE", &mut self.delay_dequeue, "a sleeper with negative lag stays queued until it is paid"),
                ("DELAY_ZERO", &mut self.delay_zero, "a delayed task's positive lag is dropped"),
            ]),
        }
        all
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

impl FairTunables {
    pub fn new(v: Variant, nr_cpus: u32, set: &BTreeMap<String, i64>) -> Result<FairTunables, String> {
        let scaling = *set.get("sched_tunable_scaling").unwrap_or(&1);
        if !(0..=2).contains(&scaling) {
            return Err("sched_tunable_scaling is 0 (none), 1 (log, the default) or 2 (linear)".into());
        }
        let f = scaling_factor(scaling, nr_cpus);
        let mut t = FairTunables {
            tunable_scaling: scaling,
            sched_latency_ns: 6_000_000 * f,
            sched_min_granularity_ns: 750_000 * f,
            sched_wakeup_granularity_ns: 1_000_000 * f,
            // 6.12.y: 0.70 ms (the 6.15 change backported to the stable
            // series by 2ae891b8); 6.12.117, booted as eevdf-6.12,
            // reads 1400000 at 2 CPUs and 2100000 at 4.
            base_slice_ns: 700_000 * f,
            sched_child_runs_first: false,
            migration_cost_ns: 500_000,
            nr_migrate: 32,
            sched_cfs_bandwidth_slice_us: 5_000,
            features: Features::defaults(v),
        };
        let known = t.list(v).into_iter().map(|x| x.name).collect::<Vec<_>>();
        for (name, &value) in set {
            // Every one of these is an unsigned int in the kernel (a u32
            // debugfs file or sysctl): refused above that, not truncated.
            let in_u32 = |low: i64, what: &str| -> Result<u64, String> {
                if value < low {
                    Err(format!("{name} = {value}: {what} must be at least {low}"))
                } else if value > u32::MAX as i64 {
                    Err(format!("{name} = {value} is above the kernel's limit of {} (an unsigned int)", u32::MAX))
                } else {
                    Ok(value as u64)
                }
            };
            let positive = |what: &str| in_u32(1, what);
            match (v, name.as_str()) {
                (_, "sched_tunable_scaling") => {}
                (Variant::Cfs, "sched_latency_ns") => t.sched_latency_ns = positive("a latency")?,
                (Variant::Cfs, "sched_min_granularity_ns") => t.sched_min_granularity_ns = positive("a granularity")?,
                (Variant::Cfs, "sched_wakeup_granularity_ns") => {
                    t.sched_wakeup_granularity_ns = positive("a granularity")?
                }
                (Variant::Cfs, "sched_child_runs_first") => t.sched_child_runs_first = value != 0,
                (Variant::Eevdf, "base_slice_ns") => t.base_slice_ns = positive("a slice")?,
                (_, "migration_cost_ns") => t.migration_cost_ns = in_u32(0, "a cost")?,
                (_, "nr_migrate") => t.nr_migrate = positive("nr_migrate")? as u32,
                (_, "sched_cfs_bandwidth_slice_us") => t.sched_cfs_bandwidth_slice_us = positive("a slice")?,
                (_, feature) => {
                    let mut found = false;
                    for (fname, slot, _) in t.features.table(v) {
                        if fname == feature {
                            *slot = value != 0;
                            found = true;
                        }
                    }
                    if !found {
                        return Err(format!(
                            "unknown tunable '{feature}' for {}: known are {}",
                            match v {
                                Variant::Cfs => "cfs",
                                Variant::Eevdf => "eevdf",
                            },
                            known.join(", ")
                        ));
                    }
                }
            }
        }
        Ok(t)
    }

    /// sched_nr_latency = sched_latency / sched_min_granularity.
    pub fn nr_latency(&self) -> u64 {
        (self.sched_latency_ns / self.sched_min_granularity_ns.max(1)).max(1)
    }

    pub fn list(&mut self, v: Variant) -> Vec<Tunable> {
        let mut out = vec![Tunable {
            name: "sched_tunable_scaling",
            value: self.tunable_scaling,
            help: "0 none, 1 log (default), 2 linear: scales the *_ns defaults by CPU count",
        }];
        match v {
            Variant::Cfs => out.extend([
                Tunable {
                    name: "sched_latency_ns",
                    value: self.sched_latency_ns as i64,
                    help: "targeted preemption latency for CPU-bound tasks (6ms x scaling)",
                },
                Tunable {
                    name: "sched_min_granularity_ns",
                    value: self.sched_min_granularity_ns as i64,
                    help: "minimal preemption granularity (0.75ms x scaling)",
                },
                Tunable {
                    name: "sched_wakeup_granularity_ns",
                    value: self.sched_wakeup_granularity_ns as i64,
                    help: "vruntime lead a waking task needs to preempt (1ms x scaling)",
                },
                Tunable {
                    name: "sched_child_runs_first",
                    value: self.sched_child_runs_first as i64,
                    help: "a forked child runs before its parent",
                },
            ]),
            Variant::Eevdf => out.push(Tunable {
                name: "base_slice_ns",
                value: self.base_slice_ns as i64,
                help: "request size of every task without a custom slice (0.70ms x scaling, 6.12.y)",
            }),
        }
        out.extend([
            Tunable {
                name: "migration_cost_ns",
                value: self.migration_cost_ns as i64,
                help: "a task that ran this recently is cache hot and not migrated",
            },
            Tunable { name: "nr_migrate", value: self.nr_migrate as i64, help: "tasks looked at per balance" },
            Tunable {
                name: "sched_cfs_bandwidth_slice_us",
                value: self.sched_cfs_bandwidth_slice_us as i64,
                help: "runtime a CPU takes from a cpu.max pool at once",
            },
        ]);
        for (name, slot, help) in self.features.table(v) {
            out.push(Tunable { name, value: *slot as i64, help });
        }
        out
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
